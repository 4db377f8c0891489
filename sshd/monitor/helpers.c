/*
 * helpers.c: atriumd's search for atriumd-net, atrium-fs and atrium-agent
 * (helpers.h).
 * Run once at start, as root, before the split; the result is fixed for
 * the process's life.
 */
#include "helpers.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/* out = dir/rel; 0 or -ENAMETOOLONG. */
static int
helpers_join(char *out, size_t len, const char *dir, const char *rel)
{
	if (snprintf(out, len, "%s/%s", dir, rel) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* Both programs from dir's layout: flat (one directory) or installed. */
static int
helpers_layout(const char *dir, int flat, struct helpers *out)
{
	if (flat)
		return helpers_join(out->fs, sizeof(out->fs), dir,
		    "atrium-fs") ?: helpers_join(out->agent,
		    sizeof(out->agent), dir, "atrium-agent");
	return helpers_join(out->fs, sizeof(out->fs), dir,
	    "../bin/atrium-fs") ?: helpers_join(out->agent,
	    sizeof(out->agent), dir, "../libexec/atrium/atrium-agent");
}

/* atriumd-net from atriumd's own directory self: beside it (the build
 * tree) or in the installed layout's libexec.  0, or -ENOENT (logged). */
static int
helpers_find_net(const char *self, struct helpers *out)
{
	if (helpers_join(out->net, sizeof(out->net), self, "atriumd-net") == 0 &&
	    access(out->net, X_OK) == 0)
		return 0;
	if (helpers_join(out->net, sizeof(out->net), self,
	    "../libexec/atrium/atriumd-net") == 0 && access(out->net, X_OK) == 0)
		return 0;
	log_error("atriumd-net, atriumd's network process, is neither beside "
	    "atriumd in %s nor in %s/../libexec/atrium: install atriumd and "
	    "atriumd-net together (make install)", self, self);
	return -ENOENT;
}

/* atriumd-http beside atriumd-net; "" when it is not there (atriumd
 * refuses --http-listen then: http_front.c). */
static void
helpers_find_http(struct helpers *out)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", out->net);
	if ((slash = strrchr(dir, '/')))
		*slash = '\0';
	if (helpers_join(out->http, sizeof(out->http), dir, "atriumd-http") <
	    0 || access(out->http, X_OK) < 0)
		out->http[0] = '\0';
}

int
helpers_find(const char *bin_dir, struct helpers *out)
{
	char self[PATH_MAX], probe[PATH_MAX + 16];
	int r;

	memset(out, 0, sizeof(*out));
	if (self_dir(self, sizeof(self)) < 0)
		snprintf(self, sizeof(self), ".");
	if ((r = helpers_find_net(self, out)) < 0)
		return r;
	helpers_find_http(out);
	if (bin_dir && bin_dir[0]) {
		r = helpers_layout(bin_dir, 1, out);
	} else {
		/* The build tree keeps every program in one directory. */
		snprintf(probe, sizeof(probe), "%s/atrium-agent", self);
		r = helpers_layout(self, access(probe, X_OK) == 0, out);
	}
	if (r < 0) {
		log_error("--bin-dir: path too long");
		return r;
	}
	if (access(out->fs, X_OK) < 0)
		log_warn("%s: not found; rooms cannot start (use --bin-dir "
		    "DIR)", out->fs);
	if (access(out->agent, X_OK) < 0)
		log_warn("%s: not found; rooms cannot start (use --bin-dir "
		    "DIR)", out->agent);
	return 0;
}

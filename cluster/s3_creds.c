/*
 * s3_creds.c: the object store's credentials, loaded, handed on a pipe
 * and read back (s3_creds.h).  Every buffer that held one is wiped before
 * it is freed or goes out of scope.
 */
#include "s3_creds.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define S3_CREDS_FILE_MAX	4096
#define S3_CREDS_WIRE_MAX	(2 * S3_CREDS_MAX + 2)

static const char *const s3_creds_envs[2] = { "AWS_ACCESS_KEY_ID",
	"AWS_SECRET_ACCESS_KEY" };

void
s3_creds_clear(struct s3_creds *c)
{
	explicit_bzero(c, sizeof(*c));
}

/* n bytes of v, spaces trimmed at both ends, into out (S3_CREDS_MAX):
 * 0, or -EINVAL when empty, too long or holding a control byte (the
 * wire is lines, and a header value must be one). */
static int
s3_creds_set(char *out, const char *v, size_t n)
{
	while (n && isspace((unsigned char)*v))
		v++, n--;
	while (n && isspace((unsigned char)v[n - 1]))
		n--;
	if (n == 0 || n >= S3_CREDS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return -EINVAL;
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

/* The text's first two lines (n bytes) into c: 0 or -EINVAL. */
static int
s3_creds_parse(struct s3_creds *c, const char *text, size_t n)
{
	const char *nl = memchr(text, '\n', n);
	size_t rest;

	if (!nl)
		return -EINVAL;
	rest = n - (size_t)(nl + 1 - text);
	if (s3_creds_set(c->access, text, (size_t)(nl - text)) < 0)
		return -EINVAL;
	text = nl + 1;
	if ((nl = memchr(text, '\n', rest)))
		rest = (size_t)(nl - text);
	return s3_creds_set(c->secret, text, rest);
}

/* From the two variables: 0 or -EINVAL (reason in err). */
static int
s3_creds_from_env(struct s3_creds *c, char *err, size_t errlen)
{
	const char *a = getenv(s3_creds_envs[0]), *s = getenv(s3_creds_envs[1]);

	if (!a || !s) {
		snprintf(err, errlen, "no object store credentials: set %s "
		    "and %s, or give --s3-credentials FILE", s3_creds_envs[0],
		    s3_creds_envs[1]);
		return -EINVAL;
	}
	if (s3_creds_set(c->access, a, strlen(a)) < 0 ||
	    s3_creds_set(c->secret, s, strlen(s)) < 0) {
		snprintf(err, errlen, "%s and %s must each be one line of "
		    "1 to %d bytes", s3_creds_envs[0], s3_creds_envs[1],
		    S3_CREDS_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

int
s3_creds_load(struct s3_creds *c, const char *file, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int r;

	s3_creds_clear(c);
	if (!file || !*file)
		return s3_creds_from_env(c, err, errlen);
	if ((r = read_small_file(file, S3_CREDS_FILE_MAX, &text, &len)) < 0) {
		snprintf(err, errlen, "cannot read the object store's "
		    "credentials %s: %s", file, strerror(-r));
		return r;
	}
	r = s3_creds_parse(c, text, len);
	explicit_bzero(text, len);
	free(text);
	if (r < 0) {
		s3_creds_clear(c);
		snprintf(err, errlen, "%s must hold two lines: the access key "
		    "and the secret, each of 1 to %d bytes", file,
		    S3_CREDS_MAX - 1);
	}
	return r;
}

void
s3_creds_scrub_env(void)
{
	for (int i = 0; i < 2; i++) {
		char *v = getenv(s3_creds_envs[i]);

		if (v)
			explicit_bzero(v, strlen(v));
		unsetenv(s3_creds_envs[i]);
	}
}

int
s3_creds_write(int fd, const struct s3_creds *c)
{
	char wire[S3_CREDS_WIRE_MAX + 1];
	int n = snprintf(wire, sizeof(wire), "%s\n%s\n", c->access, c->secret);
	int r = write_all(fd, wire, (size_t)n);

	explicit_bzero(wire, sizeof(wire));
	return r;
}

int
s3_creds_pipe(const struct s3_creds *c)
{
	int p[2], r;

	/* The wire (at most 514 bytes) fits a pipe's buffer: no reader
	 * needed yet. */
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	r = s3_creds_write(p[1], c);
	close(p[1]);
	if (r == 0)
		r = fd_set_cloexec(p[0], 0);
	if (r < 0) {
		close(p[0]);
		return r;
	}
	return p[0];
}

int
s3_creds_read_fd(struct s3_creds *c, int fd, char *err, size_t errlen)
{
	char wire[S3_CREDS_WIRE_MAX + 1];
	size_t n = 0;
	ssize_t got;
	int r = 0;

	s3_creds_clear(c);
	while (n < sizeof(wire) && (got = read(fd, wire + n,
	    sizeof(wire) - n)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			snprintf(err, errlen, "cannot read the credentials' fd "
			    "%d: %s", fd, strerror(errno));
			break;
		}
		n += (size_t)got;
	}
	close(fd);
	if (r == 0 && (n == sizeof(wire) || s3_creds_parse(c, wire, n) < 0)) {
		s3_creds_clear(c);
		snprintf(err, errlen, "the credentials' fd %d holds no access "
		    "key and secret", fd);
		r = -EINVAL;
	}
	explicit_bzero(wire, sizeof(wire));
	return r;
}

/*
 * replicate_confine.c: how atrium-replicate gives up what it was started
 * with (replicate.h): root, for the room's uid (`run` once it has copied
 * the databases, `restore` before it asks etcd or the store anything),
 * and, for `restore`, an unbounded file size and the run of the host's
 * files (Landlock: only the staging directory may be written; the
 * system's trees are read for libraries, certificates and the resolver).
 *
 * No seccomp list, as the shipper has none: the calls libcurl, OpenSSL
 * and glibc's resolver make (NSS modules loaded at run time, a thread per
 * name lookup, the resolver's sockets) vary with their versions and the
 * host's configuration, and a list that missed one would fail restores
 * on some hosts only; the uid, no_new_privs and Landlock bound it.
 *
 * Rules: a uid change is for good (common/becomeuser.c: no capability in
 * any set, no_new_privs, not dumpable, root cannot be had back); the
 * parent's death signal, which the change clears, is set again, and a
 * parent already gone ends the process.  Nothing here is parsed from the
 * network: "UID:GID" comes from the command line atriumd makes.
 */
#include "replicate.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "becomeuser.h"
#include "landlock.h"
#include "log.h"

/* One id of "UID:GID" at v, ending at want: the number, or 0 (refused). */
static unsigned long
repl_parse_id(const char *v, char want, const char **end)
{
	unsigned long n;
	char *e;

	if (*v < '0' || *v > '9')
		return 0;
	errno = 0;
	n = strtoul(v, &e, 10);
	if (errno || *e != want || n >= UINT32_MAX)
		return 0;
	*end = e;
	return n;
}

int
repl_parse_ids(const char *v, uid_t *uid, gid_t *gid)
{
	const char *end = v;
	unsigned long u, g;

	if (!v || !(u = repl_parse_id(v, ':', &end)) ||
	    !(g = repl_parse_id(end + 1, '\0', &end)))
		return -EINVAL;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

int
repl_become(const struct repl_opts *o)
{
	pid_t parent = getppid();
	const char *step = "";
	int r;

	if ((r = become_user(o->run_uid, o->run_gid, &step)) < 0) {
		log_error("cannot become uid %u (%s): %s", (unsigned)o->run_uid,
		    step, strerror(-r));
		return r;
	}
	/* The uid change cleared the death signal: set it again, and end
	 * if the parent went meanwhile. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent) {
		log_error("atriumd went while this process gave root up");
		return -ESRCH;
	}
	return 0;
}

int
repl_limit_files(long long max)
{
	struct rlimit rl = { (rlim_t)max, (rlim_t)max };

	if (max <= 0)
		return 0;
	/* Past the limit the kernel sends SIGXFSZ, which would end the
	 * process with no word of why: ignored, the write fails with
	 * EFBIG, which is reported as any failure to write. */
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0) {
		log_error("cannot bound the files written to %lld bytes: %s",
		    max, strerror(errno));
		return -errno;
	}
	return 0;
}

int
repl_landlock_dir(int dir_fd)
{
	char dir[32], err[PATH_MAX + 64];
	struct landlock_tree t[] = {
		{ dir, LANDLOCK_WRITE, 0 },
		/* libcurl and OpenSSL: certificates, the resolver's files,
		 * the libraries NSS loads; the time zone of the log */
		{ "/etc", LANDLOCK_READ, 0 },
		{ "/usr", LANDLOCK_EXEC, 0 },
		{ "/lib", LANDLOCK_EXEC, 1 },
		{ "/lib64", LANDLOCK_EXEC, 1 },
		{ "/run/systemd/resolve", LANDLOCK_READ, 1 },
		{ "/dev/null", LANDLOCK_DEVICE, 1 },
		{ "/dev/urandom", LANDLOCK_READ, 1 },
		{ NULL, LANDLOCK_READ, 0 },
	};
	int r;

	snprintf(dir, sizeof(dir), "/proc/self/fd/%d", dir_fd);
	r = landlock_restrict(t, err, sizeof(err));
	if (r == -EOPNOTSUPP) {
		log_warn("the kernel has no Landlock: what restore may write "
		    "is limited by its uid alone");
		return 0;
	}
	if (r < 0)
		log_error("Landlock: %s", err);
	return r;
}

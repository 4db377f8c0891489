/*
 * privdrop.c: the network process gives up root (privdrop.h).  Called by
 * the monitor's main.c (privdrop_resolve, before the fork) and by
 * atriumd-net's main.c (privdrop_apply, first thing).
 */
#include "privdrop.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "becomeuser.h"
#include "landlock.h"
#include "log.h"

/* See privdrop.h. */
int
privdrop_resolve(const char *want, struct privdrop_id *out)
{
	const char *name = want && want[0] ? want : PRIVDROP_DEFAULT_USER;
	struct passwd *pw;

	memset(out, 0, sizeof(*out));
	errno = 0;
	pw = getpwnam(name);
	if (!pw && !(want && want[0])) {
		name = PRIVDROP_FALLBACK_USER;
		pw = getpwnam(name);
		if (pw)
			log_warn("no user '%s': the network process runs as "
			    "'%s', shared with other services; make a system "
			    "user '%s' (useradd --system --no-create-home "
			    "--shell /usr/sbin/nologin %s) or set "
			    "--privsep-user", PRIVDROP_DEFAULT_USER, name,
			    PRIVDROP_DEFAULT_USER, PRIVDROP_DEFAULT_USER);
	}
	if (!pw) {
		log_error("--privsep-user: no user '%s'%s", name,
		    want && want[0] ? "" : " (nor '" PRIVDROP_DEFAULT_USER "')");
		return -ENOENT;
	}
	if (pw->pw_uid == 0 || pw->pw_gid == 0) {
		log_error("--privsep-user %s: uid or gid 0; the network process "
		    "must not run as root", name);
		return -EPERM;
	}
	out->uid = pw->pw_uid;
	out->gid = pw->pw_gid;
	snprintf(out->name, sizeof(out->name), "%s", name);
	return 0;
}

/* See privdrop.h. */
int
privdrop_landlock(void)
{
	static const struct landlock_tree trees[] = {
		{ "/dev/ptmx", LANDLOCK_DEVICE, 1 },
		{ "/dev/pts", LANDLOCK_DEVICE, 1 },
		{ "/dev/null", LANDLOCK_DEVICE, 1 },
		{ "/dev/urandom", LANDLOCK_READ, 1 },
		/* its threads' names (pthread_setname_np writes comm) */
		{ "/proc/self/task", LANDLOCK_DEVICE, 1 },
		{ "/usr", LANDLOCK_READ, 0 },
		{ "/etc", LANDLOCK_READ, 0 },
		{ NULL, LANDLOCK_READ, 0 },
	};
	char err[PATH_MAX + 64];
	int r = landlock_restrict(trees, err, sizeof(err));

	if (r == -EOPNOTSUPP) {
		log_warn("the kernel has no Landlock: the network process's "
		    "files are limited by its uid and seccomp alone");
		return 0;
	}
	if (r < 0)
		log_error("network process: Landlock: %s", err);
	return r;
}

/* See privdrop.h. */
int
privdrop_apply(const struct privdrop_id *id, pid_t monitor)
{
	const char *step;
	int r;

	if ((r = become_user(id->uid, id->gid, &step)) < 0)
		goto fail;
	/* After the uid change, which clears the death signal. */
	step = "parent death signal";
	if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 ||
	    getppid() != monitor) {
		r = -ESRCH;
		goto fail;
	}
	if (chdir("/") < 0) {
		r = -errno;
		step = "chdir /";
		goto fail;
	}
	if (privdrop_landlock() < 0)
		return -EPERM;
	return privdrop_seccomp();
fail:
	log_error("network process: cannot drop privileges (%s): %s", step,
	    strerror(-r));
	return r;
}

/*
 * privdrop.c: the network process gives up root (privdrop.h).  Called by
 * atriumd-net's main.c (privdrop_apply, first thing); who it becomes, the
 * monitor looked up (privdrop_id.h).
 */
#include "privdrop.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
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

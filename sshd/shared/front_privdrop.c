/*
 * front_privdrop.c: a front gives up root (front_privdrop.h).  Called
 * once, as root, by sshd/net/privdrop.c and sshd/http/http_privdrop.c,
 * from sshd/net/net_main.c and sshd/http/http_main.c before anything else is
 * parsed; who it becomes, the monitor looked up (privdrop_id.h).
 */
#include "front_privdrop.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "becomeuser.h"
#include "log.h"

/* See front_privdrop.h. */
int
front_privdrop_landlock(const char *who, const struct landlock_tree *trees)
{
	char err[PATH_MAX + 64];
	int r = landlock_restrict(trees, err, sizeof(err));

	if (r == -EOPNOTSUPP) {
		log_warn("the kernel has no Landlock: the %s's files are "
		    "limited by its uid and seccomp alone", who);
		return 0;
	}
	if (r < 0)
		log_error("%s: Landlock: %s", who, err);
	return r;
}

/* See front_privdrop.h. */
int
front_privdrop_apply(const struct front_privdrop *p,
    const struct privdrop_id *id, pid_t monitor)
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
	step = "chdir /";
	if (chdir("/") < 0) {
		r = -errno;
		goto fail;
	}
	if (front_privdrop_landlock(p->who, p->trees) < 0)
		return -EPERM;
	return p->seccomp();
fail:
	log_error("%s: cannot drop privileges (%s): %s", p->who, step,
	    strerror(-r));
	return r;
}

/*
 * privdrop.c: the network process gives up root (privdrop.h).  Called by
 * main.c: privdrop_resolve before the fork, privdrop_apply in the child.
 */
#include "privdrop.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* Drop every capability from the bounding and ambient sets (still root:
 * needs CAP_SETPCAP).  0 or -errno. */
static int
privdrop_bounding(void)
{
	for (int cap = 0; cap <= 63; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)	/* past this kernel's last */
				break;
			return -errno;
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return -errno;
	return 0;
}

/* Clear permitted, effective and inheritable, and check they are.  0 or
 * -errno. */
static int
privdrop_caps(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	for (int i = 0; i < 2; i++)
		if (data[i].effective || data[i].permitted ||
		    data[i].inheritable)
			return -EPERM;
	return 0;
}

/* Groups, gid, uid; then check that root cannot be had back. */
static int
privdrop_ids(const struct privdrop_id *id)
{
	uid_t r, e, s;

	if (setgroups(0, NULL) < 0 || setresgid(id->gid, id->gid, id->gid) < 0)
		return -errno;
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return -errno;
	if (setresuid(id->uid, id->uid, id->uid) < 0)
		return -errno;
	if (getresuid(&r, &e, &s) < 0 || r != id->uid || e != id->uid ||
	    s != id->uid)
		return -EPERM;
	if (setuid(0) == 0 || setgid(0) == 0)
		return -EPERM;
	return 0;
}

/* See privdrop.h. */
int
privdrop_apply(const struct privdrop_id *id, pid_t monitor)
{
	const char *step = "bounding set";
	int r;

	if ((r = privdrop_bounding()) < 0)
		goto fail;
	step = "uid and gid";
	if ((r = privdrop_ids(id)) < 0)
		goto fail;
	step = "capabilities";
	if ((r = privdrop_caps()) < 0)
		goto fail;
	step = "no_new_privs";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		r = -errno;
		goto fail;
	}
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
	return privdrop_seccomp();
fail:
	log_error("network process: cannot drop privileges (%s): %s", step,
	    strerror(-r));
	return r;
}

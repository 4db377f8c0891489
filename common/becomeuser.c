/*
 * becomeuser.c: see becomeuser.h.
 */
#include "becomeuser.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Drop every capability from the bounding and ambient sets (still root:
 * needs CAP_SETPCAP).  0 or -errno. */
static int
become_bounding(void)
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
become_caps(void)
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
become_ids(uid_t uid, gid_t gid)
{
	uid_t r, e, s;

	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0)
		return -errno;
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return -errno;
	if (setresuid(uid, uid, uid) < 0)
		return -errno;
	if (getresuid(&r, &e, &s) < 0 || r != uid || e != uid || s != uid)
		return -EPERM;
	if (setuid(0) == 0 || setgid(0) == 0)
		return -EPERM;
	return 0;
}

int
become_user(uid_t uid, gid_t gid, const char **step)
{
	int r;

	*step = "uid or gid 0";
	if (uid == 0 || gid == 0)
		return -EINVAL;
	*step = "bounding set";
	if ((r = become_bounding()) < 0)
		return r;
	*step = "uid and gid";
	if ((r = become_ids(uid, gid)) < 0)
		return r;
	*step = "capabilities";
	if ((r = become_caps()) < 0)
		return r;
	*step = "no_new_privs";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/*
 * landlock.c: see landlock.h.
 *
 * The ruleset handles every filesystem right the running kernel knows
 * (asking for one it does not know is EINVAL, so the set follows the
 * ABI): rights it handles are denied except beneath a tree that grants
 * them.  Rights of a newer kernel than the headers are defined here by
 * value, as the kernel's UAPI fixes them.  Network rights are not handled:
 * the agent speaks to the model over the network.
 *
 * Each tree is opened with O_PATH (the rule is bound to the inode, so a
 * later rename or a symbolic link planted in the path changes nothing); a
 * rule on a regular file or a device may only carry file rights, so those
 * are masked for non-directories.
 */
#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE	(1ULL << 14)	/* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV	(1ULL << 15)	/* ABI 5 */
#endif

#define LL_READ	(LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_FILE	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
		 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
		 LANDLOCK_ACCESS_FS_IOCTL_DEV)

int
landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);

	return v < 0 ? 0 : (int)v;
}

/* Every filesystem right of ABI abi. */
static unsigned long long
landlock_handled(int abi)
{
	unsigned long long all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;

	if (abi >= 2)
		all |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		all |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		all |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return all;
}

/* The rights use grants, within handled. */
static unsigned long long
landlock_rights(enum landlock_use use, unsigned long long handled)
{
	unsigned long long r = LL_READ;

	if (use == LANDLOCK_EXEC)
		r |= LANDLOCK_ACCESS_FS_EXECUTE;
	else if (use == LANDLOCK_WRITE)
		r = handled;
	else if (use == LANDLOCK_DEVICE)
		r |= LANDLOCK_ACCESS_FS_WRITE_FILE |
		    LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
	else if (use == LANDLOCK_FILE)
		r = LANDLOCK_ACCESS_FS_READ_FILE |
		    LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
	return r & handled;
}

/* Add t's rule to the ruleset rs.  0, 1 (an optional tree is missing), or
 * -errno with what failed in err. */
static int
landlock_add(int rs, const struct landlock_tree *t, unsigned long long handled,
    char *err, int errlen)
{
	struct landlock_path_beneath_attr pb = { 0 };
	struct stat st;
	int fd, r = 0;

	if ((fd = open(t->path, O_PATH | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		if (r == -ENOENT && t->optional)
			return 1;
		snprintf(err, (size_t)errlen, "%s: %s", t->path, strerror(-r));
		return r;
	}
	pb.parent_fd = fd;
	pb.allowed_access = landlock_rights(t->use, handled);
	if (!S_ISDIR(st.st_mode))
		pb.allowed_access &= LL_FILE;
	if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb,
	    0) < 0) {
		r = -errno;
		snprintf(err, (size_t)errlen, "a rule for %s: %s", t->path,
		    strerror(-r));
	}
	close(fd);
	return r;
}

int
landlock_restrict(const struct landlock_tree *trees, char *err, int errlen)
{
	struct landlock_ruleset_attr attr = { 0 };
	int abi = landlock_abi(), rs, r = 0;

	if (abi < 1) {
		snprintf(err, (size_t)errlen, "the kernel has no Landlock");
		return -EOPNOTSUPP;
	}
	attr.handled_access_fs = landlock_handled(abi);
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (rs < 0) {
		r = -errno;
		snprintf(err, (size_t)errlen, "landlock_create_ruleset: %s",
		    strerror(-r));
		return r;
	}
	for (const struct landlock_tree *t = trees; t->path && r >= 0; t++)
		r = landlock_add(rs, t, attr.handled_access_fs, err, errlen);
	if (r >= 0 && syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
		r = -errno;
		snprintf(err, (size_t)errlen, "landlock_restrict_self: %s",
		    strerror(-r));
	}
	close(rs);
	return r < 0 ? r : 0;
}

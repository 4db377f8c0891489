/*
 * sandbox_mounts.c: detach foreign FUSE mounts from the sandbox's staging
 * mount namespace (sandbox_mounts.h).  Called by sandbox.c's child right
 * after unshare(CLONE_NEWNS), before it mounts anything of its own.
 *
 * Why: unshare copies every mount of the host, and mount propagation on
 * many hosts is private, so an unmount on the host does not reach the copy.
 * bwrap's outer process lives in this namespace for as long as the command
 * runs, so every FUSE mount that existed when a command started (another
 * room's workspace, a hand mount of a stopped room's, an sshfs) would stay
 * alive in it: `fusermount3 -u` succeeds on the host, yet the kernel keeps
 * the FUSE connection and its daemon runs on, holding its database, until
 * the command ends.  The sandbox needs one FUSE mount, its own room's
 * workspace; every other one goes.
 *
 * How: walk the mount table (mountinfo.c) and detach the shallowest FUSE
 * mount that is not kept, then walk it again, until none is left.  Shallow
 * first because MNT_DETACH takes a mount's whole subtree with it, and
 * because reaching a mount nested in a FUSE mount means a path lookup
 * through that filesystem, which a hung daemon would never answer.
 * Detaching by path removes the topmost mount there: when something covers
 * the FUSE mount, that goes first and the next walk finds the FUSE mount on
 * top; when its path no longer leads to it (a mount over a parent
 * directory), the topmost mount of the nearest parent goes first.  Mounts
 * that appear after unshare are copies too (propagation is slave at most),
 * so the walk sees them; one propagated later from a shared host mount is
 * removed by the host's unmount, which propagates to it.
 *
 * Fail closed: a FUSE mount that cannot be detached stops the command with
 * the mount and the reason.  No allocation (a forked child of a threaded
 * process); one mountinfo line buffer on the stack.
 */
#include "sandbox_mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "mountinfo.h"

/* Detaches before giving up: far above any real host's FUSE mounts, and
 * a bound on a table that keeps refilling. */
#define SB_DETACH_MAX	4096

/* Slashes in path: its depth. */
static int
sb_depth(const char *path)
{
	int n = 0;

	for (; *path; path++)
		n += *path == '/';
	return n;
}

/* The shallowest FUSE mount other than keep_id into point.  1 when found,
 * 0 when none is left, -errno when the table cannot be read. */
static int
sb_shallowest_fuse(int keep_id, char *point, size_t pointlen, char *fstype,
    size_t fstypelen)
{
	struct mountinfo_reader r;
	struct mountinfo_entry e;
	int found = 0, depth = 0, n;

	if ((n = mountinfo_open(&r, "/proc/self/mountinfo")) < 0)
		return n;
	while ((n = mountinfo_next(&r, &e)) == 1) {
		if (!mountinfo_is_fuse(&e) || e.id == keep_id ||
		    (found && sb_depth(e.point) >= depth))
			continue;
		if (strlen(e.point) >= pointlen) {
			n = -ENAMETOOLONG;
			break;
		}
		strcpy(point, e.point);
		snprintf(fstype, fstypelen, "%s", e.fstype);
		depth = sb_depth(e.point);
		found = 1;
	}
	mountinfo_close(&r);
	return n < 0 ? n : found;
}

/* Detach what lies on top at path; when path is not a mount point (a
 * mount over one of its parents hides it), the topmost mount of the
 * nearest parent that is one.  0 or -errno of the first attempt. */
static int
sb_detach_at(char *path)
{
	int first;
	char *slash;

	if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
		return 0;
	first = -errno;
	if (first != -EINVAL && first != -ENOENT)
		return first;
	while ((slash = strrchr(path, '/')) && slash != path) {
		*slash = '\0';
		if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
			return 0;
	}
	return first;
}

int
sandbox_mounts_detach_fuse(int keep_id, char *err, size_t errlen)
{
	char point[PATH_MAX], shown[PATH_MAX], fstype[64];
	int n;

	err[0] = '\0';
	for (int i = 0; i < SB_DETACH_MAX; i++) {
		n = sb_shallowest_fuse(keep_id, point, sizeof(point), fstype,
		    sizeof(fstype));
		if (n == 0)
			return 0;
		if (n < 0) {
			snprintf(err, errlen, "cannot read the mount table to "
			    "leave other FUSE mounts out of the sandbox: %s",
			    strerror(-n));
			return n;
		}
		memcpy(shown, point, sizeof(shown));
		if ((n = sb_detach_at(point)) < 0) {
			snprintf(err, errlen, "cannot detach the %s mount at %s "
			    "from the sandbox's mount namespace: %s", fstype,
			    shown, strerror(-n));
			return n;
		}
	}
	snprintf(err, errlen, "more than %d FUSE mounts to detach from the "
	    "sandbox's mount namespace", SB_DETACH_MAX);
	return -ELOOP;
}

int
sandbox_mounts_id(int fd, int *id)
{
	struct statx stx;

	*id = -1;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0)
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -ENOTSUP;
	*id = (int)stx.stx_mnt_id;
	return 0;
}

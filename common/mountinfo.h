/*
 * mountinfo.h: read a process's mount table (/proc/PID/mountinfo) one
 * mount at a time, without allocating, so that a child forked from a
 * threaded process (the sandbox's staging child) may use it.
 *
 * The reader holds one line at a time in a fixed buffer; the fields of
 * an entry point into it and are valid until the next call.  A line longer
 * than the buffer is an error (-E2BIG), never skipped: a caller that must
 * see every mount (to detach foreign ones) fails closed on it.
 */
#ifndef ATRIUM_MOUNTINFO_H
#define ATRIUM_MOUNTINFO_H

#include <stddef.h>

#define MOUNTINFO_LINE_MAX	65536	/* root, mount point and source are
					 * each at most 4 x PATH_MAX escaped */

struct mountinfo_entry {
	int id;			/* mount id (field 1; statx's stx_mnt_id) */
	int parent;		/* parent's mount id */
	unsigned major, minor;	/* st_dev of files on it */
	const char *point;	/* mount point, unescaped, from the reader's
				 * root */
	const char *fstype;	/* "ext4", "fuse.sshfs", ... */
	const char *source;	/* "atrium-fs", "/dev/sda1", ... unescaped */
};

struct mountinfo_reader {
	int fd;			/* the open mountinfo file */
	size_t len;		/* bytes in buf */
	size_t off;		/* start of the next line in buf */
	int eof;		/* read(2) has returned 0 */
	char buf[MOUNTINFO_LINE_MAX];
};

/* Open path (e.g. "/proc/self/mountinfo").  0 or -errno. */
int mountinfo_open(struct mountinfo_reader *r, const char *path);

/* The next mount into *e: 1, 0 at the end, or -errno (-E2BIG: a line
 * longer than MOUNTINFO_LINE_MAX; -EINVAL: a line that is not a mount). */
int mountinfo_next(struct mountinfo_reader *r, struct mountinfo_entry *e);

/* Close the file; safe on a reader that failed to open. */
void mountinfo_close(struct mountinfo_reader *r);

/* Whether the mount is a FUSE filesystem: fstype fuse, fuse.* or fuseblk. */
int mountinfo_is_fuse(const struct mountinfo_entry *e);

/* Parse one line (NUL-terminated, no newline, modified in place) into *e.
 * 0 or -EINVAL.  Exposed for the unit tests. */
int mountinfo_parse_line(char *line, struct mountinfo_entry *e);

#endif

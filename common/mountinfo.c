/*
 * mountinfo.c: a mount table reader (mountinfo.h) for the sandbox, which
 * detaches foreign FUSE mounts from its staging namespace (sandbox.c), and
 * for atrium-fs, which looks for its database's mount when a mount is
 * refused (fs/daemon/mount_holder.c).
 *
 * A line of /proc/PID/mountinfo (proc(5)):
 *
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *   (1)(2)(3)  (4)   (5)   (6)       (7...)    (-)(8)  (9)       (10)
 *
 *   1 mount id, 2 parent id, 3 major:minor, 4 root within the filesystem,
 *   5 mount point, 6 mount options, 7 zero or more optional fields ended by
 *   "-", 8 fstype, 9 source, 10 super options.  Space, tab, newline and
 *   backslash in 4, 5 and 9 are escaped as \040 \011 \012 \134.
 *
 * No allocation and only read(2), so it is safe in a forked child.
 */
#include "mountinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
mountinfo_open(struct mountinfo_reader *r, const char *path)
{
	r->len = r->off = 0;
	r->eof = 0;
	do
		r->fd = open(path, O_RDONLY | O_CLOEXEC);
	while (r->fd < 0 && errno == EINTR);
	return r->fd < 0 ? -errno : 0;
}

void
mountinfo_close(struct mountinfo_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

/* Undo mountinfo's octal escapes in place. */
static void
mountinfo_unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
			    (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* The next space-separated field of *line, NUL-terminated; NULL when none. */
static char *
mountinfo_field(char **line)
{
	char *f = *line, *end;

	if (!f || !*f)
		return NULL;
	end = strchr(f, ' ');
	if (end) {
		*end = '\0';
		*line = end + 1;
	} else {
		*line = NULL;
	}
	return f;
}

/* A decimal int field: 0 or -EINVAL. */
static int
mountinfo_int(const char *s, int *out)
{
	char *end;
	long v;

	if (!s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 0x7fffffff)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* "MAJOR:MINOR": 0 or -EINVAL. */
static int
mountinfo_dev(const char *s, unsigned *major, unsigned *minor)
{
	char *end;
	unsigned long ma, mi;

	if (!s)
		return -EINVAL;
	ma = strtoul(s, &end, 10);
	if (end == s || *end != ':')
		return -EINVAL;
	s = end + 1;
	mi = strtoul(s, &end, 10);
	if (end == s || *end || ma > 0xffffffffUL || mi > 0xffffffffUL)
		return -EINVAL;
	*major = (unsigned)ma;
	*minor = (unsigned)mi;
	return 0;
}

int
mountinfo_parse_line(char *line, struct mountinfo_entry *e)
{
	char *point, *f;

	memset(e, 0, sizeof(*e));
	if (mountinfo_int(mountinfo_field(&line), &e->id) < 0 ||
	    mountinfo_int(mountinfo_field(&line), &e->parent) < 0 ||
	    mountinfo_dev(mountinfo_field(&line), &e->major, &e->minor) < 0 ||
	    !mountinfo_field(&line) ||		/* root */
	    !(point = mountinfo_field(&line)) || point[0] != '/' ||
	    !mountinfo_field(&line))		/* options */
		return -EINVAL;
	while ((f = mountinfo_field(&line)) && strcmp(f, "-") != 0)
		;				/* optional fields */
	if (!f || !(e->fstype = mountinfo_field(&line)) ||
	    !(f = mountinfo_field(&line)))
		return -EINVAL;
	mountinfo_unescape(point);
	mountinfo_unescape(f);
	e->point = point;
	e->source = f;
	return 0;
}

/* Move the unread tail to the front and read more.  0 or -errno. */
static int
mountinfo_fill(struct mountinfo_reader *r)
{
	ssize_t n;

	memmove(r->buf, r->buf + r->off, r->len - r->off);
	r->len -= r->off;
	r->off = 0;
	if (r->len >= sizeof(r->buf) - 1)
		return -E2BIG;
	do
		n = read(r->fd, r->buf + r->len, sizeof(r->buf) - 1 - r->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		r->eof = 1;
	r->len += (size_t)n;
	return 0;
}

int
mountinfo_next(struct mountinfo_reader *r, struct mountinfo_entry *e)
{
	char *line, *nl;
	int err;

	for (;;) {
		line = r->buf + r->off;
		nl = memchr(line, '\n', r->len - r->off);
		if (nl)
			break;
		if (r->eof) {
			if (r->off == r->len)
				return 0;
			/* A last line without its newline: the file was cut. */
			return -EINVAL;
		}
		if ((err = mountinfo_fill(r)) < 0)
			return err;
	}
	*nl = '\0';
	r->off = (size_t)(nl + 1 - r->buf);
	if (memchr(line, '\0', (size_t)(nl - line)))
		return -EINVAL;
	return mountinfo_parse_line(line, e) < 0 ? -EINVAL : 1;
}

int
mountinfo_is_fuse(const struct mountinfo_entry *e)
{
	return strcmp(e->fstype, "fuse") == 0 ||
	    strncmp(e->fstype, "fuse.", 5) == 0 ||
	    strcmp(e->fstype, "fuseblk") == 0;
}

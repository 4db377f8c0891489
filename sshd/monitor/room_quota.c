/*
 * room_quota.c: rooms created per user (room_quota.h).  Called by
 * monitor.c before a first use makes a room, and by room_transfer.c
 * before an import makes one and after one failed.  The file is read and
 * appended on the loop: it happens once per room ever created, the file
 * is small (a line per room), and local; it is written whole again only
 * when a room's making failed.
 */
#include "room_quota.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define RQ_NAME_MAX	128	/* room or user names longer are skipped */

/* 1 when the line for room appears in text before offset end. */
static int
rq_seen_before(const char *text, size_t end, const char *room, size_t n)
{
	for (size_t i = 0; i < end;) {
		const char *nl = memchr(text + i, '\n', end - i);
		size_t stop = nl ? (size_t)(nl - text) : end;

		if (stop - i > n && memcmp(text + i, room, n) == 0 &&
		    text[i + n] == ' ')
			return 1;
		i = stop + 1;
	}
	return 0;
}

int
room_quota_count(const char *text, size_t len, const char *user,
    int (*exists)(const char *room, void *arg), void *arg)
{
	char room[RQ_NAME_MAX];
	size_t ulen = strlen(user);
	int n = 0;

	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t stop = nl ? (size_t)(nl - text) : len;
		const char *sp = memchr(text + i, ' ', stop - i);
		size_t rlen = sp ? (size_t)(sp - text) - i : 0;

		if (nl && sp && rlen > 0 && rlen < sizeof(room) &&
		    stop - (size_t)(sp + 1 - text) == ulen &&
		    memcmp(sp + 1, user, ulen) == 0 &&
		    !rq_seen_before(text, i, text + i, rlen)) {
			memcpy(room, text + i, rlen);
			room[rlen] = '\0';
			n += exists(room, arg) == 1;
		}
		i = stop + 1;
	}
	return n;
}

/* exists() for room_quota_count: DATA/rooms/ROOM is there. */
static int
rq_room_exists(const char *room, void *arg)
{
	char path[PATH_MAX + 160];

	snprintf(path, sizeof(path), "%s/rooms/%s", (const char *)arg, room);
	return access(path, F_OK) == 0;
}

/* Append "ROOM USER\n" to the record.  0 or -errno. */
static int
rq_record(const char *path, const char *room, const char *user)
{
	char line[2 * RQ_NAME_MAX + 2];
	int fd, r, n = snprintf(line, sizeof(line), "%s %s\n", room, user);

	if (n < 0 || (size_t)n >= sizeof(line) || strchr(user, '\n'))
		return -EINVAL;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = write_all(fd, line, (size_t)n);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

int
room_quota_admit(const char *data, const char *room, const char *user,
    int max, room_quota_exists_fn exists, void *arg, char *err,
    size_t errlen)
{
	char path[PATH_MAX + 160], *text = NULL;
	size_t len = 0;
	int r, n;

	snprintf(path, sizeof(path), "%s/rooms/%s", data, room);
	if (access(path, F_OK) == 0)
		return 0;	/* not a creation */
	snprintf(path, sizeof(path), "%s/%s", data, ROOM_QUOTA_FILE);
	r = read_small_file(path, ROOM_QUOTA_MAX_FILE, &text, &len);
	if (r < 0 && r != -ENOENT) {
		log_error("%s: %s; refusing to create room %s", path,
		    strerror(-r), room);
		snprintf(err, errlen, "the server cannot count the rooms you "
		    "created; tell the server's operator");
		return r;
	}
	n = !text ? 0 : exists ? room_quota_count(text, len, user, exists,
	    arg) : room_quota_count(text, len, user, rq_room_exists,
	    (void *)data);
	free(text);
	if (max > 0 && n >= max) {
		snprintf(err, errlen, "you have created %d rooms, the most "
		    "allowed per user (max-rooms-per-user = %d); use one of "
		    "them, or ask the operator to remove one", n, max);
		return -EDQUOT;
	}
	if ((r = rq_record(path, room, user)) < 0) {
		log_error("%s: %s; refusing to create room %s", path,
		    strerror(-r), room);
		snprintf(err, errlen, "the server cannot record the room you "
		    "create; tell the server's operator");
	}
	return r;
}

/* text (len bytes) less its lines for room, into out (as long at most):
 * the length kept. */
static size_t
rq_without(const char *text, size_t len, const char *room, char *out)
{
	size_t n = strlen(room), kept = 0;

	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t stop = nl ? (size_t)(nl - text) + 1 : len;

		if (!(stop - i > n && memcmp(text + i, room, n) == 0 &&
		    text[i + n] == ' ')) {
			memcpy(out + kept, text + i, stop - i);
			kept += stop - i;
		}
		i = stop;
	}
	return kept;
}

/* Write len bytes of text to path through path.tmp, synced, renamed.
 * 0 or -errno. */
static int
rq_replace(const char *path, const char *text, size_t len)
{
	char tmp[PATH_MAX + 200];
	int fd, r;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd < 0)
		return -errno;
	r = write_all(fd, text, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int
room_quota_forget(const char *data, const char *room)
{
	char path[PATH_MAX + 160], *text = NULL, *out = NULL;
	size_t len = 0, kept;
	int r;

	snprintf(path, sizeof(path), "%s/%s", data, ROOM_QUOTA_FILE);
	r = read_small_file(path, ROOM_QUOTA_MAX_FILE, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r == 0 && !(out = malloc(len + 1)))
		r = -ENOMEM;
	if (r < 0) {
		free(text);
		log_error("%s: %s; room %s still counts for whoever first made "
		    "it", path, strerror(-r), room);
		return r;
	}
	kept = rq_without(text, len, room, out);
	r = kept == len ? 0 : rq_replace(path, out, kept);
	if (r < 0)
		log_error("%s: %s; room %s still counts for whoever first made "
		    "it", path, strerror(-r), room);
	free(out);
	free(text);
	return r;
}

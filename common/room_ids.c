/*
 * room_ids.c: each room's sandbox uid and gid (room_ids.h).  atriumd calls
 * room_ids_assign before it starts a room; atrium-agent calls room_ids_get.
 *
 * Workload: an assignment scans every directory under DATA/rooms once (a
 * few thousand at most) and only for a room that has no record yet, i.e.
 * once in each room's life; every later start reads one small file.
 */
#include "room_ids.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol.h"
#include "util.h"

#define ROOM_IDS_MAX_FILE	64
#define ROOM_IDS_MAX_ID		0x7fffffffLL

/* Parse one decimal id of 1 .. 2^31-1 at *p, moving *p past it.  0 or
 * -EINVAL. */
static int
room_ids_number(const char **p, long long *out)
{
	long long v = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++)
		if ((v = v * 10 + (*s - '0')) > ROOM_IDS_MAX_ID)
			return -EINVAL;
	if (v < 1)
		return -EINVAL;
	*p = s;
	*out = v;
	return 0;
}

int
room_ids_parse(const char *text, struct room_ids *out)
{
	long long uid, gid;
	const char *p = text;

	if (room_ids_number(&p, &uid) < 0 || *p++ != ':' ||
	    room_ids_number(&p, &gid) < 0)
		return -EINVAL;
	if (*p == '\n')
		p++;
	if (*p)
		return -EINVAL;
	out->uid = (uid_t)uid;
	out->gid = (gid_t)gid;
	return 0;
}

/* "UID:GID" from room_dir/file: 0, -ENOENT, -EINVAL or -errno. */
static int
room_ids_read_file(const char *room_dir, const char *file,
    struct room_ids *out)
{
	char path[PATH_MAX + 320], *text = NULL;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%s/%s", room_dir, file);
	r = read_small_file(path, ROOM_IDS_MAX_FILE, &text, &len);
	if (r == -EFBIG)
		return -EINVAL;
	if (r < 0)
		return r;
	r = strlen(text) == len ? room_ids_parse(text, out) : -EINVAL;
	free(text);
	return r;
}

int
room_ids_read(const char *room_dir, struct room_ids *out)
{
	return room_ids_read_file(room_dir, ROOM_IDS_FILE, out);
}

int
room_ids_get(const char *room_dir, const struct config *cfg,
    struct room_ids *out)
{
	int r = room_ids_read(room_dir, out);

	if (r != -ENOENT)
		return r;
	out->uid = cfg->sandbox_uid;
	out->gid = cfg->sandbox_gid;
	return 0;
}

/* "UID:GID\n" into room_dir/file, atomically.  0 or -errno. */
static int
room_ids_write_file(const char *room_dir, const char *file,
    const struct room_ids *ids)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "%u:%u\n", (unsigned)ids->uid,
	    (unsigned)ids->gid);

	return write_file_atomic(room_dir, file, line, (size_t)n, 0600, 1);
}

/* Record ids for room_dir: a temporary file renamed into place, synced, so
 * a crash leaves either no record or a whole one.  0 or -errno. */
static int
room_ids_write(const char *room_dir, const struct room_ids *ids)
{
	return room_ids_write_file(room_dir, ROOM_IDS_FILE, ids);
}

/* Mark id in used (a bit per uid of the range) when the range holds it. */
static void
room_ids_mark_id(const struct config *cfg, unsigned char *used, long long id)
{
	long long i = id - (long long)cfg->sandbox_uid_base;

	if (i >= 0 && i < cfg->sandbox_uid_count)
		used[i / 8] |= (unsigned char)(1u << (i % 8));
}

/* Mark the ids of one room directory: its record, or the old identity when
 * it has none. */
static void
room_ids_mark(const char *dir, const struct config *cfg, unsigned char *used)
{
	struct room_ids ids;

	if (room_ids_get(dir, cfg, &ids) < 0)
		return;		/* damaged: its start will say so */
	room_ids_mark_id(cfg, used, ids.uid);
	room_ids_mark_id(cfg, used, ids.gid);
}

/* The lowest uid of the range that no room under rooms_dir holds, as both
 * uid and gid, into out.  0, -ENOSPC when none is free, or -errno. */
static int
room_ids_allocate(const char *rooms_dir, const struct config *cfg,
    struct room_ids *out)
{
	char dir[PATH_MAX + 300];
	unsigned char *used;
	struct dirent *e;
	DIR *d;
	int r = -ENOSPC;

	if (!(used = calloc((size_t)cfg->sandbox_uid_count / 8 + 1, 1)))
		return -ENOMEM;
	if (!(d = opendir(rooms_dir))) {
		free(used);
		return errno == ENOENT ? -ENOENT : -errno;
	}
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(dir, sizeof(dir), "%s/%s", rooms_dir, e->d_name);
			room_ids_mark(dir, cfg, used);
		}
	closedir(d);
	/* The old identity is taken even before its rooms are recorded. */
	room_ids_mark_id(cfg, used, cfg->sandbox_uid);
	room_ids_mark_id(cfg, used, cfg->sandbox_gid);
	for (long long i = 0; i < cfg->sandbox_uid_count; i++)
		if (!(used[i / 8] & (1u << (i % 8)))) {
			out->uid = (uid_t)(cfg->sandbox_uid_base + i);
			out->gid = (gid_t)out->uid;
			r = 0;
			break;
		}
	free(used);
	return r;
}

/* Decide the identity of a room that has no record (room_ids.h). */
static int
room_ids_decide(const char *rooms_dir, const char *room_dir,
    const struct config *cfg, struct room_ids *out, char *err, size_t errlen)
{
	char db[PATH_MAX + 320];
	int r;

	snprintf(db, sizeof(db), "%s/%s", room_dir, WORKSPACE_DB_NAME);
	if (access(db, F_OK) == 0) {
		out->uid = cfg->sandbox_uid;
		out->gid = cfg->sandbox_gid;
		return 0;
	}
	r = room_ids_allocate(rooms_dir, cfg, out);
	if (r == -ENOSPC)
		snprintf(err, errlen, "no sandbox uid is free for a new room: "
		    "all %d uids from %u (sandbox-uid-base, sandbox-uid-count) "
		    "belong to rooms; the operator can raise sandbox-uid-count "
		    "or delete rooms", cfg->sandbox_uid_count,
		    (unsigned)cfg->sandbox_uid_base);
	else if (r < 0)
		snprintf(err, errlen, "cannot read %s: %s", rooms_dir,
		    strerror(-r));
	return r;
}

int
room_ids_assign(const char *rooms_dir, const char *name,
    const struct config *cfg, struct room_ids *out, char *err, size_t errlen)
{
	char dir[PATH_MAX + 300];
	int r;

	snprintf(dir, sizeof(dir), "%s/%s", rooms_dir, name);
	r = room_ids_read(dir, out);
	if (r == 0)
		return 0;
	if (r != -ENOENT) {
		snprintf(err, errlen, "its sandbox identity %s/%s is %s; the "
		    "operator must restore it (UID:GID)", dir, ROOM_IDS_FILE,
		    r == -EINVAL ? "damaged" : strerror(-r));
		return r;
	}
	if ((r = room_ids_decide(rooms_dir, dir, cfg, out, err, errlen)) < 0)
		return r;
	if ((r = mkdir_p(dir, 0700)) < 0 || (r = room_ids_write(dir, out)) < 0)
		snprintf(err, errlen, "cannot record its sandbox identity in "
		    "%s: %s", dir, strerror(-r));
	return r;
}

/* 1 when ids is the single identity every room had before rooms had
 * their own (sandbox-uid, sandbox-gid), and it is outside the range. */
static int
room_ids_is_shared(const struct room_ids *ids, const struct config *cfg)
{
	long long i = (long long)ids->uid - (long long)cfg->sandbox_uid_base;

	return ids->uid == cfg->sandbox_uid && ids->gid == cfg->sandbox_gid &&
	    (i < 0 || i >= cfg->sandbox_uid_count);
}

int
room_ids_unshare(const char *rooms_dir, const char *name,
    const struct config *cfg, struct room_ids *ids, char *err, size_t errlen)
{
	char dir[PATH_MAX + 300];
	struct room_ids own;
	int r;

	if (!room_ids_is_shared(ids, cfg))
		return 0;
	snprintf(dir, sizeof(dir), "%s/%s", rooms_dir, name);
	if ((r = room_ids_allocate(rooms_dir, cfg, &own)) < 0) {
		snprintf(err, errlen, "it still runs as the uid all rooms once "
		    "shared (%u), and no uid of its own is free for it: %s",
		    (unsigned)ids->uid, r == -ENOSPC ? "the operator can raise "
		    "sandbox-uid-count or delete rooms" : strerror(-r));
		return r;
	}
	/* The mark first: after a crash between the two writes the next
	 * start finds the shared record and does this again. */
	if ((r = room_ids_write_file(dir, ROOM_IDS_REOWN_FILE, ids)) < 0 ||
	    (r = room_ids_write(dir, &own)) < 0) {
		snprintf(err, errlen, "cannot record its own sandbox identity "
		    "in %s: %s", dir, strerror(-r));
		return r;
	}
	*ids = own;
	return 1;
}

int
room_ids_reown_from(const char *room_dir, struct room_ids *from)
{
	return room_ids_read_file(room_dir, ROOM_IDS_REOWN_FILE, from);
}

int
room_ids_reown_done(const char *room_dir)
{
	char path[PATH_MAX + 320];

	snprintf(path, sizeof(path), "%s/%s", room_dir, ROOM_IDS_REOWN_FILE);
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

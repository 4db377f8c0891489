/*
 * inode.c: inode rows and lookup counts.  Called by core.c with fs->lock held.
 *
 * Identifiers: the FUSE inode number is the inodes.ino rowid itself (root 1,
 * AUTOINCREMENT so never reused; the FUSE generation is always 0).
 *
 * Lookup counts ("pins"): the kernel holds an inode from each lookup-like
 * reply until it forgets it; an unlinked inode (nlink 0) must keep its rows
 * while pinned (an open file stays readable), and is deleted when the last
 * pin goes.  Pins live only in memory, in a chained hash table under
 * fs->pin_lock (pooled reads pin without fs->lock, readers.c): after a
 * crash nothing is pinned, and inode_purge_unlinked drops every nlink-0 inode
 * at the next mount.  A big file's rows are not deleted there but handed to
 * the reclaimer (reclaim.c), which frees them in batches.
 */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>

/* The time now, as the kernel stamps inodes: the coarse clock (one tick,
 * 4 ms at HZ=250), which is what current_time() reads.  With the writeback
 * cache the kernel sets a regular file's mtime and ctime itself at each
 * write, and marks the inode dirty (a setattr of the times at close) only
 * when they differ from its clock: a file created and written within one
 * tick, the common case of a small file, then costs no setattr at all.  A
 * finer clock here would also let a later write's time read earlier than
 * the create's. */
struct timespec
inode_now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME_COARSE, &ts) < 0)
		clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

/* ts as ext4 keeps it: seconds clamped to FS_TIME_MIN..FS_TIME_MAX, and no
 * nanoseconds at either limit (the kernel's timestamp_truncate). */
struct timespec
inode_time_clamp(struct timespec ts)
{
	if (ts.tv_nsec < 0 || ts.tv_nsec > 999999999L)
		ts.tv_nsec = 0;
	if ((long long)ts.tv_sec <= FS_TIME_MIN) {
		ts.tv_sec = (time_t)FS_TIME_MIN;
		ts.tv_nsec = 0;
	} else if ((long long)ts.tv_sec >= FS_TIME_MAX) {
		ts.tv_sec = (time_t)FS_TIME_MAX;
		ts.tv_nsec = 0;
	}
	return ts;
}

/* A timespec from a seconds and a nanoseconds column of st. */
static struct timespec
inode_column_time(sqlite3_stmt *st, int col)
{
	struct timespec ts;

	ts.tv_sec = (time_t)sqlite3_column_int64(st, col);
	ts.tv_nsec = (long)sqlite3_column_int64(st, col + 1);
	return ts;
}

/* Bind ts to parameters i (seconds) and i+1 (nanoseconds) of st. */
static void
inode_bind_time(sqlite3_stmt *st, int i, struct timespec ts)
{
	sqlite3_bind_int64(st, i, (sqlite3_int64)ts.tv_sec);
	sqlite3_bind_int64(st, i + 1, (sqlite3_int64)ts.tv_nsec);
}

/* Inode ino's attributes into out from the INODE_COLUMNS of st's row,
 * starting at column col. */
void
inode_from_row(sqlite3_stmt *st, int col, uint64_t ino, struct fs_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->ino = ino;
	out->mode = (uint32_t)sqlite3_column_int64(st, col);
	out->nlink = (uint32_t)sqlite3_column_int64(st, col + 1);
	out->uid = (uint32_t)sqlite3_column_int64(st, col + 2);
	out->gid = (uint32_t)sqlite3_column_int64(st, col + 3);
	out->size = (uint64_t)sqlite3_column_int64(st, col + 4);
	out->rdev = (uint64_t)sqlite3_column_int64(st, col + 5);
	out->atime = inode_column_time(st, col + 6);
	out->mtime = inode_column_time(st, col + 8);
	out->ctime = inode_column_time(st, col + 10);
	stored_attr(out, (uint64_t)sqlite3_column_int64(st, col + 12));
}

/* Read inode ino into out through st, prepared from INODE_GET_SQL on the
 * caller's connection (the writer's or a reader's: each has its own
 * statement cache).  SQLITE_ROW, SQLITE_DONE when there is no such inode,
 * or an SQLite error code, which the caller maps its own way. */
int
inode_get_on(sqlite3_stmt *st, uint64_t ino, struct fs_attr *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		inode_from_row(st, 0, ino, out);
	sqlite3_reset(st);
	return rc;
}

/* Read inode ino into out: 0, -ENOENT or -errno. */
int
inode_get(struct fs *fs, uint64_t ino, struct fs_attr *out)
{
	sqlite3_stmt *st = db_stmt(fs, INODE_GET_SQL);
	int rc;

	if (!st) {
		memset(out, 0, sizeof(*out));
		return -EIO;
	}
	rc = inode_get_on(st, ino, out);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -ENOENT : db_errno(fs, rc, "inode_get");
}

/* Insert a new inode with times now; its number into *ino.  0 or -errno. */
int
inode_new(struct fs *fs, uint32_t mode, uint32_t uid, uint32_t gid,
    uint64_t rdev, uint32_t nlink, uint64_t *ino)
{
	sqlite3_stmt *st = db_stmt(fs, "INSERT INTO inodes(mode, nlink, uid, "
	    "gid, size, rdev, atime, atime_ns, mtime, mtime_ns, ctime, ctime_ns) "
	    "VALUES(?1,?2,?3,?4,0,?5,?6,?7,?6,?7,?6,?7)");
	int r;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, mode);
	sqlite3_bind_int64(st, 2, nlink);
	sqlite3_bind_int64(st, 3, uid);
	sqlite3_bind_int64(st, 4, gid);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)rdev);
	inode_bind_time(st, 6, inode_now());
	if ((r = db_done(fs, st)) < 0)
		return r;
	*ino = (uint64_t)sqlite3_last_insert_rowid(fs->db);
	return 0;
}

/* Write back every attribute of a (as changed by setattr).  0 or -errno. */
int
inode_put(struct fs *fs, const struct fs_attr *a)
{
	sqlite3_stmt *st = db_stmt(fs, "UPDATE inodes SET mode=?, uid=?, gid=?, "
	    "size=?, atime=?, atime_ns=?, mtime=?, mtime_ns=?, ctime=?, "
	    "ctime_ns=? WHERE ino=?");

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, a->mode);
	sqlite3_bind_int64(st, 2, a->uid);
	sqlite3_bind_int64(st, 3, a->gid);
	/* A directory's st_size is derived (stored.c): its row keeps 0. */
	sqlite3_bind_int64(st, 4, S_ISDIR(a->mode) ? 0 : (sqlite3_int64)a->size);
	inode_bind_time(st, 5, a->atime);
	inode_bind_time(st, 7, a->mtime);
	inode_bind_time(st, 9, a->ctime);
	sqlite3_bind_int64(st, 11, (sqlite3_int64)a->ino);
	return db_done(fs, st);
}

/* Add delta to nlink and set ctime now.  0 or -errno. */
int
inode_add_nlink(struct fs *fs, uint64_t ino, int delta)
{
	sqlite3_stmt *st = db_stmt(fs, "UPDATE inodes SET nlink = max(nlink + ?1, 0), "
	    "ctime = ?2, ctime_ns = ?3 WHERE ino = ?4");

	if (!st)
		return -EIO;
	sqlite3_bind_int(st, 1, delta);
	inode_bind_time(st, 2, inode_now());
	sqlite3_bind_int64(st, 4, (sqlite3_int64)ino);
	return db_done(fs, st);
}

/* Set the chosen times (INODE_* bits) to now.  0 or -errno. */
int
inode_touch(struct fs *fs, uint64_t ino, int which)
{
	sqlite3_stmt *st = db_stmt(fs, "UPDATE inodes SET "
	    "atime = CASE WHEN ?1 & 1 THEN ?2 ELSE atime END, "
	    "atime_ns = CASE WHEN ?1 & 1 THEN ?3 ELSE atime_ns END, "
	    "mtime = CASE WHEN ?1 & 2 THEN ?2 ELSE mtime END, "
	    "mtime_ns = CASE WHEN ?1 & 2 THEN ?3 ELSE mtime_ns END, "
	    "ctime = CASE WHEN ?1 & 4 THEN ?2 ELSE ctime END, "
	    "ctime_ns = CASE WHEN ?1 & 4 THEN ?3 ELSE ctime_ns END WHERE ino = ?4");

	if (!st)
		return -EIO;
	sqlite3_bind_int(st, 1, which);
	inode_bind_time(st, 2, inode_now());
	sqlite3_bind_int64(st, 4, (sqlite3_int64)ino);
	return db_done(fs, st);
}

/* Set size and mtime/ctime now (after a write or truncate).  0 or -errno. */
int
inode_set_size(struct fs *fs, uint64_t ino, uint64_t size)
{
	sqlite3_stmt *st = db_stmt(fs, "UPDATE inodes SET size = ?1, mtime = ?2, "
	    "mtime_ns = ?3, ctime = ?2, ctime_ns = ?3 WHERE ino = ?4");

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)size);
	inode_bind_time(st, 2, inode_now());
	sqlite3_bind_int64(st, 4, (sqlite3_int64)ino);
	return db_done(fs, st);
}

/* Set size, keeping the times (a write from the writeback cache).
 * 0 or -errno. */
int
inode_grow(struct fs *fs, uint64_t ino, uint64_t size)
{
	sqlite3_stmt *st = db_stmt(fs, "UPDATE inodes SET size = ?1 "
	    "WHERE ino = ?2");

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)size);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)ino);
	return db_done(fs, st);
}

/* Delete every row of inode ino (in one statement per table: the caller
 * sees to it that few chunks are left, see reclaim.c).  0 or -errno. */
int
inode_delete(struct fs *fs, uint64_t ino)
{
	static const char *const sqls[] = {
		"DELETE FROM chunks WHERE ino = ?",
		"DELETE FROM symlinks WHERE ino = ?",
		"DELETE FROM xattrs WHERE ino = ?",
		"DELETE FROM inodes WHERE ino = ?",
	};
	int r;

	for (size_t i = 0; i < sizeof(sqls) / sizeof(sqls[0]); i++) {
		sqlite3_stmt *st = db_stmt(fs, sqls[i]);
		if (!st)
			return -EIO;
		sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
		if ((r = db_done(fs, st)) < 0)
			return r;
	}
	return 0;
}

/* Delete inode ino if it has no links and no pins.  0 or -errno. */
int
inode_release(struct fs *fs, uint64_t ino)
{
	struct fs_attr a;
	int r;

	if (ino == FS_ROOT_INO || inode_pinned(fs, ino))
		return 0;
	if ((r = inode_get(fs, ino, &a)) < 0)
		return r == -ENOENT ? 0 : r;
	if (a.nlink != 0)
		return 0;
	return reclaim_defers(fs, a.size, 0) ? reclaim_defer(fs, ino) :
	    inode_delete(fs, ino);
}

/* Delete every unpinned inode with nlink 0, but hand those bigger than one
 * batch to the reclaimer.  The number deleted or -errno. */
int
inode_purge_unlinked(struct fs *fs)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT ino, size FROM inodes "
	    "WHERE nlink = 0 AND ino > ? ORDER BY ino LIMIT 1");
	uint64_t size;
	uint64_t ino = 0;
	int n = 0, r;

	/* One at a time: deleting while a SELECT walks the table is unsafe. */
	while (st) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
		if ((r = sqlite3_step(st)) != SQLITE_ROW) {
			sqlite3_reset(st);
			return r == SQLITE_DONE ? n : db_errno(fs, r, "purge");
		}
		ino = (uint64_t)sqlite3_column_int64(st, 0);
		size = (uint64_t)sqlite3_column_int64(st, 1);
		sqlite3_reset(st);
		if (inode_pinned(fs, ino) || ino == FS_ROOT_INO)
			continue;
		if (reclaim_big(size)) {
			reclaim_defer(fs, ino);
			continue;
		}
		if ((r = inode_delete(fs, ino)) < 0)
			return r;
		n++;
	}
	return -EIO;
}

/* Bucket of ino in the pin table. */
static size_t
inode_bucket(const struct fs *fs, uint64_t ino)
{
	return (size_t)((ino * 0x9E3779B97F4A7C15ULL) >> 20) & (fs->pin_buckets - 1);
}

/* Double the pin table when it gets crowded (best effort on ENOMEM). */
static void
inode_pins_grow(struct fs *fs)
{
	size_t nb = fs->pin_buckets ? fs->pin_buckets * 2 : 1024;
	struct pin **nt = calloc(nb, sizeof(*nt));
	size_t ob = fs->pin_buckets;
	struct pin **ot = fs->pins;

	if (!nt)
		return;
	fs->pins = nt;
	fs->pin_buckets = nb;
	for (size_t i = 0; i < ob; i++) {
		struct pin *p = ot[i], *next;
		for (; p; p = next) {
			next = p->next;
			size_t b = inode_bucket(fs, p->ino);
			p->next = nt[b];
			nt[b] = p;
		}
	}
	free(ot);
}

/* Add n lookups to ino.  An allocation failure is logged (the inode then
 * lives until the next mount if it is unlinked). */
static void
inode_pin_locked(struct fs *fs, uint64_t ino, uint64_t n)
{
	struct pin *p;
	size_t b;

	if (fs->npins >= fs->pin_buckets)
		inode_pins_grow(fs);
	if (!fs->pin_buckets)
		return;
	b = inode_bucket(fs, ino);
	for (p = fs->pins[b]; p; p = p->next) {
		if (p->ino == ino) {
			p->n += n;
			return;
		}
	}
	if (!(p = malloc(sizeof(*p)))) {
		log_error("out of memory counting lookups of inode %llu",
		    (unsigned long long)ino);
		return;
	}
	p->ino = ino;
	p->n = n;
	p->writers = 0;
	p->next = fs->pins[b];
	fs->pins[b] = p;
	fs->npins++;
}

/* Add n lookups to ino (fs->pin_lock taken here, fs->lock or not). */
void
inode_pin(struct fs *fs, uint64_t ino, uint64_t n)
{
	pthread_mutex_lock(&fs->pin_lock);
	inode_pin_locked(fs, ino, n);
	pthread_mutex_unlock(&fs->pin_lock);
}

/* Drop n lookups of ino; the lookups left.  An underflow is a broken
 * invariant of the kernel protocol: logged, and the count is cleared. */
static uint64_t
inode_unpin_locked(struct fs *fs, uint64_t ino, uint64_t n)
{
	struct pin **pp, *p;

	if (!fs->pin_buckets)
		return 0;
	for (pp = &fs->pins[inode_bucket(fs, ino)]; (p = *pp); pp = &p->next) {
		if (p->ino != ino)
			continue;
		if (p->n > n) {
			p->n -= n;
			return p->n;
		}
		if (p->n < n)
			log_error("inode %llu forgotten %llu times, looked up %llu",
			    (unsigned long long)ino, (unsigned long long)n,
			    (unsigned long long)p->n);
		*pp = p->next;
		free(p);
		fs->npins--;
		return 0;
	}
	return 0;
}

/* Drop n lookups of ino (fs->pin_lock taken here); the lookups left. */
uint64_t
inode_unpin(struct fs *fs, uint64_t ino, uint64_t n)
{
	uint64_t left;

	pthread_mutex_lock(&fs->pin_lock);
	left = inode_unpin_locked(fs, ino, n);
	pthread_mutex_unlock(&fs->pin_lock);
	return left;
}

/* 1 when ino has lookups, else 0.  A pooled lookup (readers.c) may pin ino
 * just after a no: the caller (fs->lock held) deletes only inodes without
 * names, and such a lookup found the name in a directory the caller's
 * change touched, so it drops its pin and asks the writer again. */
int
inode_pinned(struct fs *fs, uint64_t ino)
{
	struct pin *p;
	int found = 0;

	pthread_mutex_lock(&fs->pin_lock);
	if (fs->pin_buckets)
		for (p = fs->pins[inode_bucket(fs, ino)]; p && !found; p = p->next)
			found = p->ino == ino;
	pthread_mutex_unlock(&fs->pin_lock);
	return found;
}

/* Count a handle of ino opened (delta 1) or closed (-1) for writing: the
 * kernel may hold dirty pages of ino while one is open, which a snapshot
 * command has it write back first (snapshot.c).  An open file is always
 * looked up, so its pin exists. */
void
fs_writers(struct fs *fs, uint64_t ino, int delta)
{
	struct pin *p;

	pthread_mutex_lock(&fs->pin_lock);
	if (fs->pin_buckets)
		for (p = fs->pins[inode_bucket(fs, ino)]; p; p = p->next)
			if (p->ino == ino) {
				if (delta > 0 || p->writers > 0)
					p->writers += (uint64_t)(int64_t)delta;
				break;
			}
	pthread_mutex_unlock(&fs->pin_lock);
}

/* Free the pin table. */
void
inode_pins_free(struct fs *fs)
{
	pthread_mutex_lock(&fs->pin_lock);
	for (size_t i = 0; i < fs->pin_buckets; i++) {
		struct pin *p = fs->pins[i], *next;
		for (; p; p = next) {
			next = p->next;
			free(p);
		}
	}
	free(fs->pins);
	fs->pins = NULL;
	fs->pin_buckets = fs->npins = 0;
	pthread_mutex_unlock(&fs->pin_lock);
}

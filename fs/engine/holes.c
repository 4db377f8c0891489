/*
 * holes.c: where a regular file has data and where it has holes, and
 * punching new holes.  Called by core.c (fs_seek, fs_fallocate) with
 * fs->lock held; the caller passes the file's size and keeps it.
 *
 * What is data: the bytes of the chunks stored, [idx*FS_CHUNK,
 * idx*FS_CHUNK + len).  Everything else reads as zeros and is a
 * hole: a missing chunk, the tail past a short chunk's end, and the virtual
 * hole at the end of the file.  So SEEK_DATA and SEEK_HOLE answer in bytes,
 * not whole chunks; a chunk stores from its start, so data begins where
 * the chunk of its first byte begins (ext4 rounds to its 4 KiB blocks the
 * same way; cp, tar and rsync only need holes to read as zeros).
 *
 * Punching (fallocate PUNCH_HOLE and ZERO_RANGE): chunks wholly inside the
 * range are deleted; a chunk the range only overlaps gets zeros in it and
 * then loses its trailing zeros (bytes past a chunk's end read as zeros
 * anyway), and is deleted when nothing but zeros is left.  So a punched
 * chunk is gone and its bytes leave stat's st_blocks and the quota (both
 * follow the rows, fs/engine/stored.c and fs/engine/quota.c).
 */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* The chunks of a file of size bytes from the one holding off on, in
 * order: (idx, stored length) rows.  Chunks at or past the size are a
 * shrunk file's leftovers that reclaim.c has not freed yet, not the file's:
 * left out.  NULL when the statement cannot be had. */
static sqlite3_stmt *
holes_chunks_from(struct fs *fs, uint64_t ino, uint64_t size, uint64_t off)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT idx, len FROM chunks "
	    "WHERE ino = ?1 AND idx >= ?2 AND idx < ?3 ORDER BY idx");

	if (!st)
		return NULL;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)(off / FS_CHUNK));
	sqlite3_bind_int64(st, 3, (sqlite3_int64)((size + FS_CHUNK - 1) /
	    FS_CHUNK));
	return st;
}

/* SEEK_DATA: the first data byte at or after off into *out; -ENXIO when
 * only holes follow. */
static int
holes_next_data(struct fs *fs, uint64_t ino, uint64_t size, uint64_t off,
    uint64_t *out)
{
	sqlite3_stmt *st = holes_chunks_from(fs, ino, size, off);
	int rc, r = -ENXIO;

	if (!st)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t start = (uint64_t)sqlite3_column_int64(st, 0) * FS_CHUNK;
		uint64_t end = start + (uint64_t)sqlite3_column_int64(st, 1);

		if (end > off) {
			*out = start > off ? start : off;
			r = 0;
			break;
		}
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = db_errno(fs, rc, "seek data");
	sqlite3_reset(st);
	return r;
}

/* SEEK_HOLE: the first hole byte at or after off into *out (at most the
 * size: the end of the file is a hole). */
static int
holes_next_hole(struct fs *fs, uint64_t ino, uint64_t size, uint64_t off,
    uint64_t *out)
{
	sqlite3_stmt *st = holes_chunks_from(fs, ino, size, off);
	uint64_t pos = off;
	int rc;

	if (!st)
		return -EIO;
	/* Walk the run of data that holds pos, chunk after chunk. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t start = (uint64_t)sqlite3_column_int64(st, 0) * FS_CHUNK;
		uint64_t len = (uint64_t)sqlite3_column_int64(st, 1);

		if (start > pos || start + len <= pos)
			break;
		pos = start + len;
		if (len < FS_CHUNK)
			break;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_errno(fs, rc, "seek hole");
	*out = pos < size ? pos : size;
	return 0;
}

/* SEEK_DATA or SEEK_HOLE from off in a file of size bytes: the offset into
 * *out, -ENXIO at or past the end (or no data after off), -EINVAL for
 * another whence, or -errno. */
int
holes_seek(struct fs *fs, uint64_t ino, uint64_t size, uint64_t off,
    int whence, uint64_t *out)
{
	*out = 0;
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off >= size)
		return -ENXIO;
	if (whence == SEEK_DATA)
		return holes_next_data(fs, ino, size, off, out);
	return holes_next_hole(fs, ino, size, off, out);
}

/* Store chunk idx of ino as buf (len bytes) without its trailing zeros, or
 * delete it when only zeros are left (in a new block: one a snapshot
 * shares stays as it was).  0 or -errno. */
static int
holes_store_trimmed(struct fs *fs, uint64_t ino, uint64_t idx,
    const unsigned char *buf, size_t len)
{
	while (len > 0 && buf[len - 1] == 0)
		len--;
	if (len == 0)
		return chunks_drop(fs, ino, idx);
	return chunks_store(fs, ino, idx, buf, len);
}

/* Zero bytes [from, to) of chunk idx (offsets inside the chunk), if it is
 * stored.  0 or -errno. */
static int
holes_zero_in_chunk(struct fs *fs, uint64_t ino, uint64_t idx, size_t from,
    size_t to)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT b.data FROM chunks c JOIN "
	    "blocks b ON b.id = c.block WHERE c.ino = ? AND c.idx = ?");
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc, r;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)idx);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		len = (size_t)sqlite3_column_bytes(st, 0);
		if (from < len && (buf = malloc(len)))
			memcpy(buf, sqlite3_column_blob(st, 0), len);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? 0 : db_errno(fs, rc, "punch read");
	if (from >= len)
		return 0;         /* the range lies in the chunk's zero tail */
	if (!buf)
		return -ENOMEM;
	memset(buf + from, 0, (to < len ? to : len) - from);
	r = holes_store_trimmed(fs, ino, idx, buf, len);
	free(buf);
	return r;
}

/* Make [off, off+len) of a file of size bytes a hole: it reads as zeros
 * and stores nothing (see the head).  The size is the caller's.  0 or
 * -errno; a failure part way is undone by the caller's savepoint. */
int
holes_punch(struct fs *fs, uint64_t ino, uint64_t size, uint64_t off,
    uint64_t len)
{
	uint64_t end = len > size - off ? size : off + len;
	uint64_t first, last;
	int r;

	if (off >= size || end <= off)
		return 0;
	first = off / FS_CHUNK;
	last = (end - 1) / FS_CHUNK;
	if ((r = holes_zero_in_chunk(fs, ino, first, off - first * FS_CHUNK,
	    (size_t)((end < (first + 1) * FS_CHUNK ? end :
	    (first + 1) * FS_CHUNK) - first * FS_CHUNK))) < 0)
		return r;
	if (last != first && (r = holes_zero_in_chunk(fs, ino, last, 0,
	    (size_t)(end - last * FS_CHUNK))) < 0)
		return r;
	if (last <= first + 1)
		return 0;
	return chunks_drop_range(fs, ino, first + 1, last);
}

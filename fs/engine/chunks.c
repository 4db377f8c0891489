/*
 * chunks.c: a regular file's bytes, in chunks of at most FS_CHUNK bytes
 * keyed (ino, idx), each pointing at a block that holds its bytes (schema.c:
 * blocks are shared with snapshots).  Called by core.c and holes.c with
 * fs->lock held; the caller keeps the inode's size and clamps reads to it.
 *
 * Invariants (I6 and I10 of schema.c): 0 < len <= FS_CHUNK, len is the
 * block's length and idx*FS_CHUNK + len <= size.  A missing chunk is a hole
 * and bytes past a short chunk's end read as zeros, so truncate up writes
 * nothing and truncate down deletes and trims.  A block is the live tree's
 * alone unless a snapshot names it; one that a snapshot names is never
 * written: the chunk gets a copy first (copy on write), so a snapshot keeps
 * what it saw, and rewriting a snapshotted file costs the chunks rewritten.
 *
 * Workload: the kernel sends writes of up to 1 MiB, mostly sequential, so
 * most chunks are written whole (a new block and one upsert, without
 * reading; the block the chunk had goes with its last reference, by the
 * schema's triggers), as is the first piece of a chunk past the file's end
 * (an append); a write inside an existing chunk's length is done in place
 * through incremental blob I/O on its block, and only a write that extends
 * a short chunk reads and rewrites it.  Without snapshots (fs->snaps_maybe
 * 0) no write asks whether a block is shared.
 */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>

/* Point chunk idx of ino at block, len bytes long (an upsert: the block it
 * named before goes with its last reference).  0 or -errno. */
static int
chunks_point(struct fs *fs, uint64_t ino, uint64_t idx, sqlite3_int64 block,
    size_t len)
{
	sqlite3_stmt *st = db_stmt(fs, "INSERT INTO chunks(ino, idx, block, len) "
	    "VALUES(?1, ?2, ?3, ?4) ON CONFLICT(ino, idx) DO UPDATE SET "
	    "block = excluded.block, len = excluded.len");

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)idx);
	sqlite3_bind_int64(st, 3, block);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)len);
	return db_done(fs, st);
}

/* Replace (or insert) chunk idx of ino with n bytes of p, in a new block.
 * 0 or -errno. */
static int
chunks_put(struct fs *fs, uint64_t ino, uint64_t idx, const void *p, size_t n)
{
	sqlite3_stmt *st = db_stmt(fs, "INSERT INTO blocks(data) VALUES(?)");
	int r;

	if (!st)
		return -EIO;
	sqlite3_bind_blob(st, 1, p, (int)n, SQLITE_STATIC);
	if ((r = db_done(fs, st)) < 0)
		return r;
	return chunks_point(fs, ino, idx, sqlite3_last_insert_rowid(fs->db), n);
}

/* chunks_put for holes.c: chunk idx of ino becomes the n bytes of p. */
int
chunks_store(struct fs *fs, uint64_t ino, uint64_t idx, const void *p,
    size_t n)
{
	return chunks_put(fs, ino, idx, p, n);
}

/* Chunk idx of ino: its block and length into *block and *len.  1 when it
 * is stored, 0 when it is a hole, or -errno. */
static int
chunks_lookup(struct fs *fs, uint64_t ino, uint64_t idx, sqlite3_int64 *block,
    size_t *len)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT block, len FROM chunks "
	    "WHERE ino = ? AND idx = ?");
	int rc;

	*block = 0;
	*len = 0;
	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)idx);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*block = sqlite3_column_int64(st, 0);
		*len = (size_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : db_errno(fs, rc, "chunks_lookup");
}

/* 1 when a snapshot or another live chunk names block (so it must not be
 * written), 0 when one chunk has it alone, or -errno. */
static int
chunks_shared(struct fs *fs, sqlite3_int64 block)
{
	sqlite3_stmt *st;
	int rc;

	if (!fs->snaps_maybe && !fs->blocks_shared_live)
		return 0;
	if (!(st = db_stmt(fs, "SELECT 1 WHERE EXISTS (SELECT 1 FROM "
	    "snap_chunks WHERE block = ?1) OR (SELECT count(*) FROM chunks "
	    "WHERE block = ?1) > 1")))
		return -EIO;
	sqlite3_bind_int64(st, 1, block);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return rc == SQLITE_ROW;
	return db_errno(fs, rc, "chunks_shared");
}

/* Give chunk idx of ino, which names *block of len bytes, a block of its
 * own holding the first keep (<= len) bytes: *block itself, cut to keep,
 * when the live tree has it alone, else a copy (the snapshot keeps the
 * original).  *block becomes the chunk's block.  0 or -errno. */
static int
chunks_own(struct fs *fs, uint64_t ino, uint64_t idx, sqlite3_int64 *block,
    size_t len, size_t keep)
{
	sqlite3_stmt *st;
	int shared, r;

	if ((shared = chunks_shared(fs, *block)) < 0)
		return shared;
	if (!shared && keep == len)
		return 0;
	st = shared ? db_stmt(fs, "INSERT INTO blocks(data) SELECT "
	    "substr(data, 1, ?1) FROM blocks WHERE id = ?2") :
	    db_stmt(fs, "UPDATE blocks SET data = substr(data, 1, ?1) "
	    "WHERE id = ?2");
	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)keep);
	sqlite3_bind_int64(st, 2, *block);
	if ((r = db_done(fs, st)) < 0)
		return r;
	if (shared)
		*block = sqlite3_last_insert_rowid(fs->db);
	return chunks_point(fs, ino, idx, *block, keep);
}

/* Write n bytes of p at coff inside block (at least coff+n long) in place.
 * 0 or -errno. */
static int
chunks_patch(struct fs *fs, sqlite3_int64 block, size_t coff, const void *p,
    size_t n)
{
	sqlite3_blob *blob;
	int rc;

	rc = sqlite3_blob_open(fs->db, "main", "blocks", "data", block, 1, &blob);
	if (rc != SQLITE_OK)
		return db_errno(fs, rc, "chunks_patch open");
	rc = sqlite3_blob_write(blob, p, (int)n, (int)coff);
	sqlite3_blob_close(blob);
	return rc == SQLITE_OK ? 0 : db_errno(fs, rc, "chunks_patch write");
}

/* Rewrite chunk idx of ino (block, len bytes now) as coff+n bytes: old
 * bytes, zeros up to coff, then p, in a new block.  0 or -errno. */
static int
chunks_extend(struct fs *fs, uint64_t ino, uint64_t idx, sqlite3_int64 block,
    size_t len, size_t coff, const void *p, size_t n)
{
	sqlite3_blob *blob;
	unsigned char *buf;
	size_t newlen = coff + n;
	int rc, r;

	if (!(buf = malloc(newlen)))
		return -ENOMEM;
	rc = sqlite3_blob_open(fs->db, "main", "blocks", "data", block, 0, &blob);
	if (rc == SQLITE_OK) {
		rc = sqlite3_blob_read(blob, buf, (int)(len < coff ? len : coff),
		    0);
		sqlite3_blob_close(blob);
	}
	if (rc != SQLITE_OK) {
		free(buf);
		return db_errno(fs, rc, "chunks_extend read");
	}
	if (coff > len)
		memset(buf + len, 0, coff - len);
	memcpy(buf + coff, p, n);
	r = chunks_put(fs, ino, idx, buf, newlen);
	free(buf);
	return r;
}

/* Store chunk idx, which has no row, as zeros up to coff then n bytes of
 * p.  0 or -errno. */
static int
chunks_write_new(struct fs *fs, uint64_t ino, uint64_t idx, size_t coff,
    const void *p, size_t n)
{
	unsigned char *buf;
	int r;

	if (coff == 0)
		return chunks_put(fs, ino, idx, p, n);
	if (!(buf = calloc(1, coff + n)))
		return -ENOMEM;
	memcpy(buf + coff, p, n);
	r = chunks_put(fs, ino, idx, buf, coff + n);
	free(buf);
	return r;
}

/* Write n bytes of p at offset coff of chunk idx; fresh when the chunk
 * is known to have no row.  0 or -errno. */
static int
chunks_write_one(struct fs *fs, uint64_t ino, uint64_t idx, size_t coff,
    const void *p, size_t n, int fresh)
{
	sqlite3_int64 block;
	size_t len;
	int r;

	if (coff == 0 && n == FS_CHUNK)
		return chunks_put(fs, ino, idx, p, n);
	if (fresh)
		return chunks_write_new(fs, ino, idx, coff, p, n);
	if ((r = chunks_lookup(fs, ino, idx, &block, &len)) < 0)
		return r;
	if (r == 0)
		return chunks_write_new(fs, ino, idx, coff, p, n);
	if (len < coff + n)
		return chunks_extend(fs, ino, idx, block, len, coff, p, n);
	if ((r = chunks_own(fs, ino, idx, &block, len, len)) < 0)
		return r;
	/* The one change of a file's bytes that writes no row: the update
	 * hook never sees it, and a write-back that keeps the size writes no
	 * inode row either, so it is marked here; unmarked, a pooled reader
	 * answered from the committed bytes (readers.c, the one rule). */
	readers_touch(fs, ino);
	return chunks_patch(fs, block, coff, p, n);
}

/* Write size bytes of buf at off into a file of filesize bytes (the caller
 * updates the size, and has dropped any chunk left past it: a chunk that
 * starts at or past filesize has no row, so a write there, an append,
 * stores it without looking).  0 or -errno; a failure part way is undone
 * by the caller's savepoint. */
int
chunks_write(struct fs *fs, uint64_t ino, uint64_t filesize, uint64_t off,
    const void *buf, size_t size)
{
	const unsigned char *p = buf;
	int r;

	while (size > 0) {
		uint64_t idx = off / FS_CHUNK;
		size_t coff = (size_t)(off % FS_CHUNK);
		size_t n = FS_CHUNK - coff < size ? FS_CHUNK - coff : size;

		if ((r = chunks_write_one(fs, ino, idx, coff, p, n,
		    idx * FS_CHUNK >= filesize)) < 0)
			return r;
		p += n;
		off += n;
		size -= n;
	}
	return 0;
}

/* A stored chunk met by a read: where its row is and how long it is. */
struct chunk_ref {
	uint64_t idx;
	sqlite3_int64 block;
	uint64_t len;
};

/* Chunks a read of at most CHUNKS_READ_MAX bytes can meet: reads are cut
 * into pieces this big. */
#define CHUNKS_READ_MAX (1u << 20)
#define CHUNKS_READ_REFS (CHUNKS_READ_MAX / FS_CHUNK + 1)

/* The chunks of ino with first <= idx <= last, at most CHUNKS_READ_REFS of
 * them, in refs (the block rows are not read), with find prepared
 * from CHUNKS_FIND_SQL.  Their number, or minus an SQLite error code. */
static int
chunks_find(sqlite3_stmt *find, uint64_t ino, uint64_t first, uint64_t last,
    struct chunk_ref *refs)
{
	int n = 0, rc = SQLITE_DONE;

	sqlite3_bind_int64(find, 1, (sqlite3_int64)ino);
	sqlite3_bind_int64(find, 2, (sqlite3_int64)first);
	sqlite3_bind_int64(find, 3, (sqlite3_int64)last);
	while (n < (int)CHUNKS_READ_REFS &&
	    (rc = sqlite3_step(find)) == SQLITE_ROW) {
		refs[n].idx = (uint64_t)sqlite3_column_int64(find, 0);
		refs[n].block = sqlite3_column_int64(find, 1);
		refs[n++].len = (uint64_t)sqlite3_column_int64(find, 2);
	}
	sqlite3_reset(find);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? n : -rc;
}

/* Copy the part of chunk ref inside [off, off+size) to its place in out,
 * reading only that range of the blob (a 4 KiB read of a 64 KiB chunk
 * does not fetch the rest, and SQLite reads whole overflow pages straight
 * into out), after zeroing the hole between *done (bytes of out already
 * filled) and it.  *blob is opened on db at first use and moved to each
 * next row.  SQLITE_OK or an SQLite error code. */
static int
chunks_copy(sqlite3 *db, sqlite3_blob **blob, const struct chunk_ref *ref,
    uint64_t off, size_t size, unsigned char *out, uint64_t *done)
{
	uint64_t start = ref->idx * FS_CHUNK;
	uint64_t end = off + size;
	uint64_t from = start > off ? start : off;
	uint64_t to = start + ref->len < end ? start + ref->len : end;
	int rc;

	if (to <= from)
		return SQLITE_OK;
	if (from - off > *done)
		memset(out + *done, 0, from - off - *done);
	*done = to - off;
	if (*blob)
		rc = sqlite3_blob_reopen(*blob, ref->block);
	else
		rc = sqlite3_blob_open(db, "main", "blocks", "data", ref->block,
		    0, blob);
	if (rc == SQLITE_OK)
		rc = sqlite3_blob_read(*blob, out + (from - off), (int)(to - from),
		    (int)(from - start));
	return rc;
}

/* chunks_read_on of at most CHUNKS_READ_MAX bytes. */
static int
chunks_read_piece(sqlite3 *db, sqlite3_stmt *find, sqlite3_blob **blob,
    uint64_t ino, uint64_t off, unsigned char *out, size_t size)
{
	struct chunk_ref refs[CHUNKS_READ_REFS];
	uint64_t done = 0;
	int n, i, rc = SQLITE_OK;

	/* Rows come in idx order (the primary key's index), so the holes
	 * between them are zeroed as they go, not the whole buffer first. */
	n = chunks_find(find, ino, off / FS_CHUNK, (off + size - 1) / FS_CHUNK,
	    refs);
	if (n < 0)
		return -n;
	for (i = 0; i < n && rc == SQLITE_OK; i++)
		rc = chunks_copy(db, blob, &refs[i], off, size, out, &done);
	/* A handle whose reopen or read failed is aborted: not kept. */
	if (rc != SQLITE_OK && *blob) {
		sqlite3_blob_close(*blob);
		*blob = NULL;
	}
	if (rc == SQLITE_OK && done < size)
		memset(out + done, 0, size - done);
	return rc;
}

/* Read size bytes of ino at off into buf, zeros for holes (the caller
 * clamped size to the file's size), on connection db with find prepared
 * there from CHUNKS_FIND_SQL.  *blob is a handle on db's blocks (NULL: one
 * is opened at the first block met); it is left open for the caller to
 * reuse in the same read transaction, or to close.  The writer and the
 * readers (readers.c) both read through here, each on its own connection
 * and statement cache.  SQLITE_OK or an SQLite error code. */
int
chunks_read_on(sqlite3 *db, sqlite3_stmt *find, sqlite3_blob **blob,
    uint64_t ino, uint64_t off, void *buf, size_t size)
{
	unsigned char *out = buf;
	int rc;

	while (size > 0) {
		size_t n = size < CHUNKS_READ_MAX ? size : CHUNKS_READ_MAX;

		rc = chunks_read_piece(db, find, blob, ino, off, out, n);
		if (rc != SQLITE_OK)
			return rc;
		off += n;
		out += n;
		size -= n;
	}
	return SQLITE_OK;
}

/* Chunk idx of ino on find (prepared from CHUNKS_FIND_SQL): its block
 * and length into *block and *len (0 and 0 for a hole).  SQLITE_OK or an
 * SQLite error code (readers.c keeps what it says for its snapshot). */
int
chunks_lookup_on(sqlite3_stmt *find, uint64_t ino, uint64_t idx,
    sqlite3_int64 *block, uint64_t *len)
{
	struct chunk_ref refs[CHUNKS_READ_REFS];
	int n = chunks_find(find, ino, idx, idx, refs);

	*block = n >= 1 ? refs[0].block : 0;
	*len = n >= 1 ? refs[0].len : 0;
	return n < 0 ? -n : SQLITE_OK;
}

/* Read size bytes at coff (coff + size <= FS_CHUNK) of chunk idx whose
 * block and length chunks_lookup_on gave (block 0: a hole), zeros past its
 * length, into buf, through *blob as chunks_read_on does.  SQLITE_OK or
 * an SQLite error code. */
int
chunks_read_chunk_on(sqlite3 *db, sqlite3_blob **blob, uint64_t idx,
    sqlite3_int64 block, uint64_t len, uint64_t coff, void *buf, size_t size)
{
	struct chunk_ref ref = { idx, block, len };
	uint64_t done = 0;
	int rc = SQLITE_OK;

	if (block != 0)
		rc = chunks_copy(db, blob, &ref, idx * FS_CHUNK + coff, size, buf,
		    &done);
	if (rc != SQLITE_OK && *blob) {
		sqlite3_blob_close(*blob);
		*blob = NULL;
	}
	if (rc == SQLITE_OK && done < size)
		memset((unsigned char *)buf + done, 0, size - done);
	return rc;
}

/* chunks_read_on the writer's connection (fs->lock held).  0 or -errno. */
int
chunks_read(struct fs *fs, uint64_t ino, uint64_t off, void *buf, size_t size)
{
	sqlite3_blob *blob = NULL;
	sqlite3_stmt *find;
	int rc;

	if (size == 0)
		return 0;
	if (!(find = db_stmt(fs, CHUNKS_FIND_SQL)))
		return -EIO;
	rc = chunks_read_on(fs->db, find, &blob, ino, off, buf, size);
	sqlite3_blob_close(blob);
	return rc == SQLITE_OK ? 0 : db_errno(fs, rc, "chunks_read");
}

/* Cut the chunk holding byte size, if any, to end there (the chunks past
 * it are the caller's); a block a snapshot shares is copied, not cut.
 * 0 or -errno. */
int
chunks_trim(struct fs *fs, uint64_t ino, uint64_t size)
{
	uint64_t keep = size % FS_CHUNK;
	sqlite3_int64 block;
	size_t len;
	int r;

	if (keep == 0)
		return 0;
	if ((r = chunks_lookup(fs, ino, size / FS_CHUNK, &block, &len)) <= 0)
		return r;
	if (len <= keep)
		return 0;
	return chunks_own(fs, ino, size / FS_CHUNK, &block, len, (size_t)keep);
}

/* Delete chunk idx of ino, if stored (holes.c).  0 or -errno. */
int
chunks_drop(struct fs *fs, uint64_t ino, uint64_t idx)
{
	return chunks_drop_range(fs, ino, idx, idx + 1);
}

/* Drop the bytes at and past size (the caller sets the size).  0 or -errno. */
int
chunks_truncate(struct fs *fs, uint64_t ino, uint64_t size)
{
	sqlite3_stmt *st;
	int r;

	st = db_stmt(fs, "DELETE FROM chunks WHERE ino = ? AND idx >= ?");
	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)((size + FS_CHUNK - 1) / FS_CHUNK));
	if ((r = db_done(fs, st)) < 0)
		return r;
	return chunks_trim(fs, ino, size);
}

/* Delete the chunks of ino with from <= idx < to (fs/engine/reclaim.c: garbage
 * a growing file uncovers).  0 or -errno. */
int
chunks_drop_range(struct fs *fs, uint64_t ino, uint64_t from, uint64_t to)
{
	sqlite3_stmt *st;

	if (to <= from)
		return 0;
	st = db_stmt(fs, "DELETE FROM chunks WHERE ino = ? AND idx >= ? "
	    "AND idx < ?");
	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)from);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)to);
	return db_done(fs, st);
}

/* Delete at most max chunks of ino at idx >= from, the lowest first (one
 * batch of fs/engine/reclaim.c).  The number deleted, or -errno. */
int
chunks_free_batch(struct fs *fs, uint64_t ino, uint64_t from, int max)
{
	sqlite3_stmt *st = db_stmt(fs, "DELETE FROM chunks WHERE rowid IN "
	    "(SELECT rowid FROM chunks WHERE ino = ?1 AND idx >= ?2 "
	    "ORDER BY idx LIMIT ?3)");
	int r;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)from);
	sqlite3_bind_int(st, 3, max);
	if ((r = db_done(fs, st)) < 0)
		return r;
	return sqlite3_changes(fs->db);
}

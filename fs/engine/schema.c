/*
 * schema.c: the on-disk format of workspace.db, its invariants and its
 * migrations.  fs/engine/core.c calls schema_create from mkfs and
 * schema_open_check whenever it opens a database; fs/engine/fsck.c checks the
 * invariants listed here. man/atrium-fs.8 documents the same tables.
 *
 * Tables (user_version 3):
 *
 *   meta(key TEXT PRIMARY KEY, value)
 *       format = 'atrium-fs', chunk_size = 65536, created = ns since epoch;
 *       quota_bytes, quota_inodes = the last mount's limits (quota.c).
 *   inodes(ino INTEGER PRIMARY KEY AUTOINCREMENT, mode, nlink, uid, gid,
 *          size, rdev, atime, mtime, ctime, atime_ns, mtime_ns, ctime_ns,
 *          stored)
 *       One row per file, directory, symlink, fifo, socket or device.  ino is
 *       the FUSE inode number (1 is the root) and is never reused, so FUSE
 *       generations stay 0 (a restored snapshot brings back the numbers it
 *       had, which no other inode took meanwhile).  A time is whole seconds
 *       since the epoch (atime, negative before 1970) plus nanoseconds
 *       0..999999999 (atime_ns), as struct timespec: every time ext4 keeps
 *       (1901 to 2446) fits, which int64 nanoseconds (1677 to 2262) did not.
 *       stored is what the inode keeps: a regular file's chunk bytes
 *       (st_blocks), a directory's entry records, 8 + the name's length
 *       rounded up to 4 each (st_size), 0 for the others; TEMP triggers
 *       keep it (fs/engine/stored.c).  size is 0 for a directory.
 *   dirents(id INTEGER PRIMARY KEY, parent, name TEXT, ino)
 *       One row per name.  id is the readdir cookie: stable while other
 *       entries come and go, and kept by rename.  UNIQUE(parent, name).
 *   blocks(id INTEGER PRIMARY KEY, data BLOB)
 *       Content: 1..chunk_size bytes each, shared by the live tree and any
 *       number of snapshots, never by two live chunks.
 *   chunks(ino, idx, block, len, PRIMARY KEY(ino, idx))
 *       A regular file's bytes [idx*chunk_size, idx*chunk_size+len) are
 *       block's data, len its length (kept here so that reads, SEEK_DATA
 *       and the stored/quota triggers never touch the block row).  A
 *       missing chunk, or bytes past a chunk's length, read as zeros.
 *   symlinks(ino INTEGER PRIMARY KEY, target BLOB)
 *   xattrs(ino, name TEXT, value BLOB, PRIMARY KEY(ino, name))
 *   snapshots(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE,
 *             created)
 *       created is ns since the epoch.  fs/engine/snapshot.c takes and drops
 *       them, fs/engine/restore.c restores them.
 *   snap_inodes, snap_dirents, snap_chunks, snap_symlinks, snap_xattrs
 *       The rows of inodes, dirents, chunks, symlinks and xattrs of every
 *       linked inode as they were when snapshot snap was taken, each keyed
 *       by (snap, the live table's key).  snap_chunks(block) is indexed:
 *       it answers "is this block shared?" before a write and "is it still
 *       wanted?" when a reference goes.
 *
 * Blocks are freed by reference, not by count: triggers of the schema
 * itself (so that every writer, the daemon, fsck's repairs, export and
 * import alike, keeps them) delete a block when the last chunk or
 * snap_chunk naming it goes, so no counter row is rewritten by a write, a
 * snapshot or a drop.  A write to a block that a snapshot names copies it
 * first (fs/engine/chunks.c), so a snapshot never sees a later write.
 *
 * Invariants (fs/engine/fsck.c checks each one):
 *   I1  the root (ino 1) exists, is a directory and has no dirent.
 *   I2  every dirent's parent is an existing directory and its ino exists.
 *   I3  names are 1..255 bytes, contain no '/' and are not "." or "..".
 *   I4  a directory other than the root has exactly one dirent; its nlink is
 *       2 + its subdirectories.  Any other inode's nlink equals its dirents.
 *   I5  every inode other than the root has a dirent, except inodes with
 *       nlink 0, which exist only while a mounted daemon still has them
 *       open or looked up, or is freeing them in the background (they are
 *       deleted on forget, by the reclaimer, and on the next mount).
 *   I6  chunks belong to existing regular files; 0 < len <= chunk_size and
 *       idx*chunk_size + len <= size, except chunks wholly past the size
 *       (idx*chunk_size >= size), which a deferred truncate leaves for the
 *       reclaimer (fs/engine/reclaim.c) and, like unlinked inodes, exist only while
 *       a mounted daemon is freeing them (or until the next mount).
 *   I7  a symlink has exactly one symlinks row and its size is the target's
 *       length; symlinks rows belong to symlinks; xattrs to existing inodes.
 *   I8  every directory is reachable from the root (no cycles).
 *   I9  times' nanoseconds lie in 0..999999999; stored is the sum of the
 *       file's chunk lengths, or of the directory's entry records.
 *   I10 every chunk and snap_chunk names an existing block and its len is
 *       the block's length; no two chunks name one block; every block is
 *       named by a chunk or a snap_chunk.
 *   I11 every snap_ row belongs to an existing snapshot, and each
 *       snapshot's dirents name inodes of the same snapshot.
 *
 * Migrations: user_version 0 is an empty file (mkfs creates the newest).  A
 * database with a newer user_version than SCHEMA_VERSION is refused; an older
 * one is migrated forward step by step in schema_migrations[], each step in
 * the same transaction as the version bump.  Version 1 to 2 split times
 * into seconds and nanoseconds and added stored; 2 to 3 moved chunk bytes
 * into blocks (one copy of the data, once) and added the snapshot tables.
 */
#include "fs_int.h"

#include <errno.h>
#include <stdio.h>

/* The tables of version 2 that version 3 keeps as they were (version 2's
 * chunks(ino, idx, data) became blocks and chunks). */
static const char schema_base[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value NOT NULL);"
	"CREATE TABLE inodes("
	" ino INTEGER PRIMARY KEY AUTOINCREMENT,"
	" mode INTEGER NOT NULL, nlink INTEGER NOT NULL,"
	" uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
	" size INTEGER NOT NULL DEFAULT 0, rdev INTEGER NOT NULL DEFAULT 0,"
	" atime INTEGER NOT NULL, mtime INTEGER NOT NULL, ctime INTEGER NOT NULL,"
	" atime_ns INTEGER NOT NULL DEFAULT 0, mtime_ns INTEGER NOT NULL DEFAULT 0,"
	" ctime_ns INTEGER NOT NULL DEFAULT 0, stored INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX inodes_unlinked ON inodes(ino) WHERE nlink = 0;"
	"CREATE TABLE dirents("
	" id INTEGER PRIMARY KEY, parent INTEGER NOT NULL,"
	" name TEXT NOT NULL, ino INTEGER NOT NULL);"
	"CREATE UNIQUE INDEX dirents_name ON dirents(parent, name);"
	"CREATE INDEX dirents_parent ON dirents(parent);"
	"CREATE INDEX dirents_ino ON dirents(ino);"
	"CREATE TABLE symlinks(ino INTEGER PRIMARY KEY, target BLOB NOT NULL);"
	"CREATE TABLE xattrs("
	" ino INTEGER NOT NULL, name TEXT NOT NULL, value BLOB NOT NULL,"
	" PRIMARY KEY(ino, name)) WITHOUT ROWID;";

/* Blocks, chunks and snapshots (version 3), and the triggers that free a
 * block when its last reference goes (see the head). */
#define SCHEMA_BLOCK_UNWANTED(b) \
	" DELETE FROM blocks WHERE id = " b " AND NOT EXISTS (SELECT 1 FROM" \
	" chunks WHERE block = " b ") AND NOT EXISTS (SELECT 1 FROM" \
	" snap_chunks WHERE block = " b ");"
static const char schema_blocks[] =
	"CREATE TABLE blocks(id INTEGER PRIMARY KEY, data BLOB NOT NULL);"
	"CREATE TABLE chunks("
	" ino INTEGER NOT NULL, idx INTEGER NOT NULL, block INTEGER NOT NULL,"
	" len INTEGER NOT NULL, PRIMARY KEY(ino, idx));"
	"CREATE INDEX chunks_block ON chunks(block);"
	"CREATE TABLE snapshots(id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" name TEXT NOT NULL UNIQUE, created INTEGER NOT NULL);"
	"CREATE TABLE snap_inodes(snap INTEGER NOT NULL, ino INTEGER NOT NULL,"
	" mode INTEGER NOT NULL, nlink INTEGER NOT NULL,"
	" uid INTEGER NOT NULL, gid INTEGER NOT NULL, size INTEGER NOT NULL,"
	" rdev INTEGER NOT NULL, atime INTEGER NOT NULL, mtime INTEGER NOT NULL,"
	" ctime INTEGER NOT NULL, atime_ns INTEGER NOT NULL,"
	" mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL,"
	" stored INTEGER NOT NULL, PRIMARY KEY(snap, ino)) WITHOUT ROWID;"
	"CREATE TABLE snap_dirents(snap INTEGER NOT NULL, id INTEGER NOT NULL,"
	" parent INTEGER NOT NULL, name TEXT NOT NULL, ino INTEGER NOT NULL,"
	" PRIMARY KEY(snap, id)) WITHOUT ROWID;"
	"CREATE TABLE snap_chunks(snap INTEGER NOT NULL, ino INTEGER NOT NULL,"
	" idx INTEGER NOT NULL, block INTEGER NOT NULL, len INTEGER NOT NULL,"
	" PRIMARY KEY(snap, ino, idx)) WITHOUT ROWID;"
	"CREATE INDEX snap_chunks_block ON snap_chunks(block);"
	"CREATE TABLE snap_symlinks(snap INTEGER NOT NULL, ino INTEGER NOT NULL,"
	" target BLOB NOT NULL, PRIMARY KEY(snap, ino)) WITHOUT ROWID;"
	"CREATE TABLE snap_xattrs(snap INTEGER NOT NULL, ino INTEGER NOT NULL,"
	" name TEXT NOT NULL, value BLOB NOT NULL,"
	" PRIMARY KEY(snap, ino, name)) WITHOUT ROWID;"
	"CREATE TRIGGER blocks_unref_chunk AFTER DELETE ON chunks BEGIN"
	SCHEMA_BLOCK_UNWANTED("OLD.block") " END;"
	"CREATE TRIGGER blocks_moved_chunk AFTER UPDATE OF block ON chunks"
	" WHEN OLD.block != NEW.block BEGIN"
	SCHEMA_BLOCK_UNWANTED("OLD.block") " END;"
	"CREATE TRIGGER blocks_unref_snap AFTER DELETE ON snap_chunks BEGIN"
	SCHEMA_BLOCK_UNWANTED("OLD.block") " END;";

/* A step from version i to i+1; 0 or -errno.  Index 0 is never run: an empty
 * database is made by schema_create, not migrated. */
typedef int (*schema_step)(sqlite3 *db);
static int schema_v1_to_v2(sqlite3 *db);
static int schema_v2_to_v3(sqlite3 *db);
static const schema_step schema_migrations[SCHEMA_VERSION] = {
	NULL, schema_v1_to_v2, schema_v2_to_v3,
};

/* Run sql on db; 0 or -EIO with the reason logged. */
static int
schema_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		log_error("%s", err ? err : sqlite3_errmsg(db));
		sqlite3_free(err);
		return -EIO;
	}
	return 0;
}

/* The database's user_version, or -EIO. */
int
schema_version(sqlite3 *db)
{
	sqlite3_stmt *st;
	int v = -EIO;

	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Create the tables and the root directory owned by uid:gid in an empty db.
 * 0 or -errno. */
int
schema_create(sqlite3 *db, uint32_t uid, uint32_t gid)
{
	char sql[512];
	int64_t now = fs_now_ns();
	int r;

	if ((r = schema_exec(db, "BEGIN IMMEDIATE")) < 0)
		return r;
	snprintf(sql, sizeof(sql),
	    "INSERT INTO meta VALUES('format','atrium-fs'),('chunk_size',%d),"
	    "('created',%lld);"
	    "INSERT INTO inodes(ino,mode,nlink,uid,gid,size,rdev,atime,mtime,ctime,"
	    "atime_ns,mtime_ns,ctime_ns)"
	    " VALUES(1,%d,2,%u,%u,0,0,%lld,%lld,%lld,%lld,%lld,%lld);"
	    "PRAGMA user_version=%d;",
	    FS_CHUNK, (long long)now, S_IFDIR | 0755, uid, gid,
	    (long long)(now / 1000000000), (long long)(now / 1000000000),
	    (long long)(now / 1000000000), (long long)(now % 1000000000),
	    (long long)(now % 1000000000), (long long)(now % 1000000000),
	    SCHEMA_VERSION);
	if ((r = schema_exec(db, schema_base)) < 0 ||
	    (r = schema_exec(db, schema_blocks)) < 0 ||
	    (r = schema_exec(db, sql)) < 0) {
		schema_exec(db, "ROLLBACK");
		return r;
	}
	return schema_exec(db, "COMMIT");
}

/* Version 1 to 2: times become seconds plus nanoseconds (floor division,
 * so 1969 stays 1969), and every inode gets its stored bytes. */
static int
schema_v1_to_v2(sqlite3 *db)
{
	static const char sql[] =
		"ALTER TABLE inodes ADD COLUMN atime_ns INTEGER NOT NULL DEFAULT 0;"
		"ALTER TABLE inodes ADD COLUMN mtime_ns INTEGER NOT NULL DEFAULT 0;"
		"ALTER TABLE inodes ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0;"
		"ALTER TABLE inodes ADD COLUMN stored INTEGER NOT NULL DEFAULT 0;"
		"UPDATE inodes SET"
		" atime_ns = (atime % 1000000000 + 1000000000) % 1000000000,"
		" mtime_ns = (mtime % 1000000000 + 1000000000) % 1000000000,"
		" ctime_ns = (ctime % 1000000000 + 1000000000) % 1000000000,"
		" atime = (atime - (atime % 1000000000 + 1000000000) % 1000000000)"
		"  / 1000000000,"
		" mtime = (mtime - (mtime % 1000000000 + 1000000000) % 1000000000)"
		"  / 1000000000,"
		" ctime = (ctime - (ctime % 1000000000 + 1000000000) % 1000000000)"
		"  / 1000000000;"
		"UPDATE inodes SET stored = (SELECT coalesce(sum(length(data)), 0)"
		" FROM chunks c WHERE c.ino = inodes.ino) WHERE (mode & 61440) = 32768;"
		"UPDATE inodes SET stored = (SELECT coalesce(sum(" STORED_DIRENT_SQL("name")
		"), 0) FROM dirents d WHERE d.parent = inodes.ino), size = 0"
		" WHERE (mode & 61440) = 16384;";

	return schema_exec(db, sql);
}

/* Version 2 to 3: each chunk's bytes become a block (its id the chunk's
 * old rowid, in rowid order so the copy appends), and chunks point at them.
 * This copies the data once; later snapshots never do. */
static int
schema_v2_to_v3(sqlite3 *db)
{
	static const char sql[] =
		"ALTER TABLE chunks RENAME TO chunks_v2;";
	static const char move[] =
		"INSERT INTO blocks(id, data) SELECT rowid, data FROM chunks_v2"
		" ORDER BY rowid;"
		"INSERT INTO chunks(ino, idx, block, len) SELECT ino, idx, rowid,"
		" length(data) FROM chunks_v2;"
		"DROP TABLE chunks_v2;";
	int r;

	if ((r = schema_exec(db, sql)) < 0 ||
	    (r = schema_exec(db, schema_blocks)) < 0)
		return r;
	return schema_exec(db, move);
}

/* Check that meta says this is an atrium-fs database: 0 or -EINVAL. */
static int
schema_check_format(sqlite3 *db)
{
	sqlite3_stmt *st;
	int ok = 0;

	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='format'",
	    -1, &st, NULL) != SQLITE_OK)
		return -EINVAL;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);
		ok = v && strcmp((const char *)v, "atrium-fs") == 0;
	}
	sqlite3_finalize(st);
	return ok ? 0 : -EINVAL;
}

/* Migrate from version v to SCHEMA_VERSION, one transaction per step. */
static int
schema_migrate(sqlite3 *db, int v)
{
	char sql[64];
	int r;

	for (; v < SCHEMA_VERSION; v++) {
		log_info("migrating schema from version %d to %d", v, v + 1);
		if ((r = schema_exec(db, "BEGIN IMMEDIATE")) < 0)
			return r;
		snprintf(sql, sizeof(sql), "PRAGMA user_version=%d", v + 1);
		if ((schema_migrations[v] && (r = schema_migrations[v](db)) < 0) ||
		    (r = schema_exec(db, sql)) < 0) {
			schema_exec(db, "ROLLBACK");
			return r;
		}
		if ((r = schema_exec(db, "COMMIT")) < 0)
			return r;
	}
	return 0;
}

/* Check an opened database: -EINVAL when it is not atrium-fs (or empty),
 * -EPROTO when its schema is newer than ours; migrate an older one forward
 * unless readonly.  0 or -errno. */
int
schema_open_check(sqlite3 *db, int readonly)
{
	int v = schema_version(db);

	if (v < 0)
		return v;
	if (v == 0)
		return -EINVAL;
	if (v > SCHEMA_VERSION)
		return -EPROTO;
	if (schema_check_format(db) < 0)
		return -EINVAL;
	if (v < SCHEMA_VERSION && !readonly)
		return schema_migrate(db, v);
	return 0;
}

/*
 * stored.c: inodes.stored, what each inode keeps, and the st_blocks and
 * st_size that follow from it.  Called by core.c (fs_open installs the
 * triggers on a writable connection) and inode.c (inode_get derives the
 * attributes), with fs->lock held or before any thread runs.
 *
 * Why a column: stat(2) must say how much a sparse file really stores (cp,
 * tar, rsync and du decide from st_blocks whether to look for holes), and
 * a directory's size must grow with its entries as on ext4.  Summing the
 * chunks or the entries at each getattr would cost a scan per stat, and the
 * kernel asks for a directory's attributes after every create in it.
 *
 * How it is kept: TEMP triggers on this connection (as fs/engine/quota.c counts
 * bytes) add each chunk's and each entry's change to its inode's row, so
 * every path that writes, truncates, punches, renames or frees rows in the
 * background keeps it right without being taught about it.
 * A chunk's bytes are its len column (schema 3), so no trigger reads a
 * block; chunks.c's upsert fires the update trigger.  recursive_triggers
 * is on so that an INSERT OR REPLACE fires the delete trigger for the row
 * it replaces.  The migration to schema 2 computed it once for older
 * databases, and fsck checks it (I9).
 *
 * What stat shows (man/atrium-fs.8 says the same):
 *   regular file   st_blocks = stored bytes / 512, rounded up: holes and
 *                  punched ranges cost nothing.
 *   directory      st_size = 4096 * ceil((24 + stored) / 4096), where each
 *                  entry's record is 8 + its name's length rounded up to 4
 *                  (ext4's); st_blocks = st_size / 512.  It shrinks again
 *                  as entries go (ext4's never does).
 *   other          st_blocks 0 (as ext4's short symlinks).
 */
#include "fs_int.h"

#include <errno.h>

static const char stored_triggers[] =
	"PRAGMA recursive_triggers = ON;"
	"CREATE TEMP TRIGGER IF NOT EXISTS stored_chunk_ins AFTER INSERT ON "
	" main.chunks BEGIN UPDATE inodes SET stored = stored + "
	" NEW.len WHERE ino = NEW.ino; END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS stored_chunk_del AFTER DELETE ON "
	" main.chunks BEGIN UPDATE inodes SET stored = stored - "
	" OLD.len WHERE ino = OLD.ino; END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS stored_chunk_upd AFTER UPDATE OF len "
	" ON main.chunks BEGIN UPDATE inodes SET stored = stored + "
	" NEW.len - OLD.len WHERE ino = NEW.ino; END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS stored_name_ins AFTER INSERT ON "
	" main.dirents BEGIN UPDATE inodes SET stored = stored + "
	STORED_DIRENT_SQL("NEW.name") " WHERE ino = NEW.parent; END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS stored_name_del AFTER DELETE ON "
	" main.dirents BEGIN UPDATE inodes SET stored = stored - "
	STORED_DIRENT_SQL("OLD.name") " WHERE ino = OLD.parent; END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS stored_name_upd AFTER UPDATE OF "
	" parent, name ON main.dirents BEGIN "
	" UPDATE inodes SET stored = stored - " STORED_DIRENT_SQL("OLD.name")
	" WHERE ino = OLD.parent;"
	" UPDATE inodes SET stored = stored + " STORED_DIRENT_SQL("NEW.name")
	" WHERE ino = NEW.parent; END;";

/* Install the triggers on a writable connection, before any operation.
 * 0 or -EIO (logged). */
int
stored_install(struct fs *fs)
{
	char *err = NULL;

	if (sqlite3_exec(fs->db, stored_triggers, NULL, NULL, &err) != SQLITE_OK) {
		log_error("%s: installing the stored-bytes triggers: %s", fs->path,
		    err ? err : "?");
		sqlite3_free(err);
		return -EIO;
	}
	return 0;
}

/* Fill a's st_blocks (and a directory's st_size) from its stored bytes. */
void
stored_attr(struct fs_attr *a, uint64_t stored)
{
	uint64_t bytes;

	if (S_ISREG(a->mode)) {
		/* A file keeps no more than its size; more is a shrink's
		 * leftovers that reclaim.c frees in the background. */
		if (stored > a->size)
			stored = a->size;
		a->blocks = (stored + 511) / 512;
	} else if (S_ISDIR(a->mode)) {
		bytes = STORED_DIR_DOTS + stored;
		a->size = (bytes + STORED_DIR_BLOCK - 1) / STORED_DIR_BLOCK *
		    STORED_DIR_BLOCK;
		a->blocks = a->size / 512;
	} else {
		a->blocks = 0;
	}
}

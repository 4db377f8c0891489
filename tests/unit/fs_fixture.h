/*
 * fs_fixture.h: the scratch directory and databases the atrium-fs unit
 * tests share.  Include it once, in the test's .c file, after fs.h and
 * unit.h, and set FS_FIXTURE_NAME (the test's name) before it.
 *
 *   fixture_begin()   make the scratch directory (0, or 1 on failure)
 *   fixture_new_fs()  mkfs a new database in it and open it as a mount does
 *   fixture_end()     remove the directory and everything in it
 *   fixture_checkpoint_truncate()
 *                     copy every frame of the last database's WAL and
 *                     empty it, on a connection of the test's own that
 *                     waits for no one: SQLITE_OK, or SQLITE_BUSY while
 *                     any connection reads a snapshot through the WAL
 *
 * db_path names the last database made; db_dir the directory.
 */
#ifndef ATRIUM_FS_FIXTURE_H
#define ATRIUM_FS_FIXTURE_H

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

static char db_dir[] = "/tmp/" FS_FIXTURE_NAME ".XXXXXX";
static char db_path[256];
static int db_seq;
static const struct fs_ctx root_ctx = { 0, 0 };

static inline int
fixture_begin(void)
{
	if (!mkdtemp(db_dir)) {
		perror("mkdtemp");
		return 1;
	}
	return 0;
}

static inline struct fs *
fixture_new_fs(void)
{
	struct fs *fs = NULL;

	snprintf(db_path, sizeof(db_path), "%s/fs%d.db", db_dir, ++db_seq);
	CHECK_INT(fs_mkfs(db_path, 0, 0), 0);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	return fs;
}

static inline void
fixture_end(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", db_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", db_dir);
}

static inline int
fixture_checkpoint_truncate(void)
{
	sqlite3 *db;
	int rc;

	if (sqlite3_open(db_path, &db) != SQLITE_OK)
		return SQLITE_ERROR;
	rc = sqlite3_exec(db, "SELECT count(*) FROM meta", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_wal_checkpoint_v2(db, "main",
		    SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

#endif

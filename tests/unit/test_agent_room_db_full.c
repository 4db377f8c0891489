/*
 * test_agent_room_db_full.c: room.db (agent/room_db.c) when the disk is
 * full.  The shim SQLite VFS of test_fs_full.c, installed as the default,
 * fails every write with SQLITE_FULL while shim_full is set.  Checked: a
 * stored event and an audit row that cannot be written come back as
 * -ENOSPC (with a reason people can read) and leave no row; reads keep
 * working; writes work again once the disk has room.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/room_db.h"
#include "unit.h"

static char path[64];

/* --- the shim VFS (as in test_fs_full.c) -------------------------------- */

static int shim_full;              /* fail every write with SQLITE_FULL */
static sqlite3_vfs *shim_real;     /* the VFS it forwards to */
static sqlite3_vfs shim_vfs;
static sqlite3_io_methods shim_io;

struct shim_file {
	sqlite3_file base;
	sqlite3_file *real;     /* follows this struct in the same block */
};

#define REAL(f) (((struct shim_file *)(f))->real)

static int shim_close(sqlite3_file *f)
{ return REAL(f)->pMethods->xClose(REAL(f)); }
static int shim_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{ return REAL(f)->pMethods->xRead(REAL(f), p, n, off); }
static int shim_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{ return shim_full ? SQLITE_FULL : REAL(f)->pMethods->xWrite(REAL(f), p, n, off); }
static int shim_truncate(sqlite3_file *f, sqlite3_int64 size)
{ return REAL(f)->pMethods->xTruncate(REAL(f), size); }
static int shim_sync(sqlite3_file *f, int flags)
{ return REAL(f)->pMethods->xSync(REAL(f), flags); }
static int shim_size(sqlite3_file *f, sqlite3_int64 *size)
{ return REAL(f)->pMethods->xFileSize(REAL(f), size); }
static int shim_lock(sqlite3_file *f, int l)
{ return REAL(f)->pMethods->xLock(REAL(f), l); }
static int shim_unlock(sqlite3_file *f, int l)
{ return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int shim_reserved(sqlite3_file *f, int *out)
{ return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out); }
static int shim_sector(sqlite3_file *f)
{ return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int shim_devchar(sqlite3_file *f)
{ return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int shim_shm_map(sqlite3_file *f, int i, int sz, int ext, void volatile **pp)
{ return REAL(f)->pMethods->xShmMap(REAL(f), i, sz, ext, pp); }
static int shim_shm_lock(sqlite3_file *f, int off, int n, int flags)
{ return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags); }
static void shim_shm_barrier(sqlite3_file *f)
{ REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int shim_shm_unmap(sqlite3_file *f, int del)
{ return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }

/* File controls: the journal pointer must be the shim file itself (SQLite
 * asks the pager, not us), everything else goes to the real file. */
static int
shim_fcntl(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

/* No memory-mapped I/O through the shim. */
static int
shim_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	(void)f; (void)off; (void)n;
	*pp = NULL;
	return SQLITE_OK;
}

static int
shim_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	(void)f; (void)off; (void)p;
	return SQLITE_OK;
}

/* Open the real file behind a shim file. */
static int
shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
    int *outflags)
{
	struct shim_file *sf = (struct shim_file *)f;
	int rc;

	(void)vfs;
	sf->real = (sqlite3_file *)(sf + 1);
	rc = shim_real->xOpen(shim_real, name, sf->real, flags, outflags);
	f->pMethods = rc == SQLITE_OK && sf->real->pMethods ? &shim_io : NULL;
	return rc;
}

static int shim_delete(sqlite3_vfs *v, const char *name, int sync)
{ (void)v; return shim_real->xDelete(shim_real, name, sync); }
static int shim_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{ (void)v; return shim_real->xAccess(shim_real, name, flags, out); }
static int shim_fullpath(sqlite3_vfs *v, const char *name, int n, char *out)
{ (void)v; return shim_real->xFullPathname(shim_real, name, n, out); }
static int shim_random(sqlite3_vfs *v, int n, char *out)
{ (void)v; return shim_real->xRandomness(shim_real, n, out); }
static int shim_sleep(sqlite3_vfs *v, int us)
{ (void)v; return shim_real->xSleep(shim_real, us); }
static int shim_time(sqlite3_vfs *v, sqlite3_int64 *t)
{ (void)v; return shim_real->xCurrentTimeInt64(shim_real, t); }
static int shim_lasterr(sqlite3_vfs *v, int n, char *out)
{ (void)v; return shim_real->xGetLastError(shim_real, n, out); }

/* Install the shim as the default VFS. */
static void
shim_install(void)
{
	static const sqlite3_io_methods io = {
		3, shim_close, shim_read, shim_write, shim_truncate, shim_sync,
		shim_size, shim_lock, shim_unlock, shim_reserved, shim_fcntl,
		shim_sector, shim_devchar, shim_shm_map, shim_shm_lock,
		shim_shm_barrier, shim_shm_unmap, shim_fetch, shim_unfetch,
	};

	shim_real = sqlite3_vfs_find(NULL);
	shim_io = io;
	memset(&shim_vfs, 0, sizeof(shim_vfs));
	shim_vfs.iVersion = 2;
	shim_vfs.szOsFile = (int)sizeof(struct shim_file) + shim_real->szOsFile;
	shim_vfs.mxPathname = shim_real->mxPathname;
	shim_vfs.zName = "shim-full";
	shim_vfs.xOpen = shim_open;
	shim_vfs.xDelete = shim_delete;
	shim_vfs.xAccess = shim_access;
	shim_vfs.xFullPathname = shim_fullpath;
	shim_vfs.xRandomness = shim_random;
	shim_vfs.xSleep = shim_sleep;
	shim_vfs.xGetLastError = shim_lasterr;
	shim_vfs.xCurrentTimeInt64 = shim_time;
	sqlite3_vfs_register(&shim_vfs, 1);
}

static int
count_json(const char *json, void *arg)
{
	int *n = arg;

	(void)json;
	(*n)++;
	return 0;
}

static void
test_full_refuses_and_recovers(void)
{
	struct room_db *db;
	long long id = 0;
	int n = 0;

	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_event_add(db, 1, "t", "message", "{\"seq\":1}"), 0);
	CHECK_INT(room_db_commit(db), 0);

	shim_full = 1;
	/* The insert may be cached; the commit that must hold it fails. */
	{
		int r = room_db_event_add(db, 2, "t", "message", "{\"seq\":2}");

		if (r == 0)
			r = room_db_commit(db);
		CHECK_INT(r, -ENOSPC);
	}
	CHECK_INT(room_db_audit_start(db, "alice", "exec", "true", "/", &id),
	    -ENOSPC);
	CHECK_STR(room_db_strerror(-ENOSPC), "the disk holding room.db is full");
	/* Reads still work, and show only what was committed. */
	CHECK_INT(room_db_events_each(db, 0, 0, count_json, &n), 0);
	CHECK_INT(n, 1);
	shim_full = 0;

	/* Room again: the next writes go through without reopening. */
	CHECK_INT(room_db_event_add(db, 3, "t", "message", "{\"seq\":3}"), 0);
	CHECK_INT(room_db_commit(db), 0);
	CHECK_INT(room_db_audit_start(db, "alice", "exec", "true", "/", &id),
	    0);
	CHECK(id > 0);
	room_db_close(db);

	CHECK_INT(room_db_open(path, &db), 0);
	n = 0;
	CHECK_INT(room_db_events_each(db, 0, 0, count_json, &n), 0);
	CHECK_INT(n, 2);
	CHECK_INT(room_db_last_seq(db), 3);
	room_db_close(db);
}

int
main(void)
{
	char wal[96];

	shim_install();
	snprintf(path, sizeof(path), "/tmp/test_agent_room_db_full.%d",
	    (int)getpid());
	TEST(test_full_refuses_and_recovers);
	unlink(path);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	unlink(wal);
	snprintf(wal, sizeof(wal), "%s-shm", path);
	unlink(wal);
	return unit_done("test_agent_room_db_full");
}

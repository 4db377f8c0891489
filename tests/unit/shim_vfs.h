/*
 * shim_vfs.h: a SQLite VFS for unit tests that forwards to the default one
 * and, while shim_full is set, fails every write with SQLITE_FULL, as a
 * full disk does; while syncs are held (shim_hold_syncs), every sync waits
 * until they are let go, as on a disk that takes its time.  shim_install()
 * registers it as the default VFS.  Shared
 * by the tests of atrium-fs (test_fs_full.c) and of room.db
 * (test_agent_room_db_full.c); each test is one program, so the code is
 * static here.
 */
#ifndef ATRIUM_TEST_SHIM_VFS_H
#define ATRIUM_TEST_SHIM_VFS_H

#include <pthread.h>
#include <sqlite3.h>
#include <string.h>
#include <time.h>


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
/* Reads of any file through the shim, for tests that count them. */
static long shim_reads;
static int shim_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
	__atomic_add_fetch(&shim_reads, 1, __ATOMIC_RELAXED);
	return REAL(f)->pMethods->xRead(REAL(f), p, n, off);
}
static int shim_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{ return shim_full ? SQLITE_FULL : REAL(f)->pMethods->xWrite(REAL(f), p, n, off); }
static int shim_truncate(sqlite3_file *f, sqlite3_int64 size)
{ return REAL(f)->pMethods->xTruncate(REAL(f), size); }
/* Held syncs: shim_hold guards the two counts. */
static pthread_mutex_t shim_hold = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t shim_hold_cond = PTHREAD_COND_INITIALIZER;
static int shim_holding, shim_held;   /* syncs held; syncs waiting */

/* Make every sync from now on wait until shim_release_syncs. */
static inline void
shim_hold_syncs(void)
{
	pthread_mutex_lock(&shim_hold);
	shim_holding = 1;
	pthread_mutex_unlock(&shim_hold);
}

/* 1 once a sync is waiting, 0 if none came within secs seconds. */
static inline int
shim_sync_waiting(int secs)
{
	struct timespec ts;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	pthread_mutex_lock(&shim_hold);
	while (!shim_held && r == 0)
		r = pthread_cond_timedwait(&shim_hold_cond, &shim_hold, &ts);
	r = shim_held > 0;
	pthread_mutex_unlock(&shim_hold);
	return r;
}

/* Let the held syncs go on. */
static inline void
shim_release_syncs(void)
{
	pthread_mutex_lock(&shim_hold);
	shim_holding = 0;
	pthread_cond_broadcast(&shim_hold_cond);
	pthread_mutex_unlock(&shim_hold);
}

/* Syncs made by the calling thread, for tests that check which thread
 * waits for the disk. */
static __thread long shim_thread_syncs;

static int shim_sync(sqlite3_file *f, int flags)
{
	shim_thread_syncs++;
	pthread_mutex_lock(&shim_hold);
	if (shim_holding) {
		shim_held++;
		pthread_cond_broadcast(&shim_hold_cond);
		while (shim_holding)
			pthread_cond_wait(&shim_hold_cond, &shim_hold);
		shim_held--;
	}
	pthread_mutex_unlock(&shim_hold);
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}
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
/* Times a connection found the WAL's write lock (shm lock 0) taken by
 * another: a writer that had to wait, or gave up. */
static long shim_write_lock_busy;
static int shim_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	int rc = REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);

	if (rc == SQLITE_BUSY && off == 0 && n == 1 &&
	    (flags & SQLITE_SHM_LOCK) && (flags & SQLITE_SHM_EXCLUSIVE))
		__atomic_add_fetch(&shim_write_lock_busy, 1, __ATOMIC_RELAXED);
	return rc;
}
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

#endif

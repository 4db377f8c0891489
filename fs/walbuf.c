/*
 * walbuf.c: an SQLite VFS ("atrium-walbuf") over the default one that
 * hands the writes of a transaction to its WAL file in big pieces.  core.c
 * opens the writing connection through it; everything but the WAL's writes
 * goes straight to the default VFS (the locks, the -shm index and the
 * database file are untouched, so other connections on the default VFS
 * share them as usual).
 *
 * Why: SQLite appends a WAL frame as two writes, its 24-byte header and
 * its page.  With 4 KiB pages, a 1 GiB sequential write made over half a
 * million pwrite calls, each landing across two of the kernel's page-cache
 * pages; they were half of the daemon's time (perf), and the daemon's time
 * is what bounds a big write.
 *
 * How: writes to a WAL that follow each other are gathered in a buffer of
 * WALBUF_BYTES and written in 64 KiB pwrites when it is full, when a write
 * does not follow the last one, and, always, right after the page of a
 * commit frame (a frame header whose "database size" field is not zero),
 * so that the frames of a commit are in the file before SQLite publishes
 * the commit in the -shm index and before COMMIT returns: another
 * connection (the checkpointer, a reader) never looks for a frame that is
 * still in the buffer, and a crash of the process loses only what SQLite
 * had not committed.  A failed pwrite is returned by the xWrite that made
 * it, so SQLite sees a full disk or an I/O error at the same statement as
 * without the buffer (the rules at the top of db.c hold).  Reads, syncs,
 * truncates, size queries, file controls and close of the WAL write the
 * buffer out first.
 *
 * Threading: a buffer belongs to one open WAL file of one connection,
 * which SQLite uses from one thread at a time (the writer holds fs->lock).
 * The VFS is registered once (pthread_once).
 */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>

#define WALBUF_NAME "atrium-walbuf"
/* Bytes gathered before they are written: about 250 frames of 4 KiB
 * pages. */
#define WALBUF_BYTES (1u << 20)
/* Bytes per write call: the unix VFS writes at most 128 KiB - 1 per call
 * (seekAndWriteFd masks the length with 0x1ffff, and a longer write comes
 * back short, as SQLITE_FULL). */
#define WALBUF_PIECE (64u << 10)
/* SQLite's WAL layout (wal.c): a 32-byte file header, then frames of a
 * 24-byte header (page number, database size after a commit, ...) and
 * a page. */
#define WALBUF_FILE_HDR 32
#define WALBUF_FRAME_HDR 24

struct walbuf_file {
	sqlite3_file base;        /* our methods */
	sqlite3_file *real;       /* the default VFS's file, after this struct */
	int is_wal;
	unsigned char *buf;       /* WALBUF_BYTES, allocated on first write */
	size_t len;               /* bytes gathered */
	sqlite3_int64 off;        /* file offset of buf[0] */
	int commit_next;          /* the last write was a commit frame's header */
};

static sqlite3_vfs walbuf_vfs;
static sqlite3_io_methods walbuf_methods;
static pthread_once_t walbuf_once = PTHREAD_ONCE_INIT;
static int walbuf_registered;

/* The default VFS under ours. */
static sqlite3_vfs *
walbuf_real_vfs(void)
{
	return walbuf_vfs.pAppData;
}

/* Write what is gathered, in pieces of WALBUF_PIECE: SQLITE_OK or the
 * first error. */
static int
walbuf_flush(struct walbuf_file *f)
{
	size_t done = 0, n;
	int rc = SQLITE_OK;

	while (rc == SQLITE_OK && done < f->len) {
		n = f->len - done < WALBUF_PIECE ? f->len - done : WALBUF_PIECE;
		rc = f->real->pMethods->xWrite(f->real, f->buf + done, (int)n,
		    f->off + (sqlite3_int64)done);
		done += n;
	}
	/* Gone either way: SQLite rolls back on a failed write and never
	 * reuses the frames it had handed over. */
	f->len = 0;
	return rc;
}

/* 1 when the n bytes at off are a WAL frame header that ends a commit. */
static int
walbuf_is_commit_header(const void *p, int n, sqlite3_int64 off)
{
	const unsigned char *h = p;

	return n == WALBUF_FRAME_HDR && off >= WALBUF_FILE_HDR &&
	    (h[4] | h[5] | h[6] | h[7]) != 0;
}

/* Gather n bytes of p written at off, writing out first what they do not
 * follow or do not fit beside.  SQLITE_OK or an error. */
static int
walbuf_gather(struct walbuf_file *f, const void *p, int n, sqlite3_int64 off)
{
	int follows = off == f->off + (sqlite3_int64)f->len;
	int rc;

	/* Bigger than a piece (no page is): written at once, in order. */
	if (f->len && (!follows || f->len + (size_t)n > WALBUF_BYTES ||
	    (size_t)n > WALBUF_PIECE) && (rc = walbuf_flush(f)) != SQLITE_OK)
		return rc;
	if ((size_t)n > WALBUF_PIECE)
		return f->real->pMethods->xWrite(f->real, p, n, off);
	if (f->len == 0)
		f->off = off;
	memcpy(f->buf + f->len, p, (size_t)n);
	f->len += (size_t)n;
	return SQLITE_OK;
}

/* xWrite: a WAL's writes are gathered; the page after a commit frame's
 * header is written out with everything before it. */
static int
walbuf_write(sqlite3_file *file, const void *p, int n, sqlite3_int64 off)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int commit = f->commit_next, rc;

	if (!f->is_wal)
		return f->real->pMethods->xWrite(f->real, p, n, off);
	if (!f->buf && !(f->buf = malloc(WALBUF_BYTES)))
		return f->real->pMethods->xWrite(f->real, p, n, off);
	f->commit_next = walbuf_is_commit_header(p, n, off);
	if ((rc = walbuf_gather(f, p, n, off)) != SQLITE_OK) {
		f->len = 0;
		return rc;
	}
	return commit ? walbuf_flush(f) : SQLITE_OK;
}

/* Write out what is gathered before another use of the file. */
static int
walbuf_settle(sqlite3_file *file)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->is_wal ? walbuf_flush(f) : SQLITE_OK;
}

/* xClose: write out, close the real file, free the buffer. */
static int
walbuf_close(sqlite3_file *file)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);
	int rc2 = f->real->pMethods->xClose(f->real);

	free(f->buf);
	f->buf = NULL;
	return rc != SQLITE_OK ? rc : rc2;
}

/* xRead, and below xTruncate, xSync, xFileSize and xFileControl: the
 * real file's, once what is gathered is written out. */
static int
walbuf_read(sqlite3_file *file, void *p, int n, sqlite3_int64 off)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	return rc != SQLITE_OK ? rc : f->real->pMethods->xRead(f->real, p, n, off);
}

static int
walbuf_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	return rc != SQLITE_OK ? rc : f->real->pMethods->xTruncate(f->real, size);
}

static int
walbuf_sync(sqlite3_file *file, int flags)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	return rc != SQLITE_OK ? rc : f->real->pMethods->xSync(f->real, flags);
}

static int
walbuf_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	return rc != SQLITE_OK ? rc : f->real->pMethods->xFileSize(f->real, size);
}

static int
walbuf_file_control(sqlite3_file *file, int op, void *arg)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	return rc != SQLITE_OK ? rc :
	    f->real->pMethods->xFileControl(f->real, op, arg);
}

/* The rest is the real file's: locks, sector size, the -shm index of a
 * database file, memory-mapped pages. */
static int
walbuf_lock(sqlite3_file *file, int lock)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->real->pMethods->xLock(f->real, lock);
}

static int
walbuf_unlock(sqlite3_file *file, int lock)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->real->pMethods->xUnlock(f->real, lock);
}

static int
walbuf_check_reserved(sqlite3_file *file, int *out)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int
walbuf_sector_size(sqlite3_file *file)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->real->pMethods->xSectorSize(f->real);
}

static int
walbuf_device_chars(sqlite3_file *file)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static int
walbuf_shm_map(sqlite3_file *file, int pg, int pgsz, int extend,
    void volatile **pp)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->real->pMethods->xShmMap(f->real, pg, pgsz, extend, pp);
}

static int
walbuf_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}

/* Called on the database file (never a WAL) before SQLite publishes a
 * commit in the -shm index; by then the WAL's buffer was written out at
 * the commit frame. */
static void
walbuf_shm_barrier(sqlite3_file *file)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	f->real->pMethods->xShmBarrier(f->real);
}

static int
walbuf_shm_unmap(sqlite3_file *file, int del)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->real->pMethods->xShmUnmap(f->real, del);
}

static int
walbuf_fetch(sqlite3_file *file, sqlite3_int64 off, int n, void **pp)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->real->pMethods->xFetch(f->real, off, n, pp);
}

static int
walbuf_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	return f->real->pMethods->xUnfetch(f->real, off, p);
}

static sqlite3_io_methods walbuf_methods = {
	3, walbuf_close, walbuf_read, walbuf_write, walbuf_truncate,
	walbuf_sync, walbuf_file_size, walbuf_lock, walbuf_unlock,
	walbuf_check_reserved, walbuf_file_control, walbuf_sector_size,
	walbuf_device_chars, walbuf_shm_map, walbuf_shm_lock,
	walbuf_shm_barrier, walbuf_shm_unmap, walbuf_fetch, walbuf_unfetch,
};

/* xOpen: open the real file just after ours, and wrap it. */
static int
walbuf_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags,
    int *out_flags)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	sqlite3_vfs *real = walbuf_real_vfs();
	int rc;

	(void)vfs;
	memset(f, 0, sizeof(*f));
	f->real = (sqlite3_file *)(f + 1);
	rc = real->xOpen(real, name, f->real, flags, out_flags);
	if (rc != SQLITE_OK || !f->real->pMethods) {
		f->base.pMethods = NULL;
		return rc;
	}
	/* A real file of an older method version lacks what ours forwards
	 * (the default unix VFS has version 3). */
	if (f->real->pMethods->iVersion < 3) {
		f->real->pMethods->xClose(f->real);
		f->base.pMethods = NULL;
		return SQLITE_CANTOPEN;
	}
	f->is_wal = !!(flags & SQLITE_OPEN_WAL);
	f->base.pMethods = &walbuf_methods;
	return SQLITE_OK;
}

/* The VFS calls that name no file, forwarded with the real VFS. */
static int
walbuf_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	return walbuf_real_vfs()->xDelete(walbuf_real_vfs(), name, sync_dir);
}

static int
walbuf_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	return walbuf_real_vfs()->xAccess(walbuf_real_vfs(), name, flags, out);
}

static int
walbuf_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	return walbuf_real_vfs()->xFullPathname(walbuf_real_vfs(), name, n, out);
}

/* Build and register the VFS, not as the default (pthread_once). */
static void
walbuf_register_once(void)
{
	sqlite3_vfs *real = sqlite3_vfs_find(NULL);

	if (!real || real->iVersion < 2) {
		log_warn("no default SQLite VFS to gather WAL writes over");
		return;
	}
	walbuf_vfs = *real;
	walbuf_vfs.pNext = NULL;
	walbuf_vfs.pAppData = real;
	walbuf_vfs.szOsFile = (int)sizeof(struct walbuf_file) + real->szOsFile;
	walbuf_vfs.zName = WALBUF_NAME;
	walbuf_vfs.xOpen = walbuf_open;
	walbuf_vfs.xDelete = walbuf_delete;
	walbuf_vfs.xAccess = walbuf_access;
	walbuf_vfs.xFullPathname = walbuf_full_pathname;
	if (sqlite3_vfs_register(&walbuf_vfs, 0) != SQLITE_OK) {
		log_warn("registering the %s SQLite VFS failed", WALBUF_NAME);
		return;
	}
	walbuf_registered = 1;
}

/* The name of the VFS to open a writing connection with: ours, or NULL
 * (SQLite's default) if it could not be registered. */
const char *
walbuf_vfs_name(void)
{
	pthread_once(&walbuf_once, walbuf_register_once);
	return walbuf_registered ? WALBUF_NAME : NULL;
}

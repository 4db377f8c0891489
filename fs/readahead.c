/*
 * readahead.c: an SQLite VFS ("atrium-readahead") over the default one that
 * reads the database file ahead, in pieces of up to READAHEAD_MAX bytes,
 * for the read-only connections of readers.c.  Everything else (the WAL,
 * the -shm index, the locks) goes straight to the default VFS, so these
 * connections share them with the writer as usual.
 *
 * Why: a block of file data is a 64 KiB blob, which SQLite stores as a
 * chain of 16 overflow pages and reads one pread per 4 KiB page.  A cold
 * sequential read made 260 preads per MiB, and in this VM a system call
 * costs microseconds: they were most of the daemon's time per MiB (strace
 * -c, perf).  A 4 KiB random read of a file meets two overflow pages, next
 * to each other in the file, for two preads.
 *
 * How: each connection's database file has one buffer.  A read that the
 * buffer holds is copied from it.  Any other read of less than the window
 * reads the window from its offset into the buffer and is copied from
 * there; the window starts at READAHEAD_MIN (a random 4 KiB read then
 * gets both of its pages in one pread) and doubles while reads follow each
 * other, up to READAHEAD_MAX (the blocks of a file written in order lie in
 * order in the database, so a sequential read of the file reads the
 * database in order too).  A read that ends short (past the end of the
 * file) leaves the buffer empty and is made again as asked, so SQLite sees
 * exactly what the default VFS gives.
 *
 * Why the buffer is never stale: it is emptied whenever the connection
 * takes or drops a lock of the -shm index, which it does at the start and
 * at the end of every read transaction (wal.c: walTryBeginRead,
 * walEndReadTransaction), and on any write or truncate.  Inside one read
 * transaction the pages SQLite reads from the database file do not change:
 * a checkpoint copies into the file only frames at or below every
 * reader's mark (and none at all while a reader reads the file alone,
 * read lock 0), and such a page, having a frame at or below the reader's
 * mark, is read from the WAL, never from the file.  Pages read ahead that
 * the snapshot takes from the WAL may be older or half-copied in the
 * buffer; they are never asked for from the file before the buffer is
 * emptied.
 *
 * Threading: a buffer belongs to one open file of one connection, which
 * SQLite uses from one thread at a time (readers.c lends a connection to
 * one request).  The VFS is registered once (pthread_once).
 */
#include "fs_int.h"
#include "vfs_shim.h"

#include <stdlib.h>

#define READAHEAD_NAME "atrium-readahead"
/* The first window: two pages, so that a 4 KiB read across two overflow
 * pages costs one pread. */
#define READAHEAD_MIN (8u << 10)
/* The biggest window (the unix VFS reads at most 128 KiB - 1 per call,
 * seekAndRead). */
#define READAHEAD_MAX (64u << 10)
/* A read that starts at most this far past where the last one ended still
 * follows it: SQLite reads an overflow page's content without its 4-byte
 * header, and ptrmap pages lie between runs of overflow pages. */
#define READAHEAD_GAP (8u << 10)

struct readahead_file {
	struct vfs_shim_file shim;	/* our methods, the real file */
	int is_main;              /* a main database file: the only one read ahead */
	unsigned char *buf;       /* READAHEAD_MAX bytes, allocated on first use */
	sqlite3_int64 off;        /* file offset of buf[0] */
	int len;                  /* bytes of buf that hold the file (0: none) */
	sqlite3_int64 next;       /* where the last read ended */
	int window;               /* bytes the next read that misses reads */
};

static sqlite3_vfs readahead_vfs;
static sqlite3_io_methods readahead_methods;
static pthread_once_t readahead_once = PTHREAD_ONCE_INIT;
static int readahead_registered;

/* Forget what the buffer holds. */
static void
readahead_drop(struct readahead_file *f)
{
	f->len = 0;
}

/* The window for a read at off that the buffer does not hold: doubled
 * when it follows the last read, else the first one. */
static int
readahead_window(struct readahead_file *f, sqlite3_int64 off)
{
	if (off >= f->next && off - f->next <= (sqlite3_int64)READAHEAD_GAP)
		f->window = f->window * 2 > (int)READAHEAD_MAX ?
		    (int)READAHEAD_MAX : f->window * 2;
	else
		f->window = READAHEAD_MIN;
	return f->window;
}

/* xRead: from the buffer, or through it.  SQLITE_OK, or what the default
 * VFS says for exactly this read. */
static int
readahead_read(sqlite3_file *file, void *p, int n, sqlite3_int64 off)
{
	struct readahead_file *f = (struct readahead_file *)file;
	int window, rc;

	if (!f->is_main || n <= 0 || off < 0)
		return vfs_shim_read(&f->shim.base, p, n, off);
	if (f->len > 0 && off >= f->off && off + n <= f->off + f->len) {
		memcpy(p, f->buf + (off - f->off), (size_t)n);
		f->next = off + n;
		return SQLITE_OK;
	}
	window = readahead_window(f, off);
	f->next = off + n;
	readahead_drop(f);
	if (n >= window || (!f->buf && !(f->buf = malloc(READAHEAD_MAX))))
		return vfs_shim_read(&f->shim.base, p, n, off);
	rc = vfs_shim_read(&f->shim.base, f->buf, window, off);
	if (rc != SQLITE_OK)
		return vfs_shim_read(&f->shim.base, p, n, off);
	f->off = off;
	f->len = window;
	memcpy(p, f->buf, (size_t)n);
	return SQLITE_OK;
}

/* xWrite, xTruncate: the real file's; the buffer is emptied first.  (The
 * connections that use this VFS are read-only: this is for safety.) */
static int
readahead_write(sqlite3_file *file, const void *p, int n, sqlite3_int64 off)
{
	struct readahead_file *f = (struct readahead_file *)file;

	readahead_drop(f);
	return vfs_shim_write(&f->shim.base, p, n, off);
}

static int
readahead_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	struct readahead_file *f = (struct readahead_file *)file;

	readahead_drop(f);
	return vfs_shim_truncate(&f->shim.base, size);
}

/* xShmLock: a read transaction begins or ends, so the buffer is emptied
 * (see the head of this file). */
static int
readahead_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
	struct readahead_file *f = (struct readahead_file *)file;

	readahead_drop(f);
	return vfs_shim_shm_lock(&f->shim.base, offset, n, flags);
}

/* xClose: close the real file, free the buffer. */
static int
readahead_close(sqlite3_file *file)
{
	struct readahead_file *f = (struct readahead_file *)file;
	int rc = f->shim.real->pMethods->xClose(f->shim.real);

	free(f->buf);
	f->buf = NULL;
	f->len = 0;
	return rc;
}

/* xShmUnmap: the index goes, and with it this read transaction. */
static int
readahead_shm_unmap(sqlite3_file *file, int del)
{
	struct readahead_file *f = (struct readahead_file *)file;

	readahead_drop(f);
	return vfs_shim_shm_unmap(&f->shim.base, del);
}

/* What is not readahead's is the real file's (vfs_shim.h). */
static sqlite3_io_methods readahead_methods = {
	3, readahead_close, readahead_read, readahead_write, readahead_truncate,
	vfs_shim_sync, vfs_shim_file_size, vfs_shim_lock, vfs_shim_unlock,
	vfs_shim_check_reserved, vfs_shim_file_control, vfs_shim_sector_size,
	vfs_shim_device_chars, vfs_shim_shm_map, readahead_shm_lock,
	vfs_shim_shm_barrier, readahead_shm_unmap, vfs_shim_fetch,
	vfs_shim_unfetch,
};

/* xOpen: open the real file just after ours, and wrap it. */
static int
readahead_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file,
    int flags, int *out_flags)
{
	struct readahead_file *f = (struct readahead_file *)file;
	int rc = vfs_shim_open_real(vfs, name, &f->shim, sizeof(*f), flags,
	    out_flags);

	if (rc != SQLITE_OK)
		return rc;
	f->is_main = !!(flags & SQLITE_OPEN_MAIN_DB);
	f->window = READAHEAD_MIN;
	f->next = -1;
	f->shim.base.pMethods = &readahead_methods;
	return SQLITE_OK;
}

/* Build and register the VFS, not as the default (pthread_once). */
static void
readahead_register_once(void)
{
	readahead_registered = vfs_shim_register(&readahead_vfs, READAHEAD_NAME,
	    sizeof(struct readahead_file), readahead_open) == 0;
}

/* The name of the VFS to open a read-only connection with: ours, or NULL
 * (SQLite's default) if it could not be registered. */
const char *
readahead_vfs_name(void)
{
	pthread_once(&readahead_once, readahead_register_once);
	return readahead_registered ? READAHEAD_NAME : NULL;
}

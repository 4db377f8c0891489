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
 * The kept pages.  A 4 KiB read at a random place of a big file needs,
 * besides its two overflow pages, the leaf of the blocks table that holds
 * its block's row and the pointer-map page that chains the block's
 * overflow pages.  SQLite's page cache of a reader (READERS_CACHE_KIB)
 * keeps the last pages read, and random reads fill it with overflow pages
 * that are never read again, so those two pages came from the file too:
 * three preads per read where one would do (a 1 GiB file has 2,048 leaves
 * and 257 pointer-map pages, 9 MiB).  Beside the buffer, each connection
 * keeps up to a set number of bytes (readahead_keep; READAHEAD_KEEP until
 * told) of the pages SQLite asked for whole
 * (a read of one page size, at a multiple of it) that are b-tree or
 * pointer-map pages, told by their first byte: a b-tree page's type (2,
 * 5, 10, 13) or a pointer-map entry's (1 to 5); an overflow or freelist
 * page begins with a page number, whose first byte is 0 in a database of
 * fewer than 2^24 pages.  What the first byte says only decides what is
 * worth keeping: a kept page is what the file held at that offset during
 * this read transaction, and answers only a read of the same offset and
 * size.  The slots are in sets of READAHEAD_WAYS, a set chosen by hashing
 * the page number; a new page takes the place of its set's least recently
 * used one (so the pointer-map pages, each used by 8 leaves' blocks, stay
 * while leaves come and go).  The kept pages are forgotten exactly when
 * the buffer is: the rule above holds for every page read from the file
 * in the transaction, so they are as fresh as the buffer is.  A reader
 * keeps its snapshot across requests (readers.c), so the pages stay while
 * no group ends.
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
/* Bytes of b-tree and pointer-map pages a connection keeps until told
 * otherwise (readahead_keep). */
#define READAHEAD_KEEP (2u << 20)
/* The file-control opcode of readahead_keep (SQLite leaves those above
 * 100 to applications). */
#define READAHEAD_FCNTL_KEEP 0x41524b00
/* The page sizes SQLite allows. */
#define READAHEAD_PAGE_MIN 512
#define READAHEAD_PAGE_MAX 65536

/* Slots per set of kept pages. */
#define READAHEAD_WAYS 16

/* One kept page: where it was in the file, in which generation of the
 * buffer (valid while that is the file's generation), and when it was
 * last used (the file's count of kept pages used or added). */
struct readahead_slot {
	sqlite3_int64 off;
	uint64_t gen;
	uint64_t used;
};

struct readahead_file {
	struct vfs_shim_file shim;	/* our methods, the real file */
	int is_main;              /* a main database file: the only one read ahead */
	unsigned char *buf;       /* READAHEAD_MAX bytes, allocated on first use */
	sqlite3_int64 off;        /* file offset of buf[0] */
	int len;                  /* bytes of buf that hold the file (0: none) */
	sqlite3_int64 next;       /* where the last read ended */
	int window;               /* bytes the next read that misses reads */
	uint64_t gen;             /* moves when the buffer is emptied (from 1) */
	sqlite3_int64 keep_max;   /* bytes of pages it may keep */
	int keep_page;            /* the page size kept pages have (0: none) */
	uint32_t keep_sets;       /* sets of READAHEAD_WAYS slots */
	uint64_t tick;            /* kept pages used or added so far */
	struct readahead_slot *slots;	/* READAHEAD_WAYS * keep_sets, or NULL */
	unsigned char *keep;      /* their pages, keep_page bytes each */
};

static sqlite3_vfs readahead_vfs;
static sqlite3_io_methods readahead_methods;
static pthread_once_t readahead_once = PTHREAD_ONCE_INIT;
static int readahead_registered;

/* Forget what the buffer holds, and the kept pages. */
static void
readahead_drop(struct readahead_file *f)
{
	f->len = 0;
	f->gen++;
}

/* The first slot of the set of the page at off (keep_page set). */
static struct readahead_slot *
readahead_set(struct readahead_file *f, sqlite3_int64 off)
{
	uint64_t pgno = (uint64_t)off / (uint64_t)f->keep_page;
	uint64_t h;

	/* Fibonacci hashing: pages spaced evenly (a leaf every 129 pages)
	 * spread over the sets; its top 32 bits scaled to the sets. */
	h = (pgno * 0x9E3779B97F4A7C15ull) >> 32;
	return &f->slots[((h * f->keep_sets) >> 32) * READAHEAD_WAYS];
}

/* The page that slot s holds. */
static unsigned char *
readahead_page(struct readahead_file *f, const struct readahead_slot *s)
{
	return f->keep + (size_t)(s - f->slots) * (size_t)f->keep_page;
}

/* Copy the page at off, n bytes, into p if it is kept.  1, or 0. */
static int
readahead_kept(struct readahead_file *f, void *p, int n, sqlite3_int64 off)
{
	struct readahead_slot *s;

	if (!f->slots || n != f->keep_page)
		return 0;
	s = readahead_set(f, off);
	for (int i = 0; i < READAHEAD_WAYS; i++, s++) {
		if (s->gen == f->gen && s->off == off) {
			s->used = ++f->tick;
			memcpy(p, readahead_page(f, s), (size_t)n);
			return 1;
		}
	}
	return 0;
}

/* Whether n bytes at off, p, are a whole page worth keeping: a b-tree or
 * pointer-map page (see the head of this file). */
static int
readahead_worth_keeping(const unsigned char *p, int n, sqlite3_int64 off)
{
	if (n < READAHEAD_PAGE_MIN || n > READAHEAD_PAGE_MAX || (n & (n - 1)) ||
	    off % n)
		return 0;
	return (p[0] >= 1 && p[0] <= 5) || p[0] == 10 || p[0] == 13;
}

/* Forget the kept pages and their room. */
static void
readahead_keep_free(struct readahead_file *f)
{
	free(f->keep);
	free(f->slots);
	f->keep = NULL;
	f->slots = NULL;
	f->keep_page = 0;
}

/* Make room for pages of n bytes (a power of two): the slots are set up,
 * or set up again for another page size.  0, or -1 when there is no
 * memory or no room for one set (then nothing is kept). */
static int
readahead_keep_size(struct readahead_file *f, int n)
{
	uint32_t sets = (uint32_t)(f->keep_max / READAHEAD_WAYS / n);

	if (f->slots && f->keep_page == n)
		return 0;
	readahead_keep_free(f);
	if (sets == 0)
		return -1;
	f->keep = malloc((size_t)n * READAHEAD_WAYS * sets);
	f->slots = calloc((size_t)READAHEAD_WAYS * sets, sizeof(*f->slots));
	if (!f->keep || !f->slots) {
		readahead_keep_free(f);
		return -1;
	}
	f->keep_page = n;
	f->keep_sets = sets;
	return 0;
}

/* Keep the page p of n bytes at off, read from the file in this
 * generation, if it is worth keeping. */
static void
readahead_keep_page(struct readahead_file *f, const void *p, int n,
    sqlite3_int64 off)
{
	struct readahead_slot *s, *victim;

	if (!readahead_worth_keeping(p, n, off) || readahead_keep_size(f, n) < 0)
		return;
	/* A slot of an older generation is free; else the least recently
	 * used one goes. */
	victim = s = readahead_set(f, off);
	for (int i = 0; i < READAHEAD_WAYS; i++, s++) {
		if (s->gen != f->gen) {
			victim = s;
			break;
		}
		if (s->used < victim->used)
			victim = s;
	}
	memcpy(readahead_page(f, victim), p, (size_t)n);
	victim->off = off;
	victim->gen = f->gen;
	victim->used = ++f->tick;
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

/* A read from the buffer, or through it: SQLITE_OK, or what the default
 * VFS says for exactly this read. */
static int
readahead_fill(struct readahead_file *f, void *p, int n, sqlite3_int64 off)
{
	int window, rc;

	if (f->len > 0 && off >= f->off && off + n <= f->off + f->len) {
		memcpy(p, f->buf + (off - f->off), (size_t)n);
		f->next = off + n;
		return SQLITE_OK;
	}
	window = readahead_window(f, off);
	f->next = off + n;
	f->len = 0;
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

/* xRead: a kept page, or from the buffer or through it (and kept if worth
 * it).  SQLITE_OK, or what the default VFS says for exactly this read. */
static int
readahead_read(sqlite3_file *file, void *p, int n, sqlite3_int64 off)
{
	struct readahead_file *f = (struct readahead_file *)file;
	int rc;

	if (!f->is_main || n <= 0 || off < 0)
		return vfs_shim_read(&f->shim.base, p, n, off);
	/* A kept page leaves the sequence of reads as it was: a sequential
	 * read of a file goes on past its leaves. */
	if (readahead_kept(f, p, n, off))
		return SQLITE_OK;
	if ((rc = readahead_fill(f, p, n, off)) == SQLITE_OK)
		readahead_keep_page(f, p, n, off);
	return rc;
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

/* xFileControl: readahead_keep's opcode here, the rest the real file's. */
static int
readahead_file_control(sqlite3_file *file, int op, void *arg)
{
	struct readahead_file *f = (struct readahead_file *)file;
	sqlite3_int64 bytes;

	if (op != READAHEAD_FCNTL_KEEP)
		return vfs_shim_file_control(file, op, arg);
	bytes = *(sqlite3_int64 *)arg;
	if (!f->is_main || bytes < 0)
		return SQLITE_MISUSE;
	readahead_keep_free(f);
	f->keep_max = bytes;
	return SQLITE_OK;
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
	readahead_keep_free(f);
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
	vfs_shim_check_reserved, readahead_file_control, vfs_shim_sector_size,
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
	f->gen = 1;
	f->keep_max = READAHEAD_KEEP;
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

/* Let db, a connection opened with readahead_vfs_name(), keep up to bytes
 * of pages of its database file (0: none); what it kept is forgotten.
 * 0, or -1 when db's file is not one of this VFS's (SQLite's default VFS
 * stood in for it). */
int
readahead_keep(sqlite3 *db, size_t bytes)
{
	sqlite3_int64 n = (sqlite3_int64)bytes;

	return sqlite3_file_control(db, "main", READAHEAD_FCNTL_KEEP, &n) ==
	    SQLITE_OK ? 0 : -1;
}

/*
 * walbuf.c: an SQLite VFS ("atrium-walbuf") over the default one that
 * hands the writes of a transaction to its WAL file in big pieces.
 * atrium-fs's core.c opens its writing connection through it, and
 * atrium-agent's room_db.c its room.db connection (a turn's step commits
 * a few small transactions, and the two pwrite calls per page were a
 * tenth of a step's own time); everything but the WAL's writes
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
 * Checkpoints, the same way: a checkpoint copies the WAL into the
 * database one page at a time, a pread and a pwrite each, and those calls
 * were a third of the daemon's time during a 1 GiB write.  The pages that
 * a checkpoint appends to the database (a big write's, in order) are
 * gathered like the WAL's and written in 64 KiB pieces.  Only those: a
 * write that SQLite is told succeeded must not fail later, and SQLite
 * ignores what the end of a checkpoint returns (SQLITE_FCNTL_CKPT_DONE,
 * where the buffer goes out).  So the room is allocated first: SQLite
 * announces the size a checkpoint will give the database
 * (SQLITE_FCNTL_SIZE_HINT) and this VFS allocates the blocks up to it
 * (fallocate, keeping the file's size); only pages inside that freshly
 * allocated range, in that checkpoint, are gathered.  Writes
 * over the database's existing pages, and all writes when the allocation
 * failed, go straight through and fail where they are made.  Should a
 * gathered write fail anyway (an I/O error: its blocks are allocated),
 * the error is logged and every later call on that database file returns
 * it: a checkpoint that copied the whole WAL then fails at its closing
 * truncate and sync, uncounted, and the mount fails at its next use of the
 * file.  A partial checkpoint (a reader still holds older frames) has no
 * closing call and counts its frames anyway, as it does today when the
 * kernel fails to write back a page that pwrite accepted: the database
 * file is synced only at the end of a complete checkpoint.
 *
 * The frames a checkpoint copies are read the same way, in 256 KiB
 * preads of the WAL rather than one per page.  What is read ahead is used
 * only by the checkpoint that read it: the frames a checkpoint copies are
 * committed and stay as they are until it ends, while the frames past
 * them may still be being written by the writer, and the WAL starts over
 * after a complete checkpoint.  A checkpoint runs on one thread, between
 * SQLITE_FCNTL_CKPT_START and _DONE on its database file, so each
 * checkpoint gets a number of its own for its thread (walbuf_ckpt_window),
 * and a WAL file serves a read from what it read ahead only inside the
 * checkpoint that read it.
 *
 * Replication (a room of a cluster, walbuf_replicate): when this process
 * was given a replication fd, once the frames of a commit are in the WAL
 * file (walbuf_flush, at the commit frame's page),
 * they are read back from the file, from the first frame this
 * transaction wrote (the lowest offset of a frame header written past the
 * last commit frame since it; SQLite rewrites a frame in place when a
 * transaction writes a page twice, so only the file has each page's last
 * image, and then writes the headers again after the commit frame, which
 * are neither a new transaction nor a new commit) to the commit frame's
 * end, and written to the fd as one record (walrec.h), in pieces
 * of at most WALBUF_PIECE, on a blocking descriptor: a slow reader makes
 * the commit wait, and nothing here grows.  A record that cannot be
 * written (the reader is gone) fails the commit the same way, logged
 * once: a room whose writes cannot be streamed stops taking them rather
 * than losing them.  Records are written under one mutex, so two
 * writers' records never interleave (workspace.db has one writer, room.db
 * one connection: records go out in commit order).  This happens before
 * SQLite publishes the commit in the -shm index, so a reader (the
 * shipper's snapshot) that sees a commit may rely on every record before
 * it having been written.
 *
 * Fencing (a host of a cluster, cluster/node.c): the process that writes
 * a room is given the room's fence page (fence.h, walbuf_set_fence), and
 * the write of a commit frame's header is refused with SQLITE_IOERR_WRITE
 * once this host may no longer commit to the room: the transaction fails,
 * so nothing of it is announced, and the frames before it are never part
 * of the database.  The check is made by the writer itself at each
 * commit, so it holds while the monitor that renews the hold is stopped.
 *
 * Threading: a buffer belongs to one open WAL or database file of one
 * connection, which SQLite uses from one thread at a time (the writer
 * holds fs->lock; the committer alone uses the checkpoint connection).
 * The VFS is registered once (pthread_once).
 */
#include "walbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fence.h"
#include "log.h"
#include "util.h"
#include "vfs_shim.h"
#include "walrec.h"

#define WALBUF_NAME "atrium-walbuf"
#define WALBUF_SMALL_NAME "atrium-walbuf-small"
/* Bytes gathered before they are written: about 250 frames of 4 KiB
 * pages. */
#define WALBUF_BYTES (1u << 20)
/* The same for a connection of small transactions opened through the
 * "small" VFS (walbuf_small_vfs_name): what its largest transaction
 * touched of the buffer stays resident, and room.db's agent is meant to
 * stay small when idle; a transaction bigger than this is written as it
 * fills the buffer. */
#define WALBUF_SMALL_BYTES (128u << 10)
/* Bytes per write call: the unix VFS writes at most 128 KiB - 1 per call
 * (seekAndWriteFd masks the length with 0x1ffff, and a longer write comes
 * back short, as SQLITE_FULL). */
#define WALBUF_PIECE (64u << 10)
/* SQLite's WAL layout (wal.c): a 32-byte file header, then frames of a
 * 24-byte header (page number, database size after a commit, ...) and
 * a page. */
#define WALBUF_FILE_HDR 32
#define WALBUF_FRAME_HDR 24
/* Bytes of WAL a checkpoint reads at once: about 60 frames of 4 KiB. */
#define WALBUF_AHEAD (256u << 10)

/* The number of the checkpoint this thread runs, 0 when none (see the
 * top), and the checkpoints numbered so far, by every thread (atomic): a
 * number is never given twice, so what one checkpoint read ahead is never
 * used by another, on this thread or any other. */
static _Thread_local uint64_t walbuf_ckpt_window;
static uint64_t walbuf_ckpt_count;

/* Configuration, set once at start before any database is opened
 * (walbuf_replicate); the mutex orders the records and guards seq and
 * the logged-once flag. */
static struct {
	int fd;				/* -1: no replication */
	uint8_t db;			/* WALREC_DB_* */
	pthread_mutex_t lock;
	uint64_t seq;			/* the last record's number */
	int broken_said;		/* the failure was logged */
} walbuf_repl = { .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

struct walbuf_file {
	struct vfs_shim_file shim;	/* our methods, the real file */
	int is_wal;
	int is_db;                /* a main database file */
	unsigned char *buf;       /* cap bytes, allocated on first write */
	size_t cap;               /* WALBUF_BYTES or WALBUF_SMALL_BYTES */
	size_t len;               /* bytes gathered */
	sqlite3_int64 off;        /* file offset of buf[0] */
	int commit_next;          /* the last write was a commit frame's header */
	/* A WAL of a replicated process: the lowest offset of a frame header
	 * appended since the last commit (-1: none yet), the end of the last
	 * commit frame (0 after the WAL's header is written: it starts over),
	 * the offset of the last commit frame's header, and the page size. */
	sqlite3_int64 txn_lo;
	sqlite3_int64 committed_end;
	sqlite3_int64 commit_hdr_off;
	int page_size;
	/* A database file during a checkpoint: writes inside [room_from,
	 * room_to), allocated by this checkpoint's size hint, are gathered. */
	int in_ckpt;
	sqlite3_int64 room_from, room_to;
	int failed;               /* a gathered write failed: every call fails */
	int db_fd;                /* SQLite's descriptor of it (walbuf_db_fd); -1 */
	/* A WAL's bytes read ahead for a checkpoint: ahead_len bytes from
	 * ahead_off, valid in checkpoint window ahead_window of this thread. */
	unsigned char *ahead;
	size_t ahead_len;
	sqlite3_int64 ahead_off;
	uint64_t ahead_window;
};

/* The start of the unix VFS's file object (os_unix.c: unixFile), the same
 * since SQLite 3.7: its descriptor is the fourth field. */
struct walbuf_unix_file {
	const void *methods, *vfs, *inode;
	int h;
};

static sqlite3_vfs walbuf_vfs, walbuf_small_vfs;
static sqlite3_io_methods walbuf_methods;
static pthread_once_t walbuf_once = PTHREAD_ONCE_INIT;
static int walbuf_registered, walbuf_small_registered;

/* The room's fence page (fence.h), set once at start by the process
 * that writes the room (walbuf_set_fence); NULL: no cluster, no fence. */
static const struct fence_page *walbuf_fence;
static atomic_int walbuf_fence_told;	/* the refusal was logged */

/* See walbuf.h. */
void
walbuf_set_fence(const struct fence_page *f)
{
	walbuf_fence = f;
}

/* 1 when a commit may be written now; else logs the refusal once. */
static int
walbuf_fence_allows(void)
{
	if (fence_may_commit(walbuf_fence))
		return 1;
	if (!atomic_exchange(&walbuf_fence_told, 1))
		log_error("this host's hold on the room has ended (fence time "
		    "passed, epoch %lld): no commit is written any more",
		    (long long)atomic_load(&walbuf_fence->epoch));
	return 0;
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
		rc = vfs_shim_write(&f->shim.base, f->buf + done, (int)n,
		    f->off + (sqlite3_int64)done);
		done += n;
	}
	/* Gone either way: SQLite rolls back on a failed write and never
	 * reuses the frames it had handed over.  A database file's pages were
	 * answered for already: its later calls fail (see the top). */
	f->len = 0;
	if (rc != SQLITE_OK && f->is_db && !f->failed) {
		f->failed = rc;
		log_error("writing checkpointed pages into the database failed "
		    "(%s); the checkpoint is not counted", sqlite3_errstr(rc));
	}
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
	if (f->len && (!follows || f->len + (size_t)n > f->cap ||
	    (size_t)n > WALBUF_PIECE) && (rc = walbuf_flush(f)) != SQLITE_OK)
		return rc;
	if ((size_t)n > WALBUF_PIECE)
		return vfs_shim_write(&f->shim.base, p, n, off);
	if (f->len == 0)
		f->off = off;
	memcpy(f->buf + f->len, p, (size_t)n);
	f->len += (size_t)n;
	return SQLITE_OK;
}

/* 1 when a database file's write of n bytes at off may be gathered: it
 * lies in the room this checkpoint allocated (see the top), and there is
 * a buffer. */
static int
walbuf_db_gathers(struct walbuf_file *f, int n, sqlite3_int64 off)
{
	if (!f->in_ckpt || off < f->room_from || off + n > f->room_to)
		return 0;
	if (!f->buf)
		f->buf = malloc(f->cap);
	return f->buf != NULL;
}

/* xWrite of a database file: gathered during a checkpoint, inside the
 * room it allocated; otherwise straight through, after what is gathered. */
static int
walbuf_db_write(struct walbuf_file *f, const void *p, int n, sqlite3_int64 off)
{
	int rc;

	if (f->failed)
		return f->failed;
	if (walbuf_db_gathers(f, n, off))
		return walbuf_gather(f, p, n, off);
	if (f->len && (rc = walbuf_flush(f)) != SQLITE_OK)
		return rc;
	return vfs_shim_write(&f->shim.base, p, n, off);
}

/* Write n bytes of p to the replication fd: 0 or -errno. */
static int
walbuf_repl_send(const void *p, size_t n)
{
	return write_all(walbuf_repl.fd, p, n);
}

/* The frames [from, to) of the WAL f, read back from the file, to the
 * replication fd in pieces of whole frames.  0 or -errno. */
static int
walbuf_repl_frames(struct walbuf_file *f, sqlite3_int64 from,
    sqlite3_int64 to, size_t fb)
{
	size_t chunk = (WALBUF_PIECE / fb ? WALBUF_PIECE / fb : 1) * fb;
	unsigned char *buf = malloc(chunk);
	int r = 0;

	if (!buf)
		return -ENOMEM;
	while (r == 0 && from < to) {
		size_t n = (size_t)(to - from) < chunk ? (size_t)(to - from) :
		    chunk;

		if (vfs_shim_read(&f->shim.base, buf, (int)n, from) !=
		    SQLITE_OK)
			r = -EIO;
		else
			r = walbuf_repl_send(buf, n);
		from += (sqlite3_int64)n;
	}
	free(buf);
	return r;
}

/* The commit whose frame ends at end, as one record (see the top).
 * Called with walbuf_repl.lock held.  0 or -errno. */
static int
walbuf_repl_record(struct walbuf_file *f, const unsigned char *commit_hdr,
    sqlite3_int64 end)
{
	size_t fb = walrec_frame_bytes((uint32_t)f->page_size);
	unsigned char hdr[WALREC_HDR];
	struct walrec_hdr h = { .db = walbuf_repl.db,
	    .page_size = (uint32_t)f->page_size };
	int r;

	if (f->txn_lo < WALBUF_FILE_HDR || end <= f->txn_lo ||
	    (end - f->txn_lo) % (sqlite3_int64)fb)
		return -EPROTO;
	h.frames = (uint32_t)((end - f->txn_lo) / (sqlite3_int64)fb);
	h.db_pages = (uint32_t)commit_hdr[4] << 24 | (uint32_t)commit_hdr[5] <<
	    16 | (uint32_t)commit_hdr[6] << 8 | commit_hdr[7];
	h.seq = walbuf_repl.seq + 1;
	walrec_hdr_put(&h, hdr);
	if ((r = walbuf_repl_send(hdr, sizeof(hdr))) < 0 ||
	    (r = walbuf_repl_frames(f, f->txn_lo, end, fb)) < 0)
		return r;
	walbuf_repl.seq = h.seq;
	return 0;
}

/* The commit frame's page p (n bytes at off) of a replicated process:
 * written out with what is gathered and sent as a record.  SQLITE_OK or
 * an error (SQLITE_IOERR_WRITE when the record failed, logged once). */
static int
walbuf_repl_commit(struct walbuf_file *f, const void *p, int n,
    sqlite3_int64 off)
{
	unsigned char commit_hdr[WALBUF_FRAME_HDR];
	int rc, r;

	pthread_mutex_lock(&walbuf_repl.lock);
	/* The commit frame's header is the last thing gathered. */
	if (f->len < WALBUF_FRAME_HDR) {
		rc = walbuf_flush(f);
		if (rc == SQLITE_OK)
			rc = vfs_shim_read(&f->shim.base, commit_hdr,
			    WALBUF_FRAME_HDR, off - WALBUF_FRAME_HDR);
	} else {
		memcpy(commit_hdr, f->buf + f->len - WALBUF_FRAME_HDR,
		    WALBUF_FRAME_HDR);
		rc = SQLITE_OK;
	}
	if (rc == SQLITE_OK && (rc = walbuf_gather(f, p, n, off)) == SQLITE_OK)
		rc = walbuf_flush(f);
	f->len = 0;
	if (rc == SQLITE_OK &&
	    (r = walbuf_repl_record(f, commit_hdr, off + n)) < 0) {
		if (!walbuf_repl.broken_said++)
			log_error("streaming a commit to the replication fd "
			    "failed (%s): commits are refused", strerror(-r));
		rc = SQLITE_IOERR_WRITE;
	}
	f->txn_lo = -1;
	if (rc == SQLITE_OK)
		f->committed_end = off + n;
	pthread_mutex_unlock(&walbuf_repl.lock);
	return rc;
}

/* Note a replicated WAL's write (see the top).  Frame headers that
 * SQLite writes again over committed frames (walRewriteChecksums, after
 * a transaction rewrote a frame in place) are not a transaction's. */
static void
walbuf_repl_note(struct walbuf_file *f, int n, sqlite3_int64 off)
{
	if (off == 0) {
		f->committed_end = 0;
	} else if (n == WALBUF_FRAME_HDR && off >= WALBUF_FILE_HDR) {
		if (off >= f->committed_end && (f->txn_lo < 0 || off < f->txn_lo))
			f->txn_lo = off;
	} else if (off >= WALBUF_FILE_HDR + WALBUF_FRAME_HDR) {
		f->page_size = n;
	}
}

/* 1 when a write of n bytes at off is the page of the commit frame whose
 * header came just before (not a header SQLite rewrites after it). */
static int
walbuf_repl_is_commit_page(const struct walbuf_file *f, int n,
    sqlite3_int64 off)
{
	return n != WALBUF_FRAME_HDR &&
	    off == f->commit_hdr_off + WALBUF_FRAME_HDR;
}

/* xWrite: a WAL's writes are gathered; the page after a commit frame's
 * header is written out with everything before it (and, in a room of a
 * cluster, streamed: walbuf_repl_commit). */
static int
walbuf_write(sqlite3_file *file, const void *p, int n, sqlite3_int64 off)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int commit = f->commit_next, rc;
	int streamed = walbuf_repl.fd >= 0;

	if (f->is_db)
		return walbuf_db_write(f, p, n, off);
	if (!f->is_wal)
		return vfs_shim_write(&f->shim.base, p, n, off);
	f->ahead_len = 0;
	if (walbuf_is_commit_header(p, n, off) && !walbuf_fence_allows()) {
		/* The transaction fails before its commit frame is written:
		 * what was gathered of it is dropped, and frames of it already
		 * written lie past the WAL's last commit, where no reader and
		 * no recovery looks. */
		f->len = 0;
		f->commit_next = 0;
		return SQLITE_IOERR_WRITE;
	}
	if (streamed)
		walbuf_repl_note(f, n, off);
	if (!f->buf && !(f->buf = malloc(f->cap)))
		return streamed ? SQLITE_IOERR_NOMEM :
		    vfs_shim_write(&f->shim.base, p, n, off);
	f->commit_next = walbuf_is_commit_header(p, n, off);
	if (f->commit_next)
		f->commit_hdr_off = off;
	if (commit && streamed && walbuf_repl_is_commit_page(f, n, off))
		return walbuf_repl_commit(f, p, n, off);
	if ((rc = walbuf_gather(f, p, n, off)) != SQLITE_OK) {
		f->len = 0;
		return rc;
	}
	return commit ? walbuf_flush(f) : SQLITE_OK;
}

/* Write out what is gathered before another use of the file; a database
 * file whose gathered write failed fails every use. */
static int
walbuf_settle(sqlite3_file *file)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	if (f->failed)
		return f->failed;
	return f->len ? walbuf_flush(f) : SQLITE_OK;
}

/* xClose: write out, close the real file, free the buffer. */
static int
walbuf_close(sqlite3_file *file)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);
	int rc2 = f->shim.real->pMethods->xClose(f->shim.real);

	free(f->buf);
	f->buf = NULL;
	free(f->ahead);
	f->ahead = NULL;
	return rc != SQLITE_OK ? rc : rc2;
}

/* Read up to WALBUF_AHEAD bytes of the WAL from off, no further than its
 * end, for this thread's running checkpoint.  1 when they hold the n bytes
 * at off, 0 when not (nothing kept), or an SQLite error code. */
static int
walbuf_read_ahead(struct walbuf_file *f, int n, sqlite3_int64 off)
{
	sqlite3_int64 size = 0;
	size_t len;
	int rc;

	f->ahead_len = 0;
	if (!f->ahead && !(f->ahead = malloc(WALBUF_AHEAD)))
		return 0;
	if ((rc = vfs_shim_file_size(&f->shim.base, &size)) != SQLITE_OK)
		return rc;
	if (size < off + n)
		return 0;
	len = size - off < WALBUF_AHEAD ? (size_t)(size - off) : WALBUF_AHEAD;
	if (len < (size_t)n)
		return 0;
	if ((rc = vfs_shim_read(&f->shim.base, f->ahead, (int)len, off)) !=
	    SQLITE_OK)
		return rc;
	f->ahead_len = len;
	f->ahead_off = off;
	f->ahead_window = walbuf_ckpt_window;
	return 1;
}

/* A WAL read inside this thread's checkpoint: from what was read ahead in
 * it, reading ahead again when the bytes are not there.  SQLITE_OK, or
 * SQLITE_NOTFOUND to read the plain way. */
static int
walbuf_read_in_ckpt(struct walbuf_file *f, void *p, int n, sqlite3_int64 off)
{
	int r;

	if (!(f->ahead_len && f->ahead_window == walbuf_ckpt_window &&
	    off >= f->ahead_off &&
	    off + n <= f->ahead_off + (sqlite3_int64)f->ahead_len) &&
	    (r = walbuf_read_ahead(f, n, off)) != 1)
		return r == 0 ? SQLITE_NOTFOUND : r;
	memcpy(p, f->ahead + (off - f->ahead_off), (size_t)n);
	return SQLITE_OK;
}

/* xRead, and below xTruncate, xSync, xFileSize and xFileControl: the
 * real file's, once what is gathered is written out; a checkpoint reads
 * its WAL ahead (see the top). */
static int
walbuf_read(sqlite3_file *file, void *p, int n, sqlite3_int64 off)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	if (rc != SQLITE_OK)
		return rc;
	if (f->is_wal && walbuf_ckpt_window &&
	    (rc = walbuf_read_in_ckpt(f, p, n, off)) != SQLITE_NOTFOUND)
		return rc;
	f->ahead_len = 0;
	return vfs_shim_read(&f->shim.base, p, n, off);
}

static int
walbuf_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	f->ahead_len = 0;
	return rc != SQLITE_OK ? rc : vfs_shim_truncate(&f->shim.base, size);
}

static int
walbuf_sync(sqlite3_file *file, int flags)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	return rc != SQLITE_OK ? rc : vfs_shim_sync(&f->shim.base, flags);
}

static int
walbuf_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	return rc != SQLITE_OK ? rc : vfs_shim_file_size(&f->shim.base, size);
}

/* SQLITE_FCNTL_SIZE_HINT during a checkpoint: allocate the blocks the
 * database will grow into, up to *size, without changing its size
 * (fallocate KEEP_SIZE, on SQLite's own descriptor), and gather the writes
 * past the old end if that worked.  Debian's SQLite is built without
 * posix_fallocate, and its own allocation (SQLITE_FCNTL_CHUNK_SIZE) writes
 * one byte per 4 KiB block: a pwrite per page, the very cost saved here. */
static void
walbuf_db_allocate(struct walbuf_file *f, const sqlite3_int64 *size)
{
	sqlite3_int64 before = 0;
	int r;

	if (f->db_fd < 0 ||
	    vfs_shim_file_size(&f->shim.base, &before) != SQLITE_OK ||
	    *size <= before)
		return;
	do
		r = fallocate(f->db_fd, FALLOC_FL_KEEP_SIZE, before, *size - before);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		f->room_from = before;
		f->room_to = *size;
	}
}

/* xFileControl: the real file's, once what is gathered is written out;
 * a database file's checkpoint opens and closes its gathering. */
static int
walbuf_file_control(sqlite3_file *file, int op, void *arg)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	if (f->is_db && (op == SQLITE_FCNTL_CKPT_START ||
	    op == SQLITE_FCNTL_CKPT_DONE)) {
		f->in_ckpt = op == SQLITE_FCNTL_CKPT_START;
		f->room_from = f->room_to = 0;
		walbuf_ckpt_window = f->in_ckpt ? __atomic_add_fetch(
		    &walbuf_ckpt_count, 1, __ATOMIC_RELAXED) : 0;
	}
	if (rc != SQLITE_OK)
		return rc;
	if (f->is_db && f->in_ckpt && op == SQLITE_FCNTL_SIZE_HINT && arg)
		walbuf_db_allocate(f, arg);
	return vfs_shim_file_control(&f->shim.base, op, arg);
}

/* Locks and the -shm index: what is gathered goes out first, since
 * another connection may read the file once a lock moves. */
static int
walbuf_lock(sqlite3_file *file, int lock)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = walbuf_settle(file);

	return rc != SQLITE_OK ? rc : vfs_shim_lock(&f->shim.base, lock);
}

static int
walbuf_unlock(sqlite3_file *file, int lock)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	/* Out first, even when failed: unlocking must not be refused. */
	if (!f->failed && f->len)
		walbuf_flush(f);
	return vfs_shim_unlock(&f->shim.base, lock);
}

static int
walbuf_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	/* Another connection may read the database once a lock moves. */
	if (!f->failed && f->len)
		walbuf_flush(f);
	return vfs_shim_shm_lock(&f->shim.base, offset, n, flags);
}

/* Called on the database file (never a WAL) before SQLite publishes a
 * commit in the -shm index; by then the WAL's buffer was written out at
 * the commit frame. */
static void
walbuf_shm_barrier(sqlite3_file *file)
{
	struct walbuf_file *f = (struct walbuf_file *)file;

	if (!f->failed && f->len)
		walbuf_flush(f);
	vfs_shim_shm_barrier(&f->shim.base);
}

/* What is not walbuf's is the real file's (vfs_shim.h). */
static sqlite3_io_methods walbuf_methods = {
	3, walbuf_close, walbuf_read, walbuf_write, walbuf_truncate,
	walbuf_sync, walbuf_file_size, walbuf_lock, walbuf_unlock,
	vfs_shim_check_reserved, walbuf_file_control, vfs_shim_sector_size,
	vfs_shim_device_chars, vfs_shim_shm_map, walbuf_shm_lock,
	walbuf_shm_barrier, vfs_shim_shm_unmap, vfs_shim_fetch,
	vfs_shim_unfetch,
};

/* The descriptor SQLite's unix VFS holds for the database at path, for
 * fallocate alone (walbuf_db_allocate), or -1 (then nothing is gathered).
 * There is no file control that gives it, and a descriptor of our own would
 * be worse: closing any descriptor of a file drops every POSIX lock the
 * process holds on it, SQLite's included.  So it is read from the unix
 * VFS's file object, and trusted only when fstat shows that it is the file
 * at path; SQLite keeps and closes it. */
static int
walbuf_db_fd(sqlite3_file *real, const char *path)
{
	const struct walbuf_unix_file *u = (const void *)real;
	sqlite3_vfs *vfs = vfs_shim_real_vfs(&walbuf_vfs);
	struct stat a, b;

	if (!path || strcmp(vfs->zName, "unix") != 0 ||
	    vfs->szOsFile < (int)sizeof(*u))
		return -1;
	if (u->h < 0 || fstat(u->h, &a) < 0 || stat(path, &b) < 0 ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino || !S_ISREG(a.st_mode))
		return -1;
	return u->h;
}

/* xOpen: open the real file just after ours, and wrap it. */
static int
walbuf_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags,
    int *out_flags)
{
	struct walbuf_file *f = (struct walbuf_file *)file;
	int rc = vfs_shim_open_real(vfs, name, &f->shim, sizeof(*f), flags,
	    out_flags);

	if (rc != SQLITE_OK)
		return rc;
	f->cap = vfs == &walbuf_small_vfs ? WALBUF_SMALL_BYTES : WALBUF_BYTES;
	f->is_wal = !!(flags & SQLITE_OPEN_WAL);
	f->is_db = !!(flags & SQLITE_OPEN_MAIN_DB);
	f->db_fd = f->is_db ? walbuf_db_fd(f->shim.real, name) : -1;
	f->txn_lo = -1;
	f->shim.base.pMethods = &walbuf_methods;
	return SQLITE_OK;
}

/* Build and register the VFSs, not as the default (pthread_once). */
static void
walbuf_register_once(void)
{
	walbuf_registered = vfs_shim_register(&walbuf_vfs, WALBUF_NAME,
	    sizeof(struct walbuf_file), walbuf_open) == 0;
	walbuf_small_registered = vfs_shim_register(&walbuf_small_vfs,
	    WALBUF_SMALL_NAME, sizeof(struct walbuf_file), walbuf_open) == 0;
}

/* The name of the VFS to open a writing connection with: ours, or NULL
 * (SQLite's default) if it could not be registered. */
const char *
walbuf_vfs_name(void)
{
	pthread_once(&walbuf_once, walbuf_register_once);
	return walbuf_registered ? WALBUF_NAME : NULL;
}

/* The same with a buffer of WALBUF_SMALL_BYTES. */
const char *
walbuf_small_vfs_name(void)
{
	pthread_once(&walbuf_once, walbuf_register_once);
	return walbuf_small_registered ? WALBUF_SMALL_NAME : NULL;
}

int
walbuf_replicate(int fd, int db)
{
	if (fd < 0 || (db != WALREC_DB_ROOM && db != WALREC_DB_WORKSPACE))
		return -EINVAL;
	walbuf_repl.fd = fd;
	walbuf_repl.db = (uint8_t)db;
	return 0;
}

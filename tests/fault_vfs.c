/*
 * fault_vfs.c: the test VFS shim of tests/unit/shim_vfs.h as a preloaded
 * library, to fail room.db's commits inside a real atrium-agent
 * (tests/test_agent_journal.py).  Loaded with LD_PRELOAD, it installs the
 * shim as SQLite's default VFS before main when ATRIUM_FAULT_COMMIT is
 * set, and fails a commit the way a disk does:
 *
 *   ATRIUM_FAULT_COMMIT=K   the K-th commit of the process fails with
 *                           SQLITE_FULL (0: none; commits are counted
 *                           by WAL commit frames: a 24-byte frame header
 *                           whose "database size after commit" is set,
 *                           written alone or among the frames that
 *                           walbuf.c hands over in one write)
 *   ATRIUM_FAULT_STICKY=1   and every write after it fails too (a full
 *                           disk); otherwise only that one
 *   ATRIUM_FAULT_MARK=PATH  created when the fault fires
 *   ATRIUM_FAULT_COUNT=PATH rewritten with the commit count after each
 *                           commit
 *
 * It can also stop a process at a chosen moment of a big transaction, for
 * a test to kill -9 it there (tests/test_fs_snapshot.py):
 *
 *   ATRIUM_PAUSE=mid|commit in a transaction of at least
 *                           ATRIUM_PAUSE_FRAMES WAL frames (default 20),
 *                           pause the writing thread before the write
 *                           that holds its commit frame (mid: every
 *                           statement ran, nothing is committed) or right
 *                           after that write (commit: it is committed,
 *                           though the process never returned from it)
 *   ATRIUM_PAUSE_ARM=PATH   only while PATH exists
 *   ATRIUM_PAUSE_MARK=PATH  created when the pause starts
 * Frames are found by their offsets in the WAL (its header gives the page
 * size), since atrium-fs's walbuf.c hands the WAL whole runs of frames per
 * write.  A pause lasts PAUSE_MAX_S at most, then the write goes on: a
 * test that forgot its kill does not hang forever.
 *
 * Failing the write that holds the commit frame's header is what a full
 * disk does at the last moment: the frames before it (or beside it, in
 * the same write) are written or not, and never count.  The
 * library removes LD_PRELOAD from its environment, so the commands the
 * agent starts run without it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit/shim_vfs.h"

static long fault_at;		/* the commit that fails, 0 none */
static int fault_sticky;	/* and every write after it */
static int fault_fired;
static long fault_commits;	/* commit frames written so far */
static const char *fault_mark, *fault_count;

/* Write s to path, replacing it. */
static void
fault_note(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return;
	if (write(fd, s, strlen(s)) < 0)
		(void)0;
	close(fd);
}

#define PAUSE_MAX_S 120
#define WAL_HDR 32              /* SQLite's WAL file header */
#define WAL_FRAME_HDR 24        /* and each frame's, before its page */
enum { PAUSE_NONE, PAUSE_MID, PAUSE_COMMIT };
static int pause_mode;			/* PAUSE_* */
static long pause_frames = 20;		/* a transaction's frames before it */
static const char *pause_arm, *pause_mark;
static long pause_seen;			/* frames of the transaction so far */
static sqlite3_int64 pause_commit_end;	/* end of a big commit's last frame */
static int pause_done;			/* a process pauses once */

/* Stop here (PAUSE_MAX_S at most), having said so at pause_mark. */
static void
pause_now(void)
{
	pause_done = 1;
	if (pause_mark)
		fault_note(pause_mark, "paused\n");
	for (int i = 0; i < PAUSE_MAX_S * 10; i++)
		usleep(100000);
}

/* 1 when the pause is armed (pause_arm exists). */
static int
pause_armed(void)
{
	return !pause_done && (!pause_arm || access(pause_arm, F_OK) == 0);
}

/* The bytes [at, at + n) of what f holds once p (n bytes at off) is
 * written, into out: from p, the rest read back.  0, or -1. */
static int
pause_peek(sqlite3_file *f, const unsigned char *p, int n, sqlite3_int64 off,
    sqlite3_int64 at, int len, unsigned char *out)
{
	for (int i = 0; i < len; i++) {
		sqlite3_int64 pos = at + i;
		if (pos >= off && pos < off + n)
			out[i] = p[pos - off];
		else if (REAL(f)->pMethods->xRead(REAL(f), out + i, 1, pos) !=
		    SQLITE_OK)
			return -1;
	}
	return 0;
}

/* The page size of f when it is a WAL (its header's magic), else 0. */
static int
pause_wal_page(sqlite3_file *f, const unsigned char *p, int n,
    sqlite3_int64 off)
{
	unsigned char h[WAL_HDR];
	unsigned magic, page;

	if (pause_peek(f, p, n, off, 0, WAL_HDR, h) < 0)
		return 0;
	magic = (unsigned)h[0] << 24 | h[1] << 16 | h[2] << 8 | h[3];
	page = (unsigned)h[8] << 24 | h[9] << 16 | h[10] << 8 | h[11];
	if ((magic & ~1u) != 0x377f0682)
		return 0;
	return page == 1 ? 65536 : (int)page;
}

/* Count the WAL frame headers this write completes; pause_commit_end set to
 * the end of a big transaction's commit frame when one is among them.
 * 1 when a big transaction's commit header is among them. */
static int
pause_scan(sqlite3_file *f, const unsigned char *p, int n, sqlite3_int64 off)
{
	int page = off + n > WAL_HDR ? pause_wal_page(f, p, n, off) : 0;
	sqlite3_int64 frame, k;
	unsigned char h[WAL_FRAME_HDR];
	int big_commit = 0;

	if (page <= 0)
		return 0;
	frame = WAL_FRAME_HDR + page;
	k = off + 1 - WAL_HDR - WAL_FRAME_HDR;
	k = k <= 0 ? 0 : (k + frame - 1) / frame;
	for (; WAL_HDR + k * frame + WAL_FRAME_HDR <= off + n; k++) {
		sqlite3_int64 at = WAL_HDR + k * frame;
		if (pause_peek(f, p, n, off, at, WAL_FRAME_HDR, h) < 0)
			return 0;
		pause_seen++;
		if ((h[4] | h[5] | h[6] | h[7]) == 0)
			continue;
		if (pause_seen >= pause_frames) {
			big_commit = 1;
			pause_commit_end = at + frame;
		}
		pause_seen = 0;
	}
	return big_commit;
}

/* Write through, pausing where ATRIUM_PAUSE says (see the head): mid,
 * before the write that carries a big transaction's commit frame; commit,
 * after the write that ends it. */
static int
pause_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
	int big_commit = pause_scan(f, p, n, off), rc;

	if (big_commit && pause_mode == PAUSE_MID && pause_armed())
		pause_now();
	rc = REAL(f)->pMethods->xWrite(REAL(f), p, n, off);
	if (pause_commit_end && off + n >= pause_commit_end) {
		pause_commit_end = 0;
		if (pause_mode == PAUSE_COMMIT && pause_armed())
			pause_now();
	}
	return rc;
}

/* 1 when the write of (p, n) at off to f completes a WAL frame header
 * that ends a transaction: alone, as SQLite writes it, or among whole
 * frames, as walbuf.c does. */
static int
fault_is_commit(sqlite3_file *f, const unsigned char *p, int n,
    sqlite3_int64 off)
{
	int page;
	sqlite3_int64 frame, k;
	unsigned char h[WAL_FRAME_HDR];

	if (n == WAL_FRAME_HDR && off >= WAL_HDR)
		return (p[4] | p[5] | p[6] | p[7]) != 0;
	if (off + n <= WAL_HDR || (page = pause_wal_page(f, p, n, off)) <= 0)
		return 0;
	frame = WAL_FRAME_HDR + page;
	k = off + 1 - WAL_HDR - WAL_FRAME_HDR;
	k = k <= 0 ? 0 : (k + frame - 1) / frame;
	for (; WAL_HDR + k * frame + WAL_FRAME_HDR <= off + n; k++) {
		if (pause_peek(f, p, n, off, WAL_HDR + k * frame,
		    WAL_FRAME_HDR, h) < 0)
			return 0;
		if ((h[4] | h[5] | h[6] | h[7]) != 0)
			return 1;
	}
	return 0;
}

static int
fault_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
	char num[32];

	if (fault_fired && fault_sticky)
		return SQLITE_FULL;
	if (fault_is_commit(f, p, n, off)) {
		fault_commits++;
		if (fault_at && fault_commits == fault_at && !fault_fired) {
			fault_fired = 1;
			if (fault_mark)
				fault_note(fault_mark, "fired\n");
			return SQLITE_FULL;
		}
		if (fault_count) {
			snprintf(num, sizeof(num), "%ld\n", fault_commits);
			fault_note(fault_count, num);
		}
	}
	return REAL(f)->pMethods->xWrite(REAL(f), p, n, off);
}

__attribute__((constructor)) static void
fault_init(void)
{
	const char *at = getenv("ATRIUM_FAULT_COMMIT");
	const char *mode = getenv("ATRIUM_PAUSE");

	unsetenv("LD_PRELOAD");
	if (mode) {
		pause_mode = strcmp(mode, "mid") == 0 ? PAUSE_MID :
		    strcmp(mode, "commit") == 0 ? PAUSE_COMMIT : PAUSE_NONE;
		if (getenv("ATRIUM_PAUSE_FRAMES"))
			pause_frames = atol(getenv("ATRIUM_PAUSE_FRAMES"));
		pause_arm = getenv("ATRIUM_PAUSE_ARM");
		pause_mark = getenv("ATRIUM_PAUSE_MARK");
		shim_install();
		shim_io.xWrite = pause_write;
		return;
	}
	if (!at)
		return;
	fault_at = atol(at);
	fault_sticky = getenv("ATRIUM_FAULT_STICKY") &&
	    strcmp(getenv("ATRIUM_FAULT_STICKY"), "1") == 0;
	fault_mark = getenv("ATRIUM_FAULT_MARK");
	fault_count = getenv("ATRIUM_FAULT_COUNT");
	shim_install();
	shim_io.xWrite = fault_write;
}

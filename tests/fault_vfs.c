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
 *                           whose "database size after commit" is set)
 *   ATRIUM_FAULT_STICKY=1   and every write after it fails too (a full
 *                           disk); otherwise only that one
 *   ATRIUM_FAULT_MARK=PATH  created when the fault fires
 *   ATRIUM_FAULT_COUNT=PATH rewritten with the commit count after each
 *                           commit
 *
 * Failing the commit frame's header write is what a full disk does at
 * the last moment: the frames before it are written and never count.  The
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

/* 1 when (p, n) is a WAL frame header that ends a transaction. */
static int
fault_is_commit(const unsigned char *p, int n, sqlite3_int64 off)
{
	return n == 24 && off >= 32 && (p[4] | p[5] | p[6] | p[7]) != 0;
}

static int
fault_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
	char num[32];

	if (fault_fired && fault_sticky)
		return SQLITE_FULL;
	if (fault_is_commit(p, n, off)) {
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

	unsetenv("LD_PRELOAD");
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

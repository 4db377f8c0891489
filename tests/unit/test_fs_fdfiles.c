/*
 * test_fs_fdfiles.c: files given as descriptors (fs/engine/fdfiles.c), as
 * export-room gets a room's databases: bad --fd values are refused; once
 * installed, SQLite opens the given names through the descriptors from
 * another directory, shares the live database's WAL with its writer (a
 * reader's snapshot holds while the writer commits), cannot write through
 * a read-only descriptor, and makes nothing in the working directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../fs/engine/fdfiles.h"
#include "unit.h"

static char src[] = "/tmp/atrium-fdfiles-src-XXXXXX";
static char cwd[] = "/tmp/atrium-fdfiles-cwd-XXXXXX";

/* One integer answer of sql on h, or -1. */
static long
ask(sqlite3 *h, const char *sql)
{
	sqlite3_stmt *st;
	long v = -1;

	if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* src/x.db in WAL mode with one row, its writer left open (so its -wal
 * and -shm are there, as a running room's are). */
static sqlite3 *
make_writer(void)
{
	char path[128];
	sqlite3 *w;

	snprintf(path, sizeof(path), "%s/x.db", src);
	CHECK_INT(sqlite3_open(path, &w), SQLITE_OK);
	CHECK_INT(sqlite3_exec(w, "PRAGMA journal_mode=WAL; CREATE TABLE t(v);"
	    " INSERT INTO t VALUES (1);", NULL, NULL, NULL), SQLITE_OK);
	return w;
}

/* Give x.db, x.db-wal (read-only) and x.db-shm (read-write). */
static void
give_files(void)
{
	static const char *const names[] = { "x.db", "x.db-wal", "x.db-shm" };
	char path[128], spec[64];

	for (int i = 0; i < 3; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/%s", src, names[i]);
		fd = open(path, (i == 2 ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		CHECK(fd > 2);
		snprintf(spec, sizeof(spec), "%s=%d", names[i], fd);
		CHECK_INT(fdfiles_add(spec), 0);
	}
}

static void
test_bad_values_are_refused(void)
{
	CHECK_INT(fdfiles_add("x.db"), -EINVAL);
	CHECK_INT(fdfiles_add("=5"), -EINVAL);
	CHECK_INT(fdfiles_add("a/b=5"), -EINVAL);
	CHECK_INT(fdfiles_add("..=5"), -EINVAL);
	CHECK_INT(fdfiles_add("x.db=1"), -EINVAL);
	CHECK_INT(fdfiles_add("x.db=5x"), -EINVAL);
	CHECK_INT(fdfiles_add("x.db=99999999999"), -EINVAL);
	CHECK_INT(fdfiles_add("x.db=1000"), -EBADF);
}

static void
test_sqlite_reads_through_the_descriptors(void)
{
	sqlite3 *w = make_writer(), *r = NULL;
	char left[256];

	give_files();
	CHECK_INT(chdir(cwd), 0);
	CHECK_INT(fdfiles_install(), 0);
	CHECK_INT(fdfiles_access("./x.db", F_OK), 0);
	CHECK_INT(fdfiles_access("x.db-shm", R_OK | W_OK), 0);
	errno = 0;
	CHECK_INT(fdfiles_access("x.db", W_OK), -1);
	CHECK_INT(errno, EACCES);
	CHECK_INT(fdfiles_access("./y.db", F_OK), -1);

	CHECK_INT(sqlite3_open_v2("./x.db", &r, SQLITE_OPEN_READWRITE, NULL),
	    SQLITE_OK);
	CHECK_INT(ask(r, "SELECT count(*) FROM t"), 1);
	/* A snapshot holds while the writer commits through the shared WAL;
	 * the next read sees the commit. */
	CHECK_INT(sqlite3_exec(r, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	CHECK_INT(ask(r, "SELECT count(*) FROM t"), 1);
	CHECK_INT(sqlite3_exec(w, "INSERT INTO t VALUES (2)", NULL, NULL, NULL),
	    SQLITE_OK);
	CHECK_INT(ask(r, "SELECT count(*) FROM t"), 1);
	CHECK_INT(sqlite3_exec(r, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	CHECK_INT(ask(r, "SELECT count(*) FROM t"), 2);
	/* The database's descriptor is read-only: so is the connection. */
	CHECK_INT(sqlite3_exec(r, "INSERT INTO t VALUES (3)", NULL, NULL, NULL),
	    SQLITE_READONLY);
	sqlite3_close(r);
	sqlite3_close(w);
	/* Nothing was made where the reader ran. */
	snprintf(left, sizeof(left), "test -z \"$(ls -A %s)\"", cwd);
	CHECK_INT(system(left), 0);
}

int
main(void)
{
	char cmd[200];

	if (!mkdtemp(src) || !mkdtemp(cwd))
		return 1;
	TEST(test_bad_values_are_refused);
	TEST(test_sqlite_reads_through_the_descriptors);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", src, cwd);
	if (system(cmd) != 0)
		return 1;
	return unit_done("test_fs_fdfiles");
}

/*
 * test_cluster_replicate.c: a room's commits as records (walbuf.c,
 * walrec.h) and their replay (replicate_stream.c), without FUSE or a
 * store; the manifest's JSON, the listing parser and the key rules of
 * the S3 client, from raw bytes; what restore confines itself with
 * (--run-as's ids, the file bound, the plain VFS shim's path rule) and
 * its deadline's setting.
 *
 * The replay test: a database written through the walbuf VFS with its
 * records going to a file (a page rewritten inside a transaction, a
 * transaction bigger than the buffer, a delete that shrinks the file
 * after a vacuum), replayed byte by byte onto a copy taken before, equals
 * the database as its checkpoint leaves it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "replicate.h"
#include "s3.h"
#include "unit.h"
#include "vfs_shim.h"
#include "walbuf.h"
#include "walrec.h"

static char dir[] = "/tmp/test_cluster_replicate.XXXXXX";

/* The whole file at path (malloc'd) and its size in *n. */
static unsigned char *
slurp(const char *path, size_t *n)
{
	struct stat st;
	unsigned char *p;
	int fd = open(path, O_RDONLY);

	*n = 0;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	p = malloc((size_t)st.st_size + 1);
	if (p && pread(fd, p, (size_t)st.st_size, 0) != st.st_size) {
		free(p);
		p = NULL;
	}
	*n = (size_t)st.st_size;
	close(fd);
	return p;
}

static void
exec_ok(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);

	if (rc != SQLITE_OK)
		fprintf(stderr, "%s: %s\n", sql, err ? err : "?");
	CHECK_INT(rc, SQLITE_OK);
	sqlite3_free(err);
}

static void
checkpoint(const char *path)
{
	sqlite3 *db;

	CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
	exec_ok(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	sqlite3_close(db);
}

/* Write the workload through walbuf with records to recfd. */
static void
write_through_walbuf(const char *path)
{
	sqlite3 *db;
	char sql[256];

	CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE,
	    walbuf_vfs_name()), SQLITE_OK);
	exec_ok(db, "PRAGMA wal_autocheckpoint=0");
	for (int i = 0; i < 50; i++) {
		snprintf(sql, sizeof(sql), "INSERT INTO t(v) VALUES "
		    "(randomblob(%d))", 100 + i * 97);
		exec_ok(db, sql);
	}
	/* One page written many times in one transaction, plus a spill. */
	exec_ok(db, "PRAGMA cache_size=5");
	exec_ok(db, "BEGIN; UPDATE t SET v = randomblob(300) WHERE id < 10; "
	    "INSERT INTO t(v) SELECT randomblob(3000) FROM t; "
	    "UPDATE t SET v = x'00' WHERE id = 3; COMMIT");
	/* Bigger than the 1 MiB buffer. */
	exec_ok(db, "INSERT INTO t(v) SELECT randomblob(40000) FROM t LIMIT 60");
	exec_ok(db, "DELETE FROM t WHERE id % 2 = 0");
	exec_ok(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	exec_ok(db, "DELETE FROM t WHERE id > 20");
	exec_ok(db, "VACUUM");		/* the file shrinks */
	exec_ok(db, "INSERT INTO t(v) VALUES (x'0102')");
	sqlite3_close(db);
}

static void
test_records_replay_byte_for_byte(void)
{
	char db[256], copy[256], rec[256];
	unsigned char *a, *b, *r;
	size_t an, bn, rn;
	struct repl_stream st;
	sqlite3 *h;
	int recfd, fd;

	snprintf(db, sizeof(db), "%s/room.db", dir);
	snprintf(copy, sizeof(copy), "%s/copy.db", dir);
	snprintf(rec, sizeof(rec), "%s/records", dir);
	CHECK_INT(sqlite3_open(db, &h), SQLITE_OK);
	exec_ok(h, "PRAGMA journal_mode=WAL; PRAGMA secure_delete=OFF; "
	    "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)");
	sqlite3_close(h);
	checkpoint(db);
	a = slurp(db, &an);
	fd = open(copy, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(a && fd >= 0 && write(fd, a, an) == (ssize_t)an);
	free(a);

	recfd = open(rec, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0600);
	CHECK(recfd >= 0);
	CHECK_INT(walbuf_replicate(recfd, WALREC_DB_ROOM), 0);
	write_through_walbuf(db);
	checkpoint(db);

	/* Fed one byte at a time: any boundary works. */
	r = slurp(rec, &rn);
	CHECK(r && rn > WALREC_HDR);
	repl_stream_init(&st, fd, WALREC_DB_ROOM);
	for (size_t i = 0, k = 0; r && i < rn; k++) {
		size_t n = k % 3 == 0 ? 4001 : 1 + k % 5;
		int fr;

		n = n > rn - i ? rn - i : n;
		if ((fr = repl_stream_feed(&st, r + i, n)) != 0) {
			CHECK_INT(fr, 0);
			break;
		}
		i += n;
	}
	CHECK(repl_stream_at_record(&st));
	CHECK(st.records >= 8);
	CHECK_INT(st.rec_end, rn);
	repl_stream_free(&st);
	close(fd);

	a = slurp(db, &an);
	b = slurp(copy, &bn);
	CHECK_INT(bn, an);
	CHECK(a && b && an == bn && memcmp(a, b, an) == 0);
	free(a);
	free(b);

	/* A record lost in the middle is a gap, not a silent skip. */
	{
		struct walrec_hdr h1;
		size_t second;

		CHECK_INT(walrec_hdr_get(r, &h1), 0);
		CHECK_INT(h1.seq, 1);
		second = (size_t)walrec_bytes(&h1);
		repl_stream_init(&st, -1, WALREC_DB_ROOM);
		CHECK_INT(repl_stream_feed(&st, r, second), 0);
		{
			struct walrec_hdr h2;
			size_t third;

			CHECK_INT(walrec_hdr_get(r + second, &h2), 0);
			third = second + (size_t)walrec_bytes(&h2);
			CHECK_INT(repl_stream_feed(&st, r + third, rn - third),
			    -EPROTO);
		}
		repl_stream_free(&st);
		/* The wrong database's records. */
		repl_stream_init(&st, -1, WALREC_DB_WORKSPACE);
		CHECK_INT(repl_stream_feed(&st, r, rn), -EPROTO);
		repl_stream_free(&st);
	}
	free(r);
	close(recfd);
}

static void
test_header_checks(void)
{
	struct walrec_hdr h = { WALREC_DB_WORKSPACE, 4096, 10, 3, 77 }, g;
	unsigned char b[WALREC_HDR];

	walrec_hdr_put(&h, b);
	CHECK_INT(walrec_hdr_get(b, &g), 0);
	CHECK(g.db == h.db && g.page_size == 4096 && g.db_pages == 10 &&
	    g.frames == 3 && g.seq == 77);
	CHECK_INT(walrec_bytes(&g), 32 + 3 * (24 + 4096));
	b[0] = 'X';
	CHECK_INT(walrec_hdr_get(b, &g), -EPROTO);
	CHECK_INT(g.frames, 0);
	h.page_size = 3000;			/* not a power of two */
	walrec_hdr_put(&h, b);
	CHECK_INT(walrec_hdr_get(b, &g), -EPROTO);
	h.page_size = 4096;
	h.frames = WALREC_FRAMES_MAX + 1;
	walrec_hdr_put(&h, b);
	CHECK_INT(walrec_hdr_get(b, &g), -EPROTO);
	h.frames = 1;
	h.db = 9;
	walrec_hdr_put(&h, b);
	CHECK_INT(walrec_hdr_get(b, &g), -EPROTO);
	h.db = WALREC_DB_ROOM;
	h.seq = 0;
	walrec_hdr_put(&h, b);
	CHECK_INT(walrec_hdr_get(b, &g), -EPROTO);
}

static void
test_manifest(void)
{
	struct repl_manifest m = { .epoch = 7, .node = "n1" }, g;
	char json[REPL_MANIFEST_MAX];
	const char *bad;
	int n;

	snprintf(m.db[0].snap, sizeof(m.db[0].snap),
	    "rooms/lab/7/room/snap-0000000000000000");
	snprintf(m.db[1].snap, sizeof(m.db[1].snap),
	    "rooms/lab/7/workspace/snap-00000000000000a0");
	m.db[1].from = 160;
	m.db[1].upto = 9000;
	n = repl_manifest_json(&m, json, sizeof(json));
	CHECK(n > 0);
	CHECK_INT(repl_manifest_parse(json, (size_t)n, "lab", &g), 0);
	CHECK_INT(g.epoch, 7);
	CHECK_STR(g.node, "n1");
	CHECK_STR(g.db[1].snap, m.db[1].snap);
	CHECK_INT(g.db[1].from, 160);
	CHECK_INT(g.db[1].upto, 9000);
	/* Another room's objects are not this room's. */
	CHECK_INT(repl_manifest_parse(json, (size_t)n, "other", &g), -EPROTO);
	bad = "{\"v\":1,\"epoch\":7,\"node\":\"n\",\"room\":{\"snap\":"
	    "\"rooms/lab/7/room/snap-0\",\"from\":5,\"upto\":4},\"workspace\":"
	    "{\"snap\":\"rooms/lab/7/w/s\",\"from\":0,\"upto\":0}}";
	CHECK_INT(repl_manifest_parse(bad, strlen(bad), "lab", &g), -EPROTO);
	bad = "{\"v\":1,\"epoch\":7,\"node\":\"n\",\"room\":{\"snap\":"
	    "\"rooms/lab/../x\",\"from\":0,\"upto\":4},\"workspace\":"
	    "{\"snap\":\"rooms/lab/7/w/s\",\"from\":0,\"upto\":0}}";
	CHECK_INT(repl_manifest_parse(bad, strlen(bad), "lab", &g), -EPROTO);
	CHECK_INT(repl_manifest_parse("{", 1, "lab", &g), -EPROTO);
	CHECK_INT(repl_manifest_parse("[]", 2, "lab", &g), -EPROTO);
}

struct seen {
	int n;
	char last[S3_KEY_MAX];
	uint64_t size;
};

static int
on_key(void *arg, const char *key, uint64_t size)
{
	struct seen *s = arg;

	s->n++;
	snprintf(s->last, sizeof(s->last), "%s", key);
	s->size = size;
	return 0;
}

static void
test_listing(void)
{
	const char *page = "<?xml version=\"1.0\"?><ListBucketResult>"
	    "<IsTruncated>true</IsTruncated><Contents><Key>a/b</Key><Size>3"
	    "</Size></Contents><Contents><Key>a/c&amp;d</Key><Size>"
	    "18446744073709551615</Size></Contents><NextContinuationToken>"
	    "a/c&amp;d</NextContinuationToken></ListBucketResult>";
	struct seen s = { 0 };
	char next[S3_KEY_MAX];

	CHECK_INT(s3_parse_list(page, strlen(page), on_key, &s, next,
	    sizeof(next)), 0);
	CHECK_INT(s.n, 2);
	CHECK_STR(s.last, "a/c&d");
	CHECK(s.size == UINT64_MAX);
	CHECK_STR(next, "a/c&d");
	/* Malformed: no end tag, a bad number, an unknown entity, no token. */
	CHECK_INT(s3_parse_list("<ListBucketResult><Contents><Key>x</Key>",
	    40, on_key, &s, next, sizeof(next)), -EPROTO);
	page = "<ListBucketResult><Contents><Key>x</Key><Size>-1</Size>"
	    "</Contents></ListBucketResult>";
	CHECK_INT(s3_parse_list(page, strlen(page), on_key, &s, next,
	    sizeof(next)), -EPROTO);
	page = "<ListBucketResult><Contents><Key>&bogus;</Key><Size>1</Size>"
	    "</Contents></ListBucketResult>";
	CHECK_INT(s3_parse_list(page, strlen(page), on_key, &s, next,
	    sizeof(next)), -EPROTO);
	page = "<ListBucketResult><IsTruncated>true</IsTruncated>"
	    "</ListBucketResult>";
	CHECK_INT(s3_parse_list(page, strlen(page), on_key, &s, next,
	    sizeof(next)), -EPROTO);
	CHECK_INT(s3_parse_list("<Error/>", 8, on_key, &s, next, sizeof(next)),
	    -EPROTO);
}

static void
test_keys(void)
{
	CHECK(s3_key_ok("rooms/lab/3/room/seg-0000000000000000"));
	CHECK(!s3_key_ok(""));
	CHECK(!s3_key_ok("/rooms"));
	CHECK(!s3_key_ok("rooms/../x"));
	CHECK(!s3_key_ok("rooms//x"));
	CHECK(!s3_key_ok("rooms/a b"));
	CHECK(!s3_key_ok("rooms/a?b"));
	CHECK(repl_room_ok("lab-2"));
	CHECK(!repl_room_ok("Lab"));
	CHECK(!repl_room_ok("a/b"));
}

/* Which stored objects the collector takes: the older epochs', this
 * epoch's before the manifest's snapshot; never a newer epoch's, a
 * snapshot past "from" or a key it cannot read. */
static void
test_collect_rules(void)
{
	struct repl_manifest m = { .epoch = 7 };
	struct repl_object o;
	char key[S3_KEY_MAX];

	m.db[0].from = 0x100;
	m.db[1].from = 0x40;
	CHECK_INT(repl_object_key(key, sizeof(key), "lab", 7, 1, "seg",
	    0x20), 0);
	CHECK_INT(repl_object_parse(key, "lab", &o), 0);
	CHECK(o.epoch == 7 && o.db == 1 && !o.snap && o.off == 0x20);
	CHECK(repl_object_stale(&o, 0x20, &m));		/* ends at from */
	CHECK(!repl_object_stale(&o, 0x21, &m));	/* reaches past it */
	CHECK_INT(repl_object_parse("rooms/lab/7/room/snap-"
	    "00000000000000ff", "lab", &o), 0);
	CHECK(o.snap && o.db == 0 && repl_object_stale(&o, 9, &m));
	o.off = 0x100;
	CHECK(!repl_object_stale(&o, 9, &m));		/* the current one */
	o.off = 0x200;
	CHECK(!repl_object_stale(&o, 9, &m));		/* not named yet */
	o.epoch = 6;
	CHECK(repl_object_stale(&o, 9, &m));
	o.epoch = 8;
	o.off = 0;
	CHECK(!repl_object_stale(&o, 9, &m));		/* another host's */
	/* Seg "ff" + UINT64_MAX bytes must not wrap round to "ended". */
	CHECK_INT(repl_object_parse("rooms/lab/7/room/seg-00000000000000ff",
	    "lab", &o), 0);
	CHECK(!repl_object_stale(&o, UINT64_MAX, &m));
	/* Keys of another room, or not the shipper's, are left alone. */
	CHECK_INT(repl_object_parse("rooms/lab2/7/room/seg-0000000000000000",
	    "lab", &o), -EINVAL);
	CHECK_INT(repl_object_parse("rooms/lab/x/room/seg-0000000000000000",
	    "lab", &o), -EINVAL);
	CHECK_INT(repl_object_parse("rooms/lab/7/other/seg-0000000000000000",
	    "lab", &o), -EINVAL);
	CHECK_INT(repl_object_parse("rooms/lab/7/room/seg-00000000000000",
	    "lab", &o), -EINVAL);
	CHECK_INT(repl_object_parse("rooms/lab/7/room/seg-00000000000000FF",
	    "lab", &o), -EINVAL);
	CHECK_INT(repl_object_parse("rooms/lab/7/room/seg-0000000000000000x",
	    "lab", &o), -EINVAL);
	CHECK_INT(repl_object_parse("rooms/lab/99999999999999999999/room/"
	    "seg-0000000000000000", "lab", &o), -EINVAL);
}

/* --run-as's UID:GID: both numbers, neither 0, nothing around them. */
static void
test_run_as_ids(void)
{
	static const char *const bad[] = { "", ":", "5", "5:", ":5", "0:5",
	    "5:0", "5:6x", "x5:6", "-1:5", "5:-1", " 5:6", "+5:6", "5 :6",
	    "4294967295:1", "1:4294967295", "99999999999999999999:1",
	    "5:6:7" };
	uid_t u = 1;
	gid_t g = 1;

	CHECK_INT(repl_parse_ids("2000000001:2000000002", &u, &g), 0);
	CHECK_INT((long long)u, 2000000001LL);
	CHECK_INT((long long)g, 2000000002LL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		u = 7, g = 7;
		CHECK_INT(repl_parse_ids(bad[i], &u, &g), -EINVAL);
		CHECK_INT((long long)u, 7);
		CHECK_INT((long long)g, 7);
	}
	CHECK_INT(repl_parse_ids(NULL, &u, &g), -EINVAL);
}

/* --s3-restore-timeout: 300 s unless set, 1 to 86400. */
static void
test_restore_timeout_setting(void)
{
	struct config c;
	char err[256];

	config_defaults(&c);
	CHECK_INT(c.s3_restore_timeout, 300);
	CHECK_INT(config_set(&c, "s3-restore-timeout", "0", err, sizeof(err)),
	    -EINVAL);
	CHECK_INT(config_set(&c, "s3-restore-timeout", "86401", err,
	    sizeof(err)), -EINVAL);
	CHECK_INT(config_set(&c, "s3-restore-timeout", "5s", err,
	    sizeof(err)), -EINVAL);
	CHECK_INT(c.s3_restore_timeout, 300);
	CHECK_INT(config_set(&c, "s3_restore_timeout", "30", err,
	    sizeof(err)), 0);
	CHECK_INT(c.s3_restore_timeout, 30);
}

/* repl_limit_files: a write past the bound fails with EFBIG, and the
 * process lives on (in a child, as the limit is for good). */
static void
test_file_bound(void)
{
	char path[256], buf[8192];
	int status = -1;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/bounded", dir);
	memset(buf, 'x', sizeof(buf));
	if ((pid = fork()) == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		ssize_t a, b;

		if (fd < 0 || repl_limit_files(4096) < 0)
			_exit(2);
		a = write(fd, buf, sizeof(buf));
		b = write(fd, buf, 1);
		_exit(a == 4096 && b < 0 && errno == EFBIG &&
		    ftruncate(fd, 1 << 20) < 0 && errno == EFBIG ? 0 : 1);
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_INT(repl_limit_files(0), 0);
}

/* The plain VFS shim keeps a path through /proc/self/fd/N/ as it is (the
 * default VFS would read the link), and its files work as any. */
static void
test_plain_vfs_keeps_fd_paths(void)
{
	sqlite3_vfs vfs;
	sqlite3 *db = NULL;
	char path[128];
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	CHECK(fd >= 0);
	CHECK_INT(vfs_shim_register_plain(&vfs, "test-plain"), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d/plain.db", fd);
	CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE, "test-plain"), SQLITE_OK);
	CHECK(strcmp(sqlite3_db_filename(db, "main"), path) == 0);
	exec_ok(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(x); "
	    "INSERT INTO t VALUES (1)");
	CHECK(faccessat(fd, "plain.db-wal", F_OK, 0) == 0);
	sqlite3_close(db);
	CHECK(faccessat(fd, "plain.db", F_OK, 0) == 0);
	sqlite3_vfs_unregister(&vfs);
	close(fd);
}

int
main(void)
{
	char cmd[128];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	TEST(test_header_checks);
	TEST(test_records_replay_byte_for_byte);
	TEST(test_manifest);
	TEST(test_listing);
	TEST(test_keys);
	TEST(test_collect_rules);
	TEST(test_run_as_ids);
	TEST(test_restore_timeout_setting);
	TEST(test_file_bound);
	TEST(test_plain_vfs_keeps_fd_paths);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return unit_done("cluster_replicate");
}

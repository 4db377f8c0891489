/*
 * test_sshd_stream.c: the byte paths of exec and sftp sessions, without a
 * network.  The channel output path (sshd/net/session.c: chan_pump and
 * chan_flush) is driven through sshd/shared/libssh_compat.c's sshio table
 * with a fake libssh whose writes take nothing (as during a key re-exchange),
 * short counts or everything, whose window and pending state change at
 * random (and SSH_AGAIN, which means the same), and the bytes that come
 * out must equal the bytes that went in.
 * Also: SFTP request counting (sshd/net/sftp_flow.c) fed at every byte
 * boundary, and the git path fallback (sshd/net/git_path.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "buf.h"
#include "../../sshd/net/git_path.h"
#include "../../sshd/shared/libssh_compat.h"
#include "../../sshd/net/session.h"
#include "../../sshd/net/sftp_flow.h"

/* ------------------------------------------------------ a fake libssh -- */

struct fake {
	uint64_t rng;		/* xorshift state */
	struct buf got[2];	/* what reached the "client": stdout, stderr */
	int fail_after;		/* writes before one SSH_ERROR; -1: never */
	unsigned writes;	/* write calls seen */
	unsigned zero_writes;	/* ... that took nothing */
	unsigned short_writes;	/* ... that took part */
};

static struct fake fake;

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Take nothing, part or all of p, at random; or fail once on request. */
static int
fake_take(int is_err, const void *p, uint32_t n)
{
	uint64_t r = rnd(&fake.rng) % 10;
	uint32_t k;

	fake.writes++;
	if (fake.fail_after >= 0 && fake.fail_after-- == 0)
		return SSH_ERROR;
	if (r < 2) {
		fake.zero_writes++;
		return r == 0 ? 0 : SSH_AGAIN;	/* both mean "nothing now" */
	}
	k = r < 5 ? (uint32_t)(rnd(&fake.rng) % n) : n;
	if (k < n)
		fake.short_writes++;
	if (k && buf_append(&fake.got[is_err], p, k) < 0)
		return SSH_ERROR;
	return (int)k;
}

static int
fake_write(ssh_channel ch, const void *p, uint32_t n)
{
	(void)ch;
	return fake_take(0, p, n);
}

static int
fake_write_stderr(ssh_channel ch, const void *p, uint32_t n)
{
	(void)ch;
	return fake_take(1, p, n);
}

/* A window that is shut, small or wide. */
static uint32_t
fake_window(ssh_channel ch)
{
	uint64_t r = rnd(&fake.rng) % 8;

	(void)ch;
	return r == 0 ? 0 : r < 4 ? (uint32_t)(rnd(&fake.rng) % 5000) + 1
	    : 2u * 1024 * 1024;
}

/* Output still unsent now and then. */
static int
fake_pending(ssh_session s)
{
	(void)s;
	return rnd(&fake.rng) % 6 == 0;
}

static int
fake_is_open(ssh_channel ch)
{
	(void)ch;
	return 1;
}

static void
fake_install(uint64_t seed, int fail_after)
{
	memset(&fake, 0, sizeof(fake));
	fake.rng = seed;
	fake.fail_after = fail_after;
	buf_init(&fake.got[0], 64u << 20);
	buf_init(&fake.got[1], 64u << 20);
	sshio.write = fake_write;
	sshio.write_stderr = fake_write_stderr;
	sshio.window = fake_window;
	sshio.pending = fake_pending;
	sshio.is_open = fake_is_open;
}

/* --------------------------------------------------- the pump property -- */

/* One output stream of the command: a pipe and the bytes written to it. */
struct source {
	int rfd, wfd;		/* our end (non-blocking), the command's end */
	uint64_t rng;		/* makes the bytes */
	size_t total, sent;	/* bytes to write, written so far */
	struct buf want;	/* every byte written */
	int eof;		/* chan_pump saw EOF */
};

static void
source_init(struct source *src, uint64_t seed, size_t total)
{
	int p[2];

	CHECK(pipe2(p, O_NONBLOCK) == 0);
	src->rfd = p[0];
	src->wfd = p[1];
	src->rng = seed;
	src->total = total;
	src->sent = 0;
	src->eof = 0;
	buf_init(&src->want, total);
}

/* The command writes a random-sized chunk if the pipe has room. */
static void
source_produce(struct source *src)
{
	char chunk[70000];
	size_t n = (size_t)(rnd(&src->rng) % sizeof(chunk)) + 1;
	ssize_t w;

	if (src->wfd < 0)
		return;
	if (n > src->total - src->sent)
		n = src->total - src->sent;
	for (size_t i = 0; i < n; i++)
		chunk[i] = (char)rnd(&src->rng);
	w = n ? write(src->wfd, chunk, n) : 0;
	if (w > 0) {
		buf_append(&src->want, chunk, (size_t)w);
		src->sent += (size_t)w;
	}
	if (src->sent == src->total) {
		close(src->wfd);
		src->wfd = -1;
	}
}

/* Drain a source into c until the pipe is empty or the queue full. */
static void
source_pump(struct source *src, struct chan *c, int is_err)
{
	int r;

	while (!src->eof && (r = chan_pump(c, src->rfd, is_err)) != -EAGAIN) {
		CHECK(r >= 0);
		if (r == 0)
			src->eof = 1;
		if (r < 0)
			break;
	}
}

/* A channel with no libssh behind it: sshio is the fake. */
static void
test_chan(struct session *s, struct chan *c)
{
	memset(s, 0, sizeof(*s));
	memset(c, 0, sizeof(*c));
	c->s = s;
	buf_init(&c->out, CHAN_MAX_OUT);
	buf_init(&c->err, CHAN_MAX_OUT);
}

static int
same_bytes(const struct buf *a, const struct buf *b)
{
	return a->len == b->len && (a->len == 0 ||
	    memcmp(a->data, b->data, a->len) == 0);
}

/* stdout and stderr through the queues with libssh taking bytes at
 * random: every byte arrives, in order, on its own stream. */
static void
test_pump_keeps_every_byte(void)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct session s;
		struct chan c;
		struct source out, err;
		int turns = 0;

		fake_install(seed * 7919, -1);
		test_chan(&s, &c);
		source_init(&out, seed * 31, (size_t)(3 + seed) << 20);
		source_init(&err, seed * 97, (size_t)seed << 18);
		while ((!out.eof || !err.eof || c.out.len || c.err.len) &&
		    turns++ < 1000000) {
			source_produce(&out);
			source_produce(&err);
			source_pump(&out, &c, 0);
			source_pump(&err, &c, 1);
			chan_flush(&c);
			CHECK(c.out.len <= CHAN_PUMP_LOW + CHAN_PUMP_READ);
		}
		CHECK(out.eof && err.eof);
		CHECK(same_bytes(&fake.got[0], &out.want));
		CHECK(same_bytes(&fake.got[1], &err.want));
		CHECK(fake.zero_writes > 0 && fake.short_writes > 0);
		close(out.rfd);
		close(err.rfd);
		buf_free(&out.want);
		buf_free(&err.want);
		buf_free(&c.out);
		buf_free(&c.err);
		buf_free(&fake.got[0]);
		buf_free(&fake.got[1]);
	}
}

/* A write that fails closes the channel; what arrived before is a prefix
 * of what was sent, and nothing is written after. */
static void
test_pump_stops_at_an_error(void)
{
	struct session s;
	struct chan c;
	struct source out;
	unsigned writes;

	fake_install(4242, 25);
	test_chan(&s, &c);
	source_init(&out, 5, 4u << 20);
	for (int i = 0; i < 200 && !c.closing; i++) {
		source_produce(&out);
		source_pump(&out, &c, 0);
		chan_flush(&c);
	}
	CHECK(c.closing);
	CHECK(fake.got[0].len < out.want.len);
	CHECK(memcmp(fake.got[0].data, out.want.data, fake.got[0].len) == 0);
	writes = fake.writes;
	CHECK_INT(chan_flush(&c), 0);
	CHECK_INT(fake.writes, writes);
	CHECK_INT(chan_pump(&c, out.rfd, 0), -EAGAIN);
	close(out.rfd);
	if (out.wfd >= 0)
		close(out.wfd);
	buf_free(&out.want);
	buf_free(&c.out);
	buf_free(&c.err);
	buf_free(&fake.got[0]);
	buf_free(&fake.got[1]);
}

/* ------------------------------------------------------------ sftp flow -- */

/* Append an SFTP packet of body length n (contents don't matter). */
static void
packet(struct buf *b, uint32_t n)
{
	unsigned char hdr[4] = { (unsigned char)(n >> 24),
	    (unsigned char)(n >> 16), (unsigned char)(n >> 8),
	    (unsigned char)n };

	buf_append(b, hdr, 4);
	for (uint32_t i = 0; i < n; i++)
		buf_append(b, "x", 1);
}

/* Requests stop at the limit, exactly at a packet boundary, and one
 * answer lets one more through, however the bytes are split. */
static void
test_sftp_flow_holds_requests_past_the_limit(void)
{
	struct sftp_flow f;
	struct buf req, resp;
	size_t off = 0, boundary;

	memset(&f, 0, sizeof(f));
	buf_init(&req, 1 << 20);
	buf_init(&resp, 1 << 20);
	for (int i = 0; i < SFTP_FLOW_MAX_PENDING + 10; i++)
		packet(&req, (uint32_t)(i % 7) * 100 + 1);
	/* Byte by byte: the limit must hold at every boundary. */
	while (off < req.len) {
		size_t k = sftp_flow_allowed(&f, req.data + off, 1);

		if (k == 0)
			break;
		sftp_flow_sent(&f, req.data + off, k);
		off += k;
	}
	CHECK_INT(sftp_flow_pending(&f), SFTP_FLOW_MAX_PENDING);
	boundary = off;
	CHECK_INT(sftp_flow_allowed(&f, req.data + off, req.len - off), 0);
	/* One answer, split in two: still held until it is whole... */
	packet(&resp, 28);
	sftp_flow_answered(&f, resp.data, 2);
	CHECK_INT(sftp_flow_pending(&f), SFTP_FLOW_MAX_PENDING - 1);
	sftp_flow_answered(&f, resp.data + 2, resp.len - 2);
	/* ...then exactly one more request goes. */
	CHECK_INT(sftp_flow_allowed(&f, req.data + off, req.len - off),
	    4 + (SFTP_FLOW_MAX_PENDING % 7) * 100 + 1);
	CHECK(boundary > 0);
	buf_free(&req);
	buf_free(&resp);
}

/* Append the SFTP request of type with id 1, then name (a string) and
 * flags (a uint32) when given. */
static void
request(struct buf *b, int type, const char *name, int with_flags,
    uint32_t flags)
{
	size_t nl = name ? strlen(name) : 0;
	uint32_t n = 1 + 4 + (name ? 4 + (uint32_t)nl : 0) +
	    (with_flags ? 4 : 0);
	unsigned char u[4];

#define PUT32(v) do { u[0] = (unsigned char)((v) >> 24); \
	u[1] = (unsigned char)((v) >> 16); u[2] = (unsigned char)((v) >> 8); \
	u[3] = (unsigned char)(v); buf_append(b, u, 4); } while (0)
	PUT32(n);
	u[0] = (unsigned char)type;
	buf_append(b, u, 1);
	PUT32(1u);
	if (name) {
		PUT32((uint32_t)nl);
		buf_append(b, name, nl);
	}
	if (with_flags)
		PUT32(flags);
#undef PUT32
}

/* What sftp_flow counts as changes, fed one byte at a time: reads,
 * read-only opens and OpenSSH's read-only extensions are not; creating
 * opens, writes, removals, renames and unknown extensions are. */
static void
test_sftp_flow_counts_the_requests_that_change_files(void)
{
	static const struct {
		int type;
		const char *name;
		int with_flags;
		uint32_t flags;
		int changes;
	} cases[] = {
		{ 3, "f", 1, 0x01, 0 },		/* OPEN for reading */
		{ 3, "f", 1, 0x02, 0 },		/* OPEN to write, no create */
		{ 3, "f", 1, 0x1a, 1 },		/* OPEN write|creat|trunc */
		{ 5, NULL, 0, 0, 0 },		/* READ */
		{ 17, "f", 0, 0, 0 },		/* STAT */
		{ 6, NULL, 0, 0, 1 },		/* WRITE */
		{ 13, "f", 0, 0, 1 },		/* REMOVE */
		{ 18, "f", 0, 0, 1 },		/* RENAME */
		{ 200, "statvfs@openssh.com", 0, 0, 0 },
		{ 200, "expand-path@openssh.com", 0, 0, 0 },
		{ 200, "posix-rename@openssh.com", 0, 0, 1 },
		{ 200, "unknown@example.com", 0, 0, 1 },
	};
	struct sftp_flow f;
	struct buf req;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&f, 0, sizeof(f));
		buf_init(&req, 4096);
		request(&req, cases[i].type, cases[i].name,
		    cases[i].with_flags, cases[i].flags);
		for (size_t off = 0; off < req.len; off++) {
			CHECK_INT(sftp_flow_allowed(&f, req.data + off, 1), 1);
			sftp_flow_sent(&f, req.data + off, 1);
		}
		CHECK_INT(sftp_flow_changes(&f), cases[i].changes);
		buf_free(&req);
	}
	/* A change is done once its answer came (in order): a READ, then a
	 * WRITE, then a READ; the first answer is not the WRITE's. */
	{
		struct buf resp;

		memset(&f, 0, sizeof(f));
		buf_init(&req, 4096);
		buf_init(&resp, 4096);
		request(&req, 5, NULL, 0, 0);
		request(&req, 6, NULL, 0, 0);
		request(&req, 5, NULL, 0, 0);
		sftp_flow_sent(&f, req.data, req.len);
		CHECK_INT(sftp_flow_changes(&f), 1);
		CHECK_INT(sftp_flow_changes_done(&f), 0);
		packet(&resp, 9);
		sftp_flow_answered(&f, resp.data, resp.len);
		CHECK_INT(sftp_flow_changes_done(&f), 0);
		sftp_flow_answered(&f, resp.data, resp.len);
		CHECK_INT(sftp_flow_changes_done(&f), 1);
		buf_free(&req);
		buf_free(&resp);
	}
	/* An OPEN whose name does not fit the kept head counts: its flags
	 * cannot be read. */
	{
		char longname[SFTP_FLOW_HEAD + 10];

		memset(longname, 'n', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		memset(&f, 0, sizeof(f));
		buf_init(&req, 4096);
		request(&req, 3, longname, 1, 0x01);
		sftp_flow_sent(&f, req.data, req.len);
		CHECK_INT(sftp_flow_changes(&f), 1);
		buf_free(&req);
	}
}

/* ------------------------------------------------------------- git path -- */

static void
test_git_absolute_path_falls_back_to_the_workspace(void)
{
	char out[256];

	CHECK_INT(git_path_command("git-upload-pack '/repo.git'", out,
	    sizeof(out)), 1);
	CHECK_STR(out, "p='/repo.git'; [ -e \"$p\" ] || p=\"/workspace$p\"; "
	    "exec git-upload-pack \"$p\"");
	CHECK_INT(git_path_command("git receive-pack '/it'\\''s.git'", out,
	    sizeof(out)), 1);
	CHECK_STR(out, "p='/it'\\''s.git'; [ -e \"$p\" ] || "
	    "p=\"/workspace$p\"; exec git receive-pack \"$p\"");
	CHECK_INT(git_path_command("git-upload-pack 'x'", out, 4), 0);
	CHECK_INT(git_path_command("git-upload-pack '/repo.git'", out, 20),
	    -ENAMETOOLONG);
}

/* Anything that is not exactly one quoted absolute path passes as is. */
static void
test_git_path_leaves_other_commands_alone(void)
{
	static const char *const same[] = {
		"ls -l", "git-upload-pack repo.git", "git-upload-pack 'repo.git'",
		"git-upload-pack '/workspace/repo.git'",
		"git-upload-pack '/x'; rm -rf /", "git-upload-pack '/x' '/y'",
		"git-upload-pack '/x", "git-upload-pack '/x'\\", "git-upload-pack",
		"git-upload-packer '/x'", "git-upload-pack  '/x'",
	};
	char out[256] = "untouched";

	for (size_t i = 0; i < sizeof(same) / sizeof(*same); i++)
		CHECK_INT(git_path_command(same[i], out, sizeof(out)), 0);
	CHECK_STR(out, "untouched");
}

int
main(void)
{
	TEST(test_pump_keeps_every_byte);
	TEST(test_pump_stops_at_an_error);
	TEST(test_sftp_flow_holds_requests_past_the_limit);
	TEST(test_sftp_flow_counts_the_requests_that_change_files);
	TEST(test_git_absolute_path_falls_back_to_the_workspace);
	TEST(test_git_path_leaves_other_commands_alone);
	return unit_done("sshd_stream");
}

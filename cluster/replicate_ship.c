/*
 * replicate_ship.c: `atrium-replicate run`, the shipper of one room's
 * commits (replicate.h has what is stored where).
 *
 * Started by the monitor before the room's writers (atrium-agent for
 * room.db, atrium-fs for workspace.db); with --run-as it becomes the
 * room's uid, with no capabilities, once the databases are copied; the
 * credentials come on --creds-fd, the two record streams on --room-fd
 * and --workspace-fd (walbuf.c writes them).
 *
 * Start: each database is checkpointed and copied whole into its shadow
 * copy in --state-dir (the writers have not opened it yet, so the copy
 * is the database byte for byte), uploaded as the snapshot at the
 * stream's first offset, and the manifest is pointed at it
 * (etcd_put_if_home).  Then "ready\n".  The first offset is 0, unless
 * the manifest is already this epoch's: a shipper run again under the
 * same hold (one that could not store everything before it was killed,
 * room.c) starts its streams at the next REPL_RUN_SPAN boundary above
 * what the manifest names, so that none of its objects has the key of
 * one the manifest names or the killed run may have left behind, and a
 * restore never mixes the two runs' bytes.
 *
 * Loop, on one thread: read what the streams bring into one segment
 * buffer per database (REPL_SEG_MAX) and apply it to the shadow copy as
 * it comes (repl_stream); at most REPL_FLUSH_MS after a buffer's first
 * byte, or when it is full, upload it as seg-OFFSET, then advance the
 * manifest to the end of the last whole record.  While a buffer is full
 * or an upload is under way, its stream is not read: the pipe fills and
 * the writer's commit waits (walbuf.c), so memory stays bounded by the
 * buffers and a slow store slows commits down rather than losing them.
 * Every --snapshot-every seconds, at a record boundary just after an
 * upload, the shadow copy is uploaded as snap-OFFSET and the manifest
 * moved to it: a restore replays only what came after.  Once a manifest
 * names a new snapshot, what it no longer names (the older epochs', this
 * epoch's older snapshots and segments) is removed, a bounded number of
 * objects a round (replicate_collect.c).
 *
 * Why a shadow copy, not SQLite's backup API: a backup bumps the copy's
 * schema cookie and change counter, so the restored file would differ
 * from the database in its first page; the shadow is exactly the
 * database after the records applied, and costs one write per page.
 *
 * Ends: when both streams end (the writers exited) with everything
 * uploaded and the manifest advanced (exit 0); when the manifest's
 * compare fails, which means another host holds the room now (logged,
 * exit 3: nothing more is uploaded); on a malformed stream or a failure
 * to read or write the shadow (logged, exit 1).  A store that keeps
 * failing is retried (s3.c), then the round again; the writers wait.
 *
 * Logged: the start (room, epoch), each snapshot, a store or etcd
 * failure (once per run of failures), the end and why.  Never the
 * credentials.
 */
#include "replicate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etcd.h"
#include "log.h"
#include "util.h"

#define REPL_READ_PIECE	(64u << 10)
#define REPL_PIPE_BYTES	(1 << 20)
/* The stream offsets one run of the shipper may use (256 TiB): a run
 * under a hold that already has a manifest starts at the next multiple
 * above it. */
#define REPL_RUN_SPAN	(UINT64_C(1) << 48)

/* One database's side of the shipper. */
struct ship_db {
	int in;				/* its record stream, -1 once ended */
	int shadow;			/* the shadow copy's fd */
	struct repl_stream st;		/* applies to shadow */
	unsigned char *buf;		/* REPL_SEG_MAX: not yet uploaded */
	size_t len;
	uint64_t buf_off;		/* stream offset of buf[0] */
	long long first_ms;		/* when buf got its first byte */
	struct repl_db_manifest man;	/* what the manifest says of it */
	char shadow_path[4096];
};

struct ship {
	const struct repl_opts *o;
	struct s3 *s3;
	struct etcd *etcd;
	struct ship_db db[REPL_DBS];
	long long snap_ms;		/* the last snapshot's time */
	int dirty;			/* stored more than the manifest says */
	int collect;			/* a snapshot made objects garbage */
	int store_failing, etcd_failing;	/* said once per run */
};

/* Checkpoint path's WAL into it and copy the file to fd: 0 or -errno.
 * A missing database copies as empty (the writer makes it). */
static int
ship_copy_db(const char *path, int fd)
{
	sqlite3 *db = NULL;
	char buf[1u << 16];
	ssize_t got;
	int in, r = 0;

	if (access(path, F_OK) == 0) {
		if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) !=
		    SQLITE_OK || sqlite3_exec(db, "PRAGMA wal_checkpoint("
		    "TRUNCATE)", NULL, NULL, NULL) != SQLITE_OK) {
			log_error("%s: %s", path, db ? sqlite3_errmsg(db) :
			    "out of memory");
			r = -EIO;
		}
		sqlite3_close(db);
	}
	if (r < 0)
		return r;
	if ((in = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (got = read(in, buf, sizeof(buf))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		r = got < 0 ? -errno : write_all(fd, buf, (size_t)got);
	}
	close(in);
	return r;
}

/* The first stream offset of each database for this run into base:
 * 0, or past what this epoch's manifest names when there is one (see
 * the top).  0 or -errno (etcd did not answer: the run cannot know). */
static int
ship_base(struct ship *sh, uint64_t base[REPL_DBS])
{
	struct repl_manifest m;
	char key[256], *val = NULL;
	size_t len = 0;
	int r;

	base[0] = base[1] = 0;
	repl_manifest_key(sh->o->room, key, sizeof(key));
	if ((r = etcd_get(sh->etcd, key, &val, &len, NULL, NULL)) < 0) {
		log_error("cannot read the manifest in etcd: %s", strerror(-r));
		return r;
	}
	if (r == 1 && repl_manifest_parse(val, len, sh->o->room, &m) == 0 &&
	    m.epoch == sh->o->epoch) {
		for (int i = 0; i < REPL_DBS; i++) {
			uint64_t top = m.db[i].upto > m.db[i].from ?
			    m.db[i].upto : m.db[i].from;
			base[i] = (top / REPL_RUN_SPAN + 1) * REPL_RUN_SPAN;
		}
		log_info("this epoch has a manifest already (a run before "
		    "this one): the streams start at offset %" PRIu64 " and %"
		    PRIu64, base[0], base[1]);
	}
	free(val);
	return 0;
}

/* Open (made empty) the shadow copy of database i and copy it in; its
 * stream starts at offset base. */
static int
ship_shadow_open(struct ship *sh, int i, uint64_t base)
{
	struct ship_db *d = &sh->db[i];
	int r;

	snprintf(d->shadow_path, sizeof(d->shadow_path), "%s/%s.db",
	    sh->o->state_dir, repl_db_name(i));
	d->shadow = open(d->shadow_path, O_RDWR | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	if (d->shadow < 0) {
		r = -errno;
		log_error("%s: %s", d->shadow_path, strerror(errno));
		return r;
	}
	if ((r = ship_copy_db(sh->o->db_path[i], d->shadow)) < 0)
		log_error("copying %s to %s: %s", sh->o->db_path[i],
		    d->shadow_path, strerror(-r));
	repl_stream_init(&d->st, d->shadow, i == 0 ? WALREC_DB_ROOM :
	    WALREC_DB_WORKSPACE);
	d->st.off = d->st.rec_end = d->buf_off = base;
	return r;
}

/* Upload database i's shadow as its snapshot at the stream's offset. */
static int
ship_snapshot(struct ship *sh, int i)
{
	struct ship_db *d = &sh->db[i];
	char key[S3_KEY_MAX];
	struct stat st;
	int r;

	if (fstat(d->shadow, &st) < 0)
		return -errno;
	if ((r = repl_object_key(key, sizeof(key), sh->o->room, sh->o->epoch,
	    i, "snap", d->st.rec_end)) < 0 ||
	    (r = s3_put_file(sh->s3, key, d->shadow, (uint64_t)st.st_size)) < 0)
		return r;
	snprintf(d->man.snap, sizeof(d->man.snap), "%s", key);
	d->man.from = d->man.upto = d->st.rec_end;
	sh->dirty = 1;
	sh->collect = 1;
	log_info("%s: snapshot of %lld bytes at stream offset %" PRIu64,
	    repl_db_name(i), (long long)st.st_size, d->st.rec_end);
	return 0;
}

/* The manifest of what is stored now into m. */
static void
ship_manifest_of(const struct ship *sh, struct repl_manifest *m)
{
	memset(m, 0, sizeof(*m));
	m->epoch = sh->o->epoch;
	snprintf(m->node, sizeof(m->node), "%s", sh->o->node);
	for (int i = 0; i < REPL_DBS; i++)
		m->db[i] = sh->db[i].man;
}

/* Write the manifest: 0, 1 when fenced (another host holds the room),
 * or -errno. */
static int
ship_manifest(struct ship *sh)
{
	struct repl_manifest m;
	char json[REPL_MANIFEST_MAX], key[256];
	int n, r;

	ship_manifest_of(sh, &m);
	if ((n = repl_manifest_json(&m, json, sizeof(json))) < 0)
		return n;
	repl_manifest_key(sh->o->room, key, sizeof(key));
	r = etcd_put_if_home(sh->etcd, sh->o->room, sh->o->node, sh->o->epoch,
	    key, json, (size_t)n);
	if (r == 1) {
		if (sh->etcd_failing)
			log_info("etcd answers again");
		sh->etcd_failing = 0;
		sh->dirty = 0;
		return 0;
	}
	if (r == 0)
		return 1;
	if (!sh->etcd_failing++)
		log_warn("cannot advance the manifest in etcd (%s); trying "
		    "again", strerror(-r));
	return r;
}

/* Upload what database i's buffer holds: 0 or -errno. */
static int
ship_upload(struct ship *sh, int i)
{
	struct ship_db *d = &sh->db[i];
	char key[S3_KEY_MAX];
	int r;

	if (d->len == 0)
		return 0;
	if ((r = repl_object_key(key, sizeof(key), sh->o->room, sh->o->epoch,
	    i, "seg", d->buf_off)) < 0)
		return r;
	if ((r = s3_put(sh->s3, key, d->buf, d->len)) < 0) {
		if (!sh->store_failing++)
			log_warn("cannot store %s (%s); the room's commits "
			    "wait until it can", key, strerror(-r));
		return r;
	}
	if (sh->store_failing)
		log_info("the store takes segments again");
	sh->store_failing = 0;
	d->buf_off += d->len;
	d->len = 0;
	d->first_ms = 0;
	d->man.upto = d->st.rec_end;
	sh->dirty = 1;
	return 0;
}

/* Once the manifest names a new snapshot: remove what it no longer names
 * (replicate_collect.c), REPL_COLLECT_MAX objects a round.  A failure is
 * logged, and tried again after the next snapshot: the objects only
 * cost space meanwhile, and the commits wait while the shipper works. */
static void
ship_collect(struct ship *sh)
{
	struct repl_manifest m;
	int more = 0, r;

	if (!sh->collect || sh->dirty)
		return;
	ship_manifest_of(sh, &m);
	if ((r = repl_collect(sh->s3, sh->o->room, &m, &more)) < 0)
		log_warn("cannot remove the stored objects no manifest names "
		    "(%s); trying again after the next snapshot",
		    strerror(-r));
	sh->collect = r >= 0 && more;
}

/* Upload every buffer with bytes, then the manifest; a snapshot when it
 * is time; then the garbage.  0, 1 when fenced, or -errno (a store or
 * etcd failure: the next round tries again). */
static int
ship_flush(struct ship *sh)
{
	int r;

	for (int i = 0; i < REPL_DBS; i++)
		if (sh->db[i].len && (r = ship_upload(sh, i)) < 0)
			return r;
	if (sh->o->snapshot_every > 0 && time_mono_ms() - sh->snap_ms >=
	    sh->o->snapshot_every * 1000LL) {
		for (int i = 0; i < REPL_DBS; i++)
			if (repl_stream_at_record(&sh->db[i].st) &&
			    sh->db[i].st.rec_end > sh->db[i].man.from &&
			    (r = ship_snapshot(sh, i)) < 0)
				return r;
		sh->snap_ms = time_mono_ms();
	}
	if (sh->dirty && (r = ship_manifest(sh)) != 0)
		return r;
	ship_collect(sh);
	return 0;
}

/* Read what database i's stream has, as much as its buffer takes:
 * 0, or -errno / -EPROTO (logged). */
static int
ship_read(struct ship *sh, int i)
{
	struct ship_db *d = &sh->db[i];
	size_t room = REPL_SEG_MAX - d->len;
	ssize_t got;
	int r;

	if (room > REPL_READ_PIECE)
		room = REPL_READ_PIECE;
	do
		got = read(d->in, d->buf + d->len, room);
	while (got < 0 && errno == EINTR);
	if (got < 0 && errno == EAGAIN)
		return 0;
	if (got <= 0) {
		if (got < 0)
			log_error("%s stream: %s", repl_db_name(i),
			    strerror(errno));
		close(d->in);
		d->in = -1;
		return 0;
	}
	if ((r = repl_stream_feed(&d->st, d->buf + d->len, (size_t)got)) < 0) {
		log_error("%s stream: %s at offset %" PRIu64, repl_db_name(i),
		    strerror(-r), d->st.off);
		return r;
	}
	if (!d->len)
		d->first_ms = time_mono_ms();
	d->len += (size_t)got;
	return 0;
}

/* Milliseconds poll may wait: until the oldest buffered byte is due. */
static int
ship_wait_ms(const struct ship *sh)
{
	long long now = time_mono_ms(), wait = 1000;

	for (int i = 0; i < REPL_DBS; i++)
		if (sh->db[i].len) {
			long long due = sh->db[i].first_ms + REPL_FLUSH_MS - now;

			wait = due < wait ? due : wait;
		}
	return wait < 0 ? 0 : (int)wait;
}

/* 1 when a buffer must go now (full, or due), the manifest is behind
 * (its last write failed: at most once a second, ship_wait_ms), or
 * garbage waits. */
static int
ship_due(const struct ship *sh)
{
	if (sh->dirty || sh->collect)
		return 1;
	for (int i = 0; i < REPL_DBS; i++)
		if (sh->db[i].len && (sh->db[i].len == REPL_SEG_MAX ||
		    time_mono_ms() - sh->db[i].first_ms >= REPL_FLUSH_MS))
			return 1;
	return sh->o->snapshot_every > 0 && time_mono_ms() - sh->snap_ms >=
	    sh->o->snapshot_every * 1000LL;
}

/* The loop (see the top): the exit status. */
static int
ship_loop(struct ship *sh)
{
	for (;;) {
		struct pollfd p[REPL_DBS];
		int n = 0, r, ix[REPL_DBS];

		for (int i = 0; i < REPL_DBS; i++)
			if (sh->db[i].in >= 0 && sh->db[i].len < REPL_SEG_MAX) {
				p[n] = (struct pollfd){ sh->db[i].in, POLLIN, 0 };
				ix[n++] = i;
			}
		if (n == 0 && sh->db[0].in < 0 && sh->db[1].in < 0) {
			r = ship_flush(sh);
			if (r == 1 || (r == 0 && !sh->dirty))
				return r == 1 ? 3 : 0;
			poll(NULL, 0, REPL_FLUSH_MS);
			continue;
		}
		/* Buffers full and the store failing: try again soon. */
		if (poll(p, (nfds_t)n, n ? ship_wait_ms(sh) : REPL_FLUSH_MS) < 0 &&
		    errno != EINTR)
			return 1;
		for (int k = 0; k < n; k++)
			if (p[k].revents && ship_read(sh, ix[k]) < 0)
				return 1;
		if (ship_due(sh) && (r = ship_flush(sh)) == 1)
			return 3;
	}
}

/* Shadows, snapshots at offset 0, the first manifest: 0, 1 fenced,
 * -errno. */
static int
ship_start(struct ship *sh)
{
	uint64_t base[REPL_DBS];
	int r;

	for (int i = 0; i < REPL_DBS; i++) {
		sh->db[i].in = sh->o->in_fd[i];
		sh->db[i].shadow = -1;
		/* Room in the pipe for the commits made during an upload (a
		 * pipe holds 64 KiB by default; 1 MiB is what an unprivileged
		 * process may ask): the writers wait only when the store is
		 * slower than that. */
		if (fcntl(sh->db[i].in, F_SETPIPE_SZ, REPL_PIPE_BYTES) < 0)
			log_debug("%s stream: keeping the pipe's size (%s)",
			    repl_db_name(i), strerror(errno));
		if (!(sh->db[i].buf = malloc(REPL_SEG_MAX)))
			return -ENOMEM;
	}
	if ((r = ship_base(sh, base)) < 0)
		return r;
	for (int i = 0; i < REPL_DBS; i++)
		if ((r = ship_shadow_open(sh, i, base[i])) < 0 ||
		    (r = ship_snapshot(sh, i)) < 0)
			return r;
	sh->snap_ms = time_mono_ms();
	return ship_manifest(sh);
}

int
repl_ship(const struct repl_opts *o, struct s3 *s3)
{
	struct ship sh = { .o = o, .s3 = s3 };
	char err[256];
	int r, status;

	if (!(sh.etcd = etcd_open(o->etcd, err, sizeof(err)))) {
		log_error("%s", err);
		return 1;
	}
	log_info("shipping room %s, epoch %" PRId64 ", as node %s", o->room,
	    o->epoch, o->node);
	r = ship_start(&sh);
	/* --run-as: root up for good, the databases being copied (what is
	 * left needs only descriptors and the network). */
	if (r == 0 && o->run_uid)
		r = repl_become(o);
	if (r == 0 && o->ready_fd >= 0) {
		write_all(o->ready_fd, "ready\n", 6);
		close(o->ready_fd);
	}
	status = r == 1 ? 3 : r < 0 ? 1 : ship_loop(&sh);
	if (status == 3)
		log_error("room %s is held by another host now (epoch %" PRId64
		    " is over): nothing more is stored", o->room, o->epoch);
	else if (status == 0)
		log_info("both streams ended; everything is stored");
	for (int i = 0; i < REPL_DBS; i++) {
		repl_stream_free(&sh.db[i].st);
		free(sh.db[i].buf);
		if (sh.db[i].shadow >= 0)
			close(sh.db[i].shadow);
	}
	etcd_close(sh.etcd);
	return status;
}

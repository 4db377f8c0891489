/*
 * cluster_move.c: an operator's planned moves (atriumd(8), CLUSTER):
 *
 *   atriumd cluster move ROOM [--to NODE] [--force]   move one room
 *   atriumd cluster drain [NODE] [--force]  move every room of NODE (this
 *                                           host's --node by default) and
 *                                           mark NODE drained
 *   atriumd cluster undrain NODE            NODE takes rooms again
 *
 * each with [--cluster etcd=URL[,URL...]] [--data DIR] as `cluster
 * status` (cluster_status.h).  The command talks to etcd only; the nodes
 * do the move (cluster/move.h has the keys, cluster/node.c the nodes'
 * side): it checks what it can first (the room is held, by a live node;
 * the target is alive and not drained; the room is streamed to the
 * object store, since otherwise its files and chat would not follow it:
 * --force moves it all the same), writes the request under a lease of
 * its own (so that the request ends with the command; one that a killed
 * command left, for a tenure that ended or a move called off, is
 * removed first: mv_stale), waits for the home to answer (MOVE_ACK_S: a
 * home that does not is down or cut off, and the room moves by itself
 * when its lease ends), then for another node to hold the room at a new
 * epoch (and, when the room is streamed, for that node's shipper to have
 * started: its restore is done), and says how long the room's people
 * waited; or says why the home called the move off (its last commits
 * could not be stored: mv_kept).  It blocks on etcd, as a command may.
 *
 * Everything read from etcd was written by some node: names are checked
 * before they are printed.
 */
#include "cluster_move.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster_status.h"
#include "config.h"
#include "etcd.h"
#include "move.h"
#include "names.h"
#include "node.h"

#define MOVE_ACK_S	3	/* a live home answers a request within */
#define MOVE_SERVE_S	15	/* the new home's restore, after its claim */
#define MOVE_POLL_US	100000
#define MOVE_JOBS_MAX	1024	/* rooms of one drain */
#define NODES_PREFIX	"/atrium/nodes/"
#define ROOMS_PREFIX	"/atrium/rooms/"

static const char move_usage[] =
	"atriumd cluster move ROOM [--to NODE] [--force] | drain [NODE] "
	"[--force] | undrain NODE [--cluster etcd=URL[,URL...]] [--data DIR]";

/* The command line, checked. */
struct mv_cli {
	const char *what;		/* "atriumd cluster move", for messages */
	const char *arg;		/* ROOM or NODE, or NULL */
	const char *to;			/* --to NODE, or NULL */
	int force;			/* --force: a room not streamed too */
	char urls[1024];		/* etcd's */
	char node[CLUSTER_NAME_MAX];	/* --data's node (drain's default) */
};

/* One room's move, as the command follows it. */
enum mv_state { MV_ASKED, MV_ACKED, MV_CLAIMED, MV_DONE, MV_FAILED };

struct mv_job {
	struct move_req req;
	enum mv_state state;
	int streamed;			/* the room has a manifest */
	double t0;			/* when asked, s */
	double claimed_at;		/* when the new home held it */
	double done_at;			/* when it served there */
	char home[CLUSTER_NAME_MAX];	/* its home at the end */
	int64_t epoch;			/* of that home */
	char why[512];			/* MV_FAILED */
};

static double
mv_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* DATA/atrium.conf's cluster and node (when it has them). */
static void
mv_config(struct mv_cli *m, const char *data, const char *given)
{
	static struct config cfg;
	char conf[PATH_MAX + 32], err[512];

	config_defaults(&cfg);
	snprintf(conf, sizeof(conf), "%s/atrium.conf", data);
	if (config_load_file(&cfg, conf, err, sizeof(err)) < 0)
		cfg.cluster[0] = '\0';
	if (!given)
		given = cfg.cluster;
	if (strncmp(given, "etcd=", 5) == 0)
		snprintf(m->urls, sizeof(m->urls), "%s", given + 5);
	snprintf(m->node, sizeof(m->node), "%s", cfg.node);
	if (!m->node[0] && gethostname(m->node, sizeof(m->node)) < 0)
		m->node[0] = '\0';
}

/* Parse argv (argv[1] the verb): 0, or 2 after telling stderr. */
static int
mv_args(int argc, char **argv, struct mv_cli *m)
{
	const char *data = "./data", *given = NULL;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--cluster") == 0 && i + 1 < argc)
			given = argv[++i];
		else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
			data = argv[++i];
		else if (strcmp(argv[i], "--to") == 0 && i + 1 < argc &&
		    strcmp(argv[1], "move") == 0)
			m->to = argv[++i];
		else if (strcmp(argv[i], "--force") == 0 &&
		    strcmp(argv[1], "undrain") != 0)
			m->force = 1;
		else if (argv[i][0] != '-' && !m->arg)
			m->arg = argv[i];
		else
			goto usage;
	}
	if ((strcmp(argv[1], "move") == 0 || strcmp(argv[1], "undrain") == 0) &&
	    !m->arg)
		goto usage;
	mv_config(m, data, given);
	if (!m->urls[0]) {
		fprintf(stderr, "%s: no cluster given: use --cluster "
		    "etcd=URL[,URL...], or --data DIR whose atrium.conf has "
		    "cluster = etcd=URL\n", m->what);
		return 2;
	}
	return 0;
usage:
	fprintf(stderr, "usage: %s\n", move_usage);
	return 2;
}

/* NODE's record: 1 alive (its lease in *lease when not NULL), 0 not, or
 * -errno. */
static int
mv_node_alive(struct etcd *e, const char *node, int64_t *lease)
{
	struct etcd_kv *kvs = NULL;
	size_t n = 0;
	int r, found = 0;

	if ((r = etcd_range_prefix(e, NODES_PREFIX, &kvs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && !found; i++)
		if (strcmp(kvs[i].key + strlen(NODES_PREFIX), node) == 0) {
			found = 1;
			if (lease)
				*lease = kvs[i].lease;
		}
	etcd_kvs_free(kvs, n);
	return found;
}

/* ROOM's home: 1 with its node (checked) and epoch, 0 none, -errno. */
static int
mv_home(struct etcd *e, const char *room, char *node, size_t len,
    int64_t *epoch)
{
	char key[128], *val;
	size_t vlen;
	int r;

	node[0] = '\0';
	snprintf(key, sizeof(key), "%s%s/home", ROOMS_PREFIX, room);
	if ((r = etcd_get(e, key, &val, &vlen, epoch, NULL)) <= 0)
		return r;
	if (!cluster_valid_node(val))
		snprintf(node, len, "(not well formed)");
	else
		snprintf(node, len, "%s", val);
	free(val);
	return 1;
}

/* ROOM's manifest's mod_revision: > 0, 0 none, -errno. */
static int64_t
mv_manifest_rev(struct etcd *e, const char *room)
{
	char key[128];
	int64_t rev = 0;
	int r;

	snprintf(key, sizeof(key), "%s%s/manifest", ROOMS_PREFIX, room);
	r = etcd_get_rev(e, key, &rev);
	return r < 0 ? r : r == 1 ? rev : 0;
}

/* The node TO (given) or a node move_pick chooses, for a room on FROM:
 * 0 with it in job->req.to, else 1 after telling why. */
static int
mv_target(struct etcd *e, const char *to, struct mv_job *job)
{
	const char *room = job->req.room, *from = job->req.from;
	int r;

	if (!to) {
		r = move_pick(e, from, job->req.to, sizeof(job->req.to));
		if (r == 1)
			return 0;
		snprintf(job->why, sizeof(job->why), r < 0 ? "etcd: %s" :
		    "no other node of the cluster can take room %s (each is "
		    "drained, or none is alive)", r < 0 ? strerror(-r) : room);
		return 1;
	}
	if (!cluster_valid_node(to))
		snprintf(job->why, sizeof(job->why), "'%s' is not a node's name",
		    to);
	else if (strcmp(to, from) == 0)
		snprintf(job->why, sizeof(job->why), "room %s is on node %s "
		    "already", room, to);
	else if ((r = mv_node_alive(e, to, NULL)) != 1)
		snprintf(job->why, sizeof(job->why), r < 0 ? "etcd: %s" :
		    "node %s is unknown or not alive (atriumd cluster status "
		    "lists the nodes)", r < 0 ? strerror(-r) : to);
	else if ((r = move_drained(e, to)) < 0)
		snprintf(job->why, sizeof(job->why), "etcd: %s", strerror(-r));
	else if (r == 1)
		snprintf(job->why, sizeof(job->why), "node %s is drained (it "
		    "takes no rooms): atriumd cluster undrain %s first", to, to);
	else {
		snprintf(job->req.to, sizeof(job->req.to), "%s", to);
		return 0;
	}
	return 1;
}

/* The checks before ROOM moves (to TO, or a node chosen; FORCE: even
 * when it is not streamed): 0 with job ready to ask, else 1 with
 * job->why. */
static int
mv_prepare(struct etcd *e, const char *room, const char *to, int force,
    struct mv_job *job)
{
	int r;

	memset(job, 0, sizeof(*job));
	snprintf(job->req.room, sizeof(job->req.room), "%s", room);
	if (!room_name_valid(room)) {
		snprintf(job->why, sizeof(job->why), "'%s' is not a room's "
		    "name", room);
		return 1;
	}
	r = mv_home(e, room, job->req.from, sizeof(job->req.from),
	    &job->req.epoch);
	if (r < 0) {
		snprintf(job->why, sizeof(job->why), "etcd: %s", strerror(-r));
		return 1;
	}
	if (r == 0) {
		snprintf(job->why, sizeof(job->why), mv_manifest_rev(e, room) > 0 ?
		    "no host holds room %s now (it is not in use): there is "
		    "nothing to move; it starts wherever it is next used" :
		    "there is no room %s in the cluster (no host holds it and "
		    "the object store has none of it)", room);
		return 1;
	}
	if (!cluster_valid_node(job->req.from)) {
		snprintf(job->why, sizeof(job->why), "room %s names a home that "
		    "is not a node's name", room);
		return 1;
	}
	job->streamed = mv_manifest_rev(e, room) > 0;
	if (mv_target(e, to, job) != 0)
		return 1;
	if (!job->streamed && !force) {
		snprintf(job->why, sizeof(job->why), "room %s's writes are not "
		    "streamed to an object store (its hosts run without --s3): "
		    "its files and chat would not follow it to %s; --force "
		    "moves it all the same", room, job->req.to);
		return 1;
	}
	return 0;
}

/* 1 when CUR, the request found under KEY (created at REV) where job's
 * was to go, is over though it lasts: it names a tenure of the room
 * that ended (its move happened, and the command that asked was killed
 * before it could remove it: it goes with that command's lease, up to
 * MOVE_WAIT_S + MOVE_SERVE_S + 5 s later), or its home called it off
 * (MOVING_PREFIX ROOM "REV kept: ..."). */
static int
mv_stale(struct etcd *e, const struct mv_job *job, const char *key,
    const char *cur, int64_t rev)
{
	struct move_req old;
	char mkey[128], *val;
	size_t len;
	int stale;

	if (move_req_parse(key, cur, strlen(cur), &old) < 0)
		return 1;	/* not well formed: ignored by every node */
	if (old.epoch != job->req.epoch || strcmp(old.from, job->req.from) != 0)
		return 1;
	snprintf(mkey, sizeof(mkey), "%s%s", MOVING_PREFIX, job->req.room);
	if (etcd_get(e, mkey, &val, &len, NULL, NULL) != 1)
		return 0;
	stale = strtoll(val, NULL, 10) == rev && strstr(val, " kept: ");
	free(val);
	return stale;
}

/* Write job's request under LEASE (removing one that is over first):
 * 0, else 1 with job->why. */
static int
mv_ask(struct etcd *e, struct mv_job *job, int64_t lease)
{
	char key[128], *val = move_req_json(&job->req), *cur = NULL;
	int64_t rev;
	int r;

	snprintf(key, sizeof(key), "%s%s", MOVES_PREFIX, job->req.room);
	r = val ? etcd_create(e, key, val, strlen(val), lease, &rev, &cur) :
	    -ENOMEM;
	if (r == 0 && cur && mv_stale(e, job, key, cur, rev) &&
	    etcd_delete_if(e, key, cur, strlen(cur), rev) == 1) {
		free(cur);
		cur = NULL;
		r = etcd_create(e, key, val, strlen(val), lease, &rev, &cur);
	}
	free(val);
	free(cur);
	if (r == 1) {
		job->req.rev = rev;
		job->t0 = mv_now();
		job->state = MV_ASKED;
		return 0;
	}
	snprintf(job->why, sizeof(job->why), r == 0 ? "a move of room %s is "
	    "under way already" : "etcd: %s", r == 0 ? job->req.room :
	    strerror(-r));
	job->state = MV_FAILED;
	return 1;
}

/* The home did not answer the request in time. */
static void
mv_silent(struct etcd *e, struct mv_job *job)
{
	char key[128];
	int64_t lease = 0, ttl = 0;

	snprintf(key, sizeof(key), "%s%s", MOVES_PREFIX, job->req.room);
	etcd_delete(e, key);
	if (mv_node_alive(e, job->req.from, &lease) == 1 && lease)
		etcd_lease_ttl(e, lease, &ttl);
	snprintf(job->why, sizeof(job->why), "host %s, which holds room %s, "
	    "does not answer (it is down, or cut off from etcd): the room "
	    "moves by itself when %s's lease ends (%" PRId64 " s left; "
	    "atriumd cluster status shows it), at its next use",
	    job->req.from, job->req.room, job->req.from, ttl);
	job->state = MV_FAILED;
}

/* 1 when the home acknowledged job's request (MOVING_PREFIX ROOM names
 * its revision; one an earlier command's request left does not). */
static int
mv_acked(struct etcd *e, const struct mv_job *job)
{
	char key[128], *val;
	size_t len;
	int ok;

	snprintf(key, sizeof(key), "%s%s", MOVING_PREFIX, job->req.room);
	if (etcd_get(e, key, &val, &len, NULL, NULL) != 1)
		return 0;
	ok = strtoll(val, NULL, 10) == job->req.rev;
	free(val);
	return ok;
}

/* 1 when the home called job's move off (MOVING_PREFIX ROOM is "REV
 * kept: WHY", cluster_room_kept), with the reason in job->why. */
static int
mv_kept(struct etcd *e, struct mv_job *job)
{
	char key[128], *val, *end, *why;
	size_t len;
	int kept;

	snprintf(key, sizeof(key), "%s%s", MOVING_PREFIX, job->req.room);
	if (etcd_get(e, key, &val, &len, NULL, NULL) != 1)
		return 0;
	kept = strtoll(val, &end, 10) == job->req.rev &&
	    strncmp(end, " kept: ", 7) == 0;
	if (kept) {
		/* A node wrote it: only what is printable is shown. */
		for (why = end + 7; *why; why++)
			if ((unsigned char)*why < 0x20 || *why == 0x7f)
				*why = '?';
		snprintf(job->why, sizeof(job->why), "room %s stays on host %s, "
		    "which serves it as before: %s; move it again once the "
		    "object store answers", job->req.room, job->req.from,
		    end + 7);
		job->state = MV_FAILED;
	}
	free(val);
	return kept;
}

/* One look at a job under way. */
static void
mv_follow(struct etcd *e, struct mv_job *job)
{
	char node[CLUSTER_NAME_MAX];
	int64_t epoch = 0;
	double now = mv_now();
	int r;

	if (job->state == MV_ASKED) {
		if (mv_acked(e, job))
			job->state = MV_ACKED;
		else if (now - job->t0 > MOVE_ACK_S)
			mv_silent(e, job);
		return;
	}
	if (job->state == MV_ACKED) {
		if (mv_kept(e, job))
			return;
		r = mv_home(e, job->req.room, node, sizeof(node), &epoch);
		if (r == 1 && epoch != job->req.epoch) {
			snprintf(job->home, sizeof(job->home), "%s", node);
			job->epoch = epoch;
			job->claimed_at = now;
			job->state = MV_CLAIMED;
		}
		return;
	}
	/* Claimed: a streamed room serves once the new home's shipper
	 * advanced the manifest (its restore is done). */
	if (job->state == MV_CLAIMED && (!job->streamed ||
	    mv_manifest_rev(e, job->req.room) > job->epoch ||
	    now - job->claimed_at > MOVE_SERVE_S)) {
		job->state = MV_DONE;
		job->done_at = now;
	}
}

/* Follow every job until each is done or failed, or the time is up. */
static void
mv_wait(struct etcd *e, struct mv_job *jobs, size_t n)
{
	double deadline = mv_now() + MOVE_WAIT_S;
	size_t open;

	do {
		open = 0;
		for (size_t i = 0; i < n; i++) {
			if (jobs[i].state == MV_DONE || jobs[i].state == MV_FAILED)
				continue;
			mv_follow(e, &jobs[i]);
			open += jobs[i].state != MV_DONE &&
			    jobs[i].state != MV_FAILED;
		}
		if (open)
			usleep(MOVE_POLL_US);
	} while (open && mv_now() < deadline);
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].state == MV_CLAIMED) {
			/* Held there; its restore is slow, but it moved. */
			jobs[i].state = MV_DONE;
			jobs[i].done_at = mv_now();
		}
		if (jobs[i].state == MV_DONE || jobs[i].state == MV_FAILED)
			continue;
		snprintf(jobs[i].why, sizeof(jobs[i].why), "room %s was not "
		    "held by another host within %d s (see atriumd's log on %s "
		    "and on %s)", jobs[i].req.room, MOVE_WAIT_S,
		    jobs[i].req.from, jobs[i].req.to);
		jobs[i].state = MV_FAILED;
	}
}

/* Say what became of each job; the number that failed. */
static size_t
mv_report(const struct mv_cli *m, const struct mv_job *jobs, size_t n)
{
	size_t failed = 0;

	for (size_t i = 0; i < n; i++) {
		const struct mv_job *j = &jobs[i];
		if (j->state != MV_DONE) {
			fprintf(stderr, "%s: %s\n", m->what, j->why);
			failed++;
			continue;
		}
		printf("room %s moved from %s to %s (epoch %" PRId64 " -> %"
		    PRId64 "): its people waited %.1f s\n", j->req.room,
		    j->req.from, j->home, j->req.epoch, j->epoch,
		    j->done_at - j->t0);
		if (strcmp(j->home, j->req.to) != 0)
			printf("  (asked for %s; %s took it first)\n", j->req.to,
			    j->home);
	}
	return failed;
}

/* Ask for every prepared job under one lease of this command's, follow
 * them, and clean up: the number that failed. */
static size_t
mv_run(struct etcd *e, const struct mv_cli *m, struct mv_job *jobs, size_t n)
{
	char key[128];
	int64_t lease;
	size_t failed;
	int r;

	if ((r = etcd_lease_grant(e, MOVE_WAIT_S + MOVE_SERVE_S + 5,
	    &lease)) < 0) {
		fprintf(stderr, "%s: etcd: %s\n", m->what, strerror(-r));
		return n;
	}
	for (size_t i = 0; i < n; i++)
		if (jobs[i].state != MV_FAILED)
			mv_ask(e, &jobs[i], lease);
	mv_wait(e, jobs, n);
	failed = mv_report(m, jobs, n);
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s%s", MOVING_PREFIX,
		    jobs[i].req.room);
		if (jobs[i].req.rev)	/* its request was this command's */
			etcd_delete(e, key);
	}
	etcd_lease_revoke(e, lease);	/* the requests go with it */
	return failed;
}

static int
mv_move(struct etcd *e, const struct mv_cli *m)
{
	struct mv_job job;

	if (mv_prepare(e, m->arg, m->to, m->force, &job) != 0) {
		fprintf(stderr, "%s: %s\n", m->what, job.why);
		return 1;
	}
	return mv_run(e, m, &job, 1) ? 1 : 0;
}

/* The rooms whose home is NODE, as jobs (each prepared): the count, or
 * -errno. */
static long
mv_rooms_of(struct etcd *e, const char *node, int force,
    struct mv_job *jobs, size_t max)
{
	struct etcd_kv *kvs = NULL;
	size_t n = 0, k = 0;
	int r;

	if ((r = etcd_range_prefix(e, ROOMS_PREFIX, &kvs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && k < max; i++) {
		const char *p = kvs[i].key + strlen(ROOMS_PREFIX);
		const char *slash = strchr(p, '/');
		char room[64];
		if (!slash || strcmp(slash, "/home") != 0 ||
		    strcmp(kvs[i].val, node) != 0 ||
		    (size_t)(slash - p) >= sizeof(room))
			continue;
		snprintf(room, sizeof(room), "%.*s", (int)(slash - p), p);
		if (mv_prepare(e, room, NULL, force, &jobs[k]) != 0)
			jobs[k].state = MV_FAILED;
		k++;
	}
	etcd_kvs_free(kvs, n);
	return (long)k;
}

/* Mark NODE drained, under its own lease: 0, else 1 after telling why. */
static int
mv_mark_drained(struct etcd *e, const struct mv_cli *m, const char *node)
{
	char key[128];
	int64_t lease = 0;
	int r = mv_node_alive(e, node, &lease);

	if (r != 1 || !lease) {
		fprintf(stderr, r < 0 ? "%s: etcd: %s\n" : "%s: node %s is "
		    "unknown or not alive (its rooms, if any, move by "
		    "themselves when its lease ends)\n", m->what, r < 0 ?
		    strerror(-r) : node);
		return 1;
	}
	snprintf(key, sizeof(key), "%s%s", DRAIN_PREFIX, node);
	if ((r = etcd_put(e, key, "drained", 7, lease)) < 0) {
		fprintf(stderr, "%s: etcd: %s\n", m->what, strerror(-r));
		return 1;
	}
	return 0;
}

static int
mv_drain(struct etcd *e, const struct mv_cli *m)
{
	const char *node = m->arg ? m->arg : m->node;
	struct mv_job *jobs;
	size_t failed = 0, moved = 0;
	long n;

	if (!cluster_valid_node(node)) {
		fprintf(stderr, "%s: '%s' is not a node's name\n", m->what, node);
		return 1;
	}
	if (mv_mark_drained(e, m, node) != 0)
		return 1;
	if (!(jobs = calloc(MOVE_JOBS_MAX, sizeof(*jobs))))
		return 1;
	/* Twice at most: a claim that was under way on NODE when it was
	 * marked may have won a room after the first list. */
	for (int round = 0; round < 2 && !failed; round++) {
		if ((n = mv_rooms_of(e, node, m->force, jobs,
		    MOVE_JOBS_MAX)) < 0) {
			fprintf(stderr, "%s: etcd: %s\n", m->what,
			    strerror((int)-n));
			failed++;
			break;
		}
		if (n == 0)
			break;
		failed += mv_run(e, m, jobs, (size_t)n);
		moved += (size_t)n;
	}
	free(jobs);
	printf("node %s is drained: %zu room(s) moved, %zu failed; it takes no "
	    "rooms until `atriumd cluster undrain %s` or its restart\n", node,
	    moved - failed, failed, node);
	return failed ? 1 : 0;
}

static int
mv_undrain(struct etcd *e, const struct mv_cli *m)
{
	char key[128];
	int r;

	if (!cluster_valid_node(m->arg)) {
		fprintf(stderr, "%s: '%s' is not a node's name\n", m->what, m->arg);
		return 1;
	}
	snprintf(key, sizeof(key), "%s%s", DRAIN_PREFIX, m->arg);
	if ((r = etcd_delete(e, key)) < 0) {
		fprintf(stderr, "%s: etcd: %s\n", m->what, strerror(-r));
		return 1;
	}
	printf(r == 1 ? "node %s takes rooms again\n" : "node %s was not "
	    "drained\n", m->arg);
	return 0;
}

/* See cluster_move.h. */
int
cluster_move_main(int argc, char **argv)
{
	char what[64], err[256];
	struct mv_cli m;
	int r;

	memset(&m, 0, sizeof(m));
	snprintf(what, sizeof(what), "atriumd cluster %s", argv[1]);
	m.what = what;
	if ((r = mv_args(argc, argv, &m)) != 0)
		return r;
	struct etcd *e = etcd_open(m.urls, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "%s: %s\n", what, err);
		return 2;
	}
	if (strcmp(argv[1], "move") == 0)
		r = mv_move(e, &m);
	else if (strcmp(argv[1], "drain") == 0)
		r = mv_drain(e, &m);
	else
		r = mv_undrain(e, &m);
	etcd_close(e);
	return r;
}

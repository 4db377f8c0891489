/*
 * node.c: this host as a member of a cluster (node.h), inside atriumd's
 * monitor.  etcd (cluster/etcd.h) decides which host serves a room; this
 * file holds the node's side of that.
 *
 * Keys (prefix /atrium/):
 *   nodes/NODE       {"advertise":"HOST:PORT","hostkey":"ssh-ed25519 ..",
 *                     "pid":N}, attached to the node's lease
 *   rooms/ROOM/home  NODE, attached to the node's lease, made only by a txn
 *                    whose compare is create_revision == 0; its
 *                    create_revision is the room's epoch for this tenure
 *   rooms/ROOM/manifest  (the shipper's, cluster/etcd.h etcd_put_if_home)
 *   moves/ROOM, drain/NODE  an operator's planned moves (cluster/move.h)
 *
 * The lease and the fence.  One lease per node, TTL --cluster-lease,
 * renewed about every TTL/4.  A renewal (or the grant) sent at monotonic
 * time t that succeeds means the lease holds until t + TTL at the
 * earliest as far as this host may assume, so this host writes its rooms
 * until t + TTL - 1 s, the fence time, and not after: each room's fence
 * page (common/fence.h) carries it to the room's writers, which check it
 * themselves at each commit (common/walbuf.c), so a stopped monitor
 * fences its rooms all the same.  When the fence time passes without a
 * renewal, the loop stops every room at once (cluster_tick, hooks.lost)
 * and the rooms' entries go: their homes are no longer assumed ours.  A
 * renewal that finds the lease gone (etcd let it expire) does the same
 * and grants a new one.
 *
 * A room's entry (struct cl_room), and who moves it:
 *   WANT     (loop, cluster_place) the thread is to claim or look up
 *   HOME     (thread) the claim won: epoch, fence page
 *   REMOTE   (thread) another node's home: where (its advertised
 *            address, and that as a number: cluster/resolve.h)
 *   FAILED   (thread) could not say: why
 *   ABSENT   (thread) a look (cluster_place's look: a use that may not
 *            create the room) found no home anywhere; nothing claimed
 *   DONE     (loop) a REMOTE, FAILED or ABSENT answer was given once, or
 *            was not asked for again within CL_UNUSED_NS
 *   RELEASE  (loop, cluster_room_stopped) give the home up; also a HOME
 *            whose room has not run here for CL_UNUSED_NS since it was
 *            won (the session that asked went away before it started)
 *   LOST     (loop or thread) the fence time passed or the lease went:
 *            stopped, its home given up if still ours
 * The thread frees DONE, RELEASE and LOST entries once it has done their
 * etcd work; nothing else frees an entry, so the thread may keep a
 * pointer to one across its unlocked etcd calls.
 *
 * Planned moves (cluster/move.h).  The thread reads /atrium/moves/ every
 * CL_MOVES_POLL_NS (one small request while nothing changes).  A request
 * from this node at the epoch it holds marks the HOME entry moving: the loop
 * is told (hooks.moving), stops the room as at an idle stop, and
 * cluster_room_stopped gives the home up as usual, once the room's writers
 * and its shipper are gone, so every commit is stored first; meanwhile
 * cluster_place says "wait", so no session starts it again here.  A room
 * whose shipper could not store every commit (a store too slow or down) is
 * not given up: the loop calls cluster_room_kept, the entry stops moving (so
 * the room serves here again), and the thread tells the command why under
 * moving/ROOM, then removes the request (while this node still holds the
 * room at its epoch, and only that request: move_kept_tell), so that every
 * node sends the room's sessions here again at once; a request that lasts
 * all the same (etcd did not answer) is ignored from then on.  A request to
 * this node makes a WANT entry that claims the room as soon as the old home
 * let it go (a lost claim is tried again every CL_MOVE_RETRY_NS while the
 * request lasts) and, once won, has the loop start the room at once
 * (hooks.warm).  Any other node asked for the room while the request lasts
 * answers "remote" with the request's target.  A drained node (drain/NODE)
 * claims nothing: it points a session at the room's home, or at the node
 * move_pick chooses.
 *
 * Threads: the monitor's loop, and one thread that does all etcd I/O.
 * c->lock guards the entries, the lease id and the flags; the fence time
 * (c->fence_ns) is atomic.  The loop never waits for the thread but to
 * take the lock, which the thread never holds across a call to etcd.
 * The thread wakes the loop through a pipe (cluster_start's wake_fd).
 */
#include "node.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "etcd.h"
#include "fence.h"
#include "log.h"
#include "move.h"
#include "resolve.h"

#define NS		1000000000LL
#define CL_MARGIN_NS	NS		/* fence time = lease end - this */
#define CL_RETRY_NS	(NS / 4)	/* after a failed renewal */
#define CL_ROOMS_MAX	4096		/* entries at once */
/* A home won for a session that went away before its room started is
 * given up after this long without the room running here. */
#define CL_UNUSED_NS	(10 * NS)
/* A claim that etcd has not answered in this long is answered "failed"
 * (the session says why) rather than keep its user waiting. */
#define CL_CLAIM_WAIT_NS	(5 * NS)
#define CL_KEY_MAX	256
#define CL_MOVES_POLL_NS	(NS / 2)	/* reads of /atrium/moves/ */
#define CL_MOVE_RETRY_NS	(NS / 5)	/* a move's target claims again */

enum cl_state { CL_WANT, CL_HOME, CL_REMOTE, CL_FAILED, CL_DONE, CL_RELEASE,
	CL_LOST, CL_ABSENT };

struct cl_room {
	char name[64];
	enum cl_state state;
	int64_t epoch;			/* HOME: the home key's create_revision */
	int fd;				/* HOME: the fence page's memfd, or -1 */
	struct fence_page *page;	/* its read-write mapping, or NULL */
	int told;			/* LOST: hooks.lost was called */
	int busy;			/* WANT: the thread is claiming it */
	int look;			/* WANT: asked only where it lives
					 * (cluster_place's look): no claim
					 * when it has no home */
	int64_t since_ns;		/* WANT: when asked; HOME: when won */
	struct cluster_remote remote;	/* REMOTE */
	char why[200];			/* FAILED */
	int moving;			/* HOME: a move request names it */
	int move_told;			/* moving: hooks.moving was called */
	char move_to[CLUSTER_NAME_MAX];	/* moving: where to */
	int64_t move_rev;		/* moving: the request's revision */
	int64_t kept_rev;		/* HOME: a request called off here
					 * (cluster_room_kept), ignored */
	int kept_tell;			/* HOME: the thread is to tell the
					 * command why (kept_why) */
	char kept_why[200];
	int warm;			/* HOME: won for a move to this node:
					 * the loop starts it (hooks.warm) */
	int incoming;			/* WANT: made for a move to this node,
					 * not by a session */
	int64_t retry_ns;		/* WANT: the old home still holds it:
					 * claim again at this time */
	struct cl_room *next;
};

struct cluster {
	char etcd_urls[1024];
	char node[CLUSTER_NAME_MAX];
	char advertise[CLUSTER_ADDR_MAX];
	char hostkey[CLUSTER_HOSTKEY_MAX];
	int64_t ttl_s;
	struct cluster_hooks hooks;
	struct etcd *etcd;		/* the thread's alone */
	struct resolve *resolve;	/* the thread's alone: homes' names */
	pthread_t thread;
	int started;			/* the thread runs */
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* the thread's wake-up */
	/* Under lock: */
	struct cl_room *rooms;
	int nrooms;
	int64_t lease;			/* 0: none yet, or gone */
	int stop, release_all;		/* for the thread */
	int work;			/* an entry wants the thread */
	int changed;			/* for the loop: call hooks.changed */
	/* Any thread: */
	_Atomic int64_t fence_ns;	/* CLOCK_MONOTONIC ns: this node may
					 * write its rooms until then; 0: no
					 * lease yet */
	int wake_r, wake_w;		/* the loop's wake-up pipe */
	/* Under lock: every current node's name and host key, as the
	 * thread last read /atrium/nodes/ (at each renewal, and when the
	 * loop finds a key it does not know: nodes_want), for the relays
	 * other nodes make to this one (cluster_node_of_key). */
	struct cluster_remote *nodes;
	int nnodes, nodes_want;
	/* The thread's alone: /atrium/moves/ as last read (its key count
	 * and greatest mod_revision). */
	int64_t moves_count, moves_mod;
};

static int64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* --- validation of what etcd hands back (another node wrote it) -------- */

int
cluster_valid_node(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n >= CLUSTER_NAME_MAX || s[0] == '.' || s[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return 0;
	return 1;
}

int
cluster_valid_addr(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	const char *colon = s ? strrchr(s, ':') : NULL;

	if (n < 3 || n >= CLUSTER_ADDR_MAX || !colon || colon == s ||
	    !colon[1])
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr(".:_[]-", s[i]))
			return 0;
	for (const char *p = colon + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	long port = strtol(colon + 1, NULL, 10);
	return port >= 1 && port <= 65535;
}

int
cluster_valid_hostkey(const char *s)
{
	static const char prefix[] = "ssh-ed25519 ";
	size_t n = s ? strlen(s) : 0;

	if (n <= sizeof(prefix) - 1 || n >= CLUSTER_HOSTKEY_MAX ||
	    strncmp(s, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	for (size_t i = sizeof(prefix) - 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("+/=", s[i]))
			return 0;
	return 1;
}

/* --- entries (under c->lock) ------------------------------------------- */

static struct cl_room *
room_find(struct cluster *c, const char *name)
{
	struct cl_room *e;

	for (e = c->rooms; e && strcmp(e->name, name) != 0; e = e->next)
		;
	return e;
}

static void
room_free(struct cl_room *e)
{
	if (e->page)
		munmap(e->page, sizeof(*e->page));
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

/* Close ROOM's fence for good: its writers commit nothing more. */
static void
room_fence_shut(struct cl_room *e)
{
	if (e->page)
		atomic_store(&e->page->until_ns, 1);
}

/* Tell the loop (from the thread). */
static void
wake_loop(struct cluster *c)
{
	char b = 1;
	c->changed = 1;
	if (write(c->wake_w, &b, 1) < 0 && errno != EAGAIN)
		log_warn("cluster: cannot wake the loop: %s", strerror(errno));
}

/* --- the etcd thread's work -------------------------------------------- */

/* The node's record, JSON. */
static char *
node_record(struct cluster *c)
{
	struct json_object *o = json_object_new_object();
	char *s = NULL;

	if (!o)
		return NULL;
	json_object_object_add(o, "advertise", json_object_new_string(c->advertise));
	json_object_object_add(o, "hostkey", json_object_new_string(c->hostkey));
	json_object_object_add(o, "pid", json_object_new_int64(getpid()));
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

/* Grant a lease and register the node under it; 0 or -errno. */
static int
lease_grant(struct cluster *c)
{
	char key[CL_KEY_MAX], *rec;
	int64_t id, t0 = now_ns();
	int r;

	if ((r = etcd_lease_grant(c->etcd, c->ttl_s, &id)) < 0)
		return r;
	snprintf(key, sizeof(key), "/atrium/nodes/%s", c->node);
	if (!(rec = node_record(c)))
		return -ENOMEM;
	r = etcd_put(c->etcd, key, rec, strlen(rec), id);
	free(rec);
	if (r < 0) {
		etcd_lease_revoke(c->etcd, id);
		return r;
	}
	pthread_mutex_lock(&c->lock);
	c->lease = id;
	c->work = 1;		/* claims that waited for a lease */
	pthread_mutex_unlock(&c->lock);
	atomic_store(&c->fence_ns, t0 + c->ttl_s * NS - CL_MARGIN_NS);
	log_info("cluster: node %s joined (lease %" PRId64 ", %" PRId64 " s)",
	    c->node, id, c->ttl_s);
	return 0;
}

/* The lease is gone (etcd let it expire): every home went with it. */
static void
lease_gone(struct cluster *c)
{
	pthread_mutex_lock(&c->lock);
	log_warn("cluster: lease %" PRId64 " of node %s ended; its rooms are "
	    "stopped and claimed again on their next use", c->lease, c->node);
	c->lease = 0;
	for (struct cl_room *e = c->rooms; e; e = e->next)
		if (e->state == CL_HOME) {
			room_fence_shut(e);
			e->state = CL_LOST;
		}
	wake_loop(c);
	pthread_mutex_unlock(&c->lock);
}

/* Move every held room's fence page to the fence time now. */
static void
fence_publish(struct cluster *c)
{
	int64_t until = atomic_load(&c->fence_ns);

	pthread_mutex_lock(&c->lock);
	for (struct cl_room *e = c->rooms; e; e = e->next)
		if (e->state == CL_HOME && e->page)
			atomic_store(&e->page->until_ns, until);
	pthread_mutex_unlock(&c->lock);
}

/* Renew (or first grant) the lease.  The ns of the next renewal. */
static int64_t
lease_renew(struct cluster *c)
{
	int64_t t0 = now_ns(), ttl, lease;
	int r;

	pthread_mutex_lock(&c->lock);
	lease = c->lease;
	pthread_mutex_unlock(&c->lock);
	if (!lease)
		return lease_grant(c) == 0 ? t0 + c->ttl_s * NS / 4 :
		    t0 + CL_RETRY_NS;
	r = etcd_lease_keepalive(c->etcd, lease, &ttl);
	if (r == 0 || r == -ENOENT) {
		lease_gone(c);
		return t0;	/* grant a new one at once */
	}
	if (r < 0)
		return t0 + CL_RETRY_NS;	/* the fence time stays */
	if (ttl > c->ttl_s)
		ttl = c->ttl_s;
	int64_t until = t0 + ttl * NS - CL_MARGIN_NS;
	if (until > atomic_load(&c->fence_ns))
		atomic_store(&c->fence_ns, until);
	fence_publish(c);
	return t0 + c->ttl_s * NS / 4;
}

/* A fence page for a room held at EPOCH: 0 or -errno. */
static int
fence_make(struct cl_room *e, int64_t epoch, int64_t until)
{
	int fd = memfd_create("atrium-fence", MFD_CLOEXEC);
	struct fence_page *p;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, 4096) < 0 || (p = mmap(NULL, sizeof(*p),
	    PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		int err = errno;
		close(fd);
		return -err;
	}
	atomic_store(&p->epoch, epoch);
	atomic_store(&p->until_ns, until > 0 ? until : 1);
	e->fd = fd;
	e->page = p;
	return 0;
}

/* Where node NAME says it is, from its record, into R: 0, or -ENOENT
 * (no record: it is gone, or going), -EPROTO (a record not well formed). */
static int
node_lookup(struct cluster *c, const char *name, struct cluster_remote *rem)
{
	char key[CL_KEY_MAX], *val;
	size_t len;
	int r;

	memset(rem, 0, sizeof(*rem));
	snprintf(key, sizeof(key), "/atrium/nodes/%s", name);
	if ((r = etcd_get(c->etcd, key, &val, &len, NULL, NULL)) <= 0)
		return r == 0 ? -ENOENT : r;
	struct json_object *o = json_tokener_parse(val), *a, *h;
	free(val);
	r = -EPROTO;
	if (o && json_object_object_get_ex(o, "advertise", &a) &&
	    json_object_object_get_ex(o, "hostkey", &h) &&
	    json_object_is_type(a, json_type_string) &&
	    json_object_is_type(h, json_type_string) &&
	    cluster_valid_addr(json_object_get_string(a)) &&
	    cluster_valid_hostkey(json_object_get_string(h))) {
		snprintf(rem->node, sizeof(rem->node), "%s", name);
		snprintf(rem->addr, sizeof(rem->addr), "%s",
		    json_object_get_string(a));
		snprintf(rem->hostkey, sizeof(rem->hostkey), "%s",
		    json_object_get_string(h));
		r = 0;
	}
	json_object_put(o);
	return r;
}

/* One record of /atrium/nodes/ into *rem (its node name from the key):
 * 1, or 0 when it is not well formed (skipped). */
static int
node_entry(const struct etcd_kv *kv, struct cluster_remote *rem)
{
	const char *name = kv->key + strlen("/atrium/nodes/");
	struct json_object *o, *h;
	int ok;

	if (strncmp(kv->key, "/atrium/nodes/", 14) != 0 ||
	    !cluster_valid_node(name) || !(o = json_tokener_parse(kv->val)))
		return 0;
	ok = json_object_object_get_ex(o, "hostkey", &h) &&
	    json_object_is_type(h, json_type_string) &&
	    cluster_valid_hostkey(json_object_get_string(h));
	if (ok) {
		snprintf(rem->node, sizeof(rem->node), "%s", name);
		snprintf(rem->hostkey, sizeof(rem->hostkey), "%s",
		    json_object_get_string(h));
	}
	json_object_put(o);
	return ok;
}

/* Read every current node's record (the thread's).  What was known
 * stays when etcd cannot be read. */
static void
nodes_refresh(struct cluster *c)
{
	struct cluster_remote *list;
	struct etcd_kv *kvs = NULL;
	size_t n = 0, k = 0;

	if (etcd_range_prefix(c->etcd, "/atrium/nodes/", &kvs, &n) < 0)
		return;
	if ((list = calloc(n ? n : 1, sizeof(*list)))) {
		for (size_t i = 0; i < n; i++)
			k += (size_t)node_entry(&kvs[i], &list[k]);
		pthread_mutex_lock(&c->lock);
		free(c->nodes);
		c->nodes = list;
		c->nnodes = (int)k;
		pthread_mutex_unlock(&c->lock);
	}
	etcd_kvs_free(kvs, n);
}

int
cluster_node_of_key(struct cluster *c, const char *hostkey, char *node,
    size_t len)
{
	int found = 0;

	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < c->nnodes && !found; i++) {
		if (strcmp(c->nodes[i].hostkey, hostkey) != 0)
			continue;
		snprintf(node, len, "%s", c->nodes[i].node);
		found = 1;
	}
	if (!found) {
		/* A node that joined since the last read: read again. */
		c->nodes_want = 1;
		pthread_cond_signal(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return found;
}

/* The outcome of a claim, for the entry.  state CL_WANT: the claim of
 * a move's target lost to the old home, which has not let go yet. */
struct claim {
	enum cl_state state;
	int64_t epoch;
	struct cluster_remote remote;
	char why[200];
	int warm;		/* HOME won for a move to this node */
};

/* The home's advertised address as the number the front dials (a
 * name is looked up here: the network process resolves none). */
static void
claim_dial(struct cluster *c, struct claim *out)
{
	struct cluster_remote *rem = &out->remote;
	/* Waiting no longer than an etcd request may (cluster_start). */
	int r = resolve_addr(c->resolve, rem->addr, (int)(c->ttl_s * 1000 / 4),
	    rem->dial, sizeof(rem->dial));

	if (r == 0) {
		out->state = CL_REMOTE;
		return;
	}
	log_warn("cluster: the address of node %s, %s, does not resolve: %s",
	    rem->node, rem->addr, r == -EAGAIN ? "still being looked up" :
	    strerror(-r));
	out->state = CL_FAILED;
	snprintf(out->why, sizeof(out->why), "this room is served by host "
	    "%.63s, whose address %.60s %s", rem->node, rem->addr,
	    r == -EAGAIN || r == -EBUSY ? "is still being looked up" :
	    "does not resolve on this host");
}

/* ROOM's home is held by another node, CUR: where it is. */
static void
claim_elsewhere(struct cluster *c, const char *cur, struct claim *out)
{
	int r;

	if (!cluster_valid_node(cur)) {
		out->state = CL_FAILED;
		snprintf(out->why, sizeof(out->why), "the cluster names a home "
		    "for this room that is not a valid node name");
		return;
	}
	if ((r = node_lookup(c, cur, &out->remote)) == 0) {
		claim_dial(c, out);
		return;
	}
	out->state = CL_FAILED;
	snprintf(out->why, sizeof(out->why), "this room is served by host %s, "
	    "which is not answering now%s; try again in a few seconds", cur,
	    r == -EPROTO ? " (its record is not well formed)" : "");
}

/* This node is drained: it claims nothing.  Point at ROOM's home when
 * it has one, else at a node that takes rooms. */
static void
claim_drained(struct cluster *c, const char *room, struct claim *out)
{
	char key[CL_KEY_MAX], pick[CLUSTER_NAME_MAX], *cur = NULL;
	size_t len;
	int r;

	snprintf(key, sizeof(key), "/atrium/rooms/%s/home", room);
	r = etcd_get(c->etcd, key, &cur, &len, NULL, NULL);
	if (r == 1 && strcmp(cur, c->node) != 0) {
		claim_elsewhere(c, cur, out);
	} else if (r >= 0 && move_pick(c->etcd, c->node, pick,
	    sizeof(pick)) == 1 && node_lookup(c, pick, &out->remote) == 0) {
		claim_dial(c, out);
	} else {
		out->state = CL_FAILED;
		snprintf(out->why, sizeof(out->why), "this host is drained (it "
		    "takes no rooms) and no other host of the cluster can take "
		    "this room now; try again in a few seconds");
	}
	free(cur);
}

/* Before a claim of ROOM: what a move request or this node's drained
 * mark decide (the thread, unlocked).  1 when out holds the answer, 0 to
 * claim; *target is 1 when a request moves the room to this node. */
static int
claim_gate(struct cluster *c, const char *room, struct claim *out,
    int *target)
{
	struct move_req m;
	int r = move_req_get(c->etcd, room, &m);

	*target = r == 1 && strcmp(m.to, c->node) == 0;
	if (*target)
		return 0;
	/* Moving to another node: that one takes it, not this one. */
	if (r == 1 && node_lookup(c, m.to, &out->remote) == 0) {
		claim_dial(c, out);
		return 1;
	}
	if (move_drained(c->etcd, c->node) != 1)
		return 0;
	claim_drained(c, room, out);
	return 1;
}

/* A look (cluster_place's look) at ROOM's home key: 1 when it has none
 * (out says ABSENT), 0 when it has one (claim on: it is another node's,
 * or a stale one of this node's), 1 with out FAILED when etcd does not
 * answer. */
static int
claim_look(struct cluster *c, const char *key, struct claim *out)
{
	char *cur = NULL;
	size_t len;
	int r = etcd_get(c->etcd, key, &cur, &len, NULL, NULL);

	free(cur);
	if (r == 0)
		out->state = CL_ABSENT;
	else if (r < 0) {
		out->state = CL_FAILED;
		snprintf(out->why, sizeof(out->why), "the cluster's etcd did not "
		    "answer (%s); try again in a few seconds", strerror(-r));
	}
	return r <= 0;
}

/* Claim ROOM's home for this node under LEASE (the thread, unlocked);
 * with look, only when it has a home already (see claim_look). */
static void
claim(struct cluster *c, const char *room, int64_t lease, int look,
    struct claim *out)
{
	char key[CL_KEY_MAX], *cur = NULL;
	int64_t rev;
	int r = -EAGAIN, target;

	memset(out, 0, sizeof(*out));
	if (claim_gate(c, room, out, &target))
		return;
	snprintf(key, sizeof(key), "/atrium/rooms/%s/home", room);
	if (look && !target && claim_look(c, key, out))
		return;
	for (int tries = 0; tries < 3 && (r == -EAGAIN || r == 0); tries++) {
		free(cur);
		cur = NULL;
		r = etcd_create(c->etcd, key, c->node, strlen(c->node), lease,
		    &rev, &cur);
		if (r == 0 && cur && strcmp(cur, c->node) == 0) {
			/* Ours, but not in our table: a claim of an earlier
			 * life of this node (or one whose answer was lost).
			 * Nothing of ours writes at that epoch: drop it and
			 * claim again, for an epoch of this tenure. */
			log_info("cluster: room %s: dropping this node's stale "
			    "home (epoch %" PRId64 ")", room, rev);
			if (etcd_delete_if(c->etcd, key, c->node,
			    strlen(c->node), rev) < 0)
				break;
			r = -EAGAIN;
			continue;
		}
		if (r == 0 && !cur)
			r = -EAGAIN;	/* gone between compare and read */
		if (r != -EAGAIN)
			break;
	}
	if (r == 1) {
		out->state = CL_HOME;
		out->epoch = rev;
		out->warm = target;
	} else if (r == 0 && target) {
		out->state = CL_WANT;	/* the old home still holds it */
	} else if (r == 0) {
		claim_elsewhere(c, cur, out);
	} else {
		out->state = CL_FAILED;
		snprintf(out->why, sizeof(out->why), "the cluster's etcd did not "
		    "answer (%s); try again in a few seconds", strerror(-r));
	}
	free(cur);
}

/* Put a claim's outcome into its entry, if it still wants one. */
static void
claim_done(struct cluster *c, struct cl_room *e, struct claim *cl)
{
	char key[CL_KEY_MAX];
	int lost = 0, r = 0;

	pthread_mutex_lock(&c->lock);
	e->busy = 0;
	if (e->state != CL_WANT) {
		/* Nothing wants it any more: give a won home back. */
		lost = cl->state == CL_HOME;
	} else if (cl->state == CL_WANT) {
		/* A move's target: claim again soon.  etcd did answer, so a
		 * session waiting for it is not told etcd is away. */
		e->retry_ns = now_ns() + CL_MOVE_RETRY_NS;
		e->since_ns = now_ns();
	} else if (cl->state != CL_HOME && e->incoming) {
		/* Made for a move here that is over (or etcd failed): no
		 * session asked for it, so nobody takes this answer; a
		 * session that asks from now on gets a claim of its own, and
		 * the next poll reads the requests again. */
		e->state = CL_DONE;
		c->moves_count = -1;
	} else if (cl->state == CL_HOME &&
	    (r = fence_make(e, cl->epoch, atomic_load(&c->fence_ns))) < 0) {
		log_error("cluster: room %s: cannot make its fence page: %s",
		    e->name, strerror(-r));
		snprintf(e->why, sizeof(e->why), "this host cannot make the "
		    "room's fence page; see atriumd's log");
		e->state = CL_FAILED;
		lost = 1;
	} else {
		e->state = cl->state;
		e->epoch = cl->epoch;
		e->warm = cl->warm;
		e->since_ns = now_ns();
		e->remote = cl->remote;
		snprintf(e->why, sizeof(e->why), "%s", cl->why);
		if (cl->state == CL_HOME)
			log_info("cluster: room %s: home is this node, epoch %"
			    PRId64, e->name, cl->epoch);
	}
	wake_loop(c);
	pthread_mutex_unlock(&c->lock);
	if (lost) {
		snprintf(key, sizeof(key), "/atrium/rooms/%s/home", e->name);
		etcd_delete_if(c->etcd, key, c->node, strlen(c->node), cl->epoch);
	}
}

/* Give up the home of entry E (RELEASE or LOST), then free it. */
static void
release(struct cluster *c, struct cl_room *e)
{
	char key[CL_KEY_MAX];

	if (e->epoch > 0) {
		snprintf(key, sizeof(key), "/atrium/rooms/%s/home", e->name);
		int r = etcd_delete_if(c->etcd, key, c->node, strlen(c->node),
		    e->epoch);
		if (r == 1)
			log_info("cluster: room %s: home given up (epoch %"
			    PRId64 ")", e->name, e->epoch);
	}
	pthread_mutex_lock(&c->lock);
	for (struct cl_room **p = &c->rooms; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			c->nrooms--;
			break;
		}
	wake_loop(c);
	pthread_mutex_unlock(&c->lock);
	room_free(e);
}

/* One entry that wants the thread, and what for; NULL when none.  Under
 * c->lock. */
static struct cl_room *
next_work(struct cluster *c)
{
	for (struct cl_room *e = c->rooms; e; e = e->next) {
		if (e->state == CL_WANT && c->lease &&
		    now_ns() < atomic_load(&c->fence_ns) && !e->busy &&
		    now_ns() >= e->retry_ns)
			return e;
		if (e->state == CL_DONE || e->state == CL_RELEASE ||
		    (e->state == CL_LOST && e->told) ||
		    (e->state == CL_HOME && e->kept_tell && c->lease))
			return e;
	}
	return NULL;
}

/* Tell the command of a move this node called off (cluster_room_kept)
 * why: MOVING_PREFIX ROOM = "REV kept: WHY" under this node's lease;
 * then remove the request (created at REV) while this node still holds
 * the room at EPOCH, so that every other node points the room's
 * sessions here again at once rather than at the target until the
 * command's lease ends (a killed command's lasts up to a minute).  The
 * command reads why under MOVING_PREFIX, not the request.  The thread,
 * unlocked. */
static void
move_kept_tell(struct cluster *c, const char *room, int64_t rev,
    int64_t epoch, const char *why, int64_t lease)
{
	char key[CL_KEY_MAX], val[320];
	int n, r;

	snprintf(key, sizeof(key), "%s%s", MOVING_PREFIX, room);
	n = snprintf(val, sizeof(val), "%" PRId64 " kept: %s", rev, why);
	if (n < 0 || (size_t)n >= sizeof(val) ||
	    etcd_put(c->etcd, key, val, (size_t)n, lease) < 0)
		log_warn("cluster: room %s: cannot tell the move's command that "
		    "the move is called off", room);
	snprintf(key, sizeof(key), "%s%s", MOVES_PREFIX, room);
	if ((r = etcd_delete_if_home(c->etcd, room, c->node, epoch, key,
	    rev)) < 0)
		log_warn("cluster: room %s: cannot remove the called-off move "
		    "request (%s): other hosts send its sessions to the target "
		    "until the request's lease ends", room, strerror(-r));
	else if (r == 1)
		log_info("cluster: room %s: the called-off move request is "
		    "removed", room);
}

/* The earliest time a move's target claims again, or 0.  Under lock. */
static int64_t
next_retry(struct cluster *c)
{
	int64_t at = 0;

	for (struct cl_room *e = c->rooms; e; e = e->next)
		if (e->state == CL_WANT && e->retry_ns && (!at || e->retry_ns < at))
			at = e->retry_ns;
	return at;
}

/* Do the entries' etcd work until none is left. */
static void
serve_rooms(struct cluster *c)
{
	struct cl_room *e;
	struct claim cl;

	pthread_mutex_lock(&c->lock);
	while (!c->stop && (e = next_work(c))) {
		int64_t lease = c->lease;
		enum cl_state s = e->state;
		int look = e->look;
		char name[64];

		snprintf(name, sizeof(name), "%s", e->name);
		/* Marked so that next_work passes it while it is worked on. */
		if (s == CL_WANT)
			e->busy = 1;
		if (s == CL_HOME) {
			char why[sizeof(e->kept_why)];
			int64_t rev = e->kept_rev, epoch = e->epoch;

			snprintf(why, sizeof(why), "%s", e->kept_why);
			e->kept_tell = 0;
			pthread_mutex_unlock(&c->lock);
			move_kept_tell(c, name, rev, epoch, why, lease);
			pthread_mutex_lock(&c->lock);
			continue;
		}
		pthread_mutex_unlock(&c->lock);
		if (s == CL_WANT) {
			claim(c, name, lease, look, &cl);
			claim_done(c, e, &cl);
		} else {
			release(c, e);
		}
		pthread_mutex_lock(&c->lock);
	}
	c->work = 0;
	pthread_mutex_unlock(&c->lock);
}

/* A new WANT entry for ROOM (under c->lock): NULL when there are too
 * many or no memory. */
static struct cl_room *
room_add(struct cluster *c, const char *room)
{
	struct cl_room *e;

	if (c->nrooms >= CL_ROOMS_MAX || !(e = calloc(1, sizeof(*e))))
		return NULL;
	snprintf(e->name, sizeof(e->name), "%s", room);
	e->fd = -1;
	e->state = CL_WANT;
	e->since_ns = now_ns();
	e->next = c->rooms;
	c->rooms = e;
	c->nrooms++;
	c->work = 1;
	pthread_cond_signal(&c->cond);
	return e;
}

/* What move_seen made of a request. */
enum move_seen { SEEN_NOTHING, SEEN_ACK, SEEN_AGAIN };

/* A move request read from etcd (under c->lock): from this node at the
 * epoch it holds, the room is to go (SEEN_ACK: to be acknowledged); to
 * this node, claim it as soon as the old home lets it go (SEEN_AGAIN:
 * the room's entry is busy with an answer of its own now, so read the
 * request again at the next poll). */
static enum move_seen
move_seen(struct cluster *c, const struct move_req *m)
{
	struct cl_room *e = room_find(c, m->room);

	if (strcmp(m->from, c->node) == 0) {
		if (!e || e->state != CL_HOME || e->epoch != m->epoch ||
		    e->moving || e->kept_rev == m->rev)
			return SEEN_NOTHING;
		e->moving = 1;
		e->move_rev = m->rev;
		snprintf(e->move_to, sizeof(e->move_to), "%s", m->to);
		log_info("cluster: room %s: asked to move to node %s (epoch %"
		    PRId64 ")", e->name, m->to, e->epoch);
		wake_loop(c);
		return SEEN_ACK;
	}
	if (strcmp(m->to, c->node) != 0)
		return SEEN_NOTHING;
	/* A WANT entry not being claimed now claims it as the target
	 * (claim_gate); a HOME one has it. */
	if (e && (e->state == CL_HOME || (e->state == CL_WANT && !e->busy)))
		return SEEN_NOTHING;
	if (e || !(e = room_add(c, m->room)))
		return SEEN_AGAIN;
	e->incoming = 1;
	log_info("cluster: room %s: moving here from node %s", e->name,
	    m->from);
	return SEEN_NOTHING;
}

/* Tell the command that asked for a move that this node (the home) is
 * on it: MOVING_PREFIX ROOM under this node's lease, so that it goes if
 * this node does (the thread, unlocked). */
static void
move_ack(struct cluster *c, const struct move_req *m, int64_t lease)
{
	char key[CL_KEY_MAX], val[64];

	snprintf(key, sizeof(key), "%s%s", MOVING_PREFIX, m->room);
	snprintf(val, sizeof(val), "%" PRId64, m->rev);
	if (etcd_put(c->etcd, key, val, strlen(val), lease) < 0)
		log_warn("cluster: room %s: cannot tell the move's command that "
		    "it is under way", m->room);
}

/* Read the move requests when they changed (the thread, unlocked). */
static void
moves_poll(struct cluster *c)
{
	struct etcd_kv *kvs = NULL;
	struct move_req m, *acks;
	int64_t count, mod, lease;
	size_t n = 0, nacks = 0;
	int again = 0;

	if (etcd_prefix_stamp(c->etcd, MOVES_PREFIX, &count, &mod) < 0 ||
	    (count == c->moves_count && mod == c->moves_mod))
		return;
	if (etcd_range_prefix(c->etcd, MOVES_PREFIX, &kvs, &n) < 0)
		return;
	if (!(acks = calloc(n ? n : 1, sizeof(*acks)))) {
		etcd_kvs_free(kvs, n);
		return;		/* read again at the next poll */
	}
	c->moves_count = count;
	c->moves_mod = mod;
	pthread_mutex_lock(&c->lock);
	lease = c->lease;
	for (size_t i = 0; i < n; i++) {
		if (move_req_parse(kvs[i].key, kvs[i].val, kvs[i].len, &m) < 0)
			continue;
		m.rev = kvs[i].create_rev;
		switch (move_seen(c, &m)) {
		case SEEN_ACK:
			acks[nacks++] = m;
			break;
		case SEEN_AGAIN:
			again = 1;
			break;
		default:
			break;
		}
	}
	if (again)
		c->moves_count = -1;	/* read them all at the next poll */
	pthread_mutex_unlock(&c->lock);
	etcd_kvs_free(kvs, n);
	for (size_t i = 0; i < nacks && lease; i++)
		move_ack(c, &acks[i], lease);
	free(acks);
}

/* A clean stop: fence every room, then revoke the lease (etcd deletes
 * every key on it: the node's record and its homes). */
static void
leave(struct cluster *c)
{
	pthread_mutex_lock(&c->lock);
	int64_t lease = c->lease;
	for (struct cl_room *e = c->rooms; e; e = e->next)
		room_fence_shut(e);
	c->lease = 0;
	pthread_mutex_unlock(&c->lock);
	atomic_store(&c->fence_ns, 1);
	if (lease && etcd_lease_revoke(c->etcd, lease) == 0)
		log_info("cluster: node %s left (its rooms' homes are free)",
		    c->node);
}

static void *
thread_main(void *arg)
{
	struct cluster *c = arg;
	int64_t next_renew = 0, next_moves = 0;

	for (;;) {
		int nodes_want;

		if (now_ns() >= next_renew) {
			next_renew = lease_renew(c);
			nodes_refresh(c);
		}
		if (now_ns() >= next_moves) {
			moves_poll(c);
			next_moves = now_ns() + CL_MOVES_POLL_NS;
		}
		serve_rooms(c);
		pthread_mutex_lock(&c->lock);
		nodes_want = c->nodes_want;
		c->nodes_want = 0;
		pthread_mutex_unlock(&c->lock);
		if (nodes_want)
			nodes_refresh(c);
		pthread_mutex_lock(&c->lock);
		if (c->stop) {
			int rel = c->release_all;
			pthread_mutex_unlock(&c->lock);
			if (rel)
				leave(c);
			return NULL;
		}
		int64_t until = next_renew < next_moves ? next_renew : next_moves;
		int64_t retry = next_retry(c);
		if (retry && retry < until)
			until = retry;
		if (!c->work && !c->nodes_want && now_ns() < until) {
			struct timespec ts = { until / NS, until % NS };
			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		}
		pthread_mutex_unlock(&c->lock);
	}
}

/* --- the loop's side ------------------------------------------------- */

/* Wake the thread for an entry's work (under c->lock). */
static void
want_thread(struct cluster *c)
{
	c->work = 1;
	pthread_cond_signal(&c->cond);
}

/* An entry that says ROOM has no home, asked again (under c->lock):
 * consumed for a look, a claim anew for a use that may claim. */
static enum cluster_place
place_absent(struct cluster *c, struct cl_room *e, int look)
{
	if (look) {
		e->state = CL_DONE;
		want_thread(c);
		return CLUSTER_ABSENT;
	}
	e->state = CL_WANT;
	e->look = 0;
	e->since_ns = now_ns();
	want_thread(c);
	return CLUSTER_WAIT;
}

enum cluster_place
cluster_place(struct cluster *c, const char *room, int look,
    struct cluster_remote *remote, char *why, size_t whylen)
{
	enum cluster_place p = CLUSTER_WAIT;
	struct cl_room *e;

	why[0] = '\0';
	pthread_mutex_lock(&c->lock);
	if (!(e = room_find(c, room))) {
		if (!(e = room_add(c, room))) {
			snprintf(why, whylen, "this host is asking the cluster "
			    "about too many rooms at once; try again soon");
			p = CLUSTER_FAILED;
		} else {
			e->look = look;
		}
	} else if (e->state == CL_ABSENT) {
		p = place_absent(c, e, look);
	} else if (e->state == CL_WANT && !look && e->look) {
		e->look = 0;	/* a claim from now on (the next try) */
	} else if (e->state == CL_HOME && e->moving) {
		/* Stopping to move: the session waits, then finds it where
		 * it went. */
		p = CLUSTER_WAIT;
	} else if (e->state == CL_HOME &&
	    now_ns() < atomic_load(&c->fence_ns)) {
		p = CLUSTER_HERE;
	} else if (e->state == CL_WANT &&
	    now_ns() - e->since_ns > CL_CLAIM_WAIT_NS) {
		/* The thread gives back a home it wins for it meanwhile. */
		snprintf(why, whylen, "this host cannot reach the cluster's etcd "
		    "now; try again in a few seconds");
		e->state = CL_DONE;
		want_thread(c);
		p = CLUSTER_FAILED;
	} else if (e->state == CL_REMOTE) {
		*remote = e->remote;
		e->state = CL_DONE;
		want_thread(c);
		p = CLUSTER_REMOTE;
	} else if (e->state == CL_FAILED) {
		snprintf(why, whylen, "%s", e->why);
		e->state = CL_DONE;
		want_thread(c);
		p = CLUSTER_FAILED;
	}
	pthread_mutex_unlock(&c->lock);
	return p;
}

int
cluster_fence_fd(struct cluster *c, const char *room)
{
	int fd = -EPERM;

	pthread_mutex_lock(&c->lock);
	struct cl_room *e = room_find(c, room);
	if (e && e->state == CL_HOME && e->fd >= 0 &&
	    now_ns() < atomic_load(&c->fence_ns))
		fd = e->fd;
	pthread_mutex_unlock(&c->lock);
	return fd;
}

void
cluster_room_stopped(struct cluster *c, const char *room)
{
	pthread_mutex_lock(&c->lock);
	struct cl_room *e = room_find(c, room);
	if (e && e->state == CL_HOME) {
		room_fence_shut(e);
		e->state = CL_RELEASE;
		want_thread(c);
	}
	pthread_mutex_unlock(&c->lock);
}

void
cluster_room_kept(struct cluster *c, const char *room, const char *why)
{
	pthread_mutex_lock(&c->lock);
	struct cl_room *e = room_find(c, room);
	if (e && e->state == CL_HOME && e->moving) {
		log_warn("cluster: room %s: the move to node %s is called off: "
		    "%s; this node keeps it", room, e->move_to, why);
		e->moving = 0;
		e->move_told = 0;
		e->kept_rev = e->move_rev;
		e->kept_tell = 1;
		snprintf(e->kept_why, sizeof(e->kept_why), "%s", why);
		want_thread(c);
	}
	pthread_mutex_unlock(&c->lock);
}

/* What the loop is to be told of, gathered under the lock and told
 * outside it (the hooks call into the monitor). */
enum tell_what { TELL_LOST, TELL_MOVING, TELL_WARM };

struct tell {
	enum tell_what what;
	char room[64];
	char to[CLUSTER_NAME_MAX];	/* TELL_MOVING */
};

struct tell_list {
	struct tell *items;
	int n, max;
};

/* Add one (under c->lock); a list that cannot grow tells nothing more,
 * and the entry is looked at again at the next tick. */
static int
tell_add(struct tell_list *l, enum tell_what what, const struct cl_room *e)
{
	if (l->n == l->max) {
		int max = l->max ? l->max * 2 : 8;
		struct tell *p = realloc(l->items, (size_t)max * sizeof(*p));
		if (!p)
			return 0;
		l->items = p;
		l->max = max;
	}
	l->items[l->n].what = what;
	snprintf(l->items[l->n].room, sizeof(l->items[0].room), "%s", e->name);
	snprintf(l->items[l->n].to, sizeof(l->items[0].to), "%s", e->move_to);
	l->n++;
	return 1;
}

/* One entry at a tick (under c->lock): its fence time, a home unused
 * too long, a move out or in. */
static void
tick_room(struct cluster *c, struct cl_room *e, int64_t now, int64_t fence,
    struct tell_list *l)
{
	if (e->state == CL_HOME && now >= fence) {
		room_fence_shut(e);
		e->state = CL_LOST;
	} else if (e->state == CL_HOME && e->moving && !e->move_told &&
	    !c->hooks.running(c->hooks.arg, e->name)) {
		/* Not running here: nothing to stop, give it up now. */
		room_fence_shut(e);
		e->state = CL_RELEASE;
		want_thread(c);
	} else if (e->state == CL_HOME && e->moving && !e->move_told) {
		e->move_told = tell_add(l, TELL_MOVING, e);
	} else if (e->state == CL_HOME && e->warm) {
		e->warm = !tell_add(l, TELL_WARM, e);
	} else if (e->state == CL_HOME && now - e->since_ns > CL_UNUSED_NS &&
	    !c->hooks.running(c->hooks.arg, e->name)) {
		room_fence_shut(e);
		e->state = CL_RELEASE;
		want_thread(c);
	} else if ((e->state == CL_REMOTE || e->state == CL_FAILED ||
	    e->state == CL_ABSENT) && now - e->since_ns > CL_UNUSED_NS) {
		e->state = CL_DONE;	/* an answer nobody came back for */
		want_thread(c);
	}
	if (e->state == CL_LOST && !e->told && tell_add(l, TELL_LOST, e)) {
		e->told = 1;
		want_thread(c);
	}
}

/* Tell the loop what tick_room gathered. */
static void
tick_tell(struct cluster *c, const struct tell_list *l)
{
	for (int i = 0; i < l->n; i++) {
		const struct tell *t = &l->items[i];
		if (t->what == TELL_LOST) {
			log_warn("cluster: room %s: this node's hold on it ended "
			    "(no lease renewal in time); stopping it", t->room);
			c->hooks.lost(c->hooks.arg, t->room);
		} else if (t->what == TELL_MOVING) {
			c->hooks.moving(c->hooks.arg, t->room, t->to);
		} else {
			c->hooks.warm(c->hooks.arg, t->room);
		}
	}
}

long long
cluster_tick(struct cluster *c)
{
	int64_t now = now_ns(), fence = atomic_load(&c->fence_ns);
	struct tell_list l = { NULL, 0, 0 };
	char b[64];
	int changed, held = 0;

	while (read(c->wake_r, b, sizeof(b)) > 0)
		;
	pthread_mutex_lock(&c->lock);
	for (struct cl_room *e = c->rooms; e; e = e->next) {
		tick_room(c, e, now, fence, &l);
		held += e->state == CL_HOME;
	}
	changed = c->changed;
	c->changed = 0;
	pthread_mutex_unlock(&c->lock);
	tick_tell(c, &l);
	free(l.items);
	if (changed || l.n)
		c->hooks.changed(c->hooks.arg);
	/* Woken at the fence time, and now and then for unused homes. */
	return held ? (fence < now + CL_UNUSED_NS ? fence : now + CL_UNUSED_NS) /
	    1000000 + 1 : 0;
}

/* --- start and stop ----------------------------------------------------- */

static int
config_check(const struct cluster_config *cc, char *err, size_t errlen)
{
	if (strncmp(cc->etcd, "etcd=", 5) != 0) {
		snprintf(err, errlen, "--cluster %s: want etcd=URL[,URL...]",
		    cc->etcd);
		return -EINVAL;
	}
	if (!cluster_valid_node(cc->node)) {
		snprintf(err, errlen, "--node '%s': want 1 to 63 letters, digits, "
		    "'.', '_' or '-', not starting with '.' or '-'", cc->node);
		return -EINVAL;
	}
	if (!cluster_valid_addr(cc->advertise)) {
		snprintf(err, errlen, "--advertise '%s': want HOST:PORT that the "
		    "other hosts reach this one at", cc->advertise);
		return -EINVAL;
	}
	if (!cluster_valid_hostkey(cc->hostkey)) {
		snprintf(err, errlen, "the host key is not an ssh-ed25519 key");
		return -EINVAL;
	}
	if (cc->lease_s < 2 || cc->lease_s > 3600) {
		snprintf(err, errlen, "--cluster-lease %d: want 2 to 3600 s",
		    cc->lease_s);
		return -EINVAL;
	}
	return 0;
}

int
cluster_start(const struct cluster_config *cc,
    const struct cluster_hooks *hooks, struct cluster **out, int *wake_fd,
    char *err, size_t errlen)
{
	struct cluster *c;
	int p[2], r;

	*out = NULL;
	if ((r = config_check(cc, err, errlen)) < 0)
		return r;
	if (!(c = calloc(1, sizeof(*c)))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(c->etcd_urls, sizeof(c->etcd_urls), "%s", cc->etcd + 5);
	snprintf(c->node, sizeof(c->node), "%s", cc->node);
	snprintf(c->advertise, sizeof(c->advertise), "%s", cc->advertise);
	snprintf(c->hostkey, sizeof(c->hostkey), "%s", cc->hostkey);
	c->ttl_s = cc->lease_s;
	c->hooks = *hooks;
	c->wake_r = c->wake_w = -1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (!(c->resolve = resolve_new())) {
		snprintf(err, errlen, "out of memory");
		cluster_stop(c, 0);
		return -ENOMEM;
	}
	if (!(c->etcd = etcd_open(c->etcd_urls, err, errlen))) {
		cluster_stop(c, 0);
		return -EINVAL;
	}
	/* A request may not outlast a quarter of the lease: a renewal that
	 * waits on a dead member moves on to the next in time. */
	etcd_set_timeout(c->etcd, c->ttl_s * 1000 / 4 < ETCD_TIMEOUT_MS ?
	    c->ttl_s * 1000 / 4 : ETCD_TIMEOUT_MS);
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		cluster_stop(c, 0);
		return r;
	}
	c->wake_r = p[0];
	c->wake_w = p[1];
	if ((r = pthread_create(&c->thread, NULL, thread_main, c)) != 0) {
		snprintf(err, errlen, "cannot start the etcd thread: %s",
		    strerror(r));
		cluster_stop(c, 0);
		return -r;
	}
	c->started = 1;
	*wake_fd = c->wake_r;
	*out = c;
	return 0;
}

void
cluster_stop(struct cluster *c, int release_all)
{
	if (!c)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->lock);
		c->stop = 1;
		c->release_all = release_all;
		pthread_cond_signal(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	while (c->rooms) {
		struct cl_room *e = c->rooms;
		c->rooms = e->next;
		room_fence_shut(e);
		room_free(e);
	}
	etcd_close(c->etcd);
	resolve_free(c->resolve);
	free(c->nodes);
	if (c->wake_r >= 0)
		close(c->wake_r);
	if (c->wake_w >= 0)
		close(c->wake_w);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

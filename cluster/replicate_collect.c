/*
 * replicate_collect.c: removing a room's stored objects that no manifest
 * can name any more (replicate.h).  Called by the shipper
 * (replicate_ship.c) after a manifest that names a new snapshot was
 * written, so that a room's store holds one snapshot per database and
 * the segments after it, not every epoch's and every snapshot's.
 *
 * Rules: an object is garbage only against a manifest this host has just
 * written under its own epoch (etcd_put_if_home succeeded):
 *   - an older epoch's object: that tenure is over, and a restore reads
 *     only the manifest, which names this epoch's;
 *   - this epoch's snapshot before the manifest's "from", and a segment
 *     that ends at or before it: the snapshot holds what they held.
 * A newer epoch's object is never touched (another host holds the room
 * now: its objects are its own), nor a key this file cannot read, nor a
 * snapshot past "from" (stored, but the manifest not moved to it yet).
 * A host that lost the room meanwhile deletes only what was garbage
 * already.  At most REPL_COLLECT_MAX objects go per call, so that the
 * room's commits (which wait while the shipper works) never wait long;
 * the rest goes at the next call.
 */
#include "replicate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* The number at p: 16 lower-case hex digits (hex), or decimal digits;
 * where it ends in *end.  -1 when malformed or past 64 bits. */
static int
collect_number(const char *p, int hex, uint64_t *v, const char **end)
{
	const char *q = p;
	uint64_t n = 0;

	for (; hex ? (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') :
	    (*q >= '0' && *q <= '9'); q++) {
		unsigned d = *q <= '9' ? (unsigned)(*q - '0') :
		    (unsigned)(*q - 'a' + 10);

		if (n > (UINT64_MAX - d) / (hex ? 16 : 10))
			return -1;
		n = n * (hex ? 16 : 10) + d;
	}
	if (q == p || (hex && q - p != 16))
		return -1;
	*v = n;
	*end = q;
	return 0;
}

int
repl_object_parse(const char *key, const char *room, struct repl_object *o)
{
	size_t rl = strlen(room);
	const char *p = key, *kind;
	uint64_t epoch;

	if (strncmp(p, "rooms/", 6) != 0 || strncmp(p + 6, room, rl) != 0 ||
	    p[6 + rl] != '/')
		return -EINVAL;
	p += 7 + rl;
	if (collect_number(p, 0, &epoch, &p) < 0 || *p++ != '/' ||
	    epoch > INT64_MAX)
		return -EINVAL;
	o->epoch = (int64_t)epoch;
	for (o->db = 0; o->db < REPL_DBS; o->db++) {
		size_t n = strlen(repl_db_name(o->db));

		if (strncmp(p, repl_db_name(o->db), n) == 0 && p[n] == '/') {
			p += n + 1;
			break;
		}
	}
	if (o->db == REPL_DBS)
		return -EINVAL;
	kind = p;
	if (strncmp(kind, "snap-", 5) == 0)
		o->snap = 1;
	else if (strncmp(kind, "seg-", 4) == 0)
		o->snap = 0;
	else
		return -EINVAL;
	p += o->snap ? 5 : 4;
	if (collect_number(p, 1, &o->off, &p) < 0 || *p)
		return -EINVAL;
	return 0;
}

int
repl_object_stale(const struct repl_object *o, uint64_t size,
    const struct repl_manifest *m)
{
	uint64_t from = m->db[o->db].from;

	if (o->epoch != m->epoch)
		return o->epoch < m->epoch;
	if (o->snap)
		return o->off < from;
	return o->off <= from && size <= from - o->off;
}

/* What a listing gathers: the garbage keys, at most REPL_COLLECT_MAX. */
struct collect {
	const char *room;
	const struct repl_manifest *m;
	char (*keys)[S3_KEY_MAX];
	int n, full;
};

static int
collect_each(void *arg, const char *key, uint64_t size)
{
	struct collect *c = arg;
	struct repl_object o;

	if (repl_object_parse(key, c->room, &o) < 0 ||
	    !repl_object_stale(&o, size, c->m))
		return 0;
	if (c->n == REPL_COLLECT_MAX) {
		c->full = 1;
		return 1;		/* enough for this call */
	}
	snprintf(c->keys[c->n++], S3_KEY_MAX, "%s", key);
	return 0;
}

int
repl_collect(struct s3 *s3, const char *room, const struct repl_manifest *m,
    int *more)
{
	struct collect c = { .room = room, .m = m };
	char prefix[S3_KEY_MAX];
	int r, gone = 0;

	*more = 0;
	if (snprintf(prefix, sizeof(prefix), "rooms/%s/", room) >=
	    (int)sizeof(prefix))
		return -E2BIG;
	if (!(c.keys = malloc(sizeof(*c.keys) * REPL_COLLECT_MAX)))
		return -ENOMEM;
	r = s3_list(s3, prefix, collect_each, &c);
	if (r < 0 || (r > 0 && !c.full)) {
		free(c.keys);
		return r < 0 ? r : -EPROTO;
	}
	for (int i = 0; i < c.n; i++) {
		if ((r = s3_delete(s3, c.keys[i])) < 0)
			break;
		gone++;
	}
	free(c.keys);
	if (r < 0)
		return r;
	*more = c.full;
	if (gone)
		log_info("removed %d stored object(s) no manifest names now",
		    gone);
	return gone;
}

/*
 * replicate_stream.c: reading a record stream (walrec.h) at any byte
 * boundary and applying it to a database file, for the shipper's shadow
 * copies, the restore and `atrium-replicate apply`; and the manifest's
 * JSON and the object keys (replicate.h has the layout).
 *
 * Every byte is hostile (a segment comes back from the object store):
 * headers are checked by walrec_hdr_get before they size anything, and
 * the sequence numbers must follow each other (1 starts a new writer
 * process; the first record fed may have any number, a stream read from
 * a snapshot's offset starts in the middle).
 */
#include "replicate.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char *const repl_db_names[REPL_DBS] = { "room", "workspace" };

const char *
repl_db_name(int i)
{
	return i >= 0 && i < REPL_DBS ? repl_db_names[i] : "";
}

int
repl_room_ok(const char *room)
{
	size_t n = strlen(room);

	if (n == 0 || n >= REPL_ROOM_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)room[i]) &&
		    !isdigit((unsigned char)room[i]) && room[i] != '-')
			return 0;
	return 1;
}

void
repl_manifest_key(const char *room, char *out, size_t outlen)
{
	snprintf(out, outlen, "/atrium/rooms/%s/manifest", room);
}

int
repl_object_key(char *out, size_t outlen, const char *room, int64_t epoch,
    int i, const char *kind, uint64_t off)
{
	int n = snprintf(out, outlen, "rooms/%s/%" PRId64 "/%s/%s-%016" PRIx64,
	    room, epoch, repl_db_name(i), kind, off);

	return n < 0 || (size_t)n >= outlen ? -E2BIG : 0;
}

int
repl_manifest_json(const struct repl_manifest *m, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "{\"v\":1,\"epoch\":%" PRId64 ",\"node\":"
	    "\"%s\",\"room\":{\"snap\":\"%s\",\"from\":%" PRIu64 ",\"upto\":%"
	    PRIu64 "},\"workspace\":{\"snap\":\"%s\",\"from\":%" PRIu64
	    ",\"upto\":%" PRIu64 "}}", m->epoch, m->node, m->db[0].snap,
	    m->db[0].from, m->db[0].upto, m->db[1].snap, m->db[1].from,
	    m->db[1].upto);

	return n < 0 || (size_t)n >= outlen ? -E2BIG : n;
}

/* An unsigned 64-bit field of o: 0 or -EPROTO. */
static int
repl_json_u64(struct json_object *o, const char *name, uint64_t *v)
{
	struct json_object *f;

	if (!json_object_object_get_ex(o, name, &f) ||
	    !json_object_is_type(f, json_type_int) ||
	    json_object_get_int64(f) < 0)
		return -EPROTO;
	*v = (uint64_t)json_object_get_int64(f);
	return 0;
}

/* One DB's part: its snapshot must be one of room's objects. */
static int
repl_manifest_db(struct json_object *root, int i, const char *room,
    struct repl_db_manifest *d)
{
	struct json_object *o, *snap;
	char want[S3_KEY_MAX];
	const char *k;

	if (!json_object_object_get_ex(root, repl_db_name(i), &o) ||
	    !json_object_object_get_ex(o, "snap", &snap) ||
	    !json_object_is_type(snap, json_type_string) ||
	    repl_json_u64(o, "from", &d->from) < 0 ||
	    repl_json_u64(o, "upto", &d->upto) < 0 || d->upto < d->from)
		return -EPROTO;
	k = json_object_get_string(snap);
	snprintf(want, sizeof(want), "rooms/%s/", room);
	if (strncmp(k, want, strlen(want)) != 0 || !s3_key_ok(k) ||
	    strlen(k) >= sizeof(d->snap))
		return -EPROTO;
	snprintf(d->snap, sizeof(d->snap), "%s", k);
	return 0;
}

int
repl_manifest_parse(const char *json, size_t len, const char *room,
    struct repl_manifest *m)
{
	struct json_tokener *t = json_tokener_new();
	struct json_object *root = NULL, *f;
	int r = -EPROTO;

	memset(m, 0, sizeof(*m));
	if (!t || len > REPL_MANIFEST_MAX)
		goto out;
	root = json_tokener_parse_ex(t, json, (int)len);
	if (!root || !json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "epoch", &f) ||
	    !json_object_is_type(f, json_type_int) ||
	    (m->epoch = json_object_get_int64(f)) <= 0 ||
	    !json_object_object_get_ex(root, "node", &f) ||
	    !json_object_is_type(f, json_type_string) ||
	    json_object_get_string_len(f) >= REPL_NODE_MAX)
		goto out;
	snprintf(m->node, sizeof(m->node), "%s", json_object_get_string(f));
	if (repl_manifest_db(root, 0, room, &m->db[0]) == 0 &&
	    repl_manifest_db(root, 1, room, &m->db[1]) == 0)
		r = 0;
out:
	json_object_put(root);
	if (t)
		json_tokener_free(t);
	if (r < 0)
		memset(m, 0, sizeof(*m));
	return r;
}

void
repl_stream_init(struct repl_stream *s, int fd, int db)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->db = db;
}

void
repl_stream_free(struct repl_stream *s)
{
	free(s->frame);
	s->frame = NULL;
}

int
repl_stream_at_record(const struct repl_stream *s)
{
	return s->hdr_len == 0 && s->frames_left == 0;
}

/* A whole header is held: check it and start its record. */
static int
repl_stream_header(struct repl_stream *s)
{
	size_t fb;

	if (walrec_hdr_get(s->hdr, &s->h) < 0 || s->h.db != s->db) {
		log_error("a malformed record at offset %" PRIu64, s->off);
		return -EPROTO;
	}
	if (s->records && s->h.seq != 1 && s->h.seq != s->seq + 1) {
		log_error("records lost: %" PRIu64 " follows %" PRIu64,
		    s->h.seq, s->seq);
		return -EPROTO;
	}
	fb = walrec_frame_bytes(s->h.page_size);
	free(s->frame);
	if (!(s->frame = malloc(fb)))
		return -ENOMEM;
	s->frames_left = s->h.frames;
	s->frame_len = 0;
	return 0;
}

/* A whole frame is held: apply it; at the record's last, its size. */
static int
repl_stream_frame(struct repl_stream *s)
{
	int r = 0;

	if (s->fd >= 0 && (r = walrec_apply_frames(s->fd, &s->h, s->frame,
	    s->frame_len)) < 0)
		return r;
	s->frame_len = 0;
	if (--s->frames_left)
		return 0;
	if (s->fd >= 0 && (r = walrec_apply_size(s->fd, &s->h)) < 0)
		return r;
	s->hdr_len = 0;
	s->seq = s->h.seq;
	s->records++;
	s->rec_end = s->off;
	return 0;
}

int
repl_stream_feed(struct repl_stream *s, const unsigned char *p, size_t n)
{
	int r;

	while (n) {
		size_t take;

		if (s->hdr_len < WALREC_HDR) {
			take = WALREC_HDR - s->hdr_len < n ?
			    WALREC_HDR - s->hdr_len : n;
			memcpy(s->hdr + s->hdr_len, p, take);
			s->hdr_len += take;
			s->off += take, p += take, n -= take;
			if (s->hdr_len == WALREC_HDR &&
			    (r = repl_stream_header(s)) < 0)
				return r;
			continue;
		}
		take = walrec_frame_bytes(s->h.page_size) - s->frame_len;
		take = take < n ? take : n;
		memcpy(s->frame + s->frame_len, p, take);
		s->frame_len += take;
		s->off += take, p += take, n -= take;
		if (s->frame_len == walrec_frame_bytes(s->h.page_size) &&
		    (r = repl_stream_frame(s)) < 0)
			return r;
	}
	return 0;
}

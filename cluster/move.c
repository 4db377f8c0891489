/*
 * move.c: the move requests and drained marks of a cluster in etcd, and
 * the choice of a node to move a room to (move.h has the keys and the
 * rules).  Every call blocks on etcd (cluster/etcd.h): the callers are a
 * node's etcd thread and the operator's commands, never an event loop.
 *
 * What etcd hands back was written by any node or command: a request is
 * used only when its room, both node names and its epoch are well formed.
 */
#include "move.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "etcd.h"
#include "names.h"

#define NODES_PREFIX	"/atrium/nodes/"
#define ROOMS_PREFIX	"/atrium/rooms/"

/* A string field of O that is a node's name, copied into out: 0 or
 * -EPROTO. */
static int
move_field(struct json_object *o, const char *name, char *out, size_t len)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, name, &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    !cluster_valid_node(json_object_get_string(v)) ||
	    (size_t)snprintf(out, len, "%s", json_object_get_string(v)) >= len)
		return -EPROTO;
	return 0;
}

/* VAL (LEN bytes) as one JSON value and nothing after it, or NULL. */
static struct json_object *
move_json(const char *val, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;

	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, val, (int)len);
	if (o && (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* See move.h. */
int
move_req_parse(const char *key, const char *val, size_t len,
    struct move_req *out)
{
	struct json_object *o, *ep;
	const char *room = key + strlen(MOVES_PREFIX);
	int r = -EPROTO;

	memset(out, 0, sizeof(*out));
	if (strncmp(key, MOVES_PREFIX, strlen(MOVES_PREFIX)) != 0 ||
	    !room_name_valid(room) || strlen(room) >= sizeof(out->room) ||
	    len > MOVE_REQ_MAX || strlen(val) != len ||
	    !(o = move_json(val, len)))
		return -EPROTO;
	if (json_object_is_type(o, json_type_object) &&
	    move_field(o, "from", out->from, sizeof(out->from)) == 0 &&
	    move_field(o, "to", out->to, sizeof(out->to)) == 0 &&
	    json_object_object_get_ex(o, "epoch", &ep) &&
	    json_object_is_type(ep, json_type_int) &&
	    (out->epoch = json_object_get_int64(ep)) > 0) {
		snprintf(out->room, sizeof(out->room), "%s", room);
		r = 0;
	}
	json_object_put(o);
	if (r < 0)
		memset(out, 0, sizeof(*out));
	return r;
}

/* See move.h. */
char *
move_req_json(const struct move_req *m)
{
	struct json_object *o = json_object_new_object();
	char *s;

	if (!o)
		return NULL;
	json_object_object_add(o, "from", json_object_new_string(m->from));
	json_object_object_add(o, "epoch", json_object_new_int64(m->epoch));
	json_object_object_add(o, "to", json_object_new_string(m->to));
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

/* See move.h. */
int
move_req_get(struct etcd *e, const char *room, struct move_req *out)
{
	char key[128], *val;
	size_t len;
	int r;

	memset(out, 0, sizeof(*out));
	snprintf(key, sizeof(key), "%s%s", MOVES_PREFIX, room);
	if ((r = etcd_get(e, key, &val, &len, NULL, NULL)) <= 0)
		return r;
	r = move_req_parse(key, val, len, out) == 0;
	free(val);
	return r;
}

/* See move.h. */
int
move_drained(struct etcd *e, const char *node)
{
	char key[128];
	int64_t rev;
	int r;

	snprintf(key, sizeof(key), "%s%s", DRAIN_PREFIX, node);
	if ((r = etcd_get_rev(e, key, &rev)) < 0)
		return r;
	return r == 1;
}

/* The rooms held by (or moving to) NAME among ROOMS and MOVES. */
static size_t
move_load(const char *name, const struct etcd_kv *rooms, size_t nr,
    const struct etcd_kv *moves, size_t nm)
{
	struct move_req m;
	size_t load = 0;

	for (size_t i = 0; i < nr; i++) {
		size_t klen = strlen(rooms[i].key);
		if (klen > 5 && strcmp(rooms[i].key + klen - 5, "/home") == 0 &&
		    strcmp(rooms[i].val, name) == 0)
			load++;
	}
	for (size_t i = 0; i < nm; i++)
		if (move_req_parse(moves[i].key, moves[i].val, moves[i].len,
		    &m) == 0 && strcmp(m.to, name) == 0)
			load++;
	return load;
}

/* 1 when NAME has a drained mark among DRAINS. */
static int
move_marked(const char *name, const struct etcd_kv *drains, size_t nd)
{
	for (size_t i = 0; i < nd; i++)
		if (strcmp(drains[i].key + strlen(DRAIN_PREFIX), name) == 0)
			return 1;
	return 0;
}

/* See move.h. */
int
move_pick(struct etcd *e, const char *avoid, char *out, size_t len)
{
	struct etcd_kv *nodes = NULL, *drains = NULL, *rooms = NULL;
	struct etcd_kv *moves = NULL;
	size_t nn = 0, nd = 0, nr = 0, nm = 0, best = (size_t)-1;
	int r;

	out[0] = '\0';
	if ((r = etcd_range_prefix(e, NODES_PREFIX, &nodes, &nn)) < 0 ||
	    (r = etcd_range_prefix(e, DRAIN_PREFIX, &drains, &nd)) < 0 ||
	    (r = etcd_range_prefix(e, ROOMS_PREFIX, &rooms, &nr)) < 0 ||
	    (r = etcd_range_prefix(e, MOVES_PREFIX, &moves, &nm)) < 0)
		goto out;
	for (size_t i = 0; i < nn; i++) {
		const char *name = nodes[i].key + strlen(NODES_PREFIX);
		if (!cluster_valid_node(name) || strcmp(name, avoid) == 0 ||
		    move_marked(name, drains, nd))
			continue;
		size_t load = move_load(name, rooms, nr, moves, nm);
		if (load < best) {
			best = load;
			snprintf(out, len, "%s", name);
		}
	}
	r = out[0] != '\0';
out:
	etcd_kvs_free(nodes, nn);
	etcd_kvs_free(drains, nd);
	etcd_kvs_free(rooms, nr);
	etcd_kvs_free(moves, nm);
	return r;
}

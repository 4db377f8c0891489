/*
 * cluster_status.c: `atriumd cluster status [--cluster etcd=URL[,URL...]]
 * [--data DIR]`: what etcd says of the cluster, for an operator: each node
 * (its advertise address, pid, the time its lease has left and whether it
 * is drained, cluster/move.h), the rooms
 * whose home it is (each with its epoch and how far its manifest is), and
 * rooms whose home names no live node.  Read-only; it blocks on etcd, as
 * a command may (it is not the monitor).  The endpoints come from
 * --cluster, else from DATA/atrium.conf's cluster= (--data, default
 * ./data).
 *
 * Everything printed came from etcd, where any node may write: names and
 * addresses are printed only when they are well formed, never raw.
 */
#include "cluster_status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "config.h"
#include "etcd.h"
#include "move.h"
#include "names.h"
#include "node.h"

#define NODES_PREFIX	"/atrium/nodes/"
#define ROOMS_PREFIX	"/atrium/rooms/"

/* See cluster_status.h. */
int
cluster_cli_endpoints(int argc, char **argv, int first, const char *what,
    const char *usage, char *urls, size_t len)
{
	static struct config cfg;
	char conf[PATH_MAX + 32], err[512];
	const char *data = "./data", *given = NULL;

	for (int i = first; i < argc; i++) {
		if (strcmp(argv[i], "--cluster") == 0 && i + 1 < argc)
			given = argv[++i];
		else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
			data = argv[++i];
		else {
			fprintf(stderr, "usage: %s\n", usage);
			return 2;
		}
	}
	if (!given) {
		config_defaults(&cfg);
		snprintf(conf, sizeof(conf), "%s/atrium.conf", data);
		if (config_load_file(&cfg, conf, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: %s\n", what, err);
			return 2;
		}
		given = cfg.cluster;
	}
	if (strncmp(given, "etcd=", 5) != 0) {
		fprintf(stderr, "%s: no cluster given: use --cluster "
		    "etcd=URL[,URL...], or --data DIR whose atrium.conf has "
		    "cluster = etcd=URL\n", what);
		return 2;
	}
	snprintf(urls, len, "%s", given + 5);
	return 0;
}

/* A node's record's field NAME if it is a string that VALID accepts. */
static const char *
record_field(struct json_object *o, const char *name, int (*valid)(const char *))
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, name, &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    !valid(json_object_get_string(v)))
		return "(not well formed)";
	return json_object_get_string(v);
}

/* "ROOM" of "/atrium/rooms/ROOM/WHAT" when WHAT is what, else NULL. */
static const char *
room_of(const char *key, const char *what, char *room, size_t len)
{
	const char *p = key + strlen(ROOMS_PREFIX), *slash = strchr(p, '/');

	if (!slash || strcmp(slash + 1, what) != 0 || (size_t)(slash - p) >= len)
		return NULL;
	memcpy(room, p, (size_t)(slash - p));
	room[slash - p] = '\0';
	return room_name_valid(room) ? room : NULL;
}

/* The manifest of ROOM among KVS, or NULL. */
static const struct etcd_kv *
manifest_of(const struct etcd_kv *kvs, size_t n, const char *room)
{
	char r[64];

	for (size_t i = 0; i < n; i++)
		if (room_of(kvs[i].key, "manifest", r, sizeof(r)) &&
		    strcmp(r, room) == 0)
			return &kvs[i];
	return NULL;
}

/* The rooms whose home is NODE (NULL: whose home names no node of
 * NODES). */
static int
print_rooms(const struct etcd_kv *rooms, size_t n, const char *node,
    const struct etcd_kv *nodes, size_t nn)
{
	char room[64];
	int count = 0;

	for (size_t i = 0; i < n; i++) {
		if (!room_of(rooms[i].key, "home", room, sizeof(room)))
			continue;
		int live = 0;
		for (size_t k = 0; k < nn; k++)
			live |= strcmp(nodes[k].key + strlen(NODES_PREFIX),
			    rooms[i].val) == 0;
		if (node ? strcmp(rooms[i].val, node) != 0 : live)
			continue;
		const struct etcd_kv *m = manifest_of(rooms, n, room);
		printf("  room %s  epoch %" PRId64, room, rooms[i].create_rev);
		if (!node)
			printf("  home %s", cluster_valid_node(rooms[i].val) ?
			    rooms[i].val : "(not well formed)");
		if (m)
			printf("  manifest rev %" PRId64 " (%zu bytes)\n",
			    m->mod_rev, m->len);
		else
			printf("  manifest none\n");
		count++;
	}
	return count;
}

static void
print_node(struct etcd *e, const struct etcd_kv *kv)
{
	const char *name = kv->key + strlen(NODES_PREFIX);
	struct json_object *o = json_tokener_parse(kv->val), *pid;
	int64_t ttl = 0;
	int r = kv->lease ? etcd_lease_ttl(e, kv->lease, &ttl) : 0;

	printf("node %s  %s", cluster_valid_node(name) ? name :
	    "(not well formed)", record_field(o, "advertise", cluster_valid_addr));
	if (o && json_object_object_get_ex(o, "pid", &pid) &&
	    json_object_is_type(pid, json_type_int))
		printf("  pid %" PRId64, json_object_get_int64(pid));
	if (r == 1)
		printf("  lease %" PRId64 " s left", ttl);
	else
		printf("  lease %s", r == 0 ? "gone" : "unknown");
	/* cluster/move.h: a drained node claims no room. */
	printf("%s\n", cluster_valid_node(name) && move_drained(e, name) == 1 ?
	    "  drained" : "");
	json_object_put(o);
}

int
cluster_status_main(int argc, char **argv)
{
	char urls[1024], err[256];
	struct etcd_kv *nodes = NULL, *rooms = NULL;
	size_t nn = 0, nr = 0;
	int r;

	if ((r = cluster_cli_endpoints(argc, argv, 2, "atriumd cluster status",
	    "atriumd cluster status [--cluster etcd=URL[,URL...]] [--data DIR]",
	    urls, sizeof(urls))) != 0)
		return r;
	struct etcd *e = etcd_open(urls, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "atriumd cluster status: %s\n", err);
		return 2;
	}
	if ((r = etcd_range_prefix(e, NODES_PREFIX, &nodes, &nn)) < 0 ||
	    (r = etcd_range_prefix(e, ROOMS_PREFIX, &rooms, &nr)) < 0) {
		fprintf(stderr, "atriumd cluster status: etcd at %s: %s\n", urls,
		    strerror(-r));
		etcd_kvs_free(nodes, nn);
		etcd_close(e);
		return 1;
	}
	printf("cluster etcd=%s: %zu node(s)\n", urls, nn);
	for (size_t i = 0; i < nn; i++) {
		print_node(e, &nodes[i]);
		if (print_rooms(rooms, nr, nodes[i].key + strlen(NODES_PREFIX),
		    nodes, nn) == 0)
			printf("  (no rooms)\n");
	}
	if (print_rooms(rooms, nr, NULL, nodes, nn) > 0)
		printf("(the rooms above name a home with no live node: free "
		    "once its lease ends)\n");
	etcd_kvs_free(nodes, nn);
	etcd_kvs_free(rooms, nr);
	etcd_close(e);
	return 0;
}

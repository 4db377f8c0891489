/*
 * test_cluster_etcd.c: the etcd gateway client's parsers, from raw answer
 * bytes: the shapes etcd 3.4 sends, its error answers, and what a hostile
 * or broken endpoint could send instead (malformed JSON, missing or
 * mistyped fields, trailing bytes, values past their caps).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etcd.h"
#include "node.h"
#include "unit.h"

#define P(s) s, strlen(s)

static void
test_b64(void)
{
	char *out;
	size_t n;
	char *e = etcd_b64_encode("/atrium/rooms/r/home", 20);
	CHECK_STR(e, "L2F0cml1bS9yb29tcy9yL2hvbWU=");
	CHECK_INT(etcd_b64_decode(e, strlen(e), 100, &out, &n), 0);
	CHECK_INT(n, 20);
	CHECK_STR(out, "/atrium/rooms/r/home");
	free(out);
	free(e);
	for (size_t len = 0; len < 7; len++) {
		const char bytes[] = "\0\xff\x01xyz";
		char *b = etcd_b64_encode(bytes, len);
		CHECK(etcd_b64_decode(b, strlen(b), 16, &out, &n) == 0);
		CHECK_INT(n, len);
		CHECK(memcmp(out, bytes, len) == 0);
		free(out);
		free(b);
	}
	CHECK_INT(etcd_b64_decode(P("bm9kZUE"), 100, &out, &n), -EPROTO);
	CHECK_INT(etcd_b64_decode(P("bm9k*UE="), 100, &out, &n), -EPROTO);
	CHECK_INT(etcd_b64_decode(P("=m9kZUE="), 100, &out, &n), -EPROTO);
	CHECK_INT(etcd_b64_decode(P("bm9kZUE="), 4, &out, &n), -E2BIG);
	CHECK(out == NULL);
}

static void
test_grant(void)
{
	int64_t id, ttl;
	CHECK_INT(etcd_parse_grant(P("{\"header\":{\"revision\":\"1\"},"
	    "\"ID\":\"2324035858894839813\",\"TTL\":\"5\"}"), &id, &ttl), 0);
	CHECK(id == 2324035858894839813LL);
	CHECK_INT(ttl, 5);
	CHECK_INT(etcd_parse_grant(P("{\"header\":{},\"TTL\":\"5\"}"), &id, &ttl), -EPROTO);
	CHECK_INT(etcd_parse_grant(P("{\"ID\":\"12x\",\"TTL\":\"5\"}"), &id, &ttl), -EPROTO);
	CHECK_INT(etcd_parse_grant(P("{\"ID\":[1],\"TTL\":\"5\"}"), &id, &ttl), -EPROTO);
	CHECK_INT(etcd_parse_grant(P("{\"ID\":\"1\",\"TTL\":\"5\""), &id, &ttl), -EPROTO);
	CHECK_INT(etcd_parse_grant(P("{\"ID\":\"1\",\"TTL\":\"5\"} {}"), &id, &ttl), -EPROTO);
	CHECK_INT(etcd_parse_grant(P("[1,2]"), &id, &ttl), -EPROTO);
	CHECK_INT(etcd_parse_grant(P(""), &id, &ttl), -EPROTO);
	CHECK_INT(etcd_parse_grant("{\"ID\":\"1\"\0,\"TTL\":\"5\"}", 21, &id, &ttl), -EPROTO);
	CHECK_INT(etcd_parse_grant(P("{\"error\":\"etcdserver: too many requests\","
	    "\"code\":8}"), &id, &ttl), -EIO);
}

static void
test_keepalive(void)
{
	int64_t ttl;
	CHECK_INT(etcd_parse_keepalive(P("{\"result\":{\"header\":{},\"ID\":\"7\","
	    "\"TTL\":\"5\"}}\n"), &ttl), 1);
	CHECK_INT(ttl, 5);
	/* An expired lease: etcd answers with no TTL at all. */
	CHECK_INT(etcd_parse_keepalive(P("{\"result\":{\"header\":{},\"ID\":\"7\"}}\n"),
	    &ttl), 0);
	CHECK_INT(etcd_parse_keepalive(P("{\"error\":\"etcdserver: requested lease "
	    "not found\",\"code\":5}"), &ttl), -ENOENT);
	CHECK_INT(etcd_parse_keepalive(P("{\"header\":{},\"TTL\":\"5\"}"), &ttl), -EPROTO);
	CHECK_INT(etcd_parse_keepalive(P("{\"result\":\"5\"}"), &ttl), -EPROTO);
	CHECK_INT(etcd_parse_keepalive(P("{\"result\":{\"TTL\":true}}"), &ttl), -EPROTO);
	CHECK_INT(etcd_parse_ttl(P("{\"header\":{},\"ID\":\"7\",\"TTL\":\"4\","
	    "\"grantedTTL\":\"5\"}"), &ttl), 1);
	CHECK_INT(ttl, 4);
	CHECK_INT(etcd_parse_ttl(P("{\"header\":{},\"ID\":\"7\",\"TTL\":\"-1\"}"), &ttl), 0);
}

static void
test_range(void)
{
	struct etcd_kv *kvs;
	size_t n;
	CHECK_INT(etcd_parse_range(P("{\"header\":{},\"kvs\":[{\"key\":"
	    "\"L2F0cml1bS9yb29tcy9yL2hvbWU=\",\"create_revision\":\"2\",\"mod_revision\""
	    ":\"3\",\"version\":\"1\",\"value\":\"bm9kZUE=\",\"lease\":\"99\"}],"
	    "\"count\":\"1\"}"), &kvs, &n), 0);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK_STR(kvs[0].key, "/atrium/rooms/r/home");
		CHECK_STR(kvs[0].val, "nodeA");
		CHECK_INT(kvs[0].len, 5);
		CHECK_INT(kvs[0].create_rev, 2);
		CHECK_INT(kvs[0].mod_rev, 3);
		CHECK_INT(kvs[0].lease, 99);
	}
	etcd_kvs_free(kvs, n);
	/* Nothing matched: no "kvs" at all. */
	CHECK_INT(etcd_parse_range(P("{\"header\":{\"revision\":\"1\"}}"), &kvs, &n), 0);
	CHECK_INT(n, 0);
	/* An empty value is left out. */
	CHECK_INT(etcd_parse_range(P("{\"kvs\":[{\"key\":\"YQ==\",\"create_revision\":"
	    "\"2\"}]}"), &kvs, &n), 0);
	CHECK(n == 1 && kvs[0].len == 0 && strcmp(kvs[0].val, "") == 0);
	etcd_kvs_free(kvs, n);
	/* No key; no create_revision; a NUL inside a key; not an array; a
	 * value that is not base64. */
	CHECK_INT(etcd_parse_range(P("{\"kvs\":[{\"create_revision\":\"2\"}]}"), &kvs, &n), -EPROTO);
	CHECK_INT(etcd_parse_range(P("{\"kvs\":[{\"key\":\"YQ==\"}]}"), &kvs, &n), -EPROTO);
	CHECK_INT(etcd_parse_range(P("{\"kvs\":[{\"key\":\"YQBi\",\"create_revision\":"
	    "\"2\"}]}"), &kvs, &n), -EPROTO);
	CHECK_INT(etcd_parse_range(P("{\"kvs\":{}}"), &kvs, &n), -EPROTO);
	CHECK_INT(etcd_parse_range(P("{\"kvs\":[{\"key\":\"YQ==\",\"create_revision\":"
	    "\"2\",\"value\":\"!!!!\"}]}"), &kvs, &n), -EPROTO);
	CHECK(kvs == NULL && n == 0);
}

/* A value of ETCD_VALUE_MAX + 1 bytes is refused, not cut. */
static void
test_huge_value(void)
{
	size_t vlen = ETCD_VALUE_MAX + 1;
	char *raw = calloc(1, vlen);
	char *b = etcd_b64_encode(raw, vlen);
	size_t cap = strlen(b) + 128;
	char *body = malloc(cap);
	struct etcd_kv *kvs;
	size_t n;

	snprintf(body, cap, "{\"kvs\":[{\"key\":\"YQ==\",\"create_revision\":\"2\","
	    "\"value\":\"%s\"}]}", b);
	CHECK_INT(etcd_parse_range(body, strlen(body), &kvs, &n), -E2BIG);
	/* One byte less is fine. */
	free(b);
	b = etcd_b64_encode(raw, vlen - 1);
	snprintf(body, cap, "{\"kvs\":[{\"key\":\"YQ==\",\"create_revision\":\"2\","
	    "\"value\":\"%s\"}]}", b);
	CHECK_INT(etcd_parse_range(body, strlen(body), &kvs, &n), 0);
	CHECK(n == 1 && kvs[0].len == vlen - 1);
	etcd_kvs_free(kvs, n);
	/* An answer over ETCD_RESPONSE_MAX is not even parsed. */
	CHECK_INT(etcd_parse_range(body, ETCD_RESPONSE_MAX + 1, &kvs, &n), -EPROTO);
	free(body);
	free(b);
	free(raw);
}

static void
test_txn(void)
{
	struct etcd_kv *kvs;
	size_t n;
	int ok;
	CHECK_INT(etcd_parse_txn(P("{\"header\":{\"revision\":\"2\"},\"succeeded\":true,"
	    "\"responses\":[{\"response_put\":{\"header\":{\"revision\":\"2\"}}}]}"),
	    &ok, &kvs, &n), 0);
	CHECK_INT(ok, 1);
	CHECK_INT(n, 0);
	/* The create's compare failed: no "succeeded", the key read back. */
	CHECK_INT(etcd_parse_txn(P("{\"header\":{\"revision\":\"2\"},\"responses\":"
	    "[{\"response_range\":{\"header\":{},\"kvs\":[{\"key\":\"YQ==\","
	    "\"create_revision\":\"2\",\"value\":\"bm9kZUE=\"}],\"count\":\"1\"}}]}"),
	    &ok, &kvs, &n), 0);
	CHECK_INT(ok, 0);
	CHECK(n == 1 && strcmp(kvs[0].val, "nodeA") == 0 && kvs[0].create_rev == 2);
	etcd_kvs_free(kvs, n);
	CHECK_INT(etcd_parse_txn(P("{\"header\":{}}"), &ok, &kvs, &n), 0);
	CHECK_INT(ok, 0);
	CHECK_INT(etcd_parse_txn(P("{\"succeeded\":true}"), &ok, &kvs, &n), -EPROTO);
	CHECK_INT(ok, 0);
	CHECK_INT(etcd_parse_txn(P("{\"header\":{},\"succeeded\":\"true\"}"), &ok, &kvs, &n), -EPROTO);
	CHECK_INT(ok, 0);
	CHECK_INT(etcd_parse_txn(P("{\"header\":{},\"succeeded\":true,\"responses\":7}"),
	    &ok, &kvs, &n), -EPROTO);
	CHECK_INT(ok, 1);
	CHECK_INT(etcd_parse_txn(P("{\"error\":\"etcdserver: no leader\",\"code\":14}"),
	    &ok, &kvs, &n), -EAGAIN);
	CHECK_INT(etcd_parse_txn(P("{\"error\":\"x\",\"code\":\"z\"}"), &ok, &kvs, &n), -EPROTO);
	CHECK_INT(etcd_parse_txn(P("{{{{"), &ok, &kvs, &n), -EPROTO);
}

static void
test_open(void)
{
	char err[200];
	struct etcd *e = etcd_open("http://127.0.0.1:1,https://h:2/", err, sizeof(err));
	CHECK(e != NULL);
	etcd_close(e);
	CHECK(etcd_open("", err, sizeof(err)) == NULL);
	CHECK(etcd_open("127.0.0.1:2379", err, sizeof(err)) == NULL);
	CHECK(strstr(err, "http://") != NULL);
	CHECK(etcd_open("http://a,,http://b", err, sizeof(err)) == NULL);
	etcd_close(NULL);
}

/* What other nodes wrote in etcd reaches terminals and argv only when
 * well formed. */
static void
test_valid(void)
{
	CHECK(cluster_valid_node("a"));
	CHECK(cluster_valid_node("host-1.example_2"));
	CHECK(!cluster_valid_node(""));
	CHECK(!cluster_valid_node("-x"));
	CHECK(!cluster_valid_node(".."));
	CHECK(!cluster_valid_node("a/b"));
	CHECK(!cluster_valid_node("a\x1b[2J"));
	CHECK(!cluster_valid_node("0123456789012345678901234567890123456789"
	    "012345678901234567890123"));
	CHECK(cluster_valid_addr("127.0.0.1:2222"));
	CHECK(cluster_valid_addr("[::1]:22"));
	CHECK(cluster_valid_addr("host.example:65535"));
	CHECK(!cluster_valid_addr("host"));
	CHECK(!cluster_valid_addr("host:"));
	CHECK(!cluster_valid_addr("host:0"));
	CHECK(!cluster_valid_addr("host:65536"));
	CHECK(!cluster_valid_addr("host:22x"));
	CHECK(!cluster_valid_addr("h o:22"));
	CHECK(!cluster_valid_addr("h\n:22"));
	CHECK(cluster_valid_hostkey("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA+/="));
	CHECK(!cluster_valid_hostkey("ssh-ed25519 "));
	CHECK(!cluster_valid_hostkey("ssh-rsa AAAA"));
	CHECK(!cluster_valid_hostkey("ssh-ed25519 AAAA AAAA"));
	CHECK(!cluster_valid_hostkey("ssh-ed25519 AA\x07"));
}

int
main(void)
{
	TEST(test_valid);
	TEST(test_b64);
	TEST(test_grant);
	TEST(test_keepalive);
	TEST(test_range);
	TEST(test_huge_value);
	TEST(test_txn);
	TEST(test_open);
	return unit_done("cluster_etcd");
}

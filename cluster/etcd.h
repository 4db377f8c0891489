/*
 * etcd.h: a small client of etcd's v3 JSON gateway (HTTP POST of JSON to
 * /v3/..., keys and values base64), enough for Atrium's placement: a
 * lease (grant, keepalive, revoke, time to live), a get, a range by
 * prefix, a put, and the transactions with compares that claim, release
 * and fence a room's state.  libcurl (blocking, with timeouts) and json-c.
 *
 * Rules:
 *  - Every call blocks for at most the handle's timeout per endpoint tried
 *    (etcd_set_timeout); a caller on an event loop runs them on a thread
 *    of its own.  One struct etcd is used by one thread at a time.
 *  - Several endpoints (a comma-separated list): a call goes to the one
 *    that last answered and moves on to the next when an endpoint cannot
 *    be reached or answers "unavailable", so losing one member of three
 *    changes nothing for the caller.
 *  - Every answer is hostile: its size is capped (ETCD_RESPONSE_MAX)
 *    before it is parsed, each field is checked, a key or value past its
 *    cap is an error, never truncated.  The gateway omits fields whose
 *    value is zero (a missing "create_revision" is 0, a missing
 *    "succeeded" is false); a missing field that cannot be zero (a lease's
 *    ID, a kv's key) makes the answer malformed (-EPROTO).
 *  - Results: 0 or 1 as each function says, else -errno: -ETIMEDOUT or
 *    -ECONNREFUSED when no endpoint answered, -EPROTO for a malformed
 *    answer, -ENOENT for etcd's "not found" (a lease that is gone),
 *    -EIO for any other error etcd returned.  Each failure is logged once.
 *
 * The etcd keys Atrium uses are in cluster/node.c's head.
 */
#ifndef ATRIUM_ETCD_H
#define ATRIUM_ETCD_H

#include <stddef.h>
#include <stdint.h>

#define ETCD_RESPONSE_MAX	(4u << 20)	/* bytes of one HTTP answer */
#define ETCD_VALUE_MAX		(1u << 20)	/* bytes of one value */
#define ETCD_KEY_MAX		1024		/* bytes of one key */
#define ETCD_RANGE_MAX		4096		/* kvs of one range answer */
#define ETCD_TIMEOUT_MS		2000		/* default per request */

struct etcd;

/* One key's state as etcd returned it.  key and val are NUL-terminated
 * (val may also hold NULs: len is its length). */
struct etcd_kv {
	char *key;
	char *val;
	size_t len;
	int64_t create_rev;	/* 0: absent; else the revision that made it */
	int64_t mod_rev;
	int64_t lease;		/* 0: none */
};

/* A client of the endpoints in URLS ("http://h:p[,http://h:p...]").
 * NULL with the reason in err when URLS is empty or malformed or curl
 * cannot start; nothing is sent yet. */
struct etcd *etcd_open(const char *urls_comma_separated, char *err, size_t errlen);
void etcd_close(struct etcd *e);	/* NULL is fine */

/* Time allowed to each request on each endpoint, in ms (>= 50). */
void etcd_set_timeout(struct etcd *e, long ms);

/* A new lease of TTL seconds: 0 with *id set, or -errno. */
int etcd_lease_grant(struct etcd *e, int64_t ttl, int64_t *id);

/* Renew lease ID once.  1 renewed (*ttl: its new time to live, s), 0 the
 * lease is gone (expired or revoked), -errno when etcd could not say. */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl);

/* Time lease ID has left, s: 1 with *ttl set, 0 gone, -errno. */
int etcd_lease_ttl(struct etcd *e, int64_t id, int64_t *ttl);

/* Revoke lease ID and delete every key attached to it: 0 (also when it
 * was already gone), -errno. */
int etcd_lease_revoke(struct etcd *e, int64_t id);

/* Set KEY to VAL (LEN bytes), attached to LEASE (0: none): 0 or -errno. */
int etcd_put(struct etcd *e, const char *key, const void *val, size_t len,
    int64_t lease);

/* One key: 1 found (*val malloc'd, NUL-terminated, free() it; *len, and
 * *create_rev, *mod_rev when not NULL), 0 absent (outputs cleared),
 * -errno. */
int etcd_get(struct etcd *e, const char *key, char **val, size_t *len,
    int64_t *create_rev, int64_t *mod_rev);

/* Every key that starts with PREFIX, in key order: 0 with *kvs (free with
 * etcd_kvs_free) and *n set, or -errno.  More than ETCD_RANGE_MAX keys is
 * -E2BIG. */
int etcd_range_prefix(struct etcd *e, const char *prefix, struct etcd_kv **kvs,
    size_t *n);
void etcd_kvs_free(struct etcd_kv *kvs, size_t n);

/* Create KEY = VAL attached to LEASE only if it is absent (one txn, the
 * compare create_revision == 0).  1 created: *create_rev is the new key's
 * creation revision.  0 it existed: *create_rev is its, and *cur (when not
 * NULL) its value (malloc'd, NUL-terminated).  -errno. */
int etcd_create(struct etcd *e, const char *key, const void *val, size_t len,
    int64_t lease, int64_t *create_rev, char **cur);

/* Delete KEY only if its value is VAL and its create_revision is
 * CREATE_REV (one txn): 1 deleted, 0 the compare failed (the key is not
 * that one any more), -errno. */
int etcd_delete_if(struct etcd *e, const char *key, const void *val,
    size_t len, int64_t create_rev);

/* Set KEY to VAL only while /atrium/rooms/ROOM/home holds NODE with
 * create_revision EPOCH (one txn): 1 done, 0 the compare failed (this
 * host is fenced out of ROOM), -errno. */
int etcd_put_if_home(struct etcd *e, const char *room, const char *node,
    int64_t epoch, const char *key, const void *val, size_t len);

/* Delete KEY only while /atrium/rooms/ROOM/home holds NODE with
 * create_revision EPOCH and KEY's create_revision is CREATE_REV (one
 * txn): 1 done, 0 the compare failed (this host is fenced out of ROOM, or
 * KEY is not that one any more), -errno. */
int etcd_delete_if_home(struct etcd *e, const char *room, const char *node,
    int64_t epoch, const char *key, int64_t create_rev);

/* Set KEY to VAL only while its mod_revision is MOD_REV (one txn; no
 * lease): 1 done, 0 the key changed or went meanwhile, -errno. */
int etcd_put_if_mod(struct etcd *e, const char *key, const void *val,
    size_t len, int64_t mod_rev);

/* KEY's mod_revision alone (its value is not sent): 1 with *mod_rev, 0
 * absent, -errno.  For a reader that polls a large value. */
int etcd_get_rev(struct etcd *e, const char *key, int64_t *mod_rev);

/* How many keys start with PREFIX (*count) and the greatest mod_revision
 * among them (*max_mod), in one small request: any put under the prefix
 * raises the one, any delete lowers the other, so a reader polls this
 * and reads the range again only when it moved.  0 or -errno. */
int etcd_prefix_stamp(struct etcd *e, const char *prefix, int64_t *count,
    int64_t *max_mod);

/* Delete KEY: 1 deleted, 0 it was absent, -errno. */
int etcd_delete(struct etcd *e, const char *key);

/* --- the parsers, exposed for the unit tests --------------------------- */

/* Each takes one whole answer body (BODY, LEN bytes, not NUL-terminated)
 * and returns 0 (or as said) or -EPROTO for anything malformed, -ENOENT or
 * -EIO when it is etcd's error answer. */
int etcd_parse_grant(const char *body, size_t len, int64_t *id, int64_t *ttl);
/* 1 alive (*ttl > 0), 0 gone. */
int etcd_parse_keepalive(const char *body, size_t len, int64_t *ttl);
/* 1 alive (*ttl), 0 gone. */
int etcd_parse_ttl(const char *body, size_t len, int64_t *ttl);
int etcd_parse_range(const char *body, size_t len, struct etcd_kv **kvs,
    size_t *n);
/* *succeeded from the txn; *kvs and *n from its first range response (a txn's
 * failure branch reads the key back), empty when it had none. */
int etcd_parse_txn(const char *body, size_t len, int *succeeded,
    struct etcd_kv **kvs, size_t *n);

/* base64 (standard alphabet, padded), as the gateway wants keys and
 * values.  encode: malloc'd, NUL-terminated, NULL on ENOMEM.  decode: 0
 * with *out malloc'd (NUL-terminated, *outlen without it), -EPROTO for a
 * malformed input, -E2BIG past MAX decoded bytes. */
char *etcd_b64_encode(const void *data, size_t len);
int etcd_b64_decode(const char *in, size_t inlen, size_t max, char **out,
    size_t *outlen);

#endif

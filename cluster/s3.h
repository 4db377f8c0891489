/*
 * s3.h: a small client of an S3-compatible object store (s3.c), enough
 * for streaming a room's writes: put, ranged get, head, delete and a
 * listing by prefix (ListObjectsV2), on libcurl with its own SigV4
 * signing (CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3"), path-style URLs
 * (URL/BUCKET/KEY: every S3-compatible store takes them).
 *
 * Rules:
 *  - Blocking, with timeouts (S3_CONNECT_MS to connect, S3_TIMEOUT_MS for
 *    a whole request); one struct s3 is used by one thread at a time.
 *  - A request that fails in a way a retry can mend (no connection, a
 *    timeout, a cut, 500, 502, 503 SlowDown, 504, 429) is retried up to
 *    S3_TRIES times in all, waiting 100 ms, 200 ms, ... (at most 2 s)
 *    between tries; a 4xx other than 429 is final.
 *  - Every answer is hostile: a body is kept only up to the caller's cap
 *    (a GET) or S3_LIST_BODY_MAX (a listing page), a key in a listing
 *    past S3_KEY_MAX is an error, never truncated.
 *  - Keys are at most S3_KEY_MAX bytes of [A-Za-z0-9/._-]: the only keys
 *    Atrium makes (rooms/ROOM/EPOCH/...), so that no key needs quoting.
 *  - Results: 0 (or as said) or -errno: -ENOENT (404), -EACCES (403: a
 *    wrong key or secret), -EAGAIN (still failing after the retries: a
 *    busy or unreachable store), -EFBIG (an answer past its cap),
 *    -EPROTO (a malformed answer), -EIO (any other status).  Each failure
 *    is logged once, with the status and S3's error code, never the
 *    secret.
 */
#ifndef ATRIUM_S3_H
#define ATRIUM_S3_H

#include <stddef.h>
#include <stdint.h>

#include "s3_creds.h"

#define S3_KEY_MAX		512		/* bytes of a key */
#define S3_URL_MAX		1024		/* bytes of the endpoint URL */
#define S3_NAME_MAX		64		/* bytes of a bucket or region */
#define S3_LIST_BODY_MAX	(2u << 20)	/* bytes of one listing page */
#define S3_CONNECT_MS		2000
#define S3_TIMEOUT_MS		30000
#define S3_TRIES		6

/* Where the store is. */
struct s3_config {
	char url[S3_URL_MAX];		/* "http://host:port", no trailing / */
	char bucket[S3_NAME_MAX];
	char region[S3_NAME_MAX];	/* "us-east-1" when empty */
};

struct s3;

/* A client of the store c with the credentials k (copied).  NULL with the
 * reason in err when c is malformed or curl cannot start. */
struct s3 *s3_new(const struct s3_config *c, const struct s3_creds *k,
    char *err, size_t errlen);
void s3_free(struct s3 *s);	/* NULL is fine; wipes the credentials */

/* Tries (>= 1) and the first wait between them (ms), for tests. */
void s3_set_retry(struct s3 *s, int tries, long first_wait_ms);

/* Store len bytes of data as key: 0 or -errno. */
int s3_put(struct s3 *s, const char *key, const void *data, size_t len);

/* Bytes [off, off + max) of key (fewer at its end): 0 with *out
 * malloc'd (free() it) and *len, or -errno (-EFBIG: the store sent more
 * than max). */
int s3_get(struct s3 *s, const char *key, uint64_t off, size_t max,
    void **out, size_t *len);

/* Store the size bytes of file fd (from its start, read with pread) as
 * key, in pieces: 0 or -errno.  The file must not change meanwhile. */
int s3_put_file(struct s3 *s, const char *key, int fd, uint64_t size);

/* The whole of key into file fd (cut to 0 first, and again before each
 * retry), in pieces: 0 with *size, or -errno. */
int s3_get_file(struct s3 *s, const char *key, int fd, uint64_t *size);

/* The size of key: 0 with *size, -ENOENT, or -errno. */
int s3_head(struct s3 *s, const char *key, uint64_t *size);

/* Remove key (also when absent): 0 or -errno. */
int s3_delete(struct s3 *s, const char *key);

/* Called with each key under a prefix, in the store's (byte) order:
 * return 0 to go on, anything else to stop the listing with that
 * result. */
typedef int (*s3_each_fn)(void *arg, const char *key, uint64_t size);

/* Every key that starts with prefix, a page at a time: 0 when all were
 * given to each, each's non-zero result, or -errno. */
int s3_list(struct s3 *s, const char *prefix, s3_each_fn each, void *arg);

/* --- exposed for the unit tests ------------------------------------------ */

/* 1 when key is one s3.c sends (see the rules). */
int s3_key_ok(const char *key);

/* Parse one ListObjectsV2 page (body, len bytes): each key to each; *next
 * gets the continuation token (NUL-terminated, at most S3_KEY_MAX bytes)
 * when the page says it is truncated, else "".  0, each's result, or
 * -EPROTO. */
int s3_parse_list(const char *body, size_t len, s3_each_fn each, void *arg,
    char *next, size_t nextlen);

#endif

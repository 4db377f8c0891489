/*
 * tokens.c: a bearer token to the identity it acts for (tokens.h).
 * Called by the monitor for each request of the HTTP front (through
 * tokens_identity) and by tokens_serve.c to make a token.
 *
 * What a token proves, and what it does not: that whoever sends it got it
 * from someone who held the key it names, when that key was allowed in.
 * So the key's rights are re-read on every use, exactly as for an SSH
 * session's request (monitor_identity_get: the key still listed, its
 * line still naming the same user, expiry-time not passed, from= allowing
 * the client's address), and the token's own grant (its rooms, read-only,
 * its expiry) can only narrow them.  A token is compared in constant
 * time with the stored hash of the row its id names; the id (the hash's
 * first 12 hex digits) is not secret.
 */
#include "tokens.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "log.h"
#include "monitor_loop.h"
#include "tokens_db.h"

static const char tokens_b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* See tokens.h. */
struct tokens *
tokens_new(const char *data_dir)
{
	struct tokens *t = calloc(1, sizeof(*t));

	if (t)
		snprintf(t->path, sizeof(t->path), "%s/tokens.db", data_dir);
	return t;
}

/* See tokens.h. */
void
tokens_free(struct tokens *t)
{
	if (!t)
		return;
	tokens_db_close(t);
	free(t);
}

/* 1 when text has a token's shape: the prefix and TOKENS_DIGITS
 * base64url digits, nothing else. */
static int
tokens_text_valid(const char *text)
{
	size_t n = strlen(TOKENS_PREFIX);

	return strlen(text) == TOKENS_LEN &&
	    strncmp(text, TOKENS_PREFIX, n) == 0 &&
	    strspn(text + n, tokens_b64url) == TOKENS_DIGITS;
}

/* SHA-256 of text into hash and its id (first TOKEN_ID_LEN hex digits)
 * into id.  0 or -EIO (logged). */
int
tokens_hash(const char *text, unsigned char hash[TOKENS_HASH_LEN],
    char id[TOKEN_ID_LEN + 1])
{
	unsigned int n = 0;

	if (!EVP_Digest(text, strlen(text), hash, &n, EVP_sha256(), NULL) ||
	    n != TOKENS_HASH_LEN) {
		log_error("cannot compute SHA-256 (OpenSSL)");
		return -EIO;
	}
	for (int i = 0; i < TOKEN_ID_LEN / 2; i++)
		snprintf(id + 2 * i, 3, "%02x", hash[i]);
	return 0;
}

/* A new token's text (TOKENS_LEN + 1 bytes) from 32 random bytes.  0 or
 * -errno (logged). */
int
tokens_make(char *out)
{
	unsigned char raw[32];
	size_t o = strlen(TOKENS_PREFIX);
	unsigned bits = 0, nbits = 0;
	ssize_t n;

	do
		n = getrandom(raw, sizeof(raw), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(raw)) {
		log_error("getrandom: %s", n < 0 ? strerror(errno) : "short");
		return -EIO;
	}
	memcpy(out, TOKENS_PREFIX, o);
	for (size_t i = 0; i < sizeof(raw); i++) {
		bits = bits << 8 | raw[i];
		for (nbits += 8; nbits >= 6; nbits -= 6)
			out[o++] = tokens_b64url[(bits >> (nbits - 6)) & 63];
	}
	out[o++] = tokens_b64url[(bits << (6 - nbits)) & 63];
	out[o] = '\0';
	memset(raw, 0, sizeof(raw));
	return 0;
}

/* The stored row the token names, checked against its hash: 1 found,
 * -EACCES unknown, -EIO the store failed; why set for both. */
static int
tokens_lookup(struct monitor *srv, const char *token, struct token_row *r,
    char *why, size_t len)
{
	unsigned char hash[TOKENS_HASH_LEN];
	char id[TOKEN_ID_LEN + 1];
	int rc;

	if (!tokens_text_valid(token)) {
		snprintf(why, len, "that is not an Atrium token (one is made "
		    "with: ssh HOST atrium-token create)");
		return -EACCES;
	}
	if (tokens_hash(token, hash, id) < 0 ||
	    (rc = tokens_db_find(srv->tokens, id, r)) < 0) {
		snprintf(why, len, "tokens cannot be checked now; the server's "
		    "log says why");
		return -EIO;
	}
	if (rc == 0 || CRYPTO_memcmp(r->hash, hash, TOKENS_HASH_LEN) != 0) {
		snprintf(why, len, "token %s is unknown or was revoked", id);
		return -EACCES;
	}
	return 1;
}

/* Resolve r's key as an SSH session's would be (monitor_identity_get).
 * 0, -EACCES with why, -EPROTO when addr is not an address. */
static int
tokens_key(struct monitor *srv, const struct token_row *r, const char *addr,
    struct monitor_identity *id, char *why, size_t len)
{
	json_object *req = json_object_new_object();
	char kwhy[400];
	int rc;

	if (!req) {
		snprintf(why, len, "out of memory");
		return -EACCES;
	}
	json_object_object_add(req, "user", json_object_new_string(r->user));
	json_object_object_add(req, "key", json_object_new_string(r->key));
	json_object_object_add(req, "addr", addr ?
	    json_object_new_string(addr) : NULL);
	rc = monitor_identity_get(srv, req, id, kwhy, sizeof(kwhy));
	json_object_put(req);
	if (rc == 0 && id->guest) {
		snprintf(kwhy, sizeof(kwhy), "key %s is no longer in "
		    "authorized_keys", r->key);
		rc = -EACCES;
	}
	if (rc == -EACCES)
		snprintf(why, len, "token %s: %s", r->id, kwhy);
	else if (rc < 0)
		snprintf(why, len, "token %s: the client's address is not one",
		    r->id);
	return rc;
}

/* The grant of row r into *g. */
static void
tokens_grant(const struct token_row *r, struct token_grant *g)
{
	const char *p = r->rooms;

	memset(g, 0, sizeof(*g));
	snprintf(g->id, sizeof(g->id), "%s", r->id);
	snprintf(g->key, sizeof(g->key), "%s", r->key);
	g->read_only = r->read_only;
	g->expires = r->expires;
	while (*p && g->nrooms < TOKEN_MAX_ROOMS) {
		size_t n = strcspn(p, ",");

		if (n < sizeof(g->rooms[0])) {
			memcpy(g->rooms[g->nrooms], p, n);
			g->rooms[g->nrooms++][n] = '\0';
		}
		p += n + (p[n] == ',');
	}
}

/* See tokens.h. */
int
tokens_identity(struct monitor *srv, const char *token, const char *addr,
    struct monitor_identity *id, struct token_grant *grant, char *why,
    size_t len)
{
	time_t now = time(NULL);
	struct token_row r;
	char when[64];
	int rc;

	memset(id, 0, sizeof(*id));
	memset(grant, 0, sizeof(*grant));
	if (!token)
		token = "";
	if ((rc = tokens_lookup(srv, token, &r, why, len)) < 0)
		return rc;
	if (r.expires && r.expires <= now) {
		tokens_when(r.expires, when, sizeof(when));
		snprintf(why, len, "token %s expired on %s; make a new one",
		    r.id, when);
		return -EACCES;
	}
	if ((rc = tokens_key(srv, &r, addr, id, why, len)) < 0) {
		memset(id, 0, sizeof(*id));
		return rc;
	}
	tokens_grant(&r, grant);
	/* A failed write is logged and closes the store; the token was
	 * good when read. */
	if (now - r.last_used >= TOKENS_TOUCH_S)
		tokens_db_touch(srv->tokens, r.id, now);
	return 0;
}

/* See tokens.h. */
int
token_grant_allows(const struct token_grant *grant, const char *room)
{
	if (grant->nrooms == 0)
		return 1;
	for (int i = 0; i < grant->nrooms; i++)
		if (strcmp(grant->rooms[i], room) == 0)
			return 1;
	return 0;
}

/* See tokens.h. */
void
tokens_when(long long t, char *out, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || !gmtime_r(&tt, &tm) ||
	    !strftime(out, len, "%Y-%m-%d %H:%M UTC", &tm))
		snprintf(out, len, "never");
}

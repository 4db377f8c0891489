/*
 * tokens_cluster.c: the tokens' store with --cluster (tokens_db.h's
 * functions when t->sync is set): the rows live in etcd under
 * /atrium/tokens/ID, as JSON, and each monitor looks them up in its
 * mirror (cluster/keys_sync.h), so a token made on one host works on
 * every host, and a revoke anywhere ends it everywhere within a poll.
 * Without --cluster tokens_db.c's DATA/tokens.db is the store, unchanged.
 *
 * A row as stored: {"hash":"64 hex digits","user","key","comment","name",
 * "rooms":"a,b" or "","read_only":0|1,"created","expires","last_used"};
 * like tokens.db it holds the token's SHA-256, never the token.  Any node
 * may write etcd, so each row is checked as tokens_db.c checks a row it
 * reads back: a field out of shape makes the row a damaged one, which
 * refuses the token (logged), never a token with other rights.
 */
#include "tokens_db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "keys_sync.h"
#include "log.h"
#include "names.h"

/* A row's JSON text (malloc'd), or NULL on ENOMEM. */
static char *
tc_encode(const struct token_row *r)
{
	json_object *o = json_object_new_object();
	char hex[2 * TOKENS_HASH_LEN + 1], *s = NULL;

	if (!o)
		return NULL;
	for (int i = 0; i < TOKENS_HASH_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", r->hash[i]);
	json_object_object_add(o, "hash", json_object_new_string(hex));
	json_object_object_add(o, "user", json_object_new_string(r->user));
	json_object_object_add(o, "key", json_object_new_string(r->key));
	json_object_object_add(o, "comment", json_object_new_string(r->comment));
	json_object_object_add(o, "name", json_object_new_string(r->name));
	json_object_object_add(o, "rooms", json_object_new_string(r->rooms));
	json_object_object_add(o, "read_only", json_object_new_int(r->read_only));
	json_object_object_add(o, "created", json_object_new_int64(r->created));
	json_object_object_add(o, "expires", json_object_new_int64(r->expires));
	json_object_object_add(o, "last_used",
	    json_object_new_int64(r->last_used));
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

/* String field name of o into out (size len): 0, or -1 when it is
 * missing, not a string, holds a NUL or does not fit. */
static int
tc_text(json_object *o, const char *name, char *out, size_t len)
{
	json_object *v;
	const char *s;
	size_t n;

	if (!json_object_object_get_ex(o, name, &v) ||
	    !json_object_is_type(v, json_type_string))
		return -1;
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n >= len || strlen(s) != n)
		return -1;
	memcpy(out, s, n + 1);
	return 0;
}

/* Integer field name of o, at least 0, into *out: 0 or -1. */
static int
tc_int(json_object *o, const char *name, long long *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, name, &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    (*out = json_object_get_int64(v)) < 0)
		return -1;
	return 0;
}

/* The 64 hex digits of hex into hash: 0 or -1. */
static int
tc_hash(const char *hex, unsigned char *hash)
{
	if (strlen(hex) != 2 * TOKENS_HASH_LEN ||
	    strspn(hex, "0123456789abcdef") != 2 * TOKENS_HASH_LEN)
		return -1;
	for (int i = 0; i < TOKENS_HASH_LEN; i++) {
		unsigned v;

		sscanf(hex + 2 * i, "%2x", &v);
		hash[i] = (unsigned char)v;
	}
	return 0;
}

/* Row id's JSON text into *r, every field checked: 0 or -1. */
static int
tc_decode(const char *id, const char *text, struct token_row *r)
{
	json_object *o = json_tokener_parse(text);
	char hex[2 * TOKENS_HASH_LEN + 1];
	long long ro = 0;
	int bad;

	memset(r, 0, sizeof(*r));
	bad = !o || !json_object_is_type(o, json_type_object) ||
	    strlen(id) != TOKEN_ID_LEN ||
	    tc_text(o, "hash", hex, sizeof(hex)) < 0 || tc_hash(hex, r->hash) ||
	    tc_text(o, "user", r->user, sizeof(r->user)) < 0 ||
	    !user_name_valid(r->user) ||
	    tc_text(o, "key", r->key, sizeof(r->key)) < 0 ||
	    strncmp(r->key, "SHA256:", 7) != 0 || strlen(r->key) != 7 + 43 ||
	    tc_text(o, "comment", r->comment, sizeof(r->comment)) < 0 ||
	    tc_text(o, "name", r->name, sizeof(r->name)) < 0 ||
	    tc_text(o, "rooms", r->rooms, sizeof(r->rooms)) < 0 ||
	    tc_int(o, "read_only", &ro) < 0 || ro > 1 ||
	    tc_int(o, "created", &r->created) < 0 ||
	    tc_int(o, "expires", &r->expires) < 0 ||
	    tc_int(o, "last_used", &r->last_used) < 0;
	json_object_put(o);
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->read_only = (int)ro;
	return bad ? -1 : 0;
}

/* The store cannot answer (r): logged, -EIO. */
static int
tc_fail(int r)
{
	if (r == -EAGAIN)
		log_error("cluster: tokens are not read from etcd yet; every "
		    "token is refused until they are");
	else
		log_error("cluster: tokens: %s", strerror(-r));
	return -EIO;
}

/* See tokens_db.h. */
int
tokens_cluster_insert(struct tokens *t, const struct token_row *r)
{
	char *text = tc_encode(r);
	int rc;

	if (!text)
		return tc_fail(-ENOMEM);
	rc = keys_sync_token_create(t->sync, r->id, text);
	free(text);
	if (rc == -EEXIST)
		return -EEXIST;
	return rc < 0 ? tc_fail(rc) : 0;
}

/* See tokens_db.h. */
int
tokens_cluster_find(struct tokens *t, const char *id, struct token_row *r)
{
	char *text = NULL;
	int64_t rev;
	int rc = keys_sync_token_get(t->sync, id, &text, &rev);

	if (rc <= 0)
		return rc < 0 ? tc_fail(rc) : 0;
	rc = tc_decode(id, text, r);
	free(text);
	if (rc < 0) {
		log_error("cluster: token %s: its row in etcd is damaged; the "
		    "token is refused", id);
		return -EIO;
	}
	return 1;
}

/* Rows collected for each and count. */
struct tc_list {
	const char *user;		/* NULL: everyone's */
	struct token_row *rows;
	size_t n, cap;
	int damaged;
};

static int
tc_collect(void *arg, const char *id, const char *val)
{
	struct tc_list *l = arg;
	struct token_row r;

	if (tc_decode(id, val, &r) < 0) {
		l->damaged++;
		return 0;
	}
	if (l->user && strcmp(r.user, l->user) != 0)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct token_row *n = realloc(l->rows, cap * sizeof(*n));

		if (!n)
			return -1;
		l->rows = n;
		l->cap = cap;
	}
	l->rows[l->n++] = r;
	return 0;
}

/* Oldest first, per user (as tokens_db.c's ORDER BY). */
static int
tc_order(const void *a, const void *b)
{
	const struct token_row *x = a, *y = b;
	int c = strcmp(x->user, y->user);

	if (c)
		return c;
	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* user's rows (NULL: all), sorted, into *l.  0 or -EIO (logged). */
static int
tc_list(struct tokens *t, const char *user, struct tc_list *l)
{
	int rc;

	memset(l, 0, sizeof(*l));
	l->user = user;
	if ((rc = keys_sync_token_each(t->sync, tc_collect, l)) < 0) {
		free(l->rows);
		return tc_fail(rc);
	}
	if (l->damaged)
		log_warn("cluster: %d token row(s) in etcd are damaged and "
		    "skipped", l->damaged);
	if (l->n)
		qsort(l->rows, l->n, sizeof(*l->rows), tc_order);
	return 0;
}

/* See tokens_db.h. */
int
tokens_cluster_count(struct tokens *t, const char *user)
{
	struct tc_list l;

	if (tc_list(t, user, &l) < 0)
		return -EIO;
	free(l.rows);
	return (int)l.n;
}

/* See tokens_db.h. */
int
tokens_cluster_each(struct tokens *t, const char *user,
    int (*fn)(void *arg, const struct token_row *r), void *arg)
{
	struct tc_list l;

	if (tc_list(t, user, &l) < 0)
		return -EIO;
	for (size_t i = 0; i < l.n; i++)
		if (fn(arg, &l.rows[i]) != 0)
			break;
	free(l.rows);
	return 0;
}

/* See tokens_db.h. */
int
tokens_cluster_delete(struct tokens *t, const char *id, const char *user)
{
	struct token_row r;
	int rc = tokens_cluster_find(t, id, &r);

	/* A damaged row goes too, for anyone who may revoke any token. */
	if (rc == 0 || (rc < 0 && user))
		return rc;
	if (rc == 1 && user && strcmp(r.user, user) != 0)
		return 0;
	rc = keys_sync_token_delete(t->sync, id);
	return rc < 0 ? tc_fail(rc) : rc;
}

/* See tokens_db.h. */
int
tokens_cluster_touch(struct tokens *t, const char *id, long long now)
{
	struct token_row r;
	char *text;
	int rc;

	if ((rc = tokens_cluster_find(t, id, &r)) <= 0)
		return rc;
	r.last_used = now;
	if (!(text = tc_encode(&r)))
		return tc_fail(-ENOMEM);
	rc = keys_sync_token_update(t->sync, id, text);
	free(text);
	return rc < 0 ? tc_fail(rc) : 0;
}

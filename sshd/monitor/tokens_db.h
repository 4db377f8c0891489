/*
 * tokens_db.h: DATA/tokens.db, the monitor's store of tokens (tokens_db.c),
 * for tokens.c and tokens_serve.c only.  One writer, the monitor, on its
 * one loop; WAL; PRAGMA user_version 1.  Schema:
 *
 *   tokens(id TEXT PRIMARY KEY     first 12 hex digits of hash
 *          hash BLOB               SHA-256 of the token's text (32 bytes)
 *          user TEXT               who made it (the key's user)
 *          key TEXT                the key's SHA256 fingerprint
 *          comment TEXT            the key's comment then ("" none)
 *          name TEXT               --name ("" none)
 *          rooms TEXT              "a,b": the only rooms; NULL: the key's
 *          read_only INTEGER       0 or 1
 *          created INTEGER         unix time
 *          expires INTEGER         unix time; NULL: never
 *          last_used INTEGER)      unix time; NULL: never used
 *
 * The file is made root's and 0600 before SQLite opens it (its -wal and
 * -shm take the same mode).  One that is not a regular file owned by root,
 * fails SQLite's quick_check, or has another user_version is not used:
 * every token is refused, a log line says why, and the file is left as it
 * is for the operator (removing it revokes every token).
 *
 * With --cluster the rows live in etcd instead (tokens_cluster.c, set up
 * by placement.c: t->sync), so that a token works on every host; each
 * function below hands over to its tokens_cluster_ twin then, with the
 * same results, and DATA/tokens.db is not used.
 */
#ifndef ATRIUMD_TOKENS_DB_H
#define ATRIUMD_TOKENS_DB_H

#include <limits.h>
#include <sqlite3.h>

#include "authkeys.h"
#include "token_args.h"

#define TOKENS_HASH_LEN		32	/* SHA-256 */

struct keys_sync;

struct tokens {
	char path[PATH_MAX];		/* DATA/tokens.db */
	struct keys_sync *sync;		/* --cluster: the rows' mirror of
					 * etcd (cluster/keys_sync.h), else
					 * NULL */
	sqlite3 *db;			/* NULL until opened; closed again
					 * after an error, re-opened (and
					 * re-checked) at the next use */
};

/* One row, as stored (each field checked when read). */
struct token_row {
	char id[TOKEN_ID_LEN + 1];
	unsigned char hash[TOKENS_HASH_LEN];
	char user[64];
	char key[AUTHKEYS_FP_MAX];
	char comment[AUTHKEYS_MAX_COMMENT];
	char name[TOKEN_MAX_NAME + 1];
	char rooms[TOKEN_MAX_ROOMS * 64];	/* "" when NULL */
	int read_only;
	long long created;
	long long expires;		/* 0: never */
	long long last_used;		/* 0: never */
};

/* Open (making it if missing) and check the file, unless open.  0 or
 * -EIO (logged). */
int tokens_db_ready(struct tokens *t);

/* Close the connection (the next use opens it again). */
void tokens_db_close(struct tokens *t);

/* Store r.  0, -EEXIST when its id is taken, -EIO (logged). */
int tokens_db_insert(struct tokens *t, const struct token_row *r);

/* The row of id into *r: 1, 0 when there is none, -EIO (logged). */
int tokens_db_find(struct tokens *t, const char *id, struct token_row *r);

/* How many tokens user has, or -EIO (logged). */
int tokens_db_count(struct tokens *t, const char *user);

/* Call fn for each of user's tokens (user NULL: everyone's), oldest
 * first, until it returns non-zero.  0 or -EIO (logged). */
int tokens_db_each(struct tokens *t, const char *user,
    int (*fn)(void *arg, const struct token_row *r), void *arg);

/* Delete id if it is user's (user NULL: anyone's).  1 deleted, 0 no such
 * token (of user's), -EIO (logged). */
int tokens_db_delete(struct tokens *t, const char *id, const char *user);

/* Set id's last_used to now.  0 or -EIO (logged). */
int tokens_db_touch(struct tokens *t, const char *id, long long now);

/* The same six over etcd (tokens_cluster.c), for t->sync. */
int tokens_cluster_insert(struct tokens *t, const struct token_row *r);
int tokens_cluster_find(struct tokens *t, const char *id, struct token_row *r);
int tokens_cluster_count(struct tokens *t, const char *user);
int tokens_cluster_each(struct tokens *t, const char *user,
    int (*fn)(void *arg, const struct token_row *r), void *arg);
int tokens_cluster_delete(struct tokens *t, const char *id, const char *user);
int tokens_cluster_touch(struct tokens *t, const char *id, long long now);

#endif

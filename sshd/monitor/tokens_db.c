/*
 * tokens_db.c: DATA/tokens.db (tokens_db.h).  Called by tokens.c for each
 * use of a token over HTTP and by tokens_serve.c for atrium-token.
 *
 * Workload: one indexed read per HTTP request that carries a token, a
 * write at most once a minute per token in use (last_used), and a write
 * per create or revoke (rare).  The file is small (at most
 * TOKENS_MAX_PER_USER rows a user), so the quick_check at open is cheap.
 *
 * Fail closed: any SQLite error closes the connection and answers -EIO;
 * the next use opens the file again and checks it again, so an operator's
 * fix takes effect without a restart.  Rows are read back as input: a
 * field out of shape is a damaged file, not a token.
 *
 * With --cluster (t->sync) the public functions at the end hand over to
 * tokens_cluster.c and the file is never opened.
 */
#include "tokens_db.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "names.h"
#include "sqlite_int.h"

#define TOKENS_DB_VERSION	1
#define TOKENS_DB_BUSY_MS	200

static const char tokens_db_schema[] =
    "CREATE TABLE tokens ("
    " id TEXT PRIMARY KEY NOT NULL,"
    " hash BLOB NOT NULL,"
    " user TEXT NOT NULL,"
    " key TEXT NOT NULL,"
    " comment TEXT NOT NULL,"
    " name TEXT NOT NULL,"
    " rooms TEXT,"
    " read_only INTEGER NOT NULL,"
    " created INTEGER NOT NULL,"
    " expires INTEGER,"
    " last_used INTEGER);"
    "CREATE INDEX tokens_user ON tokens(user, created);"
    "PRAGMA user_version = 1;";

#define TOKENS_DB_COLUMNS "id, hash, user, key, comment, name, rooms, " \
    "read_only, created, expires, last_used"

/* Log what failed on t's file, close it; always -EIO. */
static int
tokens_db_fail(struct tokens *t, const char *what)
{
	log_error("%s: %s: %s; every token is refused until it is fixed "
	    "(removing the file revokes them all)", t->path, what,
	    t->db ? sqlite3_errmsg(t->db) : "cannot open");
	tokens_db_close(t);
	return -EIO;
}

/* Make the file root's and 0600 if it is missing; refuse one that is not
 * a regular file of ours.  0 or -EIO (logged). */
static int
tokens_db_file(struct tokens *t)
{
	struct stat st;
	int fd = open(t->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
	    O_NOCTTY, 0600);

	if (fd < 0) {
		log_error("%s: %s; every token is refused", t->path,
		    strerror(errno));
		return -EIO;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid()) {
		log_error("%s: not a regular file owned by uid %d; every token "
		    "is refused", t->path, (int)geteuid());
		close(fd);
		return -EIO;
	}
	if ((st.st_mode & 077) && fchmod(fd, 0600) == 0)
		log_warn("%s: others could read it; made it 0600", t->path);
	close(fd);
	return 0;
}

/* Check the open file and make its table when it is new.  0 or -EIO. */
static int
tokens_db_check(struct tokens *t)
{
	sqlite3_stmt *st;
	const char *ok = NULL;
	long long v;
	int good;

	if (sqlite3_prepare_v2(t->db, "PRAGMA quick_check", -1, &st, NULL) !=
	    SQLITE_OK)
		return tokens_db_fail(t, "cannot be read");
	if (sqlite3_step(st) == SQLITE_ROW)
		ok = (const char *)sqlite3_column_text(st, 0);
	good = ok && strcmp(ok, "ok") == 0;
	sqlite3_finalize(st);
	if (!good)
		return tokens_db_fail(t, "damaged (quick_check)");
	v = sqlite_int(t->db, "PRAGMA user_version");
	if (v == 0 && sqlite3_exec(t->db, tokens_db_schema, NULL, NULL,
	    NULL) != SQLITE_OK)
		return tokens_db_fail(t, "cannot make its table");
	if (v != 0 && v != TOKENS_DB_VERSION) {
		log_error("%s: user_version %lld, not %d (made by another "
		    "atriumd?); every token is refused", t->path, v,
		    TOKENS_DB_VERSION);
		tokens_db_close(t);
		return -EIO;
	}
	return 0;
}

/* See tokens_db.h. */
int
tokens_db_ready(struct tokens *t)
{
	if (t->db)
		return 0;
	if (tokens_db_file(t) < 0)
		return -EIO;
	if (sqlite3_open_v2(t->path, &t->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK)
		return tokens_db_fail(t, "cannot be opened");
	sqlite3_busy_timeout(t->db, TOKENS_DB_BUSY_MS);
	if (sqlite3_exec(t->db, "PRAGMA journal_mode = WAL", NULL, NULL,
	    NULL) != SQLITE_OK)
		return tokens_db_fail(t, "cannot be read");
	return tokens_db_check(t);
}

/* See tokens_db.h. */
void
tokens_db_close(struct tokens *t)
{
	if (t->db)
		sqlite3_close_v2(t->db);
	t->db = NULL;
}

/* Prepare sql on t's open file.  NULL (logged, closed) on failure. */
static sqlite3_stmt *
tokens_db_prepare(struct tokens *t, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (tokens_db_ready(t) < 0)
		return NULL;
	if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK) {
		tokens_db_fail(t, "cannot be read");
		return NULL;
	}
	return st;
}

/* Bind text, or NULL when empty. */
static void
tokens_db_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s[0])
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* tokens_db_insert on DATA/tokens.db. */
static int
tokens_file_insert(struct tokens *t, const struct token_row *r)
{
	sqlite3_stmt *st = tokens_db_prepare(t, "INSERT INTO tokens ("
	    TOKENS_DB_COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)");
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, r->hash, TOKENS_HASH_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, r->user, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, r->key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, r->comment, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, r->name, -1, SQLITE_STATIC);
	tokens_db_bind_text(st, 7, r->rooms);
	sqlite3_bind_int(st, 8, r->read_only);
	sqlite3_bind_int64(st, 9, r->created);
	if (r->expires)
		sqlite3_bind_int64(st, 10, r->expires);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc == SQLITE_CONSTRAINT)
		return -EEXIST;
	return rc == SQLITE_DONE ? 0 : tokens_db_fail(t, "cannot be written");
}

/* Column i as text into out (size len); NULL is "".  0, or -1 when it
 * does not fit (a damaged row). */
static int
tokens_db_text(sqlite3_stmt *st, int i, char *out, size_t len)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	int n = sqlite3_column_bytes(st, i);

	out[0] = '\0';
	if (!s)
		return sqlite3_column_type(st, i) == SQLITE_NULL ? 0 : -1;
	if ((size_t)n >= len || memchr(s, '\0', (size_t)n))
		return -1;
	memcpy(out, s, (size_t)n);
	out[n] = '\0';
	return 0;
}

/* The current row of st into *r.  0, or -1 for a damaged row. */
static int
tokens_db_row(sqlite3_stmt *st, struct token_row *r)
{
	memset(r, 0, sizeof(*r));
	if (tokens_db_text(st, 0, r->id, sizeof(r->id)) < 0 ||
	    strlen(r->id) != TOKEN_ID_LEN ||
	    sqlite3_column_bytes(st, 1) != TOKENS_HASH_LEN ||
	    sqlite3_column_type(st, 1) != SQLITE_BLOB ||
	    tokens_db_text(st, 2, r->user, sizeof(r->user)) < 0 ||
	    !user_name_valid(r->user) ||
	    tokens_db_text(st, 3, r->key, sizeof(r->key)) < 0 ||
	    strncmp(r->key, "SHA256:", 7) != 0 || strlen(r->key) != 7 + 43 ||
	    tokens_db_text(st, 4, r->comment, sizeof(r->comment)) < 0 ||
	    tokens_db_text(st, 5, r->name, sizeof(r->name)) < 0 ||
	    tokens_db_text(st, 6, r->rooms, sizeof(r->rooms)) < 0)
		return -1;
	memcpy(r->hash, sqlite3_column_blob(st, 1), TOKENS_HASH_LEN);
	r->read_only = sqlite3_column_int(st, 7) != 0;
	r->created = sqlite3_column_int64(st, 8);
	r->expires = sqlite3_column_int64(st, 9);
	r->last_used = sqlite3_column_int64(st, 10);
	return 0;
}

/* tokens_db_find on DATA/tokens.db. */
static int
tokens_file_find(struct tokens *t, const char *id, struct token_row *r)
{
	sqlite3_stmt *st = tokens_db_prepare(t, "SELECT " TOKENS_DB_COLUMNS
	    " FROM tokens WHERE id = ?");
	int rc, got;

	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	got = rc == SQLITE_ROW ? tokens_db_row(st, r) : 0;
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW || got < 0)
		return tokens_db_fail(t, rc == SQLITE_ROW ? "a damaged row" :
		    "cannot be read");
	return 1;
}

/* tokens_db_count on DATA/tokens.db. */
static int
tokens_file_count(struct tokens *t, const char *user)
{
	sqlite3_stmt *st = tokens_db_prepare(t, "SELECT count(*) FROM tokens"
	    " WHERE user = ?");
	int rc, n = 0;

	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? n : tokens_db_fail(t, "cannot be read");
}

/* tokens_db_each on DATA/tokens.db. */
static int
tokens_file_each(struct tokens *t, const char *user,
    int (*fn)(void *arg, const struct token_row *r), void *arg)
{
	sqlite3_stmt *st = tokens_db_prepare(t, user ? "SELECT "
	    TOKENS_DB_COLUMNS " FROM tokens WHERE user = ? ORDER BY created, id"
	    : "SELECT " TOKENS_DB_COLUMNS " FROM tokens ORDER BY user, "
	    "created, id");
	struct token_row r;
	int rc;

	if (!st)
		return -EIO;
	if (user)
		sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (tokens_db_row(st, &r) < 0) {
			sqlite3_finalize(st);
			return tokens_db_fail(t, "a damaged row");
		}
		if (fn(arg, &r) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : tokens_db_fail(t, "cannot be read");
}

/* tokens_db_delete on DATA/tokens.db. */
static int
tokens_file_delete(struct tokens *t, const char *id, const char *user)
{
	sqlite3_stmt *st = tokens_db_prepare(t, user ? "DELETE FROM tokens "
	    "WHERE id = ? AND user = ?" : "DELETE FROM tokens WHERE id = ?");
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (user)
		sqlite3_bind_text(st, 2, user, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return tokens_db_fail(t, "cannot be written");
	return sqlite3_changes(t->db) > 0;
}

/* tokens_db_touch on DATA/tokens.db. */
static int
tokens_file_touch(struct tokens *t, const char *id, long long now)
{
	sqlite3_stmt *st = tokens_db_prepare(t, "UPDATE tokens SET last_used"
	    " = ? WHERE id = ?");
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : tokens_db_fail(t, "cannot be written");
}

/* --- the store in use: DATA/tokens.db, or etcd with --cluster ---------- */

/* See tokens_db.h. */
int
tokens_db_insert(struct tokens *t, const struct token_row *r)
{
	return t->sync ? tokens_cluster_insert(t, r) : tokens_file_insert(t, r);
}

/* See tokens_db.h. */
int
tokens_db_find(struct tokens *t, const char *id, struct token_row *r)
{
	return t->sync ? tokens_cluster_find(t, id, r) :
	    tokens_file_find(t, id, r);
}

/* See tokens_db.h. */
int
tokens_db_count(struct tokens *t, const char *user)
{
	return t->sync ? tokens_cluster_count(t, user) :
	    tokens_file_count(t, user);
}

/* See tokens_db.h. */
int
tokens_db_each(struct tokens *t, const char *user,
    int (*fn)(void *arg, const struct token_row *r), void *arg)
{
	return t->sync ? tokens_cluster_each(t, user, fn, arg) :
	    tokens_file_each(t, user, fn, arg);
}

/* See tokens_db.h. */
int
tokens_db_delete(struct tokens *t, const char *id, const char *user)
{
	return t->sync ? tokens_cluster_delete(t, id, user) :
	    tokens_file_delete(t, id, user);
}

/* See tokens_db.h. */
int
tokens_db_touch(struct tokens *t, const char *id, long long now)
{
	return t->sync ? tokens_cluster_touch(t, id, now) :
	    tokens_file_touch(t, id, now);
}

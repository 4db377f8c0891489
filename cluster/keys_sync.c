/*
 * keys_sync.c: users, keys and tokens the same on every host of a
 * cluster (keys_sync.h), inside atriumd's monitor with --cluster.
 *
 * Keys (prefix /atrium/):
 *   authorized_keys  the cluster's one authorized_keys file, as pushed by
 *                    `atriumd cluster keys push` (which checked it parses)
 *   tokens/ID        one HTTP token's row, JSON, keyed by the token's id;
 *                    it holds the token's SHA-256, never the token
 *                    (sshd/monitor/tokens_cluster.c reads and writes it)
 *
 * authorized_keys.  Every KEYS_SYNC_POLL_MS the thread reads the key's
 * revision (not its value); when its mod_revision is not the one last
 * applied, it reads the value, checks the text
 * again (any node may write etcd: a text that does not parse is logged
 * and not used, the file stays), and writes DATA/authorized_keys whole
 * and synced (a temporary file renamed over it, with the old file's mode
 * and owner) when its bytes differ.  The monitor and atriumd-net re-read
 * the file by itself at their next request (authkeys_refresh_fd sees a new
 * file), so a key removed by a push is refused on every host within a
 * poll.  Until the first push the key is absent and each host keeps its
 * own file (said once in the log); a key deleted later leaves the last
 * file in place.
 *
 * Tokens.  At each poll the thread asks etcd for the prefix's stamp (how
 * many rows, the newest revision: one small request) and, when it moved,
 * reads every row into a new mirror and swaps it in under the lock.  Changes the loop makes (create, revoke,
 * last use) go into the mirror at once and into a queue for the thread,
 * which sends them to etcd in order, before its next read; a change that
 * etcd did not take yet is applied again over each fresh read, so the
 * mirror never goes back on what this host did.  A revoke is a delete;
 * a last use is written only if the row is unchanged since it was read
 * (a txn on its mod_revision), so a revoke on another host always wins.
 *
 * Threads: the monitor's loop and this one.  ks->lock guards the mirror
 * and the queue; the thread never holds it across etcd I/O or the file's
 * write, so the loop waits for nothing but the lock.
 */
#include "keys_sync.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "etcd.h"
#include "log.h"
#include "util.h"

#define NS		1000000000LL
#define KS_TIMEOUT_MS	1000	/* per etcd request and endpoint */
#define KS_FILE_MAX	ETCD_VALUE_MAX

enum ks_kind { KS_CREATE, KS_DELETE, KS_UPDATE };

/* A change for etcd, queued by the loop. */
struct ks_op {
	enum ks_kind kind;
	char id[KEYS_SYNC_ID_MAX];
	char *val;			/* CREATE, UPDATE */
	int64_t mod_rev;		/* UPDATE: the row's as read */
	struct ks_op *next;
};

/* One row of the mirror. */
struct ks_row {
	char id[KEYS_SYNC_ID_MAX];
	char *val;
	int64_t mod_rev;		/* 0: not in etcd yet */
};

struct ks_rows {
	struct ks_row *row;		/* sorted by id */
	size_t n, cap;
};

struct keys_sync {
	char urls[1024];
	char path[PATH_MAX];		/* DATA/authorized_keys */
	int (*valid)(const char *, size_t, char *, size_t);
	struct etcd *etcd;		/* the thread's alone */
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock: */
	struct ks_rows rows;
	int read;			/* the tokens were read once */
	struct ks_op *ops, **ops_tail;
	int stop;
	/* The thread's alone: */
	int64_t keys_rev;		/* authorized_keys' mod_revision last
					 * applied (or refused); 0: none */
	int64_t tokens_count, tokens_max;	/* etcd_prefix_stamp of the
					 * tokens at the last full read */
	int absent_logged;
};

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* 1 when id can name a row: 1 to KEYS_SYNC_ID_MAX - 1 of [0-9a-f]. */
static int
id_valid(const char *id)
{
	size_t n = strlen(id);

	return n > 0 && n < KEYS_SYNC_ID_MAX &&
	    strspn(id, "0123456789abcdef") == n;
}

/* --- the mirror (under ks->lock) --------------------------------------- */

static void
rows_free(struct ks_rows *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		free(rs->row[i].val);
	free(rs->row);
	memset(rs, 0, sizeof(*rs));
}

/* Where id is, or would go: *found set. */
static size_t
rows_find(const struct ks_rows *rs, const char *id, int *found)
{
	size_t lo = 0, hi = rs->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(rs->row[mid].id, id);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

/* Set row id to a copy of val (inserted if absent).  0 or -ENOMEM. */
static int
rows_set(struct ks_rows *rs, const char *id, const char *val, int64_t mod_rev)
{
	int found;
	size_t at = rows_find(rs, id, &found);
	char *copy = strdup(val);

	if (!copy)
		return -ENOMEM;
	if (found) {
		free(rs->row[at].val);
		rs->row[at].val = copy;
		rs->row[at].mod_rev = mod_rev;
		return 0;
	}
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 16;
		struct ks_row *r = realloc(rs->row, cap * sizeof(*r));

		if (!r) {
			free(copy);
			return -ENOMEM;
		}
		rs->row = r;
		rs->cap = cap;
	}
	memmove(&rs->row[at + 1], &rs->row[at], (rs->n - at) * sizeof(*rs->row));
	snprintf(rs->row[at].id, sizeof(rs->row[at].id), "%s", id);
	rs->row[at].val = copy;
	rs->row[at].mod_rev = mod_rev;
	rs->n++;
	return 0;
}

/* Remove row id: 1, or 0 when absent. */
static int
rows_del(struct ks_rows *rs, const char *id)
{
	int found;
	size_t at = rows_find(rs, id, &found);

	if (!found)
		return 0;
	free(rs->row[at].val);
	memmove(&rs->row[at], &rs->row[at + 1],
	    (rs->n - at - 1) * sizeof(*rs->row));
	rs->n--;
	return 1;
}

/* What op does to the mirror. */
static void
rows_apply(struct ks_rows *rs, const struct ks_op *op)
{
	int found;
	size_t at;

	if (op->kind == KS_DELETE) {
		rows_del(rs, op->id);
		return;
	}
	at = rows_find(rs, op->id, &found);
	if (op->kind == KS_CREATE && !found)
		rows_set(rs, op->id, op->val, 0);
	else if (op->kind == KS_UPDATE && found)
		rows_set(rs, op->id, op->val, rs->row[at].mod_rev);
}

static void
op_free(struct ks_op *op)
{
	if (op) {
		free(op->val);
		free(op);
	}
}

/* Queue a change for the thread.  0 or -ENOMEM. */
static int
op_queue(struct keys_sync *ks, enum ks_kind kind, const char *id,
    const char *val, int64_t mod_rev)
{
	struct ks_op *op = calloc(1, sizeof(*op));

	if (!op || (val && !(op->val = strdup(val)))) {
		op_free(op);
		return -ENOMEM;
	}
	op->kind = kind;
	op->mod_rev = mod_rev;
	snprintf(op->id, sizeof(op->id), "%s", id);
	*ks->ops_tail = op;
	ks->ops_tail = &op->next;
	pthread_cond_signal(&ks->cond);
	return 0;
}

/* --- the thread: changes to etcd --------------------------------------- */

/* 1 when r means etcd could not be reached (try again later). */
static int
transient(int r)
{
	return r == -ETIMEDOUT || r == -ECONNREFUSED || r == -EAGAIN ||
	    r == -ENOMEM;
}

/* Send one change.  0 done (or refused for good: logged), or -errno when
 * etcd could not be reached. */
static int
op_send(struct keys_sync *ks, const struct ks_op *op, int64_t *created)
{
	char key[ETCD_KEY_MAX];
	int r;

	*created = 0;
	snprintf(key, sizeof(key), "%s%s", KEYS_SYNC_TOKENS, op->id);
	if (op->kind == KS_CREATE) {
		r = etcd_create(ks->etcd, key, op->val, strlen(op->val), 0,
		    created, NULL);
		if (r == 0)
			log_error("cluster: token %s: another host stored a "
			    "token of the same id first; this one is refused "
			    "(make another)", op->id);
	} else if (op->kind == KS_DELETE) {
		r = etcd_delete(ks->etcd, key);
	} else {
		/* 0: revoked or changed elsewhere meanwhile; theirs wins. */
		r = etcd_put_if_mod(ks->etcd, key, op->val, strlen(op->val),
		    op->mod_rev);
	}
	if (r < 0 && transient(r))
		return r;
	if (r < 0)
		log_error("cluster: token %s: etcd refused the change (%s); "
		    "it holds only on this host", op->id, strerror(-r));
	return 0;
}

/* Send the queued changes in order, until one cannot be sent: 0 all
 * sent, -1 one is left for later (etcd could not be reached). */
static int
ops_run(struct keys_sync *ks)
{
	for (;;) {
		struct ks_op *op;
		int64_t created;

		pthread_mutex_lock(&ks->lock);
		op = ks->ops;
		pthread_mutex_unlock(&ks->lock);
		/* Only the thread takes ops off the head: op stays valid. */
		if (!op)
			return 0;
		if (op_send(ks, op, &created) < 0)
			return -1;
		pthread_mutex_lock(&ks->lock);
		if (created > 0) {
			int found;
			size_t at = rows_find(&ks->rows, op->id, &found);

			if (found && strcmp(ks->rows.row[at].val, op->val) == 0)
				ks->rows.row[at].mod_rev = created;
		}
		ks->ops = op->next;
		if (!ks->ops)
			ks->ops_tail = &ks->ops;
		pthread_mutex_unlock(&ks->lock);
		op_free(op);
	}
}

/* --- the thread: reading etcd ------------------------------------------ */

/* Every row in etcd into a new mirror, with what is still queued applied
 * over it; the whole range is read only when the prefix's stamp moved
 * since the last read (a change of ours moves it too).  The mirror
 * stays as it was when etcd cannot be read. */
static void
tokens_refresh(struct keys_sync *ks)
{
	struct ks_rows fresh = { 0 };
	struct etcd_kv *kvs = NULL;
	size_t n = 0, plen = strlen(KEYS_SYNC_TOKENS);
	int64_t count, max;

	if (etcd_prefix_stamp(ks->etcd, KEYS_SYNC_TOKENS, &count, &max) < 0 ||
	    (ks->read && count == ks->tokens_count &&
	    max == ks->tokens_max))
		return;
	if (etcd_range_prefix(ks->etcd, KEYS_SYNC_TOKENS, &kvs, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		const char *id = kvs[i].key + plen;

		if (strncmp(kvs[i].key, KEYS_SYNC_TOKENS, plen) != 0 ||
		    !id_valid(id) || strlen(kvs[i].val) != kvs[i].len)
			continue;	/* not a row: skipped */
		if (rows_set(&fresh, id, kvs[i].val, kvs[i].mod_rev) < 0) {
			etcd_kvs_free(kvs, n);
			rows_free(&fresh);
			return;
		}
	}
	etcd_kvs_free(kvs, n);
	ks->tokens_count = count;
	ks->tokens_max = max;
	pthread_mutex_lock(&ks->lock);
	for (struct ks_op *op = ks->ops; op; op = op->next)
		rows_apply(&fresh, op);
	rows_free(&ks->rows);
	ks->rows = fresh;
	ks->read = 1;
	pthread_mutex_unlock(&ks->lock);
}

/* 1 when the file at path holds exactly text. */
static int
file_same(const char *path, const char *text, size_t len)
{
	char *cur = NULL;
	size_t clen = 0;
	int same;

	if (read_small_file(path, KS_FILE_MAX, &cur, &clen) < 0)
		return 0;
	same = clen == len && memcmp(cur, text, len) == 0;
	free(cur);
	return same;
}

/* Replace ks->path with text, whole and synced, with the mode and owner
 * the file has (root's and 0600 when it is missing).  0 or -errno. */
static int
file_write(struct keys_sync *ks, const char *text, size_t len)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(ks->path, '/');
	struct stat st;
	mode_t mode = 0600;
	uid_t uid = 0;
	gid_t gid = 0;
	int r;

	if (!slash || (size_t)(slash - ks->path) >= sizeof(dir))
		return -EINVAL;
	memcpy(dir, ks->path, (size_t)(slash - ks->path));
	dir[slash - ks->path] = '\0';
	if (lstat(ks->path, &st) == 0 && S_ISREG(st.st_mode)) {
		mode = st.st_mode & 0777;
		uid = st.st_uid;
		gid = st.st_gid;
	}
	if ((r = write_file_atomic(dir, slash + 1, text, len, mode, 1)) < 0)
		return r;
	if (lchown(ks->path, uid, gid) < 0)
		return -errno;
	return 0;
}

/* The pushed text, checked: 0, or -EINVAL (logged once per revision). */
static int
keys_check(struct keys_sync *ks, const char *text, size_t len, int64_t rev)
{
	char why[300] = "it holds a NUL byte";

	if (memchr(text, '\0', len) == NULL && ks->valid(text, len, why,
	    sizeof(why)) == 0)
		return 0;
	log_error("cluster: the authorized_keys in etcd (revision %" PRId64
	    ") is not used: %s; this host keeps %s as it is (push a good "
	    "one: atriumd cluster keys push FILE)", rev, why, ks->path);
	return -EINVAL;
}

/* The key is absent from etcd (r == 0): said once. */
static void
keys_absent(struct keys_sync *ks)
{
	if (ks->absent_logged)
		return;
	if (ks->keys_rev)
		log_warn("cluster: the cluster's authorized_keys was deleted "
		    "from etcd; this host keeps %s as last pushed", ks->path);
	else
		log_info("cluster: no authorized_keys in etcd yet; this host "
		    "uses its own %s until one is pushed (atriumd cluster "
		    "keys push FILE)", ks->path);
	ks->absent_logged = 1;
}

/* Apply text, the key's value at revision rev: 0, or -1 to try again. */
static int
keys_apply(struct keys_sync *ks, const char *text, size_t len, int64_t rev)
{
	int r;

	if (keys_check(ks, text, len, rev) < 0)
		return 0;
	if (file_same(ks->path, text, len)) {
		log_info("cluster: %s is the cluster's authorized_keys (etcd "
		    "revision %" PRId64 ")", ks->path, rev);
	} else if ((r = file_write(ks, text, len)) < 0) {
		log_error("cluster: %s: cannot write the cluster's "
		    "authorized_keys: %s; trying again", ks->path, strerror(-r));
		return -1;
	} else {
		log_info("cluster: %s replaced by the cluster's authorized_keys "
		    "(etcd revision %" PRId64 ")", ks->path, rev);
	}
	return 0;
}

/* DATA/authorized_keys in step with /atrium/authorized_keys: its
 * revision at each poll, its value (up to 1 MiB) only when that moved. */
static void
keys_refresh(struct keys_sync *ks)
{
	char *text = NULL;
	size_t len = 0;
	int64_t rev = 0;
	int r = etcd_get_rev(ks->etcd, KEYS_SYNC_AUTHKEYS, &rev);

	if (r == 0)
		keys_absent(ks);
	if (r <= 0 || rev == ks->keys_rev)
		return;
	r = etcd_get(ks->etcd, KEYS_SYNC_AUTHKEYS, &text, &len, NULL, &rev);
	if (r <= 0)
		return;		/* gone meanwhile, or etcd away: next poll */
	ks->absent_logged = 0;
	if (keys_apply(ks, text, len, rev) == 0)
		ks->keys_rev = rev;
	free(text);
}

static void *
thread_main(void *arg)
{
	struct keys_sync *ks = arg;
	int64_t next = 0;
	int held = 0;	/* a change etcd did not take: retried at the poll,
			 * not at once (a refused connection fails at once) */

	for (;;) {
		pthread_mutex_lock(&ks->lock);
		while (!ks->stop && (held || !ks->ops) && now_ns() < next) {
			struct timespec ts = { next / NS, next % NS };
			pthread_cond_timedwait(&ks->cond, &ks->lock, &ts);
		}
		int stop = ks->stop;
		pthread_mutex_unlock(&ks->lock);
		held = ops_run(ks) < 0;
		if (stop)
			return NULL;
		if (now_ns() >= next) {
			keys_refresh(ks);
			tokens_refresh(ks);
			next = now_ns() + KEYS_SYNC_POLL_MS * 1000000LL;
		}
	}
}

/* --- the loop's side ---------------------------------------------------- */

int
keys_sync_token_get(struct keys_sync *ks, const char *id, char **val,
    int64_t *mod_rev)
{
	int found, r = 0;

	*val = NULL;
	*mod_rev = 0;
	pthread_mutex_lock(&ks->lock);
	size_t at = rows_find(&ks->rows, id, &found);
	if (!ks->read)
		r = -EAGAIN;
	else if (found && !(*val = strdup(ks->rows.row[at].val)))
		r = -ENOMEM;
	else if (found) {
		*mod_rev = ks->rows.row[at].mod_rev;
		r = 1;
	}
	pthread_mutex_unlock(&ks->lock);
	return r;
}

int
keys_sync_token_each(struct keys_sync *ks,
    int (*fn)(void *arg, const char *id, const char *val), void *arg)
{
	struct ks_rows copy = { 0 };
	int r = 0;

	/* A copy, so that fn runs without the lock. */
	pthread_mutex_lock(&ks->lock);
	if (!ks->read)
		r = -EAGAIN;
	for (size_t i = 0; r == 0 && i < ks->rows.n; i++)
		r = rows_set(&copy, ks->rows.row[i].id, ks->rows.row[i].val, 0);
	pthread_mutex_unlock(&ks->lock);
	for (size_t i = 0; r == 0 && i < copy.n; i++)
		if (fn(arg, copy.row[i].id, copy.row[i].val) != 0)
			break;
	rows_free(&copy);
	return r;
}

int
keys_sync_token_create(struct keys_sync *ks, const char *id, const char *val)
{
	int found, r;

	if (!id_valid(id))
		return -EINVAL;
	pthread_mutex_lock(&ks->lock);
	rows_find(&ks->rows, id, &found);
	if (!ks->read)
		r = -EAGAIN;
	else if (found)
		r = -EEXIST;
	else if ((r = op_queue(ks, KS_CREATE, id, val, 0)) == 0 &&
	    (r = rows_set(&ks->rows, id, val, 0)) < 0)
		log_error("cluster: token %s: out of memory", id);
	pthread_mutex_unlock(&ks->lock);
	return r;
}

int
keys_sync_token_delete(struct keys_sync *ks, const char *id)
{
	int r;

	pthread_mutex_lock(&ks->lock);
	if (!ks->read)
		r = -EAGAIN;
	else if ((r = rows_del(&ks->rows, id)) == 1 &&
	    op_queue(ks, KS_DELETE, id, NULL, 0) < 0)
		r = -ENOMEM;
	pthread_mutex_unlock(&ks->lock);
	return r;
}

int
keys_sync_token_update(struct keys_sync *ks, const char *id, const char *val)
{
	int found, r = 0;

	pthread_mutex_lock(&ks->lock);
	size_t at = rows_find(&ks->rows, id, &found);
	/* Not in etcd yet: its create is queued and carries the row. */
	if (found && ks->rows.row[at].mod_rev > 0 &&
	    (r = op_queue(ks, KS_UPDATE, id, val,
	    ks->rows.row[at].mod_rev)) == 0)
		r = rows_set(&ks->rows, id, val, ks->rows.row[at].mod_rev);
	pthread_mutex_unlock(&ks->lock);
	return r;
}

/* --- start and stop ----------------------------------------------------- */

int
keys_sync_start(const struct keys_sync_config *cfg, struct keys_sync **out,
    char *err, size_t errlen)
{
	struct keys_sync *ks = calloc(1, sizeof(*ks));
	pthread_condattr_t ca;
	int r;

	*out = NULL;
	if (!ks) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(ks->urls, sizeof(ks->urls), "%s", cfg->etcd);
	snprintf(ks->path, sizeof(ks->path), "%s", cfg->authkeys_path);
	ks->valid = cfg->valid;
	ks->ops_tail = &ks->ops;
	pthread_mutex_init(&ks->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ks->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (!(ks->etcd = etcd_open(ks->urls, err, errlen))) {
		keys_sync_stop(ks);
		return -EINVAL;
	}
	etcd_set_timeout(ks->etcd, KS_TIMEOUT_MS);
	if ((r = pthread_create(&ks->thread, NULL, thread_main, ks)) != 0) {
		snprintf(err, errlen, "cannot start the keys thread: %s",
		    strerror(r));
		keys_sync_stop(ks);
		return -r;
	}
	ks->started = 1;
	*out = ks;
	return 0;
}

void
keys_sync_stop(struct keys_sync *ks)
{
	if (!ks)
		return;
	if (ks->started) {
		pthread_mutex_lock(&ks->lock);
		ks->stop = 1;
		pthread_cond_signal(&ks->cond);
		pthread_mutex_unlock(&ks->lock);
		pthread_join(ks->thread, NULL);
	}
	for (struct ks_op *op = ks->ops, *next; op; op = next) {
		next = op->next;
		log_warn("cluster: token %s: a change etcd has not taken is "
		    "dropped at stop", op->id);
		op_free(op);
	}
	rows_free(&ks->rows);
	etcd_close(ks->etcd);
	pthread_cond_destroy(&ks->cond);
	pthread_mutex_destroy(&ks->lock);
	free(ks);
}

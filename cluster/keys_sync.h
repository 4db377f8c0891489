/*
 * keys_sync.h: users, keys and tokens the same on every host of a
 * cluster (keys_sync.c), for atriumd's monitor with --cluster.  One copy
 * of authorized_keys lives in etcd (/atrium/authorized_keys, set by
 * `atriumd cluster keys push`) and each monitor keeps DATA/authorized_keys
 * in step with it; the HTTP tokens' rows live in etcd (/atrium/tokens/ID)
 * and each monitor holds a mirror of them to look tokens up in.
 *
 * Everything that talks to etcd or writes the file runs on one thread of
 * its own; the functions below are called from the monitor's loop, take
 * only a lock the thread never holds across etcd I/O, and never wait for
 * etcd: a change made here is in the mirror at once and reaches etcd as
 * soon as the thread gets to it (in order, retried while etcd is away).
 */
#ifndef ATRIUM_CLUSTER_KEYS_SYNC_H
#define ATRIUM_CLUSTER_KEYS_SYNC_H

#include <stddef.h>
#include <stdint.h>

#define KEYS_SYNC_AUTHKEYS	"/atrium/authorized_keys"
#define KEYS_SYNC_TOKENS	"/atrium/tokens/"
#define KEYS_SYNC_POLL_MS	1000	/* etcd is read this often */
#define KEYS_SYNC_ID_MAX	32	/* bytes of a token's id, with NUL */

struct keys_sync;

struct keys_sync_config {
	const char *etcd;		/* URL[,URL...] (without "etcd=") */
	const char *authkeys_path;	/* DATA/authorized_keys */
	/* Does TEXT (LEN bytes) parse as authorized_keys?  0, or -EINVAL
	 * with the first bad line's number and why in WHY.  Called on the
	 * thread: it must be pure. */
	int (*valid)(const char *text, size_t len, char *why, size_t whylen);
};

/* Start the thread (its first read of etcd is at once).  0, or -errno
 * with the reason in err. */
int keys_sync_start(const struct keys_sync_config *cfg,
    struct keys_sync **out, char *err, size_t errlen);

/* Finish the changes queued for etcd (a quarter second per request at
 * most each), stop the thread, free.  NULL is fine. */
void keys_sync_stop(struct keys_sync *ks);

/* --- the tokens' mirror (the loop's side) --------------------------------
 * A row is its JSON text as stored in etcd (the caller checks it: another
 * node wrote it). */

/* Row ID: 1 with *val (malloc'd, NUL-terminated) and *mod_rev (0 when it
 * is not in etcd yet), 0 none, -EAGAIN when etcd has not been read yet. */
int keys_sync_token_get(struct keys_sync *ks, const char *id, char **val,
    int64_t *mod_rev);

/* Call fn for every row in id order until it returns non-zero.  0, or
 * -EAGAIN when etcd has not been read yet. */
int keys_sync_token_each(struct keys_sync *ks,
    int (*fn)(void *arg, const char *id, const char *val), void *arg);

/* A new row ID = VAL: in the mirror now, created in etcd when the thread
 * gets to it (only if absent there).  0, -EEXIST when ID is taken,
 * -EAGAIN not read yet, -ENOMEM. */
int keys_sync_token_create(struct keys_sync *ks, const char *id,
    const char *val);

/* Row ID gone: from the mirror now, from etcd next.  1, or 0 when there
 * was none, -EAGAIN not read yet. */
int keys_sync_token_delete(struct keys_sync *ks, const char *id);

/* Row ID is VAL now (its last use): written to etcd only while it is
 * still the row the mirror holds (a revoke elsewhere wins).  0 or
 * -errno. */
int keys_sync_token_update(struct keys_sync *ks, const char *id,
    const char *val);

#endif

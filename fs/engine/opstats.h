/*
 * opstats.h: counts and latency of a mount's requests, by kind
 * (fs/engine/opstats.c), for atriumd's GET /metrics.  fs/daemon/fuse_timed.c
 * times every request that gets a reply and notes it here;
 * fs/daemon/control_socket.c's "stats" reads the counts.
 *
 * Workload: one note per FUSE request, from any of the session's worker
 * threads, so a note is a few relaxed atomic adds and never a lock.  A
 * reader may see a request's count before its bucket or the other way
 * round; each figure only grows.
 */
#ifndef ATRIUM_OPSTATS_H
#define ATRIUM_OPSTATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "fsstats.h"

/* The kinds, in the order of opstats_kind_names. */
enum opstats_kind {
	OPSTATS_LOOKUP,		/* lookup */
	OPSTATS_GETATTR,	/* getattr, statfs */
	OPSTATS_SETATTR,	/* setattr (chmod, chown, truncate, utimes) */
	OPSTATS_OPEN,		/* open, flush, release */
	OPSTATS_READ,		/* read, readlink, lseek */
	OPSTATS_WRITE,		/* write, fallocate */
	OPSTATS_CREATE,		/* create, mknod, mkdir, symlink, link */
	OPSTATS_REMOVE,		/* unlink, rmdir */
	OPSTATS_RENAME,		/* rename */
	OPSTATS_FSYNC,		/* fsync, fsyncdir */
	OPSTATS_READDIR,	/* opendir, readdir, readdirplus, releasedir */
	OPSTATS_XATTR,		/* setxattr, getxattr, listxattr, removexattr */
	OPSTATS_KINDS
};
_Static_assert(OPSTATS_KINDS == FSSTATS_KINDS, "fsstats.h's kinds");

/* Upper bounds of the latency buckets, in nanoseconds (100 us .. 1 s);
 * a request slower than the last falls only in +Inf. */
#define OPSTATS_BUCKETS FSSTATS_BUCKETS
extern const uint64_t opstats_bucket_ns[OPSTATS_BUCKETS];
extern const char *const opstats_kind_names[OPSTATS_KINDS];

struct opstats {
	struct {
		_Atomic uint64_t count;		/* requests answered */
		_Atomic uint64_t sum_ns;	/* their time, summed */
		/* requests in (bucket i-1, bucket i], not cumulative */
		_Atomic uint64_t bucket[OPSTATS_BUCKETS];
	} k[OPSTATS_KINDS];
};

/* One plain copy of a kind's figures. */
struct opstats_kind_figures {
	uint64_t count, sum_ns, bucket[OPSTATS_BUCKETS];
};

/* Monotonic nanoseconds (CLOCK_MONOTONIC). */
uint64_t opstats_now_ns(void);

/* A request of kind took ns.  Cannot fail. */
void opstats_note(struct opstats *s, enum opstats_kind kind, uint64_t ns);

/* kind's figures into *out.  Cannot fail. */
void opstats_read(struct opstats *s, enum opstats_kind kind,
    struct opstats_kind_figures *out);

#endif

/*
 * fsstats.h: the kinds and latency buckets of a mount's request counts,
 * shared by atrium-fs, which counts (fs/engine/opstats.h) and answers "stats"
 * on its control socket (fs/daemon/control_socket.c), atriumd's monitor, which
 * sums every room's (sshd/monitor/fswatch.h), and atriumd-http, which shows
 * them in GET /metrics.  Changing an order here changes the wire.
 */
#ifndef ATRIUM_FSSTATS_H
#define ATRIUM_FSSTATS_H

/* The kinds, in the wire's order (see fs/engine/opstats.h for which requests
 * each holds). */
#define FSSTATS_KINDS 12
#define FSSTATS_KIND_NAMES { "lookup", "getattr", "setattr", "open", \
	"read", "write", "create", "remove", "rename", "fsync", "readdir", \
	"xattr" }

/* Upper bounds of the latency buckets: nanoseconds, and the same as
 * Prometheus le labels (seconds); +Inf is the count. */
#define FSSTATS_BUCKETS 13
#define FSSTATS_BUCKET_NS { 100000, 250000, 500000, 1000000, 2500000, \
	5000000, 10000000, 25000000, 50000000, 100000000, 250000000, \
	500000000, 1000000000 }
#define FSSTATS_BUCKET_LE { "0.0001", "0.00025", "0.0005", "0.001", \
	"0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", \
	"1" }

/* A stats answer's size bound: FSSTATS_KINDS lines of at most
 * FSSTATS_LINE_MAX bytes, then "ok" LF. */
#define FSSTATS_LINE_MAX ((FSSTATS_BUCKETS + 2) * 21 + 32)
#define FSSTATS_ANSWER_MAX (FSSTATS_KINDS * FSSTATS_LINE_MAX + 64)

#endif

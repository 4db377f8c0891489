/*
 * cluster_keys.h: the cluster's one authorized_keys (cluster_keys.c):
 * the operator's `atriumd cluster keys push|show`, and the check of a
 * file's text that the push and every monitor make before using it.
 * cluster/keys_sync.h keeps each host's DATA/authorized_keys in step.
 */
#ifndef ATRIUMD_CLUSTER_KEYS_H
#define ATRIUMD_CLUSTER_KEYS_H

#include <stddef.h>

/* argv[0] "cluster", argv[1] "keys", argv[2] "push" or "show", then its
 * words.  The exit status: 0, 1 (refused, or etcd did not answer), 2
 * (usage). */
int cluster_keys_main(int argc, char **argv);

/* Does text (len bytes) parse as authorized_keys, every line of it, with
 * at least one key?  0, or -EINVAL with "line N: why" (or why) in why.
 * Pure: called on cluster/keys_sync.c's thread too. */
int cluster_keys_valid(const char *text, size_t len, char *why,
    size_t whylen);

#endif

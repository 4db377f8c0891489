/*
 * cluster_status.h: `atriumd cluster status` (cluster_status.c): the cluster as etcd
 * sees it, for an operator.
 */
#ifndef ATRIUM_CLUSTER_CLUSTER_STATUS_H
#define ATRIUM_CLUSTER_CLUSTER_STATUS_H

#include <stddef.h>

/* argv[0] "cluster", argv[1] "status", then its flags.  The exit status:
 * 0, 1 (etcd did not answer), 2 (usage). */
int cluster_status_main(int argc, char **argv);

/* The etcd endpoints an operator's command names, into urls (without
 * "etcd="): --cluster etcd=URL[,URL...], else DATA/atrium.conf's cluster=
 * (--data DIR, default ./data), from argv[first] on.  0, or 2 after
 * telling stderr (what: the command, for its messages; usage: its usage
 * line). */
int cluster_cli_endpoints(int argc, char **argv, int first, const char *what,
    const char *usage, char *urls, size_t len);

#endif

/*
 * cluster_status.h: `atriumd cluster status` (cluster_status.c): the cluster as etcd
 * sees it, for an operator.
 */
#ifndef ATRIUM_CLUSTER_CLUSTER_STATUS_H
#define ATRIUM_CLUSTER_CLUSTER_STATUS_H

/* argv[0] "cluster", argv[1] "status", then its flags.  The exit status:
 * 0, 1 (etcd did not answer), 2 (usage). */
int cluster_status_main(int argc, char **argv);

#endif

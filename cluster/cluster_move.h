/*
 * cluster_move.h: `atriumd cluster move|drain|undrain` (cluster_move.c):
 * an operator's planned moves of rooms between the hosts of a cluster
 * (cluster/move.h has the keys and the rules).
 */
#ifndef ATRIUM_CLUSTER_CLUSTER_MOVE_H
#define ATRIUM_CLUSTER_CLUSTER_MOVE_H

/* argv[0] "cluster", argv[1] "move", "drain" or "undrain", then its
 * arguments.  The exit status: 0 done, 1 the move (or a check before it)
 * failed, with the reason on stderr, 2 usage or no cluster given. */
int cluster_move_main(int argc, char **argv);

#endif

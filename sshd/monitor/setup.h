/*
 * setup.h: first start of atriumd.  Makes DATA (0700), DATA/run (root,
 * 0711), DATA/hostkey (ed25519, 0600) and, when
 * DATA/authorized_keys is missing, seeds it from the running user's ~/.ssh,
 * printing to stdout what it did and how to connect.
 */
#ifndef ATRIUMD_SETUP_H
#define ATRIUMD_SETUP_H

#include <sys/types.h>

#include "config.h"

/* Each DATA/run/ROOM holds a mounted workspace, which atrium-fs serves
 * with allow_other: only root and the room's own group may pass through it,
 * whatever DATA's own mode (the sandbox stages its binds as root, and no
 * other host user, nor another room's uid, has any business there).
 * DATA/run above them is root's alone, with search (not read) for all:
 * every room has its own group, and none may list the others' names. */
#define SETUP_RUN_MODE		0710
#define SETUP_RUN_TOP_MODE	0711

/* Make path (its parent exists) a directory owned by root and group gid
 * with mode, fixing an existing one.  0 or -errno. */
int setup_run_dir(const char *path, gid_t gid, mode_t mode);

/* Make DATA itself (0700) when missing, and nothing in it.  0, or -errno
 * with the reason logged. */
int setup_data_top(const struct config *cfg);

/* Prepare what is in DATA (its lock held: datalock.h).  0, or -errno with
 * the reason logged. */
int setup_data_dir(const struct config *cfg);

/* The port part of a [ADDR]:PORT listen string, "2222" when absent. */
const char *setup_listen_port(const char *listen);

#endif

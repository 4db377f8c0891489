/*
 * setup.h: first start of atriumd.  Makes DATA (0700), DATA/run (root,
 * the sandbox's group, 0710), DATA/hostkey (ed25519, 0600) and, when
 * DATA/authorized_keys is missing, seeds it from the running user's ~/.ssh,
 * printing to stdout what it did and how to connect.
 */
#ifndef ATRIUMD_SETUP_H
#define ATRIUMD_SETUP_H

#include <sys/types.h>

#include "config.h"

/* DATA/run and each DATA/run/ROOM hold the mounted workspaces, which
 * atrium-fs serves with allow_other: only root and the sandbox's group may
 * pass through them, whatever DATA's own mode (the sandbox stages its
 * binds as root, and no other host user has any business there). */
#define SETUP_RUN_MODE	0710

/* Make path (its parent exists) a directory owned by root and group
 * sandbox_gid with SETUP_RUN_MODE, fixing an existing one.  0 or -errno. */
int setup_run_dir(const char *path, gid_t sandbox_gid);

/* Prepare DATA.  0, or -errno with the reason logged. */
int setup_data_dir(const struct config *cfg);

/* The port part of a [ADDR]:PORT listen string, "2222" when absent. */
const char *setup_listen_port(const char *listen);

#endif

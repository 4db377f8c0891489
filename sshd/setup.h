/*
 * setup.h: first start of atriumd.  Makes DATA (0700), DATA/hostkey
 * (ed25519, 0600) and, when DATA/authorized_keys is missing, seeds it from
 * the running user's ~/.ssh, printing to stdout what it did and how to
 * connect.
 */
#ifndef ATRIUMD_SETUP_H
#define ATRIUMD_SETUP_H

#include "config.h"

/* Prepare DATA.  0, or -errno with the reason logged. */
int setup_data_dir(const struct config *cfg);

/* The port part of a [ADDR]:PORT listen string, "2222" when absent. */
const char *setup_listen_port(const char *listen);

#endif

/*
 * http_privdrop.h: atriumd-http gives up root (http_privdrop.c), first
 * thing, before it parses a byte: the privsep user (its uid and gid, no
 * supplementary groups), no capabilities, no_new_privs, a parent-death
 * signal, Landlock with nothing writable, and its own seccomp allow list.
 */
#ifndef ATRIUMD_HTTP_PRIVDROP_H
#define ATRIUMD_HTTP_PRIVDROP_H

#include <sys/types.h>

#include "privdrop_id.h"

/* Become id for good, checking that the parent is still monitor.  0, or
 * -errno with the step that failed logged. */
int http_privdrop_apply(const struct privdrop_id *id, pid_t monitor);

#endif

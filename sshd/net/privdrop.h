/*
 * privdrop.h: how atriumd's network process gives up root (privdrop.c),
 * in atriumd-net (which the monitor forks and executes as root) before it
 * parses its settings, its host key or a client's byte:
 *
 *   1. supplementary groups cleared, gid and uid set (real, effective,
 *      saved) to the privsep user's (--privsep-user; default `atrium`
 *      when that user exists, else `nobody`);
 *   2. every capability dropped: bounding set, ambient set, then
 *      permitted, effective and inheritable (the uid change clears them
 *      too; capset says so explicitly), and checked: setuid(0) must fail;
 *   3. PR_SET_NO_NEW_PRIVS (nothing it could exec gains anything) and
 *      not dumpable (no other process of that user may ptrace it or read
 *      its memory, which holds the host key);
 *   4. PR_SET_PDEATHSIG: it ends with the monitor;
 *   5. the seccomp filter (privdrop_seccomp.c).
 */
#ifndef ATRIUMD_PRIVDROP_H
#define ATRIUMD_PRIVDROP_H

#include <sys/types.h>

#include "privdrop_id.h"

/* In the network process: steps 1 to 5 above; monitor is the parent's
 * pid.  0, or -errno with the reason logged: the caller exits. */
int privdrop_apply(const struct privdrop_id *id, pid_t monitor);

/* Limit the files the process may open (Landlock, where the kernel has
 * it) to what the network process opens after it gave up root: a pty's
 * devices, /dev/null and /dev/urandom, its own threads' /proc files (their
 * names), and the host's /usr and /etc for reading; never DATA (what it needs from there, the monitor hands it).
 * Call with one thread, no_new_privs set.  0 or -errno (logged). */
int privdrop_landlock(void);

/* Install the network process's seccomp filter.  0 or -errno (logged). */
int privdrop_seccomp(void);

#endif

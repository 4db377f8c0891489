/*
 * becomeuser.h: a root process gives up root for good (becomeuser.c).
 * Used by atriumd's network process (sshd/net/privdrop.c) and by
 * atrium-agent (agent/confine.c).
 */
#ifndef ATRIUM_BECOMEUSER_H
#define ATRIUM_BECOMEUSER_H

#include <sys/types.h>

/* Become uid and gid with no supplementary groups and no capability in
 * any set (effective, permitted, inheritable, ambient, bounding), with
 * no_new_privs and not dumpable; then check that root cannot be had back.
 * uid and gid must not be 0.  0, or -errno with the step that failed in
 * *step. */
int become_user(uid_t uid, gid_t gid, const char **step);

#endif

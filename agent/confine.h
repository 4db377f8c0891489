/*
 * confine.h: atrium-agent gives up root (confine.c).  Called by agent_main.c:
 * confine_room_files and everything else that needs root first, then
 * confine_agent, before room.db is opened and before any thread exists.
 */
#ifndef ATRIUM_AGENT_CONFINE_H
#define ATRIUM_AGENT_CONFINE_H

struct agent;

/* As root: make the room's directory root's, the room's group's, 0710
 * (the agent may reach its files, not add any), and room.db with its WAL
 * and shared-memory files exist, the room's uid's, 0600.  0 or -errno
 * (logged). */
int confine_room_files(struct agent *a);

/* Become the room's sandbox uid and gid for good (becomeuser.h), then
 * limit the files the process may open to its room (Landlock, where the
 * kernel has it) and its system calls to an allow list (seccomp).  Not
 * root (started by hand by a user): nothing to give up, 0.  0, or -errno
 * (logged): the agent must not run. */
int confine_agent(struct agent *a);

/* The seccomp allow list alone, for confine_agent and its unit test.
 * 0 or -errno (logged). */
int confine_seccomp(void);

#endif

/*
 * room_transfer.h: a whole room out of atriumd or into it as one archive
 * (room_transfer.c), for `ssh ROOM@host atrium-export > room.tar` and
 * `ssh NEW@host atrium-import < room.tar`.  The monitor runs the helpers
 * (atrium-fs export-room / import-room, atrium-agent import-db) as its
 * children and hands the network process the pipes to pump:
 *
 *   export   stdout (the archive), stderr, status
 *   import   stdin (the archive), stderr, status
 *
 * The status pipe carries one line, the exit status ("0\n" on success),
 * once everything is over (for an import: both helpers, and the room
 * either in place or gone again), then closes.
 */
#ifndef ATRIUMD_ROOM_TRANSFER_H
#define ATRIUMD_ROOM_TRANSFER_H

#include <stddef.h>
#include <sys/types.h>

struct monitor;
struct room_transfer;

#define ROOM_TRANSFER_FDS	3	/* pipes handed out per transfer */

/* Start exporting room: fds[] get the read ends of its stdout, stderr and
 * status.  0, or -errno with the reason for the user in why. */
int room_transfer_export(struct monitor *srv, const char *room,
    int fds[ROOM_TRANSFER_FDS], char *why, size_t len);

/* Start importing a new room for user (who becomes its owner): fds[] get
 * the write end of its stdin and the read ends of its stderr and status.
 * Refused when the room exists, is being made or deleted, or user is over
 * max-rooms-per-user.  0, or -errno with the reason in why. */
int room_transfer_import(struct monitor *srv, const char *room,
    const char *user, int fds[ROOM_TRANSFER_FDS], char *why, size_t len);

/* 1 while room is being imported (nothing may start or enter it). */
int room_transfer_importing(const struct monitor *srv, const char *room);

/* Remove room when a crash left it half-imported (its mark, no import
 * running): before anything uses or lists it.  1 when it did. */
int room_transfer_clear_stale(struct monitor *srv, const char *room);

/* Whether room counts toward its maker's rooms (room_quota_admit's
 * exists, arg the server): 1 when it exists, after removing it when a
 * crash left it half-imported (such a room counts for nobody). */
int room_transfer_counts(const char *room, void *arg);

/* A child exited (from waitpid).  1 when it was a transfer's. */
int room_transfer_child_exited(struct monitor *srv, pid_t pid, int status);

/* Shutdown: kill every helper, remove half-imported rooms, free all. */
void room_transfer_stop_all(struct monitor *srv);

#endif

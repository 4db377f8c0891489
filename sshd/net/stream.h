/*
 * stream.h: exec requests and the sftp subsystem: a command in the room's
 * sandbox whose stdin, stdout and stderr (or one pty) are pipes pumped to
 * and from the SSH channel.
 */
#ifndef ATRIUMD_STREAM_H
#define ATRIUMD_STREAM_H

#include "session.h"

#define STREAM_SFTP_SERVER	"/usr/lib/openssh/sftp-server"

/* Make c an exec of command (bash -c), or of sftp-server when command is
 * NULL.  0 or -ENOMEM. */
int stream_open(struct chan *c, const char *command);

/* SSH_ORIGINAL_COMMAND is passed on up to this size: the agent's exec
 * request holds every variable in 8 KiB. */
#define STREAM_MAX_ORIGINAL	4096

/* Make c an exec of a key's forced command (command="..."), run as
 * written (bash -c, a pty when the client asked for one), in place of
 * what the client asked: original is SSH_ORIGINAL_COMMAND (the command,
 * or a subsystem's name), NULL for a shell.  Of the client's variables
 * only LANG and LC_* pass.  0, -E2BIG when original is longer than
 * STREAM_MAX_ORIGINAL, or -ENOMEM. */
int stream_open_forced(struct chan *c, const char *command,
    const char *original);

/* Make c an atrium-export (import 0) or atrium-import (import 1) of its
 * room: the monitor's helpers (room_transfer.h) write the archive to the
 * client's stdout or read it from the client's stdin, with their stderr
 * and exit status passed on.  0 or -ENOMEM. */
int stream_open_archive(struct chan *c, int import);

/* 1 when c is an exec or sftp channel whose command has not ended (a
 * person's command, user_cap.h). */
int stream_busy(const struct chan *c);

/* 1 when c is a stream channel serving sftp (not a command). */
int stream_sftp(const struct chan *c);

#endif

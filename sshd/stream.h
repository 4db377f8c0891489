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

#endif

/*
 * fdpass.h: send and receive bytes with file descriptors attached
 * (SCM_RIGHTS) on a unix stream socket.  atriumd passes a command's stdin,
 * stdout and stderr to atrium-agent with the `exec` line that uses them.
 *
 * The kernel delivers the fds with the first byte of the sendmsg that carried
 * them, so a receiver that queues fds as they arrive and takes them when it
 * parses the line that announced them ("fds": N) always finds them queued.
 */
#ifndef ATRIUM_FDPASS_H
#define ATRIUM_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

/* Send len bytes with nfds fds on the first byte.  Bytes sent (may be short,
 * the fds went with the first), or -errno. */
ssize_t fdpass_send(int sock, const void *buf, size_t len, const int *fds,
    int nfds);

/* Receive up to len bytes; fds that came with them (CLOEXEC) are stored in
 * fds[0..*nfds).  More than maxfds are closed and the call fails with
 * -EPROTO.  Bytes read (0 at end of stream), or -errno. */
ssize_t fdpass_recv(int sock, void *buf, size_t len, int *fds, int *nfds,
    int maxfds);

#endif

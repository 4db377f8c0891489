/*
 * fdpass.c: bytes with SCM_RIGHTS descriptors on a unix stream socket
 * (fdpass.h).
 */
#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FDPASS_MAX 8

ssize_t
fdpass_send(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds < 0 || nfds > FDPASS_MAX || len == 0)
		return -EINVAL;
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Take the fds out of one control message; close what does not fit. */
static int
fdpass_take(struct cmsghdr *c, int *fds, int *nfds, int maxfds)
{
	size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		int fd;

		memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
		if (*nfds < maxfds) {
			fds[(*nfds)++] = fd;
		} else {
			close(fd);
			err = -EPROTO;
		}
	}
	return err;
}

ssize_t
fdpass_recv(int sock, void *buf, size_t len, int *fds, int *nfds, int maxfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	ssize_t n;
	int err = 0;

	*nfds = 0;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c;
	    c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int r = fdpass_take(c, fds, nfds, maxfds);
			if (r < 0)
				err = r;
		}
	}
	if (msg.msg_flags & MSG_CTRUNC)
		err = -EPROTO;
	if (err < 0) {
		for (int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		return err;
	}
	return n;
}

/*
 * mount_keeper.c: the root parent of a mount's daemon that gives up root
 * (mount_confine.h).  Called by fs/daemon/mount.c under -o run_as.
 *
 * Only root may remove the mount the daemon made as root, and the daemon
 * must not keep root to do it at its end.  So the process that was asked
 * to mount forks the daemon first, before it opens anything (SQLite's
 * locks are the process's and must never be carried across a fork), and
 * stays behind as the keeper: it reads single bytes from the daemon's
 * socket and nothing else, so there is nothing in it to subvert.  It
 * unmounts only the path it resolved itself before the fork, without
 * following a link, and only while an atrium-fs mount is on top there.
 * Whoever started the mount knows the keeper's pid: it passes SIGTERM,
 * SIGINT and SIGHUP on, and exits with the daemon's status.
 */
#include "mount_confine.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsctl_client.h"
#include "log.h"
#include "mount.h"

#ifndef UMOUNT_NOFOLLOW
#define UMOUNT_NOFOLLOW 8
#endif

/* What the keeper holds. */
struct keeper {
	pid_t child;
	int sock;		/* its end of the daemon's socket */
	int sigfd;		/* the signals it passes on */
	int mounted;		/* the daemon said 'M' */
	int unmounted;		/* and the keeper has taken it down */
	int known;		/* major:minor below were read at 'M' */
	unsigned major, minor;	/* of the daemon's own mount */
	char dir[PATH_MAX];	/* the mount point, resolved before the fork */
	char ctl[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/* Take the mount at k->dir down, when it is the daemon's own: another
 * atrium-fs mount made on the same directory since the daemon died (a
 * room started again at once) is never this keeper's to take down, and
 * taking it would hide the workspace from the commands using it. */
static void
keeper_unmount(struct keeper *k)
{
	unsigned major, minor;

	k->unmounted = 1;
	if (mount_holder_dev(k->dir, &major, &minor) < 0)
		return;		/* unmounted already (fusermount3 -u) */
	if (!k->known || major != k->major || minor != k->minor) {
		log_warn("%s: the atrium-fs mount on top (%u:%u) is not the "
		    "one this daemon made; left alone", k->dir, major, minor);
		return;
	}
	if (umount2(k->dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 &&
	    errno != EINVAL)
		log_warn("unmounting %s: %s", k->dir, strerror(errno));
}

/* One byte from the daemon.  0 to go on, 1 when the socket ended. */
static int
keeper_byte(struct keeper *k)
{
	char c;
	ssize_t n = read(k->sock, &c, 1);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return 1;
	if (c == 'M') {
		k->mounted = 1;
		/* Ours is on top now: the daemon is alive and holds it. */
		k->known = mount_holder_dev(k->dir, &k->major, &k->minor) == 0;
	} else if (c == 'U' && k->mounted && !k->unmounted) {
		keeper_unmount(k);
		if (write(k->sock, "K", 1) != 1)
			return 1;
	}
	return 0;
}

/* Pass one signal on to the daemon. */
static void
keeper_signal(struct keeper *k)
{
	struct signalfd_siginfo si;

	if (read(k->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		kill(k->child, (int)si.ssi_signo);
}

/* Wait for the daemon to end; take the mount down if it did not ask;
 * remove its control socket.  The process's exit status. */
static int
keeper_run(struct keeper *k)
{
	struct pollfd p[2] = { { k->sock, POLLIN, 0 }, { k->sigfd, POLLIN, 0 } };
	struct stat st;
	int status = 0;

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if ((p[1].revents & POLLIN))
			keeper_signal(k);
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    keeper_byte(k))
			break;
	}
	if (k->mounted && !k->unmounted)
		keeper_unmount(k);
	while (waitpid(k->child, &status, 0) < 0 && errno == EINTR)
		;
	/* The daemon cannot remove a file of the database's directory. */
	if (k->ctl[0] && lstat(k->ctl, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(k->ctl);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	log_error("the daemon ended by signal %d", WTERMSIG(status));
	return 1;
}

/* In the child, right after the fork: the keeper's death ends it. */
static void
keeper_child_start(struct keeper *k, const sigset_t *old)
{
	pid_t keeper = getppid();

	close(k->sock);
	close(k->sigfd);
	sigprocmask(SIG_SETMASK, old, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 ||
	    getppid() != keeper)
		_exit(1);
}

int
mount_keeper(const struct mount_opts *o, int status_fd, int *fd)
{
	struct keeper k = { .sock = -1, .sigfd = -1 };
	sigset_t set, old;
	int sv[2];

	if (!realpath(o->dir, k.dir))
		snprintf(k.dir, sizeof(k.dir), "%s", o->dir);
	if (fsctl_path(o->db, k.ctl, sizeof(k.ctl)) < 0)
		k.ctl[0] = '\0';
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		fprintf(stderr, "atrium-fs: socketpair: %s\n", strerror(errno));
		return -1;
	}
	/* Signals wait in the mask until the keeper reads them, and the
	 * daemon gets the mask back as it was. */
	sigprocmask(SIG_BLOCK, &set, &old);
	k.sock = sv[0];
	if ((k.sigfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0 ||
	    (k.child = fork()) < 0) {
		fprintf(stderr, "atrium-fs: starting the daemon: %s\n",
		    strerror(errno));
		close(sv[0]);
		close(sv[1]);
		if (k.sigfd >= 0)
			close(k.sigfd);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return -1;
	}
	if (k.child == 0) {
		keeper_child_start(&k, &old);
		*fd = sv[1];
		return 0;
	}
	/* The daemon tells the waiters; the keeper holds none of their
	 * pipes, nor, in the background, the caller's terminal. */
	close(sv[1]);
	if (status_fd >= 0)
		close(status_fd);
	if (o->ready_fd >= 0)
		close(o->ready_fd);
	if (!o->foreground)
		mount_detach_stdio();
	_exit(keeper_run(&k));
}

int
mount_keeper_mounted(int fd)
{
	return write(fd, "M", 1) == 1 ? 0 : -errno;
}

int
mount_keeper_unmount(int fd)
{
	char c;

	if (write(fd, "U", 1) != 1)
		return -errno;
	if (read(fd, &c, 1) != 1 || c != 'K')
		return -EIO;
	return 0;
}

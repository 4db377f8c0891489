/*
 * control_socket.c: a mounted workspace's control socket, DB-ctl, through which
 * `atrium-fs snapshot|restore|drop|diff DB NAME`, the agent's undo and
 * atriumd's room exports reach the daemon that has DB mounted
 * (common/fsctl_client.c is the client, but for the export's commit,
 * which sshd/monitor/room_transfer.c sends itself; fs/daemon/mount.c starts and
 * stops this server).  A restore there also tells the kernel what changed
 * (fuse_lowlevel_notify_inval_entry/inode), which only the daemon can.
 *
 * The wire, one request per connection, both lines at most
 * FSCTL_LINE_MAX bytes (fsctl_client.h):
 *   request   VERB SP NAME LF      VERB: snapshot, undo-snapshot (an
 *                                  undo point: FS_SNAPSHOT_UNDO), restore,
 *                                  drop or diff
 *             "list" LF            the snapshots, oldest first
 *             "usage" LF           the quota's figures (fs_quota_figures)
 *             "compact" LF         give free pages back (fs_vacuum)
 *             "commit" LF          commit the open group (fs_sync), so
 *                                  that a reader of the file sees all
 *                                  that was answered before the request
 *             "changes" LF         the count of changes (fs_changes)
 *             "stats" LF           the requests served, by kind
 *                                  (fs/engine/opstats.h), for GET /metrics
 *   answer    "ok" LF  |  "error" SP ERRNO SP TEXT LF
 * diff's answer comes after its entries, one per line, at most
 * FS_DIFF_MAX, then "more" LF when there were more:
 *   entry     KIND SP PATH LF      KIND: A, D or M (fs.h: fs_snapshot_diff)
 * where PATH has '%', control characters and DEL written as %XX, so that
 * an entry is one line whatever a name holds (FSCTL_ENTRY_MAX bytes).
 * list's answer comes after one line per snapshot:
 *   snapshot  "S" SP NAME SP CREATED_NS SP INODES SP SHARED SP OWN LF
 * usage's answer comes after one line, and so does a snapshot's refusal
 * for the quota (before its "error 122" line), so that the person who
 * asked learns the figures:
 *   usage     "U" SP QUOTA SP USED SP SNAP_ONLY SP KEEP SP INODES SP
 *             QUOTA_INODES LF      (bytes; 0: no quota; KEEP: what the
 *                                  refused snapshot would have kept)
 * changes' answer comes after one line:
 *   changes   "C" SP COUNT LF      (two counts that differ: the tree
 *                                  changed between them)
 * stats' answer comes after one line per kind, in opstats.h's order:
 *   stats     "O" SP KIND SP COUNT SP SUM_NS {SP BUCKET} LF
 *                                  (OPSTATS_BUCKETS counts, each of the
 *                                  requests in its bucket alone, not
 *                                  cumulative; all only grow)
 * NAME is checked by the core (fs_snapshot_name_ok) before anything runs.
 *
 * Trust: the socket is made 0600 in the database's directory, next to the
 * mount lock (DB-mount), and a peer must also have the daemon's uid (or be
 * root, SO_PEERCRED): whoever may write the database may snapshot it,
 * nobody else; and the mount's control_uid (mount.c), when given, which
 * then owns the socket: a room's agent, which runs as the room's uid.
 * Commands of the room run as that uid too, but in a mount namespace
 * without the database's directory, and a network namespace of their own.  A peer that sends too much, too slowly (CONTROL_TIMEOUT_S)
 * or something else than a request is answered with an error and closed.
 *
 * Threads: one thread accepts and serves requests one at a time (they are
 * rare, and each takes fs->lock anyway); control_stop wakes it through a
 * pipe and joins it before the fs is closed.  Only this thread and the
 * session's workers run while it lives; the invalidations run without
 * fs->lock (fs_snapshot_restore), since the kernel may answer one with
 * writes of dirty pages that the workers must serve.
 */
#include "control_socket.h"
#include "fs.h"
#include "fsctl_client.h"
#include "log.h"
#include "opstats.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define CONTROL_TIMEOUT_S 10

struct control {
	struct fs *fs;
	struct fuse_session *se;   /* for the invalidations */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int listen_fd;
	int wake[2];               /* control_stop writes to wake[1] */
	pthread_t thread;
	uid_t control_uid;         /* also served; (uid_t)-1: none */
	int running;               /* the thread was started */
};

/* The kernel forgets inode ino's attributes, and with pages its cached
 * pages (a negative offset asks for the attributes alone). */
static void
control_inval_inode(void *arg, uint64_t ino, int pages)
{
	struct control *c = arg;
	int r = fuse_lowlevel_notify_inval_inode(c->se, ino, pages ? 0 : -1, 0);

	if (r < 0 && r != -ENOENT)
		log_warn("invalidating inode %llu: %s", (unsigned long long)ino,
		    strerror(-r));
}

/* The kernel forgets the name in parent. */
static void
control_inval_entry(void *arg, uint64_t parent, const char *name)
{
	struct control *c = arg;
	int r = fuse_lowlevel_notify_inval_entry(c->se, parent, name,
	    strlen(name));

	if (r < 0 && r != -ENOENT)
		log_warn("invalidating %s in %llu: %s", name,
		    (unsigned long long)parent, strerror(-r));
}

/* Read one line (without its LF) from fd into buf.  0, or -EPROTO for a
 * line too long or cut short, or -errno (-EAGAIN: too slow). */
static int
control_read_line(int fd, char *buf, size_t size)
{
	size_t n = 0;
	ssize_t got;

	while (n < size) {
		got = read(fd, buf + n, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -EPROTO;
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return 0;
		}
		n++;
	}
	return -EPROTO;
}

/* Write all of buf to fd; 0 or -errno. */
static int
control_write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One diff entry to the peer (arg: its fd), path escaped (see the head). */
static int
control_diff_entry(void *arg, char kind, const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	char line[FSCTL_ENTRY_MAX];
	size_t n = 0;

	line[n++] = kind;
	line[n++] = ' ';
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (n + 4 >= sizeof(line))
			return -ENAMETOOLONG;
		if (*p < 0x20 || *p == 0x7f || *p == '%') {
			line[n++] = '%';
			line[n++] = hex[*p >> 4];
			line[n++] = hex[*p & 15];
		} else {
			line[n++] = (char)*p;
		}
	}
	line[n++] = '\n';
	return control_write_all(*(int *)arg, line, n);
}

/* diff name: its entries to fd, then "more" when capped.  0 or -errno. */
static int
control_diff(struct control *c, int fd, const char *name)
{
	int more = 0;
	int r = fs_snapshot_diff(c->fs, name, FS_DIFF_MAX, control_diff_entry,
	    &fd, &more);

	if (r == 0 && more)
		r = control_write_all(fd, "more\n", 5);
	return r;
}

/* changes: the count's line to fd.  0 or -errno. */
static int
control_changes(struct control *c, int fd)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "C %llu\n",
	    (unsigned long long)fs_changes(c->fs));

	return control_write_all(fd, line, (size_t)n);
}

/* stats: one line per kind of request to fd (see the head).  0 or
 * -errno. */
static int
control_stats(struct control *c, int fd)
{
	struct opstats_kind_figures f;
	char line[FSSTATS_LINE_MAX];
	int r = 0;

	for (int k = 0; r == 0 && k < OPSTATS_KINDS; k++) {
		size_t n;

		opstats_read(fs_opstats(c->fs), k, &f);
		n = (size_t)snprintf(line, sizeof(line), "O %s %llu %llu",
		    opstats_kind_names[k], (unsigned long long)f.count,
		    (unsigned long long)f.sum_ns);
		for (int b = 0; b < OPSTATS_BUCKETS && n < sizeof(line); b++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %llu",
			    (unsigned long long)f.bucket[b]);
		if (n + 1 >= sizeof(line))
			return -EOVERFLOW;
		line[n++] = '\n';
		r = control_write_all(fd, line, n);
	}
	return r;
}

/* One line of the list answer (arg: the peer's fd). */
static int
control_list_entry(void *arg, const struct fs_snapshot_info *s)
{
	char line[FSCTL_LIST_LINE_MAX];
	int n;

	/* Names were checked when taken; one from elsewhere is skipped
	 * rather than sent as something a line could not hold. */
	if (!s->name || fs_snapshot_name_ok(s->name) < 0)
		return 0;
	n = snprintf(line, sizeof(line), "S %s %lld %llu %llu %llu\n", s->name,
	    (long long)s->created_ns, (unsigned long long)s->inodes,
	    (unsigned long long)s->shared_bytes,
	    (unsigned long long)s->own_bytes);
	if (n < 0 || (size_t)n >= sizeof(line))
		return 0;
	return control_write_all(*(int *)arg, line, (size_t)n) < 0;
}

/* The quota's figures as a "U" line to fd.  0 or -errno. */
static int
control_usage_line(int fd, const struct fs_quota_figures *q)
{
	char line[FSCTL_LINE_MAX];
	int n = snprintf(line, sizeof(line), "U %llu %llu %llu %llu %llu %llu\n",
	    (unsigned long long)q->quota, (unsigned long long)q->used,
	    (unsigned long long)q->snap_only, (unsigned long long)q->keep,
	    (unsigned long long)q->inodes, (unsigned long long)q->quota_inodes);

	return control_write_all(fd, line, (size_t)n);
}

/* usage: the figures to fd.  0 or -errno. */
static int
control_usage(struct control *c, int fd)
{
	struct fs_quota_figures q;
	int r = fs_quota_figures(c->fs, &q);

	return r < 0 ? r : control_usage_line(fd, &q);
}

/* snapshot or undo-snapshot name; a refusal for the quota sends its
 * figures first.  0 or -errno. */
static int
control_snapshot(struct control *c, int fd, const char *name, int flags,
    const struct fs_notify *notify)
{
	struct fs_quota_figures why;
	int r = fs_snapshot_take(c->fs, name, flags, notify, &why);

	if (r == -EDQUOT && !(flags & FS_SNAPSHOT_UNDO))
		control_usage_line(fd, &why);
	return r;
}

/* Do one request line from fd; 0 or -errno. */
static int
control_do(struct control *c, int fd, char *line)
{
	struct fs_notify notify = {
		.arg = c, .inode = control_inval_inode,
		.entry = control_inval_entry,
	};
	char *name = strchr(line, ' ');

	if (strcmp(line, "list") == 0)
		return fs_snapshot_list(c->fs, control_list_entry, &fd);
	if (strcmp(line, "commit") == 0)
		return fs_sync(c->fs, 0);
	if (strcmp(line, "changes") == 0)
		return control_changes(c, fd);
	if (strcmp(line, "stats") == 0)
		return control_stats(c, fd);
	if (strcmp(line, "usage") == 0)
		return control_usage(c, fd);
	if (strcmp(line, "compact") == 0) {
		int64_t given = fs_vacuum(c->fs);

		if (given > 0)
			log_info("compact: gave %lld pages back to the disk",
			    (long long)given);
		return given < 0 ? (int)given : 0;
	}
	if (!name)
		return -EPROTO;
	*name++ = '\0';
	if (fs_snapshot_name_ok(name) < 0)
		return -EINVAL;
	if (strcmp(line, "snapshot") == 0)
		return control_snapshot(c, fd, name, 0, &notify);
	if (strcmp(line, "undo-snapshot") == 0)
		return control_snapshot(c, fd, name, FS_SNAPSHOT_UNDO, &notify);
	if (strcmp(line, "restore") == 0)
		return fs_snapshot_restore(c->fs, name, &notify);
	if (strcmp(line, "drop") == 0)
		return fs_snapshot_drop(c->fs, name);
	if (strcmp(line, "diff") == 0)
		return control_diff(c, fd, name);
	return -EPROTO;
}

/* 0 when the peer on fd may ask (root, the daemon's uid or the control
 * uid), else -EPERM. */
static int
control_peer_ok(const struct control *c, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	return cred.uid == 0 || cred.uid == geteuid() ||
	    (c->control_uid != (uid_t)-1 && cred.uid == c->control_uid) ?
	    0 : -EPERM;
}

/* Serve one connection, then close it. */
static void
control_serve(struct control *c, int fd)
{
	struct timeval tv = { .tv_sec = CONTROL_TIMEOUT_S };
	char line[FSCTL_LINE_MAX], answer[FSCTL_LINE_MAX];
	int r;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if ((r = control_peer_ok(c, fd)) == 0 &&
	    (r = control_read_line(fd, line, sizeof(line))) == 0) {
		/* changes: one per command; stats: atriumd's, every 2 s */
		if (strcmp(line, "changes") != 0 && strcmp(line, "stats") != 0)
			log_info("control: %s", line);
		r = control_do(c, fd, line);
	}
	if (r == 0)
		snprintf(answer, sizeof(answer), "ok\n");
	else
		snprintf(answer, sizeof(answer), "error %d %s\n", -r,
		    strerror(-r));
	if (r < 0 && r != -ENOENT && r != -EEXIST && r != -EINVAL &&
	    r != -EDQUOT)
		log_warn("control request failed: %s", strerror(-r));
	if (write(fd, answer, strlen(answer)) < 0)
		log_warn("control: answering: %s", strerror(errno));
	close(fd);
}

/* The thread: accept and serve until woken by control_stop. */
static void *
control_main(void *arg)
{
	struct control *c = arg;
	struct pollfd p[2] = {
		{ .fd = c->listen_fd, .events = POLLIN },
		{ .fd = c->wake[0], .events = POLLIN },
	};
	int fd;

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			control_serve(c, fd);
	}
	return NULL;
}

/* Close what of c's descriptors is open. */
static void
control_close_fds(struct control *c)
{
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->wake[0] >= 0)
		close(c->wake[0]);
	if (c->wake[1] >= 0)
		close(c->wake[1]);
}

/* Bind c's socket at c->path, 0600 (a stale one is ours to remove: we
 * hold the mount lock).  0 or -errno. */
static int
control_listen(struct control *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int r = 0;

	memcpy(sa.sun_path, c->path, sizeof(sa.sun_path));
	if ((c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	unlink(c->path);
	old = umask(0077);
	if (bind(c->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(c->path, 0600) < 0 || (c->control_uid != (uid_t)-1 &&
	    chown(c->path, c->control_uid, (gid_t)-1) < 0) ||
	    listen(c->listen_fd, 8) < 0)
		r = -errno;
	umask(old);
	return r;
}

struct control *
control_open(const char *db, struct fs *fs, struct fuse_session *se,
    uid_t control_uid)
{
	struct control *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return NULL;
	c->control_uid = control_uid;
	c->fs = fs;
	c->se = se;
	c->listen_fd = c->wake[0] = c->wake[1] = -1;
	if ((r = fsctl_path(db, c->path, sizeof(c->path))) < 0 ||
	    (r = control_listen(c)) < 0 ||
	    (pipe2(c->wake, O_CLOEXEC) < 0 && (r = -errno))) {
		log_warn("%s: no control socket (%s): snapshot commands need the "
		    "workspace unmounted", db, strerror(-r));
		if (c->listen_fd >= 0)
			unlink(c->path);
		control_close_fds(c);
		free(c);
		return NULL;
	}
	return c;
}

int
control_run(struct control *c)
{
	int r = pthread_create(&c->thread, NULL, control_main, c);

	if (r != 0) {
		log_warn("no control socket (thread: %s): snapshot commands "
		    "need the workspace unmounted", strerror(r));
		unlink(c->path);	/* may fail once root is given up */
		control_close_fds(c);
		free(c);
		return -1;
	}
	c->running = 1;
	return 0;
}

/* Stop serving, remove the socket, free c.  Accepts NULL. */
void
control_stop(struct control *c)
{
	if (!c)
		return;
	if (c->running) {
		if (write(c->wake[1], "x", 1) < 0)
			log_warn("control: waking the thread: %s",
			    strerror(errno));
		pthread_join(c->thread, NULL);
	}
	/* Fails once the daemon gave up root (the directory is root's):
	 * the keeper removes it then (mount_keeper.c). */
	unlink(c->path);
	control_close_fds(c);
	free(c);
}

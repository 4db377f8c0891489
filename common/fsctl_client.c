/*
 * fsctl_client.c: the client side of a mounted workspace's control socket
 * (fsctl_client.h), one request per connection.  The wire, served by
 * fs/daemon/control_socket.c (whose head is the reference):
 *   request   VERB SP NAME LF  |  "list" LF  |  "compact" LF
 *   answer    "ok" LF  |  "error" SP ERRNO SP TEXT LF
 * before the answer, a diff's entries "A|D|M" SP PATH LF (PATH with
 * '%', control characters and DEL as %XX) and maybe "more" LF; a list's
 * "S" SP NAME SP CREATED_NS SP INODES SP SHARED SP OWN LF.
 *
 * The daemon is the room's own process, but its answers are still read
 * as untrusted: through a fixed buffer, each line capped before it is
 * kept, numbers range-checked, and anything else is -EPROTO.
 */
#include "fsctl_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* Buffered reading of answer lines from one connection. */
struct fsctl_reader {
	int fd;
	char buf[4096];
	size_t start, end;        /* buf[start, end) not yet consumed */
};

int
fsctl_path(const char *db, char *out, size_t size)
{
	int n = snprintf(out, size, "%s-ctl", db);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Connect to db's control socket, reads and writes (the connect too)
 * bounded by timeout_s.  The fd, or -errno; any failure to connect is
 * -ECONNREFUSED: nobody serves it. */
static int
fsctl_connect(const char *db, int timeout_s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_s > 0 ? timeout_s : 1 };
	int fd, r;

	if ((r = fsctl_path(db, sa.sun_path, sizeof(sa.sun_path))) < 0)
		return r;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -ECONNREFUSED;
	}
	return fd;
}

/* The next line (without its LF) into line, at most size - 1 bytes.  0;
 * -EPROTO for a longer one; -ECONNRESET at the end of the stream;
 * -EAGAIN when the daemon took too long; -errno. */
static int
fsctl_read_line(struct fsctl_reader *rd, char *line, size_t size)
{
	size_t n = 0;
	ssize_t got;

	for (;;) {
		while (rd->start < rd->end) {
			char c = rd->buf[rd->start++];
			if (c == '\n') {
				line[n] = '\0';
				return 0;
			}
			if (n + 1 >= size)
				return -EPROTO;
			line[n++] = c;
		}
		got = read(rd->fd, rd->buf, sizeof(rd->buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		if (got == 0)
			return -ECONNRESET;
		rd->start = 0;
		rd->end = (size_t)got;
	}
}

/* The value of hex digit c, or -1. */
static int
fsctl_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Undo the %XX escapes of s in place.  0, or -EPROTO (a bad escape, or
 * one of a NUL). */
static int
fsctl_unescape(char *s)
{
	char *out = s;
	int hi, lo;

	for (; *s; s++) {
		if (*s != '%') {
			*out++ = *s;
			continue;
		}
		if ((hi = fsctl_hex(s[1])) < 0 || (lo = fsctl_hex(s[2])) < 0 ||
		    (hi | lo) == 0)
			return -EPROTO;
		*out++ = (char)(hi << 4 | lo);
		s += 2;
	}
	*out = '\0';
	return 0;
}

/* What the lines before the final answer are for: a diff's entries or a
 * list's snapshots (neither: any such line is a protocol error). */
struct fsctl_lines {
	fsctl_diff_cb diff;
	fsctl_list_cb list;
	void *arg;
	int more;
	struct fsctl_usage *usage;    /* where a "U" line goes, or NULL */
	unsigned long long *changes;  /* where a "C" line goes, or NULL */
	int got_changes;
};

/* A usage line "U QUOTA USED SNAP_ONLY KEEP INODES QUOTA_INODES".  0 or
 * -EPROTO. */
static int
fsctl_usage_line(struct fsctl_lines *w, const char *line)
{
	struct fsctl_usage *u = w->usage;
	int end = 0;

	if (sscanf(line, "U %llu %llu %llu %llu %llu %llu%n", &u->quota,
	    &u->used, &u->snap_only, &u->keep, &u->inodes, &u->quota_inodes,
	    &end) != 6 || line[end] != '\0')
		return -EPROTO;
	return 0;
}

/* A list line "S NAME CREATED_NS INODES SHARED OWN".  0 or -errno. */
static int
fsctl_list_line(struct fsctl_lines *w, const char *line)
{
	struct fsctl_snapshot s;
	char name[FSCTL_LINE_MAX];
	int end = 0;

	if (sscanf(line, "S %255s %lld %llu %llu %llu%n", name, &s.created_ns,
	    &s.inodes, &s.shared, &s.own, &end) != 5 || line[end] != '\0')
		return -EPROTO;
	s.name = name;
	return w->list(w->arg, &s) != 0 ? -ECANCELED : 0;
}

/* "error ERRNO TEXT" as -ERRNO, or -EPROTO. */
static int
fsctl_error_line(const char *line)
{
	long err;

	return sscanf(line, "error %ld", &err) == 1 && err > 0 && err < 4096 ?
	    -(int)err : -EPROTO;
}

/* One answer line: 1 for the final "ok", 0 for an entry or "more"
 * handled, -errno for an error answer or a line not understood. */
static int
fsctl_answer_line(char *line, struct fsctl_lines *w)
{
	if (strcmp(line, "ok") == 0)
		return 1;
	if (strncmp(line, "error ", 6) == 0)
		return fsctl_error_line(line);
	if (w->usage && line[0] == 'U' && line[1] == ' ')
		return fsctl_usage_line(w, line);
	if (w->changes && line[0] == 'C' && line[1] == ' ') {
		int end = 0;

		if (sscanf(line, "C %llu%n", w->changes, &end) != 1 ||
		    line[end] != '\0')
			return -EPROTO;
		w->got_changes = 1;
		return 0;
	}
	if (w->list && line[0] == 'S' && line[1] == ' ')
		return fsctl_list_line(w, line);
	if (w->diff && strcmp(line, "more") == 0) {
		w->more = 1;
		return 0;
	}
	if (!w->diff || !line[0] || !strchr("ADM", line[0]) ||
	    line[1] != ' ' || fsctl_unescape(line + 2) < 0)
		return -EPROTO;
	return w->diff(w->arg, line[0], line + 2) != 0 ? -ECANCELED : 0;
}

/* Read answer lines from fd until the final one.  0 or -errno. */
static int
fsctl_read_answer(int fd, struct fsctl_lines *w)
{
	struct fsctl_reader *rd = malloc(sizeof(*rd));
	size_t max = w->diff ? FSCTL_ENTRY_MAX : FSCTL_LIST_LINE_MAX;
	char *line = malloc(max);
	int r = -ENOMEM;

	if (rd && line) {
		rd->fd = fd;
		rd->start = rd->end = 0;
		while ((r = fsctl_read_line(rd, line, max)) == 0 &&
		    (r = fsctl_answer_line(line, w)) == 0)
			;
	}
	free(line);
	free(rd);
	return r == 1 ? 0 : r;
}

/* Send all of req on fd, without SIGPIPE when the daemon has gone.  0,
 * -ECONNRESET (it has), -EAGAIN (it does not read) or -errno. */
static int
fsctl_send(int fd, const char *req)
{
	size_t len = strlen(req);
	ssize_t n;

	while (len > 0) {
		n = send(fd, req, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EPIPE ? -ECONNRESET :
			    errno == EWOULDBLOCK ? -EAGAIN : -errno;
		req += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Send the request line req to db's daemon and read its answer into w.
 * 0 or -errno. */
static int
fsctl_exchange(const char *db, const char *req, int timeout_s,
    struct fsctl_lines *w)
{
	int fd, r;

	if ((fd = fsctl_connect(db, timeout_s)) < 0)
		return fd;
	if ((r = fsctl_send(fd, req)) == 0)
		r = fsctl_read_answer(fd, w);
	close(fd);
	return r;
}

/* "verb name" LF into out.  0, or -EINVAL for a name the line cannot
 * carry (empty, a space or a control character, too long). */
static int
fsctl_request_line(char *out, size_t size, const char *verb,
    const char *name)
{
	int n;

	if (!name[0])
		return -EINVAL;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return -EINVAL;
	n = snprintf(out, size, "%s %s\n", verb, name);
	return n < 0 || (size_t)n >= size ? -EINVAL : 0;
}

int
fsctl_request(const char *db, const char *verb, const char *name,
    int timeout_s)
{
	struct fsctl_lines w = { 0 };
	char req[FSCTL_LINE_MAX];
	int r = fsctl_request_line(req, sizeof(req), verb, name);

	return r < 0 ? r : fsctl_exchange(db, req, timeout_s, &w);
}

int
fsctl_snapshot(const char *db, int undo, const char *name, int timeout_s,
    struct fsctl_usage *why)
{
	struct fsctl_usage ignored;
	struct fsctl_lines w = { .usage = why ? why : &ignored };
	char req[FSCTL_LINE_MAX];
	int r;

	memset(w.usage, 0, sizeof(*w.usage));
	r = fsctl_request_line(req, sizeof(req),
	    undo ? "undo-snapshot" : "snapshot", name);
	return r < 0 ? r : fsctl_exchange(db, req, timeout_s, &w);
}

int
fsctl_usage(const char *db, int timeout_s, struct fsctl_usage *out)
{
	struct fsctl_lines w = { .usage = out };

	memset(out, 0, sizeof(*out));
	return fsctl_exchange(db, "usage\n", timeout_s, &w);
}

int
fsctl_changes(const char *db, int timeout_s, unsigned long long *out)
{
	struct fsctl_lines w = { .changes = out };
	int r = fsctl_exchange(db, "changes\n", timeout_s, &w);

	return r == 0 && !w.got_changes ? -EPROTO : r;
}

int
fsctl_diff(const char *db, const char *name, int timeout_s,
    fsctl_diff_cb cb, void *arg, int *more)
{
	struct fsctl_lines w = { .diff = cb, .arg = arg };
	char req[FSCTL_LINE_MAX];
	int r = fsctl_request_line(req, sizeof(req), "diff", name);

	if (r == 0)
		r = fsctl_exchange(db, req, timeout_s, &w);
	*more = w.more;
	return r;
}

int
fsctl_list(const char *db, int timeout_s, fsctl_list_cb cb, void *arg)
{
	struct fsctl_lines w = { .list = cb, .arg = arg };

	return fsctl_exchange(db, "list\n", timeout_s, &w);
}

int
fsctl_compact(const char *db, int timeout_s)
{
	struct fsctl_lines w = { 0 };

	return fsctl_exchange(db, "compact\n", timeout_s, &w);
}

int
fsctl_commit_send(const char *db)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r;

	if ((r = fsctl_path(db, sa.sun_path, sizeof(sa.sun_path))) < 0)
		return -ECONNREFUSED;	/* a path no daemon could have bound */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A unix socket's connect and a short first line never block: they
	 * are taken at once or refused. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		r = errno == EAGAIN ? -EAGAIN : -ECONNREFUSED;
	else
		r = fsctl_send(fd, "commit\n");
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int
fsctl_commit_wait(int fd, int timeout_s)
{
	struct timeval tv = { .tv_sec = timeout_s > 0 ? timeout_s : 1 };
	struct fsctl_lines w = { 0 };
	int flags = fcntl(fd, F_GETFL), r;

	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		r = -errno;
	else
		r = fsctl_read_answer(fd, &w);
	close(fd);
	return r;
}

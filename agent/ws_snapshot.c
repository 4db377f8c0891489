/*
 * ws_snapshot.c: the client side of atrium-fs's control socket for the
 * agent (ws_snapshot.h).  One request per connection: "VERB NAME" LF; the
 * answer is "ok" or "error ERRNO TEXT", after diff's entries ("A|D|M
 * PATH", PATH with %XX escapes) and an optional "more", or list's
 * snapshots ("S NAME CREATED_NS INODES SHARED OWN").  Every read is
 * bounded by SO_RCVTIMEO and every line by WS_LINE_MAX.
 */
#include "ws_snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* A diff entry: kind, space, a path of up to 4096 bytes each as %XX. */
#define WS_LINE_MAX (3 * 4096 + 8)

int
ws_snapshot_db(const char *room_dir, char *out, size_t size)
{
	int n = snprintf(out, size, "%s/workspace.db", room_dir);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Connect to db's control socket with timeout_s on reads and writes.
 * The fd, or -errno (-ECONNREFUSED: nobody listens). */
static int
ws_connect(const char *db, int timeout_s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_s };
	int fd, n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s-ctl", db);

	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -ECONNREFUSED;
	}
	return fd;
}

/* Undo the %XX escapes of s in place.  0, or -EPROTO. */
static int
ws_unescape(char *s)
{
	char *out = s;
	unsigned v;

	for (; *s; s++) {
		if (*s != '%') {
			*out++ = *s;
			continue;
		}
		if (!s[1] || !s[2] || sscanf(s + 1, "%2x", &v) != 1 || v == 0)
			return -EPROTO;
		*out++ = (char)v;
		s += 2;
	}
	*out = '\0';
	return 0;
}

/* What the lines before the final answer are for: a diff's entries or
 * a list's snapshots (neither: any such line is a protocol error). */
struct ws_lines {
	ws_diff_cb diff;
	ws_list_cb list;
	void *arg;
	int more;
};

/* A list line "S NAME CREATED_NS INODES SHARED OWN".  0 or -EPROTO. */
static int
ws_list_line(struct ws_lines *w, char *line)
{
	char name[160];
	long long created;
	unsigned long long inodes, shared, own;

	if (sscanf(line, "S %159s %lld %llu %llu %llu", name, &created,
	    &inodes, &shared, &own) != 5)
		return -EPROTO;
	return w->list(w->arg, name, created, shared + own) != 0 ?
	    -ECANCELED : 0;
}

/* One answer line: 1 for the final "ok", 0 for an entry or "more"
 * handled, -errno for an error answer or a line not understood. */
static int
ws_answer_line(char *line, struct ws_lines *w)
{
	long err;

	if (strcmp(line, "ok") == 0)
		return 1;
	if (strncmp(line, "error ", 6) == 0)
		return sscanf(line, "error %ld", &err) == 1 && err > 0 &&
		    err < 4096 ? -(int)err : -EPROTO;
	if (w->list && line[0] == 'S' && line[1] == ' ')
		return ws_list_line(w, line);
	if (strcmp(line, "more") == 0 && w->diff) {
		w->more = 1;
		return 0;
	}
	if (!w->diff || !strchr("ADM", line[0]) || !line[0] ||
	    line[1] != ' ' || ws_unescape(line + 2) < 0)
		return -EPROTO;
	return w->diff(w->arg, line[0], line + 2) != 0 ? -ECANCELED : 0;
}

/* Read answer lines from fd until the final one.  0 or -errno. */
static int
ws_read_answer(int fd, struct ws_lines *w)
{
	FILE *f = fdopen(fd, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = -EPROTO;

	if (!f) {
		close(fd);
		return -errno;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		if (n > WS_LINE_MAX || line[n - 1] != '\n') {
			r = -EPROTO;
			break;
		}
		line[n - 1] = '\0';
		if ((r = ws_answer_line(line, w)) != 0)
			break;
		r = -EPROTO;                /* cut short unless "ok" follows */
	}
	if (n < 0 && ferror(f) && (errno == EAGAIN || errno == EWOULDBLOCK))
		r = -EAGAIN;
	free(line);
	fclose(f);
	return r == 1 ? 0 : r;
}

/* Send the request line req and read the answer.  0 or -errno. */
static int
ws_exchange(const char *db, const char *req, int timeout_s,
    struct ws_lines *w)
{
	size_t n = strlen(req);
	int fd;

	if ((fd = ws_connect(db, timeout_s)) < 0)
		return fd;
	if (write(fd, req, n) != (ssize_t)n) {
		int r = errno ? -errno : -EIO;

		close(fd);
		return r;
	}
	return ws_read_answer(fd, w);
}

/* "verb name" LF into out.  0 or -EINVAL. */
static int
ws_request_line(char *out, size_t size, const char *verb, const char *name)
{
	int n = snprintf(out, size, "%s %s\n", verb, name);

	return n < 0 || (size_t)n >= size || strchr(name, '\n') ? -EINVAL : 0;
}

int
ws_snapshot_request(const char *db, const char *verb, const char *name,
    int timeout_s)
{
	struct ws_lines w = { 0 };
	char req[256];
	int r = ws_request_line(req, sizeof(req), verb, name);

	return r < 0 ? r : ws_exchange(db, req, timeout_s, &w);
}

int
ws_snapshot_diff(const char *db, const char *name, int timeout_s,
    ws_diff_cb cb, void *arg, int *more)
{
	struct ws_lines w = { .diff = cb, .arg = arg };
	char req[256];
	int r = ws_request_line(req, sizeof(req), "diff", name);

	if (r == 0)
		r = ws_exchange(db, req, timeout_s, &w);
	*more = w.more;
	return r;
}

int
ws_snapshot_list(const char *db, int timeout_s, ws_list_cb cb, void *arg)
{
	struct ws_lines w = { .list = cb, .arg = arg };

	return ws_exchange(db, "list\n", timeout_s, &w);
}

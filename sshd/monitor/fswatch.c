/*
 * fswatch.c: the monitor asks each ready room's atrium-fs for its request
 * counts (fswatch.h).  Called from room.c's tick and state changes.
 *
 * The daemon runs as the room's uid and parses its commands' bytes, so
 * its answer is taken as counts only: every line is checked against
 * fs/daemon/control_socket.c's format, a number is digits alone, and a bad
 * answer adds nothing.  A figure lower than the last answer's means a new
 * daemon (or a lie): its whole value is taken as grown, never a negative delta.
 * Nothing here blocks: the connect is non-blocking (EAGAIN when the
 * daemon's backlog is full: ask next time), the 6-byte request fits any
 * fresh socket's buffer, and the answer is read as the loop says.
 */
#include "fswatch.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "protocol.h"

static const char *const fswatch_kinds[FSSTATS_KINDS] = FSSTATS_KIND_NAMES;

void
fswatch_init(struct fswatch *w, struct fsops_totals *totals,
    const char *room)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	w->w.fd = -1;
	w->totals = totals;
	w->room = room;
}

void
fswatch_start(struct fswatch *w, long long now)
{
	fswatch_stop(w);
	w->watching = 1;
	w->have_last = w->warned = 0;
	w->next_ms = now;
}

/* Close the open request, if any. */
static void
fswatch_close(struct fswatch *w)
{
	if (w->fd < 0)
		return;
	loop_del(&w->w);
	close(w->fd);
	w->fd = -1;
	w->len = 0;
}

void
fswatch_stop(struct fswatch *w)
{
	fswatch_close(w);
	w->watching = 0;
}

/* One number of a line at *p: digits only, no overflow.  0 or -1. */
static int
fswatch_number(const char **p, const char *end, unsigned long long *out)
{
	unsigned long long v = 0;
	const char *s = *p;

	if (s >= end || *s < '0' || *s > '9')
		return -1;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (v > (~0ULL - 9) / 10)
			return -1;
		v = v * 10 + (unsigned)(*s - '0');
	}
	*p = s;
	*out = v;
	return 0;
}

/* The kind named at *p followed by SP (index), or -1. */
static int
fswatch_kind(const char **p, const char *end)
{
	for (int k = 0; k < FSSTATS_KINDS; k++) {
		size_t n = strlen(fswatch_kinds[k]);

		if ((size_t)(end - *p) > n && memcmp(*p, fswatch_kinds[k], n) == 0
		    && (*p)[n] == ' ') {
			*p += n + 1;
			return k;
		}
	}
	return -1;
}

/* One "O KIND N..." line [s, end) into v; seen marks its kind.  0 or -1. */
static int
fswatch_line(const char *s, const char *end,
    unsigned long long v[FSSTATS_KINDS][FSWATCH_FIELDS], int *seen)
{
	int k;

	if (end - s < 2 || s[0] != 'O' || s[1] != ' ')
		return -1;
	s += 2;
	if ((k = fswatch_kind(&s, end)) < 0 || seen[k])
		return -1;
	seen[k] = 1;
	for (int f = 0; f < FSWATCH_FIELDS; f++) {
		if (f > 0 && (s >= end || *s++ != ' '))
			return -1;
		if (fswatch_number(&s, end, &v[k][f]) < 0)
			return -1;
	}
	return s == end ? 0 : -1;
}

/* See fswatch.h. */
int
fswatch_parse(const char *text, size_t len,
    unsigned long long v[FSSTATS_KINDS][FSWATCH_FIELDS])
{
	const char *p = text, *end = text + len, *nl;
	int seen[FSSTATS_KINDS] = { 0 }, lines = 0;

	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		if (nl - p == 2 && memcmp(p, "ok", 2) == 0)
			return nl + 1 == end && lines == FSSTATS_KINDS ? 0 : -1;
		if (fswatch_line(p, nl, v, seen) < 0)
			return -1;
		lines++;
		p = nl + 1;
	}
	return -1;
}

/* See fswatch.h. */
void
fswatch_add(struct fswatch *w,
    unsigned long long v[FSSTATS_KINDS][FSWATCH_FIELDS])
{
	int fresh = !w->have_last;

	for (int k = 0; !fresh && k < FSSTATS_KINDS; k++)
		for (int f = 0; f < FSWATCH_FIELDS; f++)
			if (v[k][f] < w->last[k][f])
				fresh = 1;
	for (int k = 0; k < FSSTATS_KINDS; k++)
		for (int f = 0; f < FSWATCH_FIELDS; f++)
			w->totals->v[k][f] += v[k][f] -
			    (fresh ? 0 : w->last[k][f]);
	memcpy(w->last, v, sizeof(w->last));
	w->have_last = 1;
}

/* The answer is complete (the daemon closed): count it. */
static void
fswatch_done(struct fswatch *w)
{
	unsigned long long v[FSSTATS_KINDS][FSWATCH_FIELDS];

	if (fswatch_parse(w->in, w->len, v) < 0) {
		if (!w->warned)
			log_warn("room %s: atrium-fs's stats answer broke the "
			    "format (%zu bytes); not counted (logged once a "
			    "mount)", w->room, w->len);
		w->warned = 1;
	} else
		fswatch_add(w, v);
	fswatch_close(w);
}

/* The loop: the answer's bytes, or its end. */
static void
fswatch_cb(struct watch *wt, int revents)
{
	struct fswatch *w = wt->arg;
	ssize_t n;

	if (w->len >= sizeof(w->in)) {
		if (!w->warned)
			log_warn("room %s: atrium-fs's stats answer is too "
			    "long (logged once a mount)", w->room);
		w->warned = 1;
		fswatch_close(w);
		return;
	}
	n = read(w->fd, w->in + w->len, sizeof(w->in) - w->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		w->len += (size_t)n;
		return;
	}
	if (n < 0)
		fswatch_close(w);
	else
		fswatch_done(w);
}

/* Open the control socket of room_dir's workspace and send "stats".
 * 0 or -errno. */
static int
fswatch_ask(struct fswatch *w, struct loop *loop, const char *room_dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s-ctl",
	    room_dir, WORKSPACE_DB_NAME) >=
	    sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    send(fd, "stats\n", 6, MSG_NOSIGNAL) != 6) {
		int e = errno ? -errno : -EIO;

		close(fd);
		return e;
	}
	w->fd = fd;
	w->len = 0;
	loop_add(loop, &w->w, fd, POLLIN, fswatch_cb, w);
	return 0;
}

void
fswatch_tick(struct fswatch *w, struct loop *loop, const char *room_dir,
    long long now)
{
	if (!w->watching)
		return;
	if (w->fd >= 0 && now - w->asked_ms >= FSWATCH_TIMEOUT_MS)
		fswatch_close(w);
	if (w->fd >= 0 || now < w->next_ms ||
	    now >= w->totals->wanted_until_ms)
		return;
	w->next_ms = now + FSWATCH_EVERY_MS;
	w->asked_ms = now;
	(void)fswatch_ask(w, loop, room_dir);
}

long long
fswatch_next(const struct fswatch *w)
{
	if (!w->watching)
		return 0;
	if (w->fd >= 0)
		return w->asked_ms + FSWATCH_TIMEOUT_MS;
	if (w->next_ms >= w->totals->wanted_until_ms)
		return 0;	/* nobody reads them: sleep */
	return w->next_ms;
}

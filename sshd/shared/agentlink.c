/*
 * agentlink.c: the channel-to-agent connection of agentlink.h.  Called by
 * the channel kinds (stream.c, control.c, chat.c).  Invariant: the watch
 * wants POLLOUT exactly while out holds bytes, POLLIN while not paused and
 * not ended.  A line's object comes from the link's cache when it has one
 * and the same bytes are there (agentlink.h: parsed once for all).
 */
#include "agentlink.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "event_types.h"
#include "fdpass.h"
#include "log.h"
#include "protocol.h"
#include "util.h"

#define AGENTLINK_READ_CHUNK	65536

/* Unconnected, with empty capped buffers; cannot fail. */
void
agentlink_init(struct agentlink *l)
{
	memset(l, 0, sizeof(*l));
	l->fd = -1;
	buf_init(&l->out, AGENTLINK_MAX_OUT);
	jsonl_init(&l->in, PROTO_MAX_LINE);
}

/* Poll for what the state needs. */
static void
agentlink_update(struct agentlink *l)
{
	short want = 0;

	if (l->fd < 0)
		return;
	if (!l->paused && !l->ended)
		want |= POLLIN;
	if (l->out.len && !l->ended)
		want |= POLLOUT;
	loop_want(&l->w, want);
}

/* Write queued bytes without blocking; on error the link ends. */
static void
agentlink_flush(struct agentlink *l)
{
	while (l->out.len) {
		ssize_t n = send(l->fd, l->out.data, l->out.len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			buf_reset(&l->out);
			l->ended = 1;
			break;
		}
		buf_consume(&l->out, (size_t)n);
	}
}

/* 1 when obj is a line of this link (exec_done), which the agent sends
 * unstamped: a line with a seq or marked as a replay is a room event,
 * whatever its type says. */
static int
agentlink_is_link_line(json_object *obj)
{
	return !json_object_object_get_ex(obj, "seq", NULL) &&
	    !json_object_object_get_ex(obj, "replay", NULL);
}

/* An exec_done for one of our exec lines (agentlink.h): uncount it.
 * 1 when obj was one (it is ours, not the owner's). */
static int
agentlink_exec_done(struct agentlink *l, json_object *obj)
{
	const char *type = json_get_string(obj, "type");

	if (!type || strcmp(type, "exec_done") != 0 ||
	    !agentlink_is_link_line(obj))
		return 0;
	if (l->execs > 0)
		l->execs--;
	return 1;
}

/* A replayed line whose type the room does not store (event_types.h):
 * history is replayed through the agent's constructors, which make none,
 * so one here came from a damaged or forged room.db past them.  Every
 * such type is one atriumd or a client acts on (exec_done, access_denied,
 * synced...): dropped, never acted on nor passed on.  1 when dropped. */
static int
agentlink_forged_replay(json_object *obj)
{
	const char *type = json_get_string(obj, "type");

	if (!json_get_bool(obj, "replay", 0) || event_type_stored(type))
		return 0;
	log_warn("a replayed %s line from the agent dropped: a room never "
	    "replays that type", type ? type : "untyped");
	return 1;
}

/* See agentlink.h. */
void
agentlink_cache_init(struct agentlink_cache *c)
{
	memset(c, 0, sizeof(*c));
}

/* See agentlink.h. */
void
agentlink_cache_free(struct agentlink_cache *c)
{
	for (int i = 0; i < AGENTLINK_CACHE_SLOTS; i++) {
		free(c->slot[i].line);
		if (c->slot[i].obj)
			json_object_put(c->slot[i].obj);
	}
	agentlink_cache_init(c);
}

/* FNV-1a over the line's bytes. */
static uint64_t
agentlink_hash(const char *p, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

/* Keep obj as line's parse, in place of the oldest slot, when it is a
 * room event (stamped, not a replay); a copy that cannot be made is
 * simply not kept. */
static void
agentlink_cache_put(struct agentlink_cache *c, uint64_t h, const char *line,
    size_t len, json_object *obj)
{
	unsigned i = c->next;
	char *copy;

	if (!json_object_object_get_ex(obj, "seq", NULL) ||
	    json_object_object_get_ex(obj, "replay", NULL) ||
	    !(copy = malloc(len)))
		return;
	memcpy(copy, line, len);
	free(c->slot[i].line);
	if (c->slot[i].obj)
		json_object_put(c->slot[i].obj);
	c->slot[i].hash = h;
	c->slot[i].line = copy;
	c->slot[i].len = len;
	c->slot[i].obj = json_object_get(obj);
	c->next = (i + 1) % AGENTLINK_CACHE_SLOTS;
}

/* The object of one line (a reference for the caller), from the cache
 * when the same bytes were parsed for another link; NULL with *err. */
static json_object *
agentlink_parse(struct agentlink *l, const char *line, size_t len,
    const char **err)
{
	struct agentlink_cache *c = l->cache;
	json_object *obj;
	uint64_t h;

	if (!c || len > AGENTLINK_CACHE_LINE)
		return jsonl_parse_object(line, len, err);
	h = agentlink_hash(line, len);
	for (int i = 0; i < AGENTLINK_CACHE_SLOTS; i++) {
		if (c->slot[i].line && c->slot[i].hash == h &&
		    c->slot[i].len == len &&
		    memcmp(c->slot[i].line, line, len) == 0) {
			c->hits++;
			return json_object_get(c->slot[i].obj);
		}
	}
	c->parses++;
	if ((obj = jsonl_parse_object(line, len, err)))
		agentlink_cache_put(c, h, line, len, obj);
	return obj;
}

/* Keep fds received with a read; the oldest untaken go when full. */
static void
agentlink_keep_fds(struct agentlink *l, const int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		if (l->nfds == AGENTLINK_MAX_FDS) {
			log_warn("a descriptor from the agent nobody took, "
			    "closed");
			close(agentlink_take_fd(l));
		}
		l->fds[l->nfds++] = fds[i];
	}
}

/* See agentlink.h. */
int
agentlink_take_fd(struct agentlink *l)
{
	int fd;

	if (l->nfds == 0)
		return -1;
	fd = l->fds[0];
	memmove(l->fds, l->fds + 1, (size_t)--l->nfds * sizeof(int));
	return fd;
}

/* Close every descriptor not taken. */
static void
agentlink_drop_fds(struct agentlink *l)
{
	while (l->nfds > 0)
		close(agentlink_take_fd(l));
}

/* Hand every whole line to the owner; an over-long line is dropped. */
static void
agentlink_deliver(struct agentlink *l)
{
	char *line;
	size_t len;
	int r;

	while (!l->paused && (r = jsonl_next(&l->in, &line, &len)) != 0) {
		json_object *obj;
		const char *err;

		if (r < 0) {
			log_warn("over-long line from the agent dropped");
			continue;
		}
		if (!(obj = agentlink_parse(l, line, len, &err))) {
			log_warn("bad line from the agent: %s", err);
			continue;
		}
		if (agentlink_exec_done(l, obj) || agentlink_forged_replay(obj))
			;
		else
			l->on_line(l->arg, obj, line, len);
		json_object_put(obj);
	}
}

/* Socket events: flush, read, deliver; report the end once. */
static void
agentlink_cb(struct watch *w, int revents)
{
	struct agentlink *l = w->arg;
	char chunk[AGENTLINK_READ_CHUNK];

	if (revents & POLLOUT)
		agentlink_flush(l);
	if ((revents & (POLLIN | POLLHUP | POLLERR)) && !l->paused &&
	    !l->ended) {
		int fds[AGENTLINK_MAX_FDS], nfds = 0;
		ssize_t n = fdpass_recv(l->fd, chunk, sizeof(chunk), fds, &nfds,
		    AGENTLINK_MAX_FDS);

		agentlink_keep_fds(l, fds, nfds);
		if (n > 0 && jsonl_feed(&l->in, chunk, (size_t)n) == 0)
			agentlink_deliver(l);
		else if (n == 0 || (n < 0 && n != -EAGAIN && n != -EINTR))
			l->ended = 1;
	}
	agentlink_update(l);
	/* An idle link keeps small buffers, whatever a burst grew. */
	jsonl_shrink(&l->in, AGENTLINK_KEEP);
	buf_shrink(&l->out, AGENTLINK_KEEP);
	if (l->ended && l->on_end) {
		agentlink_end_fn fn = l->on_end;

		l->on_end = NULL;
		fn(l->arg);
	}
}

/* See agentlink.h. */
int
agentlink_dial(const char *run_dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", run_dir,
	    AGENT_SOCKET_NAME) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	/* Non-blocking before connect: an agent that has stopped reading
	 * fills its backlog, and a blocking connect would then hang every
	 * session on the loop; this one fails with EAGAIN instead (a unix
	 * socket's connect never returns EINPROGRESS). */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* See agentlink.h. */
int
agentlink_attach(struct agentlink *l, struct loop *loop, int fd,
    agentlink_line_fn on_line, agentlink_end_fn on_end, void *arg)
{
	if (fd < 0)
		return fd;
	fd_set_nonblock(fd, 1);
	fd_set_cloexec(fd, 1);
	l->fd = fd;
	l->paused = l->ended = l->execs = 0;
	l->on_line = on_line;
	l->on_end = on_end;
	l->arg = arg;
	buf_reset(&l->out);
	jsonl_free(&l->in);
	jsonl_init(&l->in, PROTO_MAX_LINE);
	loop_add(loop, &l->w, fd, POLLIN, agentlink_cb, l);
	return 0;
}

/* Connect to the room's socket. */
int
agentlink_connect(struct agentlink *l, struct loop *loop, const char *run_dir,
    agentlink_line_fn on_line, agentlink_end_fn on_end, void *arg)
{
	return agentlink_attach(l, loop, agentlink_dial(run_dir), on_line,
	    on_end, arg);
}

/* Queue a raw line. */
int
agentlink_send_line(struct agentlink *l, const char *line, size_t len)
{
	if (l->fd < 0 || l->ended)
		return -ENOTCONN;
	if (buf_room(&l->out) < len + 1)
		return -ENOBUFS;
	buf_append(&l->out, line, len);
	buf_append(&l->out, "\n", 1);
	agentlink_flush(l);
	agentlink_update(l);
	return 0;
}

/* Queue obj as one line. */
int
agentlink_send(struct agentlink *l, json_object *obj)
{
	const char *s = json_object_to_json_string_ext(obj,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	return agentlink_send_line(l, s, strlen(s));
}

/* Send with fds; the unsent tail (if any) is queued. */
int
agentlink_send_fds(struct agentlink *l, json_object *obj, const int *fds,
    int nfds)
{
	const char *s = json_object_to_json_string_ext(obj,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(s);
	ssize_t n;
	char nl = '\n';

	if (l->fd < 0 || l->ended)
		return -ENOTCONN;
	if (l->out.len)
		return -EBUSY;
	do
		n = fdpass_send(l->fd, s, len, fds, nfds);
	while (n == -EINTR);
	if (n < 0)
		return (int)n;
	if ((size_t)n < len)
		buf_append(&l->out, s + n, len - (size_t)n);
	buf_append(&l->out, &nl, 1);
	agentlink_flush(l);
	agentlink_update(l);
	return 0;
}

/* Stop or resume reading; lines already framed are delivered on resume. */
void
agentlink_pause(struct agentlink *l, int paused)
{
	int was = l->paused;

	l->paused = paused;
	agentlink_update(l);
	if (was && !paused && l->fd >= 0)
		agentlink_deliver(l);
}

/* Bytes queued for the agent and not yet written. */
size_t
agentlink_pending(const struct agentlink *l)
{
	return l->out.len;
}

/* Best-effort final flush, then close and free the buffers, leaving them
 * empty (no allocation) for a reconnect. */
void
agentlink_close(struct agentlink *l)
{
	if (l->fd >= 0) {
		agentlink_flush(l);
		loop_del(&l->w);
		close(l->fd);
	}
	l->fd = -1;
	l->execs = 0;
	l->on_end = NULL;
	agentlink_drop_fds(l);
	buf_free(&l->out);
	jsonl_free(&l->in);
	buf_init(&l->out, AGENTLINK_MAX_OUT);
	jsonl_init(&l->in, PROTO_MAX_LINE);
}

/* See agentlink.h. */
int
agentlink_send_exec(struct agentlink *l, json_object *obj, const char *line,
    size_t len)
{
	int r = line ? agentlink_send_line(l, line, len) :
	    agentlink_send(l, obj);

	if (r == 0)
		l->execs++;
	return r;
}

/* See agentlink.h. */
int
agentlink_execs(const struct agentlink *l)
{
	return l->fd >= 0 && !l->ended ? l->execs : 0;
}

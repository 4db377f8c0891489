/*
 * monitor_ask.c: the network process's side of the request socket
 * (monitor_ask.h).  Called by session.c, chat.c, control.c, stream.c and
 * room_access.c wherever the single-process atriumd used to act as root.
 *
 * Requests are answered in order.  Most are waited for (the answer is a
 * round trip and a few system calls in the monitor); cmd_end and
 * net_stats, whose answers say nothing, and the rooms listing, which
 * reads a record per room, are not: they are queued in srv->asks
 * (ask_queue.h, as atriumd-http's are), each answer read when it comes,
 * or, when another request is waited for meanwhile, before that one's,
 * and handed to its done callback at the next loop turn
 * (monitor_ask_deliver).  So a client asking for the listing in a loop
 * never stops the loop that streams everyone's output.
 */
#include "monitor_ask.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ask_queue.h"
#include "jsonl.h"
#include "net_stats.h"
#include "log.h"
#include "names.h"
#include "privsep.h"
#include "relay.h"
#include "server.h"
#include "http_relay.h"
#include "session.h"

#define MONITOR_ASK_TOKEN_TEXT	(512 * 1024)	/* what atrium-token prints */

/* A request of type with room (may be NULL) set; NULL when out of memory
 * or for a name the monitor would refuse (it would end this process:
 * no client's name may get that far). */
static json_object *
monitor_ask_req(const char *type, const char *room)
{
	json_object *o;

	if (room && !room_name_valid(room))
		return NULL;
	if (!(o = json_object_new_object()))
		return NULL;
	json_object_object_add(o, "type", json_object_new_string(type));
	if (room)
		json_object_object_add(o, "room", json_object_new_string(room));
	return o;
}

/* A request of type for s (monitor_ask.h): s's room (when room), and
 * who s is: its user, the fingerprint of its key and its client's
 * address, from which the monitor finds the user's rights.  NULL as
 * monitor_ask_req. */
static json_object *
monitor_ask_for(const struct session *s, const char *type, int room)
{
	json_object *o = monitor_ask_req(type, room ? s->room : NULL);

	if (o && !user_name_valid(s->user)) {
		json_object_put(o);
		return NULL;
	}
	if (o) {
		json_object_object_add(o, "user",
		    json_object_new_string(s->user));
		json_object_object_add(o, "key", json_object_new_string(s->fp));
		json_object_object_add(o, "addr",
		    json_object_new_string(s->peer));
	}
	return o;
}

/* The monitor is gone or broke the protocol: stop (once; ask_queue's
 * lost). */
static void
monitor_ask_lost(void *arg, int r)
{
	struct server *srv = arg;

	if (srv->stopping)
		return;
	log_error("the monitor does not answer (%s); stopping", strerror(-r));
	server_begin_stop(srv, 1);
}

/* See monitor_ask.h. */
void
monitor_ask_init(struct server *srv)
{
	ask_queue_init(&srv->asks, &srv->loop, srv->mon_fd,
	    ASK_QUEUE_REFUSAL_NULL, monitor_ask_lost, srv);
}

/* See monitor_ask.h. */
void
monitor_ask_deliver(struct server *srv)
{
	if (ask_queue_deliver(&srv->asks, 0) > 0)
		srv->tick_all = 1;	/* whoever asked looks at it */
}

/* Send req (consumed) and wait for the answer (ask_queue_ask). */
static int
monitor_ask_n(struct server *srv, json_object *req, json_object **ans,
    int *fds, int *nfds, int max)
{
	return ask_queue_ask(&srv->asks, req, ans, fds, nfds, max);
}

/* The same with one fd at most, *fd (-1: none; fd NULL: none wanted). */
static int
monitor_ask(struct server *srv, json_object *req, json_object **ans, int *fd)
{
	int n = 0, r = monitor_ask_n(srv, req, ans, fd, fd ? &n : NULL,
	    fd ? 1 : 0);

	if (fd && n == 0)
		*fd = -1;
	return r;
}

/* A `use` answer "remote" into *home: MONITOR_ASK_REMOTE, or -1 (why in
 * err) when a field is missing or does not fit. */
static int
monitor_ask_home(json_object *ans, struct relay_home *home, char *err,
    size_t errlen)
{
	const char *node = json_get_string(ans, "node");
	const char *addr = json_get_string(ans, "addr");
	const char *key = json_get_string(ans, "hostkey");

	if (!node || !addr || !key || !node[0] ||
	    strlen(node) >= sizeof(home->node) ||
	    strlen(addr) >= sizeof(home->addr) ||
	    strlen(key) >= sizeof(home->hostkey) || !strchr(key, ' ')) {
		snprintf(err, errlen, "the cluster's answer for its home is "
		    "not complete");
		return -1;
	}
	snprintf(home->node, sizeof(home->node), "%s", node);
	snprintf(home->addr, sizeof(home->addr), "%s", addr);
	snprintf(home->hostkey, sizeof(home->hostkey), "%s", key);
	return MONITOR_ASK_REMOTE;
}

/* See monitor_ask.h. */
int
monitor_ask_use(const struct session *s, int create, char *err,
    size_t errlen, struct relay_home *home)
{
	json_object *req = monitor_ask_for(s, "use", 1), *ans;
	const char *state;
	int r;

	if (req && !create)
		json_object_object_add(req, "create",
		    json_object_new_boolean(0));
	if ((r = monitor_ask(s->srv, req, &ans, NULL)) < 0) {
		snprintf(err, errlen, "%s", strerror(-r));
		return -1;
	}
	state = json_get_string(ans, "state");
	snprintf(err, errlen, "%s", json_get_string(ans, "error") ?: "");
	r = state && strcmp(state, "ready") == 0 ? 1 :
	    state && strcmp(state, "starting") == 0 ? 0 :
	    state && strcmp(state, "refused") == 0 ? MONITOR_ASK_REFUSED :
	    state && strcmp(state, "absent") == 0 ? MONITOR_ASK_ABSENT :
	    state && strcmp(state, "remote") == 0 ?
	    monitor_ask_home(ans, home, err, errlen) : -1;
	json_object_put(ans);
	return r;
}

/* See monitor_ask.h. */
int
monitor_ask_relay(struct server *srv, const char *hostkey, char *node,
    size_t nodelen, char *why, size_t whylen)
{
	json_object *req = monitor_ask_req("relay", NULL), *ans;
	const char *name;
	int r;

	snprintf(why, whylen, "the monitor cannot be asked");
	if (req)
		json_object_object_add(req, "hostkey",
		    json_object_new_string(hostkey));
	if ((r = monitor_ask(srv, req, &ans, NULL)) < 0)
		return r;
	name = json_get_string(ans, "node");
	snprintf(why, whylen, "%s", json_get_string(ans, "error") ?:
	    "not a node's host key");
	snprintf(node, nodelen, "%s", name ? name : "");
	r = json_get_bool(ans, "ok", 0) && name && name[0];
	json_object_put(ans);
	return r;
}

/* The fd an answer carried, or its errno. */
static int
monitor_ask_fd(struct server *srv, json_object *req)
{
	json_object *ans;
	int fd, r;

	if ((r = monitor_ask(srv, req, &ans, &fd)) < 0)
		return r;
	if (fd < 0) {
		long long e = json_get_int(ans, "errno", EIO);

		r = e > 0 && e < 4096 ? -(int)e : -EIO;
	} else {
		r = fd;
	}
	json_object_put(ans);
	return r;
}

/* See monitor_ask.h. */
int
monitor_ask_http_conn(const struct session *s, char *why, size_t len)
{
	json_object *req = monitor_ask_for(s, "http_conn", 1), *ans;
	int fd, r;

	snprintf(why, len, "the monitor cannot be asked");
	if ((r = monitor_ask(s->srv, req, &ans, &fd)) < 0)
		return r;
	snprintf(why, len, "%s", json_get_string(ans, "error") ?:
	    "this host cannot serve it now");
	if (fd < 0) {
		long long e = json_get_int(ans, "errno", EIO);

		fd = e > 0 && e < 4096 ? -(int)e : -EIO;
	}
	json_object_put(ans);
	return fd;
}

/* See monitor_ask.h. */
int
monitor_ask_agent(const struct session *s, const struct monitor_hello *h)
{
	json_object *req = monitor_ask_for(s, "agent", 1);

	if (req) {
		json_object_object_add(req, "kind",
		    json_object_new_string(h->kind));
		if (h->feed)
			json_object_object_add(req, "feed",
			    json_object_new_boolean(1));
		if (h->since >= 0)
			json_object_object_add(req, "since",
			    json_object_new_int64(h->since));
		else
			json_object_object_add(req, "history",
			    json_object_new_int64(h->history));
	}
	return monitor_ask_fd(s->srv, req);
}

/* See monitor_ask.h. */
int
monitor_ask_authkeys(struct server *srv)
{
	return monitor_ask_fd(srv, monitor_ask_req("authkeys", NULL));
}

/* See monitor_ask.h. */
int
monitor_ask_pipes(struct server *srv, int p[3][2])
{
	json_object *ans;
	int fds[6], n = 0, r;

	r = monitor_ask_n(srv, monitor_ask_req("pipes", NULL), &ans, fds, &n,
	    6);
	if (r == 0 && n != 6) {
		long long e = json_get_int(ans, "errno", EIO);

		r = e > 0 && e < 4096 ? -(int)e : -EIO;
		for (int i = 0; i < n; i++)
			close(fds[i]);
	}
	json_object_put(ans);
	for (int i = 0; r == 0 && i < 3; i++) {
		p[i][0] = fds[2 * i];
		p[i][1] = fds[2 * i + 1];
	}
	return r;
}

/* See monitor_ask.h. */
void
monitor_ask_why(const struct session *s, char *out, size_t len)
{
	json_object *ans;

	out[0] = '\0';
	if (monitor_ask(s->srv, monitor_ask_for(s, "why", 1), &ans, NULL) < 0)
		return;
	snprintf(out, len, "%s", json_get_string(ans, "why") ?: "");
	json_object_put(ans);
}

/* Fill l from an access answer that has the list (may_enter). */
static int
monitor_ask_list(json_object *ans, struct access_list *l)
{
	json_object *members;
	size_t n;

	access_list_init(l);
	snprintf(l->owner, sizeof(l->owner), "%s",
	    json_get_string(ans, "owner") ?: "");
	if (access_visibility_parse(json_get_string(ans, "visibility") ?: "",
	    &l->visibility) < 0)
		return -EPROTO;
	if (!json_object_object_get_ex(ans, "members", &members) ||
	    !json_object_is_type(members, json_type_array))
		return -EPROTO;
	n = json_object_array_length(members);
	for (size_t i = 0; i < n; i++) {
		const char *m = json_object_get_string(
		    json_object_array_get_idx(members, i));

		if (m && access_list_add(l, m) == -ENOSPC)
			break;
	}
	return 1;
}

/* See monitor_ask.h. */
int
monitor_ask_access(const struct session *s, const char *what,
    struct monitor_access *a)
{
	json_object *req = monitor_ask_for(s, "access", 1), *ans;
	long long e;
	int r;

	memset(a, 0, sizeof(*a));
	access_list_init(&a->list);
	if (req)
		json_object_object_add(req, "for",
		    json_object_new_string(what));
	if ((r = monitor_ask(s->srv, req, &ans, NULL)) < 0)
		return r;
	if ((e = json_get_int(ans, "errno", 0)) > 0) {
		r = e < 4096 ? -(int)e : -EIO;
		snprintf(a->why, sizeof(a->why), "%s",
		    json_get_string(ans, "error") ?: "");
		json_object_put(ans);
		return r;
	}
	a->exists = json_get_bool(ans, "exists", 0);
	a->cluster = json_get_bool(ans, "cluster", 0);
	a->may_create = json_get_bool(ans, "may_create", 0);
	if (a->exists) {
		a->may_enter = json_get_bool(ans, "may_enter", 0);
		a->may_manage = json_get_bool(ans, "may_manage", 0);
	}
	r = a->exists;
	if (a->may_enter && monitor_ask_list(ans, &a->list) < 0)
		r = -EPROTO;
	json_object_put(ans);
	return r;
}

/* See monitor_ask.h. */
struct ask_pending *
monitor_ask_rooms(const struct session *s,
    void (*done)(void *arg, json_object *ev), void *arg)
{
	return ask_queue_later(&s->srv->asks, monitor_ask_for(s, "rooms", 0),
	    done, arg);
}

/* See monitor_ask.h. */
int
monitor_ask_delete(const struct session *s)
{
	json_object *ans;
	long long rc;
	int r;

	if ((r = monitor_ask(s->srv, monitor_ask_for(s, "delete", 1), &ans,
	    NULL)) < 0)
		return r;
	rc = json_get_int(ans, "rc", -EIO);
	json_object_put(ans);
	return rc <= 0 && rc > -4096 ? (int)rc : -EIO;
}

/* See monitor_ask.h. */
void
monitor_ask_event(struct watch *w, int revents)
{
	struct server *srv = w->arg;
	json_object *ev;
	const char *type, *room, *msg;
	int r, fd = -1, nfds = 0;

	(void)revents;
	if ((r = privsep_recv(srv->ev_fd, PRIVSEP_MAX_ANSWER, &ev, &fd, &nfds,
	    1)) < 0) {
		loop_del(w);
		if (!srv->stopping)
			log_error("the monitor is gone (%s); stopping",
			    strerror(-r));
		server_begin_stop(srv, 1);
		return;
	}
	type = json_get_string(ev, "type");
	room = json_get_string(ev, "room");
	msg = json_get_string(ev, "message");
	if (nfds == 1 && type && strcmp(type, "http_relay") == 0)
		http_relay_start(srv, ev, fd);	/* it owns fd */
	else if (nfds == 1)
		close(fd);	/* no other event carries one */
	if (type && strcmp(type, "end_room") == 0 && room && msg)
		server_end_room(srv, room, msg);
	json_object_put(ev);
}

/* See monitor_ask.h. */
int
monitor_ask_transfer(const struct session *s, int import, int fds[3],
    char *why, size_t len)
{
	json_object *req = monitor_ask_for(s, import ? "import" : "export", 1);
	json_object *ans;
	int got[3], n = 0, r;

	snprintf(why, len, "the server cannot do that now");
	r = monitor_ask_n(s->srv, req, &ans, got, &n, 3);
	if (r == 0 && n != 3) {
		snprintf(why, len, "%s", json_get_string(ans, "error") ?:
		    "the server cannot do that now");
		for (int i = 0; i < n; i++)
			close(got[i]);
		r = -EPERM;
	}
	json_object_put(ans);
	for (int i = 0; r == 0 && i < 3; i++)
		fds[i] = got[i];
	return r;
}

/* See monitor_ask.h. */
int
monitor_ask_token(const struct session *s, const struct token_args *a,
    struct buf *out, char *why, size_t len)
{
	json_object *req = monitor_ask_for(s, "token", 0), *ans;
	const char *text, *token, *err;
	int r;

	buf_init(out, MONITOR_ASK_TOKEN_TEXT);
	snprintf(why, len, "the server cannot do that now; try again");
	if (req && token_args_to_json(a, req) < 0) {
		json_object_put(req);
		return -ENOMEM;
	}
	if ((r = monitor_ask(s->srv, req, &ans, NULL)) < 0)
		return r;
	text = json_get_string(ans, "text");
	token = json_get_string(ans, "token");
	err = json_get_string(ans, "error");
	if (err || !text) {
		snprintf(why, len, "%s", err ? err : "the server did not answer");
		r = -EPERM;
	} else if ((token && (buf_append(out, token, strlen(token)) < 0 ||
	    buf_append(out, "\n", 1) < 0)) ||
	    buf_append(out, text, strlen(text)) < 0) {
		r = -ENOBUFS;
	}
	json_object_put(ans);
	return r;
}

/* See monitor_ask.h. */
int
monitor_ask_cmd_begin(const struct session *s, char *why, size_t len)
{
	json_object *ans;
	int r;

	snprintf(why, len, "command refused: the server cannot count it now; "
	    "try again");
	if ((r = monitor_ask(s->srv, monitor_ask_for(s, "cmd_begin", 0), &ans,
	    NULL)) < 0)
		return r;
	if (json_get_bool(ans, "ok", 0)) {
		r = 0;
	} else {
		snprintf(why, len, "%s", json_get_string(ans, "error") ?:
		    "command refused by the server");
		r = 1;
	}
	json_object_put(ans);
	return r;
}

/* See monitor_ask.h. */
void
monitor_ask_cmd_end(struct server *srv, const char *user, int n)
{
	json_object *req = monitor_ask_req("cmd_end", NULL);

	if (req) {
		json_object_object_add(req, "user",
		    json_object_new_string(user));
		json_object_object_add(req, "n", json_object_new_int(n));
	}
	ask_queue_later(&srv->asks, req, NULL, NULL);
}

/* See monitor_ask.h. */
void
monitor_ask_stats(struct server *srv, const long long *v)
{
	json_object *req = monitor_ask_req("net_stats", NULL);

	for (int i = 0; req && i < NET_STAT_N; i++)
		json_object_object_add(req, net_stat_names[i],
		    json_object_new_int64(v[i]));
	ask_queue_later(&srv->asks, req, NULL, NULL);
}

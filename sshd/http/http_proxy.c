/*
 * http_proxy.c: a request relayed to its room's home (http_proxy.h).
 * Called by http_server.c (MHD's calls for the request); the socket's
 * watch and MHD's content reader move the bytes.
 *
 * Rules: nothing waits (the socket is non-blocking; the request is
 * suspended while it waits for the socket, and resumed by its watch);
 * at most HTTP_PROXY_HIGH bytes are held each way; every byte from the
 * home is parsed by http_wire.c, and an answer that is not one ends
 * the request (502 before the head, a cut body after).
 */
#include "http_proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "buf.h"
#include "http_ask.h"
#include "http_req.h"
#include "http_routes.h"
#include "http_server.h"
#include "http_tunnel.h"
#include "http_wire.h"
#include "jsonl.h"
#include "log.h"
#include "util.h"

#define HTTP_PROXY_BLOCK	(32 * 1024)	/* MHD's reads of the body */

struct http_proxy {
	struct http_req *r;
	int fd;				/* to atriumd-net's relay */
	struct watch w;
	struct buf out;			/* to the home, not yet written */
	int chunked_up;			/* the body goes chunked */
	long long body_len;		/* its Content-Length, or -1 */
	long long body_got;		/* bytes of it taken so far */
	int waited;			/* it waited to learn where the room
					 * is: MHD calls again, body or not */
	int body_done;			/* the whole request is in out */
	struct buf in;			/* from the home, not yet used */
	int eof;			/* the home's side ended */
	struct http_wire_head *head;	/* once parsed */
	long long left;			/* of its Content-Length, or -1 */
	struct http_wire_chunked ch;	/* its chunked body */
	char node[64];			/* the home, for the log */
	char url[HTTP_MAX_PATH];	/* the path as sent */
	int deciding;			/* the monitor does not know yet
					 * where the room lives */
	int woken;			/* ask it again */
	long long decide_by_ms;		/* or answer 503 */
	struct http_proxy *next_wait;	/* in srv->proxy_waits */
	struct http_tunnel *tunnel;	/* its WebSocket's, until MHD hands
					 * it the client's socket */
	int head_full;			/* its head did not fit in out */
};

enum http_proxy_decision { HP_HERE, HP_RELAY, HP_ANSWERED, HP_WAIT };

static int http_proxy_move(struct http_req *r, struct http_proxy *p,
    const char *data, size_t *size);
static enum http_proxy_decision http_proxy_decide(struct http_proxy *p,
    int *ret);
static void http_proxy_release(struct http_req *r);

/* ----------------------------------------------------- socket's bytes -- */

/* Watch the socket for what can move now. */
static void
http_proxy_want(struct http_proxy *p)
{
	short want = 0;

	if (p->fd < 0)
		return;		/* deciding: no socket yet */
	if (p->out.len)
		want |= POLLOUT;
	if (!p->eof && p->in.len < HTTP_PROXY_HIGH)
		want |= POLLIN;
	loop_want(&p->w, want);
}

/* Write what out holds, as far as the socket takes it. */
static void
http_proxy_flush(struct http_proxy *p)
{
	while (p->out.len) {
		ssize_t n = send(p->fd, p->out.data, p->out.len,
		    MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			buf_reset(&p->out);	/* the home is gone: eof says */
			p->eof = 1;
			break;
		}
		buf_consume(&p->out, (size_t)n);
	}
}

/* Read what the socket has, up to HTTP_PROXY_HIGH held. */
static void
http_proxy_fill(struct http_proxy *p)
{
	while (!p->eof && p->in.len < HTTP_PROXY_HIGH) {
		char *space = buf_tail(&p->in, HTTP_PROXY_BLOCK);
		ssize_t n;

		if (!space)
			break;
		n = recv(p->fd, space, HTTP_PROXY_BLOCK, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			p->eof = 1;
			break;
		}
		buf_added(&p->in, (size_t)n);
	}
}

/* The socket is ready: move what can move, and let MHD call again. */
static void
http_proxy_ready(struct watch *w, int revents)
{
	struct http_proxy *p = w->arg;

	(void)revents;
	http_proxy_flush(p);
	http_proxy_fill(p);
	http_proxy_want(p);
	http_req_resume(p->r);
}

/* Wait for the socket: the request is suspended until its watch fires. */
static void
http_proxy_wait(struct http_proxy *p)
{

	http_proxy_want(p);
	if (!p->r->suspended) {
		p->r->suspended = 1;
		MHD_suspend_connection(p->r->conn);
	}
}

/* ------------------------------------------------------- the request -- */

/* 1 when a request header is not passed on. */
static int
http_proxy_drop_header(const char *name)
{
	return http_wire_hop_by_hop(name) ||
	    strcasecmp(name, "X-Forwarded-For") == 0 ||
	    strcasecmp(name, "Expect") == 0;	/* MHD answered it here */
}

/* MHD_KeyValueIterator: a header of the request into p->out (none is
 * left out: one that does not fit ends the head, and the request). */
static enum MHD_Result
http_proxy_header(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct http_proxy *p = cls;

	(void)kind;
	if (!http_proxy_drop_header(key) && buf_printf(&p->out, "%s: %s\r\n",
	    key, value ? value : "") < 0)
		p->head_full = 1;
	return p->head_full ? MHD_NO : MHD_YES;
}

/* MHD_KeyValueIterator: an argument of the query into out, as sent (the
 * unescape callback keeps it escaped; MHD made '+' a space, which goes
 * back escaped). */
static enum MHD_Result
http_proxy_arg(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct http_proxy *p = cls;
	struct buf *out = &p->out;
	const char *parts[2] = { key, value };
	int r = 0;

	(void)kind;
	if (out->data[out->len - 1] != '?')
		r |= buf_append(out, "&", 1);
	for (int i = 0; i < 2 && parts[i]; i++) {
		if (i)
			r |= buf_append(out, "=", 1);
		for (const char *c = parts[i]; *c; c++)
			if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f
			    || *c == '#')
				r |= buf_printf(out, "%%%02X", (unsigned char)*c);
			else
				r |= buf_append(out, c, 1);
	}
	if (r < 0)
		p->head_full = 1;
	return p->head_full ? MHD_NO : MHD_YES;
}

/* The request's head into out.  0, -EINVAL (a path that cannot be sent
 * on), or -E2BIG (the head does not fit in out, or out of memory). */
static int
http_proxy_head(struct http_proxy *p, const char *url)
{
	struct http_req *r = p->r;
	const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    "Content-Length");
	const char *te = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    "Transfer-Encoding");

	for (const char *c = url; *c; c++)
		if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f)
			return -EINVAL;
	if (buf_printf(&p->out, "%s %s?", r->method, url) < 0)
		return -E2BIG;
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND,
	    http_proxy_arg, p);
	if (p->out.data[p->out.len - 1] == '?')
		buf_truncate(&p->out, p->out.len - 1);
	if (buf_append(&p->out, " HTTP/1.1\r\n", 11) < 0)
		p->head_full = 1;
	if (!p->head_full)
		MHD_get_connection_values(r->conn, MHD_HEADER_KIND,
		    http_proxy_header, p);
	if (te && strcasecmp(te, "chunked") == 0) {
		p->chunked_up = 1;
		if (buf_printf(&p->out, "Transfer-Encoding: chunked\r\n") < 0)
			p->head_full = 1;
	} else if (cl) {
		p->body_len = strtoll(cl, NULL, 10);
		if (buf_printf(&p->out, "Content-Length: %lld\r\n",
		    p->body_len) < 0)
			p->head_full = 1;
	}
	/* A WebSocket asks the home for the upgrade (http_tunnel.h); any
	 * other request is the link's only one. */
	if (buf_printf(&p->out, (r->route->flags & HTTP_UPGRADE) ?
	    "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n" :
	    "Connection: close\r\n\r\n") < 0)
		p->head_full = 1;
	return p->head_full ? -E2BIG : 0;
}

/* A piece of the body into out (a chunk when chunked): the bytes taken,
 * as many as out has room for (none while it holds HTTP_PROXY_HIGH). */
static size_t
http_proxy_body(struct http_proxy *p, const char *data, size_t n)
{
	char line[20];
	size_t room = buf_room(&p->out), len;

	if (p->eof)
		return n;		/* the home is gone: dropped */
	if (p->out.len >= HTTP_PROXY_HIGH || room <= sizeof(line) + 2)
		return 0;
	if (n > room - sizeof(line) - 2)
		n = room - sizeof(line) - 2;
	len = http_wire_chunk_line(line, n);
	if ((p->chunked_up && buf_append(&p->out, line, len) < 0) ||
	    buf_append(&p->out, data, n) < 0 ||
	    (p->chunked_up && buf_append(&p->out, "\r\n", 2) < 0))
		return 0;	/* not reached: room was counted */
	p->body_got += (long long)n;
	return n;
}

/* 1 when a call without data means the body is all in.  MHD calls
 * without data too when it resumes a request suspended before its body
 * (one that waited to learn where its room lives). */
static int
http_proxy_body_over(const struct http_proxy *p)
{
	if (p->eof)
		return 1;	/* the home is gone: its answer, or 502 */
	if (p->chunked_up)
		return p->body_got > 0 || !p->waited;
	return p->body_len <= 0 || p->body_got >= p->body_len;
}

/* ------------------------------------------------------ the response -- */

/* MHD_ContentReaderCallback: the home's body, as it comes. */
static ssize_t
http_proxy_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct http_proxy *p = cls;
	size_t n = 0, got;
	ssize_t k;

	(void)pos;
	while (p->in.len && n == 0) {
		if (p->head->chunked) {
			k = http_wire_chunked_decode(&p->ch, p->in.data,
			    p->in.len, out, max, &got);
			if (k < 0) {
				log_warn("relayed answer from %s: not chunked "
				    "encoding; cut", p->node);
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
			buf_consume(&p->in, (size_t)k);
			n = got;
			if (http_wire_chunked_done(&p->ch))
				break;
		} else {
			n = p->in.len < max ? p->in.len : max;
			if (p->left >= 0 && (long long)n > p->left)
				n = (size_t)p->left;
			memcpy(out, p->in.data, n);
			buf_consume(&p->in, n);
			if (p->left >= 0)
				p->left -= (long long)n;
			break;
		}
	}
	http_proxy_want(p);
	if (n) {
		p->r->bytes += n;
		return (ssize_t)n;
	}
	if ((p->head->chunked && http_wire_chunked_done(&p->ch)) ||
	    p->left == 0 || (!p->head->chunked && p->left < 0 && p->eof))
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (p->eof)
		return MHD_CONTENT_READER_END_WITH_ERROR;	/* cut short */
	http_proxy_wait(p);
	return 0;
}

/* The home took the WebSocket: the client is answered 101 with the
 * home's headers, and the socket becomes a tunnel's (http_tunnel.h).
 * MHD's result. */
static int
http_proxy_upgrade(struct http_proxy *p)
{
	struct http_req *r = p->r;
	struct http_tunnel *t;
	struct MHD_Response *resp;
	int fd = p->fd;

	if (!(r->route->flags & HTTP_UPGRADE))
		return http_reply_error(r, 502, "the room's host switched "
		    "protocols for a request that asked for none");
	loop_del(&p->w);
	p->fd = -1;
	r->srv->nproxies--;	/* the tunnel counts it from now on */
	if (!(t = http_tunnel_new(r->srv, fd, p->in.data, p->in.len,
	    &p->tunnel)) ||
	    !(resp = http_tunnel_response(t)))
		return http_reply_error(r, 503, "out of memory; try again");
	buf_reset(&p->in);
	for (int i = 0; i < p->head->nheaders; i++)
		if (!http_wire_hop_by_hop(p->head->h[i].name))
			MHD_add_response_header(resp, p->head->h[i].name,
			    p->head->h[i].value);
	MHD_add_response_header(resp, "Upgrade", "websocket");
	return http_reply_queue_as_is(r, 101, resp);
}

/* MHD's response for the parsed head: its status, its end-to-end
 * headers, the body through http_proxy_read.  MHD's result. */
static int
http_proxy_respond(struct http_proxy *p)
{
	struct http_req *r = p->r;
	struct http_wire_head *h = p->head;
	int nobody = strcmp(r->method, "HEAD") == 0 || h->status == 204 ||
	    h->status == 304 || h->status < 200;
	struct MHD_Response *resp;

	if (h->status == 101)
		return http_proxy_upgrade(p);
	if (h->status < 200) {	/* no Expect went there: none is due */
		log_warn("relayed request for room '%s': an interim answer "
		    "(%u) from %s", r->room, h->status, p->node);
		return http_reply_error(r, 502, "the room's host answered with "
		    "something that is not HTTP");
	}
	p->left = nobody ? 0 : h->length;
	resp = nobody || h->length == 0 ?
	    MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT) :
	    MHD_create_response_from_callback(h->length >= 0 ?
	    (uint64_t)h->length : MHD_SIZE_UNKNOWN, HTTP_PROXY_BLOCK,
	    http_proxy_read, p, NULL);
	if (!resp)
		return http_reply_error(r, 503, "out of memory; try again");
	for (int i = 0; i < h->nheaders; i++)
		if (!http_wire_hop_by_hop(h->h[i].name))
			MHD_add_response_header(resp, h->h[i].name,
			    h->h[i].value);
	return http_reply_queue_as_is(r, h->status, resp);
}

/* The home's head, once all of it came: answer r with it.  1 when r is
 * answered (*ret MHD's result), 0 while it is still to come. */
static int
http_proxy_answer(struct http_proxy *p, int *ret)
{
	ssize_t n;

	if (!p->head && !(p->head = malloc(sizeof(*p->head)))) {
		*ret = http_reply_error(p->r, 503, "out of memory; try again");
		return 1;
	}
	n = http_wire_head_parse(p->in.data, p->in.len, p->head);
	if (n == 0 && !p->eof && p->in.len < HTTP_WIRE_MAX_HEAD)
		return 0;
	if (n <= 0) {
		log_warn("relayed request for room '%s': %s from %s",
		    p->r->room, p->eof && n == 0 ? "no answer" :
		    "an answer that is not HTTP", p->node);
		*ret = http_reply_error(p->r, 502, p->eof && n == 0 && !p->in.len
		    ? "the room's host did not answer; try again in a moment"
		    : "the room's host answered with something that is not "
		    "HTTP");
		return 1;
	}
	buf_consume(&p->in, (size_t)n);
	*ret = http_proxy_respond(p);
	return 1;
}

/* 1 when r's client sends a body (a length above 0, or chunked). */
static int
http_proxy_has_body(struct http_req *r)
{
	const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    "Content-Length");
	const char *te = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    "Transfer-Encoding");

	return (cl && strtoll(cl, NULL, 10) > 0) || te;
}

/* See http_proxy.h. */
int
http_proxy_access(struct http_req *r, const char *data, size_t *size,
    int *ret)
{
	struct http_proxy *p = r->proxy;

	*ret = MHD_YES;
	if (r->answered) {
		*size = 0;	/* the rest of a refused body, dropped */
		return 1;
	}
	if (p->deciding) {
		enum http_proxy_decision d;

		if (!p->woken) {	/* MHD called before the wake */
			http_proxy_wait(p);
			return 1;
		}
		d = http_proxy_decide(p, ret);
		if (d == HP_HERE) {
			http_proxy_release(r);
			/* This call is MHD's after the resume, before the body:
			 * the route's end-of-body call is still to come. */
			return *size == 0 && http_proxy_has_body(r);
		}
		if (d != HP_RELAY)
			return 1;
	}
	*ret = http_proxy_move(r, p, data, size);
	return 1;
}

/* A call for relayed r: its body's piece, or its end.  MHD's result. */
static int
http_proxy_move(struct http_req *r, struct http_proxy *p, const char *data,
    size_t *size)
{
	int ret;

	if (*size) {
		size_t took, used = 0;

		/* As much as the socket takes now: waiting is only for a
		 * socket that holds what out holds (its POLLOUT wakes it). */
		do {
			http_proxy_flush(p);
			took = http_proxy_body(p, data + used, *size - used);
			used += took;
		} while (took && used < *size);
		http_proxy_flush(p);
		*size -= used;
		if (*size)
			http_proxy_wait(p);
		else
			http_proxy_want(p);
		return MHD_YES;
	}
	if (!p->body_done && !http_proxy_body_over(p)) {
		p->waited = 0;	/* MHD reads the body, then calls */
		return MHD_YES;
	}
	if (!p->body_done) {
		char line[20];

		if (p->chunked_up)
			buf_append(&p->out, line, http_wire_chunk_line(line, 0));
		p->body_done = 1;
	}
	http_proxy_flush(p);
	http_proxy_fill(p);
	if (http_proxy_answer(p, &ret))
		return ret;
	http_proxy_wait(p);
	return MHD_YES;
}

/* ----------------------------------------------------------- the start -- */

static void
http_proxy_free(void *arg)
{
	struct http_proxy *p = arg;
	struct http_proxy **pp = &p->r->srv->proxy_waits;

	while (*pp && *pp != p)
		pp = &(*pp)->next_wait;
	if (*pp)
		*pp = p->next_wait;
	if (p->fd >= 0) {
		loop_del(&p->w);
		close(p->fd);
		p->r->srv->nproxies--;
	}
	/* The client went before MHD handed its socket over: the tunnel
	 * would keep the home's WebSocket open (http_tunnel.h). */
	if (p->tunnel)
		http_tunnel_drop(p->tunnel);
	buf_free(&p->out);
	buf_free(&p->in);
	free(p->head);
	p->r->proxy = NULL;
	free(p);
}

/* Relay p's request through fd (owned from now on).  0, or -errno
 * (http_proxy_head's, or fcntl's). */
static int
http_proxy_start(struct http_proxy *p, int fd)
{
	int r;

	p->fd = fd;
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	p->r->srv->nproxies++;
	loop_add(&p->r->srv->loop, &p->w, fd, 0, http_proxy_ready, p);
	if ((r = http_proxy_head(p, p->url)) < 0)
		return r;
	http_proxy_flush(p);
	http_proxy_want(p);
	log_debug("%s %s relayed to host %s", p->r->method, p->r->path,
	    p->node);
	return 0;
}

/* The monitor's word on r's room: HP_HERE, HP_WAIT (not known yet),
 * HP_ANSWERED (*ret), or HP_RELAY with *fd the socket to relay through
 * (node its home). */
static enum http_proxy_decision
http_proxy_ask(struct http_req *r, int *ret, int *fd, char *node, size_t len)
{
	json_object *req = http_ask_new(r, "http_relay", 1), *ans;
	const char *why, *state;
	int nfds = 0, here;

	*fd = -1;
	if (req && r->relayed)
		json_object_object_add(req, "relayed",
		    json_object_new_boolean(1));
	if (http_ask(r->srv, req, &ans, fd, &nfds, 1) < 0) {
		*ret = http_reply_error(r, 503, "atriumd is stopping");
		return HP_ANSWERED;
	}
	here = json_get_bool(ans, "here", 0);
	state = json_get_string(ans, "state");
	if (here && !json_get_bool(ans, "cluster", 1))
		r->srv->no_cluster = 1;	/* every room is here, for good */
	snprintf(node, len, "%s", json_get_string(ans, "node") ?: "?");
	if (nfds == 1 && !here) {
		json_object_put(ans);
		return HP_RELAY;
	}
	if (nfds == 1)
		close(*fd);
	if (here || (state && strcmp(state, "starting") == 0)) {
		json_object_put(ans);
		return here ? HP_HERE : HP_WAIT;
	}
	if (http_ask_refused(ans, &why))
		*ret = http_reply_error(r, 403, why);
	else if (json_get_bool(ans, "moving", 0))
		*ret = http_reply_error(r, 503, HTTP_PROXY_MOVING);
	else
		*ret = http_reply_error(r, 503, json_get_string(ans, "error") ?:
		    "this host cannot relay to the room's host now; try again");
	json_object_put(ans);
	return HP_ANSWERED;
}

/* A relay past HTTP_PROXY_MAX: the answer instead (fd closed).
 * HP_ANSWERED. */
static enum http_proxy_decision
http_proxy_refuse(struct http_proxy *p, int fd, int *ret)
{
	close(fd);
	*ret = http_reply_error(p->r, 503, "this host relays as many "
	    "requests to other hosts as it may now; try again");
	return HP_ANSWERED;
}

/* Ask where p's room lives and act on it. */
static enum http_proxy_decision
http_proxy_decide(struct http_proxy *p, int *ret)
{
	struct http_req *r = p->r;
	enum http_proxy_decision d;
	int fd, err;

	p->woken = 0;
	if (time_mono_ms() > p->decide_by_ms) {
		*ret = http_reply_error(r, 503, "where the room lives is not "
		    "known yet (the cluster does not answer); try again");
		return HP_ANSWERED;
	}
	d = http_proxy_ask(r, ret, &fd, p->node, sizeof(p->node));
	if (d == HP_WAIT) {
		p->waited = 1;
		p->next_wait = r->srv->proxy_waits;
		r->srv->proxy_waits = p;
		loop_wake_at(&r->srv->loop, p->decide_by_ms + 1);
		http_proxy_wait(p);
		*ret = MHD_YES;
	}
	if (d != HP_RELAY)
		return d;
	p->deciding = 0;
	if (r->srv->nproxies >= HTTP_PROXY_MAX)
		return http_proxy_refuse(p, fd, ret);
	if ((err = http_proxy_start(p, fd)) < 0) {
		*ret = err == -E2BIG ? http_reply_error(r, 431, "the request's "
		    "head is too large to relay to the room's host (128 KiB "
		    "at most)") : err == -EINVAL ? http_reply_error(r, 400,
		    "the request's path cannot be relayed to the room's host")
		    : http_reply_error(r, 503, "this host cannot relay to the "
		    "room's host now; try again");
		return HP_ANSWERED;
	}
	*ret = MHD_YES;
	return HP_RELAY;
}

/* r is served here after all: it lets go of p. */
static void
http_proxy_release(struct http_req *r)
{
	void *p = r->ctx;

	r->ctx = NULL;
	r->ctx_free = NULL;
	http_proxy_free(p);
}

/* See http_proxy.h. */
int
http_proxy_first(struct http_req *r, const char *url, int *ret)
{
	struct http_proxy *p;

	if (!r->room[0] || !(r->route->flags & HTTP_AUTH) ||
	    r->srv->no_cluster)
		return 0;
	if (!(p = calloc(1, sizeof(*p)))) {
		*ret = http_reply_error(r, 503, "out of memory; try again");
		return 1;
	}
	p->r = r;
	p->fd = -1;
	p->w.fd = -1;
	p->left = -1;
	p->deciding = 1;
	p->body_len = -1;
	p->decide_by_ms = time_mono_ms() + HTTP_PROXY_DECIDE_MS;
	snprintf(p->url, sizeof(p->url), "%s", url);
	buf_init(&p->out, 2 * HTTP_PROXY_HIGH);
	buf_init(&p->in, 2 * HTTP_PROXY_HIGH);
	r->proxy = p;
	r->ctx = p;
	r->ctx_free = http_proxy_free;
	if (strlen(url) >= sizeof(p->url) ||
	    http_proxy_decide(p, ret) == HP_HERE) {
		http_proxy_release(r);
		return 0;
	}
	return 1;
}

/* See http_proxy.h. */
void
http_proxy_wake(struct http_server *srv, int all)
{
	struct http_proxy **pp = &srv->proxy_waits;
	long long now = time_mono_ms();

	while (*pp) {
		struct http_proxy *p = *pp;

		if (all || now > p->decide_by_ms) {
			*pp = p->next_wait;
			p->next_wait = NULL;
			p->woken = 1;
			http_req_resume(p->r);
		} else {
			pp = &p->next_wait;
		}
	}
}

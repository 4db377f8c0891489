/*
 * http.c: libcurl's multi interface on the agent's loop (http.h).
 *
 * curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when
 * to wake it (CURLMOPT_TIMERFUNCTION); the loop calls
 * curl_multi_socket_action for each readiness or timeout, and finished
 * transfers are collected with curl_multi_info_read right after.  No other
 * thread, no blocking call.
 *
 * The request's headers carry the API key: curl's verbose output stays off
 * and no header is ever logged.
 */
#include "http.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "log.h"
#include "loop_uring.h"

struct http {
	struct loop *loop;
	CURLM *multi;
	long long timer;	/* loop timer for curl's timeout, 0 */
	struct http_call *calls;	/* in flight */
};

struct http_call {
	struct http_call *next;
	struct http *h;
	CURL *easy;
	struct curl_slist *headers;
	char *body;		/* the request body, sent by curl from here
				 * (CURLOPT_POSTFIELDS: not copied) */
	struct http_cbs cbs;
	long status;		/* known once the body starts */
	struct buf err_body;	/* non-2xx body */
	char retry_after[32], retry_after_ms[32];
	int have_ra, have_ra_ms;
	int refused;
	char errbuf[CURL_ERROR_SIZE];
};

static void http_check_done(struct http *h);

static void
http_on_socket(struct loop *l, int fd, int mask, void *arg)
{
	struct http *h = arg;
	int flags = 0, running;

	if (mask & LOOP_READ)
		flags |= CURL_CSELECT_IN;
	if (mask & LOOP_WRITE)
		flags |= CURL_CSELECT_OUT;
	if (mask & LOOP_ERROR)
		flags |= CURL_CSELECT_ERR;
	curl_multi_socket_action(h->multi, fd, flags, &running);
	http_check_done(h);
}

/* CURLMOPT_SOCKETFUNCTION: watch or forget a socket. */
static int
http_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp,
    void *socketp)
{
	struct http *h = userp;
	int mask = 0;

	if (what == CURL_POLL_REMOVE) {
		loop_del_fd(h->loop, s);
		return 0;
	}
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		mask |= LOOP_READ;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		mask |= LOOP_WRITE;
	if (loop_add_fd(h->loop, s, mask, http_on_socket, h) < 0)
		log_error("cannot watch the model connection's socket");
	return 0;
}

static long
http_on_timer(struct loop *l, long long id, void *arg)
{
	struct http *h = arg;
	int running;

	h->timer = 0;
	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	http_check_done(h);
	return LOOP_NOMORE;
}

/* CURLMOPT_TIMERFUNCTION: (re)arm or cancel the single timer. */
static int
http_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct http *h = userp;

	if (h->timer)
		loop_del_timer(h->loop, h->timer);
	h->timer = 0;
	if (timeout_ms >= 0) {
		h->timer = loop_add_timer(h->loop, timeout_ms, http_on_timer, h);
		if (h->timer < 0) {
			h->timer = 0;
			return -1;
		}
	}
	return 0;
}

int
http_new(struct loop *l, struct http **out)
{
	struct http *h = calloc(1, sizeof(*h));

	*out = NULL;
	if (!h)
		return -ENOMEM;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    !(h->multi = curl_multi_init())) {
		log_error("libcurl initialisation failed");
		free(h);
		return -EIO;
	}
	h->loop = l;
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, http_socket_cb);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, http_timer_cb);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	*out = h;
	return 0;
}

/* Free a call that is no longer in the multi handle. */
static void
http_call_free(struct http_call *c)
{
	struct http_call **pp;

	for (pp = &c->h->calls; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	curl_easy_cleanup(c->easy);
	curl_slist_free_all(c->headers);
	free(c->body);
	buf_free(&c->err_body);
	free(c);
}

void
http_free(struct http *h)
{
	if (!h)
		return;
	while (h->calls)
		http_cancel(h->calls);
	if (h->timer)
		loop_del_timer(h->loop, h->timer);
	curl_multi_cleanup(h->multi);
	free(h);
}

/* CURLOPT_WRITEFUNCTION: a 2xx body goes to the caller, any other is kept
 * for the error message. */
static size_t
http_write_cb(char *p, size_t size, size_t nmemb, void *userp)
{
	struct http_call *c = userp;
	size_t n = size * nmemb;

	if (!c->status)
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
	if (c->status >= 200 && c->status < 300) {
		if (c->cbs.body(c->cbs.arg, p, n) < 0) {
			c->refused = 1;
			return 0;	/* CURLE_WRITE_ERROR ends the transfer */
		}
		return n;
	}
	buf_append(&c->err_body, p, n < buf_room(&c->err_body) ? n :
	    buf_room(&c->err_body));
	return n;
}

/* Copy a header's value (trimmed) if name matches. */
static int
http_header_value(const char *line, size_t n, const char *name, char *out,
    size_t outlen)
{
	size_t k = strlen(name), end;

	if (n <= k + 1 || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return 0;
	line += k + 1;
	n -= k + 1;
	while (n && (*line == ' ' || *line == '\t'))
		line++, n--;
	end = n;
	while (end && (line[end - 1] == '\r' || line[end - 1] == '\n' ||
	    line[end - 1] == ' '))
		end--;
	if (end >= outlen)
		end = outlen - 1;
	memcpy(out, line, end);
	out[end] = '\0';
	return 1;
}

/* CURLOPT_HEADERFUNCTION: keep retry-after and retry-after-ms. */
static size_t
http_header_cb(char *p, size_t size, size_t nmemb, void *userp)
{
	struct http_call *c = userp;
	size_t n = size * nmemb;

	if (http_header_value(p, n, "retry-after-ms", c->retry_after_ms,
	    sizeof(c->retry_after_ms)))
		c->have_ra_ms = 1;
	else if (http_header_value(p, n, "retry-after", c->retry_after,
	    sizeof(c->retry_after)))
		c->have_ra = 1;
	return n;
}

/* Set the options of one POST (a GET when c has no body).  0 or
 * -EINVAL. */
static int
http_setup(struct http_call *c, const struct provider_http *req,
    size_t body_len, int connect_s, int idle_s)
{
	CURL *e = c->easy;

	for (char **hd = req->headers; hd && *hd; hd++) {
		struct curl_slist *n = curl_slist_append(c->headers, *hd);

		if (!n)
			return -ENOMEM;
		c->headers = n;
	}
	if (curl_easy_setopt(e, CURLOPT_URL, req->url) != CURLE_OK)
		return -EINVAL;
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
	if (c->body) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)body_len);
		/* A body of a long transcript is large: copying it for each
		 * request was a part of a step's own time. */
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->body);
	} else {
		/* A question of its own (model_window.h), on a connection of
		 * its own: left in the pool, its socket was watched again
		 * only by the next model request. */
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	}
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)connect_s);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)idle_s);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, http_header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, c);
	return 0;
}

/* Start the transfer of req (a GET when body is NULL), which takes body.
 * 0 with *out, or -errno (logged). */
static int
http_begin(struct http *h, const struct provider_http *req, char *body,
    size_t body_len, int connect_s, int idle_s, const struct http_cbs *cbs,
    struct http_call **out)
{
	struct http_call *c = calloc(1, sizeof(*c));
	int r;

	*out = NULL;
	if (!c) {
		log_error("cannot start the model request: %s",
		    strerror(ENOMEM));
		free(body);
		return -ENOMEM;
	}
	c->body = body;
	c->h = h;
	c->cbs = *cbs;
	buf_init(&c->err_body, HTTP_MAX_ERROR_BODY);
	c->easy = curl_easy_init();
	c->next = h->calls;
	h->calls = c;
	r = c->easy ? http_setup(c, req, body_len, connect_s, idle_s) :
	    -ENOMEM;
	if (r == 0 && curl_multi_add_handle(h->multi, c->easy) != CURLM_OK)
		r = -EIO;
	if (r < 0) {
		log_error("cannot start the model request: %s", strerror(-r));
		http_call_free(c);
		return r;
	}
	*out = c;
	return 0;
}

int
http_start(struct http *h, struct provider_http *req, int connect_s,
    int idle_s, const struct http_cbs *cbs, struct http_call **out)
{
	char *body = req->body;
	size_t body_len = body && req->body_len ? req->body_len :
	    body ? strlen(body) : 0;

	*out = NULL;
	req->body = NULL;
	req->body_len = 0;
	if (!body) {
		log_error("cannot start the model request: it has no body");
		return -EINVAL;
	}
	return http_begin(h, req, body, body_len, connect_s, idle_s, cbs, out);
}

int
http_get(struct http *h, const struct provider_http *req, int connect_s,
    int idle_s, const struct http_cbs *cbs, struct http_call **out)
{
	return http_begin(h, req, NULL, 0, connect_s, idle_s, cbs, out);
}

void
http_cancel(struct http_call *c)
{
	if (!c)
		return;
	curl_multi_remove_handle(c->h->multi, c->easy);
	http_call_free(c);
}

/* Report one finished transfer and free it. */
static void
http_finish(struct http_call *c, CURLcode code)
{
	struct http_result r = { 0 };

	curl_multi_remove_handle(c->h->multi, c->easy);
	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
	r.status = (int)c->status;
	r.curl_code = (int)code;
	if (code != CURLE_OK)
		snprintf(r.error, sizeof(r.error), "%s", c->errbuf[0] ?
		    c->errbuf : curl_easy_strerror(code));
	r.body = c->err_body.data ? c->err_body.data : "";
	r.body_len = c->err_body.len;
	r.retry_after = c->have_ra ? c->retry_after : NULL;
	r.retry_after_ms = c->have_ra_ms ? c->retry_after_ms : NULL;
	r.refused = c->refused;
	c->cbs.done(c->cbs.arg, &r);
	http_call_free(c);
}

/* Collect every finished transfer. */
static void
http_check_done(struct http *h)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(h->multi, &left))) {
		struct http_call *c = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
		if (c)
			http_finish(c, m->data.result);
	}
}

/*
 * http_auth.c: tokens, cookies, origins and client addresses for
 * atriumd-http (http_auth.h).
 */
#include "http_auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "http_ask.h"
#include "http_req.h"
#include "http_server.h"
#include "jsonl.h"
#include "log.h"
#include "util.h"

#define HTTP_ADDR_CHARS	"0123456789abcdefABCDEF.:%"

/* The peer's numeric address into out ("" when unknown); IPv4 mapped
 * into IPv6 is written as IPv4. */
static void
http_auth_peer(struct MHD_Connection *c, char *out, size_t len)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	out[0] = '\0';
	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
		    out, (socklen_t)len);
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
		    &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a))
			inet_ntop(AF_INET, &a->s6_addr[12], out, (socklen_t)len);
		else
			inet_ntop(AF_INET6, a, out, (socklen_t)len);
	}
}

/* See http_auth.h. */
void
http_auth_forwarded(const char *xff, char *out, size_t len)
{
	const char *last;
	char addr[64];
	size_t n;

	if (!xff)
		return;
	last = strrchr(xff, ',');
	last = last ? last + 1 : xff;
	last += strspn(last, " \t");
	n = strcspn(last, " \t");
	if (n == 0 || n >= sizeof(addr) || n >= len)
		return;
	memcpy(addr, last, n);
	addr[n] = '\0';
	if (strspn(addr, HTTP_ADDR_CHARS) == n)
		snprintf(out, len, "%s", addr);
}

/* See http_auth.h. */
int
http_auth_relayed(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port == 0;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port == 0;
	return 0;
}

/* See http_auth.h. */
void
http_auth_addr(struct http_req *r)
{
	http_auth_peer(r->conn, r->addr, sizeof(r->addr));
	r->relayed = http_auth_relayed(r->conn);
	/* A relayed connection's address is the one the front resolved
	 * (its own trusted proxy's word included): no header here moves
	 * it. */
	if (!r->relayed && r->srv->cfg.http_trusted_proxy[0] &&
	    strcmp(r->addr, r->srv->cfg.http_trusted_proxy) == 0)
		http_auth_forwarded(MHD_lookup_connection_value(r->conn,
		    MHD_HEADER_KIND, "X-Forwarded-For"), r->addr,
		    sizeof(r->addr));
}

/* See http_auth.h. */
int
http_auth_loopback(const struct http_req *r)
{
	char peer[64];

	http_auth_peer(r->conn, peer, sizeof(peer));
	if (r->relayed || strcmp(peer, r->addr) != 0)
		return 0;	/* a proxy spoke for someone else */
	return strncmp(peer, "127.", 4) == 0 || strcmp(peer, "::1") == 0;
}

/* The host part of an Origin ("https://HOST[:PORT]"), or NULL. */
static const char *
http_auth_origin_host(const char *origin)
{
	const char *p = strstr(origin, "://");

	return p && p[3] ? p + 3 : NULL;
}

/* See http_auth.h. */
int
http_auth_origin_is(const char *origin, const char *host)
{
	const char *oh = origin ? http_auth_origin_host(origin) : NULL;

	return oh && host && host[0] && strcasecmp(oh, host) == 0;
}

/* See http_auth.h. */
int
http_auth_same_origin(struct http_req *r)
{
	return http_auth_origin_is(MHD_lookup_connection_value(r->conn,
	    MHD_HEADER_KIND, "Origin"), MHD_lookup_connection_value(r->conn,
	    MHD_HEADER_KIND, "Host"));
}

/* See http_auth.h. */
int
http_auth_token_of(const char *h, const char *cookie, char *out,
    size_t len, int *by_cookie, const char **why)
{
	const char *t = NULL;

	*by_cookie = 0;
	if (h && strncasecmp(h, "Bearer ", 7) == 0) {
		t = h + 7;
		t += strspn(t, " ");
	} else if (h) {
		*why = "Authorization must be \"Bearer TOKEN\" (a token from "
		    "ssh HOST atrium-token create)";
		return -1;
	} else if ((t = cookie)) {
		*by_cookie = 1;
	}
	if (!t || !t[0]) {
		*why = "this needs a token: send \"Authorization: Bearer "
		    "TOKEN\" (ssh HOST atrium-token create makes one)";
		return -1;
	}
	if (strlen(t) > HTTP_MAX_TOKEN || strlen(t) >= len) {
		*why = "not a token";
		return -1;
	}
	snprintf(out, len, "%s", t);
	return 0;
}

/* r's token from the Authorization header, else the cookie.  0, or -1
 * with why. */
static int
http_auth_token(struct http_req *r, const char **why)
{
	return http_auth_token_of(MHD_lookup_connection_value(r->conn,
	    MHD_HEADER_KIND, "Authorization"),
	    MHD_lookup_connection_value(r->conn, MHD_COOKIE_KIND, HTTP_COOKIE),
	    r->token, sizeof(r->token), &r->by_cookie, why);
}

/* The origin rules of http_auth.h: 0, or -1 with why. */
static int
http_auth_origin(struct http_req *r, int upgrade, const char **why)
{
	int has = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    "Origin") != NULL;
	int safe = strcmp(r->method, "GET") == 0 ||
	    strcmp(r->method, "HEAD") == 0;

	if (upgrade && (has || r->by_cookie) && !http_auth_same_origin(r)) {
		*why = "a WebSocket from another origin: its Origin must be "
		    "this server (the Host it was sent to)";
		return -1;
	}
	if (!upgrade && r->by_cookie && !safe && !http_auth_same_origin(r)) {
		*why = "a request from another origin with the session cookie: "
		    "its Origin must be this server (the Host it was sent to)";
		return -1;
	}
	return 0;
}

/* Ask the monitor who r's token is for.  0, or an HTTP status with why
 * (copied into buf). */
static unsigned
http_auth_whoami(struct http_req *r, char *buf, size_t len)
{
	json_object *ans;
	const char *why;

	if (http_ask(r->srv, http_ask_new(r, "whoami", 0), &ans, NULL, NULL,
	    0) < 0) {
		snprintf(buf, len, "atriumd is stopping; try again later");
		return 503;
	}
	if (http_ask_refused(ans, &why) || !json_get_string(ans, "user")) {
		snprintf(buf, len, "%s", why ? why : "refused");
		json_object_put(ans);
		return 401;
	}
	snprintf(r->user, sizeof(r->user), "%s", json_get_string(ans, "user"));
	snprintf(r->token_id, sizeof(r->token_id), "%s",
	    json_get_string(ans, "token_id") ?: "");
	r->admin = json_get_bool(ans, "admin", 0);
	r->read_only = json_get_bool(ans, "read_only", 0);
	r->authed = 1;
	json_object_put(ans);
	return 0;
}

/* Refuse r with 429 when its address failed too many tokens this
 * minute (http_guard.h).  0, or 1 with r answered. */
static int
http_auth_throttled(struct http_req *r, int *ret)
{
	int wait = http_guard_wait(&r->srv->guard, r->addr,
	    r->srv->cfg.http_auth_failures, time_mono_ms());
	struct MHD_Response *resp;
	char body[200], after[16];
	int n;

	if (!wait)
		return 0;
	n = snprintf(body, sizeof(body), "{\"error\":\"too many refused tokens "
	    "from your address: try again in %d s\"}\n", wait);
	snprintf(after, sizeof(after), "%d", wait);
	resp = MHD_create_response_from_buffer((size_t)n, body,
	    MHD_RESPMEM_MUST_COPY);
	if (resp) {
		MHD_add_response_header(resp, "Content-Type", "application/json");
		MHD_add_response_header(resp, "Retry-After", after);
		r->bytes = (uint64_t)n;
	}
	*ret = http_reply_queue(r, 429, resp);
	return 1;
}

/* See http_auth.h. */
int
http_auth_check(struct http_req *r, int upgrade, int *ret)
{
	const char *why;
	char buf[400];
	unsigned status;

	if (r->authed)
		return 0;
	if (http_auth_throttled(r, ret))
		return 1;
	if (http_auth_token(r, &why) < 0) {
		*ret = http_reply_error(r, 401, why);
		return 1;
	}
	if (http_auth_origin(r, upgrade, &why) < 0) {
		*ret = http_reply_error(r, 403, why);
		return 1;
	}
	if ((status = http_auth_whoami(r, buf, sizeof(buf))) != 0) {
		if (status == 401)
			http_guard_failed(&r->srv->guard, r->addr,
			    time_mono_ms());
		*ret = http_reply_error(r, status, buf);
		return 1;
	}
	return 0;
}

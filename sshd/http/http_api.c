/*
 * http_api.c: the routes that answer at once (http_api.h).  Called by
 * http_server.c through the route table (http_routes.c), after the
 * flags' checks (a token resolved for HTTP_AUTH rows).  The one that
 * cannot, the rooms listing, asks the monitor with http_ask_later and
 * waits suspended, so that it holds up no other client.
 */
#include "http_api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "buf.h"
#include "fsstats.h"
#include "http_ask.h"
#include "http_auth.h"
#include "http_req.h"
#include "http_server.h"
#include "http_stream.h"
#include "jsonl.h"
#include "log.h"

#define HTTP_METRICS_MAX	(64 * 1024)

/* See http_api.h. */
int
http_api_health(struct http_req *r)
{
	return http_reply_text(r, 200, "text/plain; charset=utf-8", "ok\n", 3);
}

/* Answer r with a refusal or failure the monitor gave (ans).  MHD's
 * result. */
static int
http_api_refusal(struct http_req *r, json_object *ans)
{
	const char *why;

	if (http_ask_refused(ans, &why))
		return http_reply_error(r, 403, why);
	return http_reply_error(r, 503, why ? why : "the monitor could not "
	    "answer; try again");
}

/* A rooms listing asked of the monitor: its answer comes later (an
 * admin's listing of thousands of rooms takes the monitor a while), and
 * the request waits suspended meanwhile. */
struct http_api_listing {
	struct http_req *r;
	struct ask_pending *pending;	/* until the answer came */
	json_object *ans;		/* the answer; NULL: the monitor is
					 * gone */
	int answered;
};

static void
http_api_listing_free(void *arg)
{
	struct http_api_listing *l = arg;

	ask_queue_cancel(l->pending);
	json_object_put(l->ans);
	free(l);
}

/* http_ask_later's done: keep the answer, resume the request. */
static void
http_api_listing_done(void *arg, json_object *ans)
{
	struct http_api_listing *l = arg;

	l->pending = NULL;
	l->ans = json_object_get(ans);
	l->answered = 1;
	http_req_resume(l->r);
}

/* Ask for r's listing; suspend r until it comes.  MHD's result. */
static int
http_api_rooms_ask(struct http_req *r)
{
	struct http_api_listing *l = calloc(1, sizeof(*l));

	if (!l)
		return http_reply_error(r, 503, "out of memory; try again");
	l->r = r;
	r->ctx = l;
	r->ctx_free = http_api_listing_free;
	if (!(l->pending = http_ask_later(r->srv, http_ask_new(r, "rooms", 0),
	    http_api_listing_done, l)))
		return http_reply_error(r, 503, "atriumd is stopping; try "
		    "again later");
	r->suspended = 1;
	MHD_suspend_connection(r->conn);
	return MHD_YES;
}

/* See http_api.h. */
int
http_api_rooms(struct http_req *r)
{
	struct http_api_listing *l = r->ctx;
	json_object *ans, *rooms, *out;
	int ret;

	if (!l)
		return http_api_rooms_ask(r);
	if (!l->answered) {		/* resumed early: wait on */
		r->suspended = 1;
		MHD_suspend_connection(r->conn);
		return MHD_YES;
	}
	if (!(ans = l->ans))
		return http_reply_error(r, 503, "atriumd is stopping; try "
		    "again later");
	if (!json_object_object_get_ex(ans, "rooms", &rooms))
		return http_api_refusal(r, ans);
	out = json_object_new_object();
	json_object_object_add(out, "rooms", json_object_get(rooms));
	if (json_get_bool(ans, "truncated", 0))
		json_object_object_add(out, "truncated",
		    json_object_new_boolean(1));
	ret = http_reply_json(r, 200, out);
	json_object_put(out);
	return ret;
}

/* Answer r with {"user"} (or {} once cleared) and a Set-Cookie of value
 * (empty: clear it).  MHD's result. */
static int
http_api_cookie(struct http_req *r, const char *value)
{
	char cookie[HTTP_MAX_TOKEN + 200], body[128];
	struct MHD_Response *resp;
	int n;

	snprintf(cookie, sizeof(cookie), "%s=%s; HttpOnly; SameSite=Strict; "
	    "Path=/%s%s", HTTP_COOKIE, value, value[0] ? "" : "; Max-Age=0",
	    r->srv->cfg.http_insecure_cookie ? "" : "; Secure");
	n = value[0] ? snprintf(body, sizeof(body), "{\"user\":\"%s\"}\n",
	    r->user) : snprintf(body, sizeof(body), "{}\n");
	resp = MHD_create_response_from_buffer((size_t)n, body,
	    MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Set-Cookie", cookie);
	r->bytes = (uint64_t)n;
	return http_reply_queue(r, 200, resp);
}

/* See http_api.h. */
int
http_api_session_new(struct http_req *r)
{
	if (r->by_cookie)
		return http_reply_error(r, 400, "send the token as "
		    "\"Authorization: Bearer TOKEN\" to start a session");
	return http_api_cookie(r, r->token);
}

/* See http_api.h. */
int
http_api_session_end(struct http_req *r)
{
	if (MHD_lookup_connection_value(r->conn, MHD_COOKIE_KIND,
	    HTTP_COOKIE) && !http_auth_same_origin(r))
		return http_reply_error(r, 403, "a request from another origin "
		    "with the session cookie: its Origin must be this server");
	return http_api_cookie(r, "");
}

/* One metric with its help and type lines. */
static void
http_api_metric(struct buf *b, const char *name, const char *type,
    const char *help, unsigned long long value)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help,
	    name, type, name, value);
}

/* The monitor's command counts (max-commands-per-user, both fronts) and
 * refusals into b, with this process's refusals over a limit. */
static void
http_api_metrics_cmds(struct http_server *srv, json_object *ans,
    struct buf *b)
{
	buf_printf(b, "# HELP atrium_commands_running People's commands "
	    "running (ssh exec, sftp, chat and protocol exec; HTTP exec), by "
	    "front.\n# TYPE atrium_commands_running gauge\n"
	    "atrium_commands_running{front=\"ssh\"} %lld\n"
	    "atrium_commands_running{front=\"http\"} %lld\n",
	    json_get_int(ans, "commands_ssh", 0),
	    json_get_int(ans, "commands_http", 0));
	buf_printf(b, "# HELP atrium_refusals_total Requests refused, by "
	    "reason (cap: max-commands-per-user; token: a token the monitor "
	    "refused; limit: an HTTP limit) and front.\n"
	    "# TYPE atrium_refusals_total counter\n"
	    "atrium_refusals_total{reason=\"cap\",front=\"ssh\"} %lld\n"
	    "atrium_refusals_total{reason=\"cap\",front=\"http\"} %lld\n"
	    "atrium_refusals_total{reason=\"token\",front=\"http\"} %lld\n"
	    "atrium_refusals_total{reason=\"limit\",front=\"http\"} %llu\n"
	    "atrium_refusals_total{reason=\"limit\",front=\"ssh\"} %lld\n",
	    json_get_int(ans, "cap_refused_ssh", 0),
	    json_get_int(ans, "cap_refused_http", 0),
	    json_get_int(ans, "token_refused", 0),
	    (unsigned long long)srv->stats.refused[HTTP_REFUSED_LIMIT],
	    json_get_int(ans, "ssh_refused", 0));
}

/* The network process's SSH sessions by kind (reported to the monitor
 * at most a second ago) into b. */
static void
http_api_metrics_ssh(json_object *ans, struct buf *b)
{
	static const char *const kinds[] = {
		"connections", "chat", "exec", "sftp", "control",
	};
	char key[32];

	buf_printf(b, "# HELP atrium_ssh_sessions SSH connections, and their "
	    "channels by kind (chat, exec, sftp, control: the atrium "
	    "subsystem).\n# TYPE atrium_ssh_sessions gauge\n");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		snprintf(key, sizeof(key), "ssh_%s", kinds[i]);
		buf_printf(b, "atrium_ssh_sessions{kind=\"%s\"} %lld\n",
		    kinds[i], json_get_int(ans, key, 0));
	}
}

/* 1 when name may stand in a label value as it is. */
static int
http_api_label_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	return n > 0 && n < 32 && strspn(name, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* One series of the model's, for each provider of list, into b. */
static void
http_api_metrics_model(json_object *list, struct buf *b, const char *name,
    const char *key, const char *extra)
{
	size_t n = json_object_array_length(list);

	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(list, i);
		const char *provider = json_get_string(o, "provider");

		if (http_api_label_ok(provider))
			buf_printf(b, "%s{provider=\"%s\"%s} %lld\n", name,
			    provider, extra, json_get_int(o, key, 0));
	}
}

/* Every room's model requests, tokens and failures by provider, as the
 * monitor sums them from its agents (at most a ping late), into b. */
static void
http_api_metrics_models(json_object *ans, struct buf *b)
{
	json_object *list;

	if (!json_object_object_get_ex(ans, "models", &list) ||
	    !json_object_is_type(list, json_type_array))
		list = NULL;
	buf_printf(b, "# HELP atrium_model_requests_total Model requests "
	    "answered, by provider.\n"
	    "# TYPE atrium_model_requests_total counter\n");
	if (list)
		http_api_metrics_model(list, b, "atrium_model_requests_total",
		    "requests", "");
	buf_printf(b, "# HELP atrium_model_tokens_total Model tokens, by "
	    "provider and direction.\n"
	    "# TYPE atrium_model_tokens_total counter\n");
	if (list) {
		http_api_metrics_model(list, b, "atrium_model_tokens_total",
		    "input_tokens", ",direction=\"input\"");
		http_api_metrics_model(list, b, "atrium_model_tokens_total",
		    "output_tokens", ",direction=\"output\"");
	}
	buf_printf(b, "# HELP atrium_model_errors_total Model requests that "
	    "failed (each attempt, retried or not), by provider.\n"
	    "# TYPE atrium_model_errors_total counter\n");
	if (list)
		http_api_metrics_model(list, b, "atrium_model_errors_total",
		    "errors", "");
}

/* One kind's figures from the monitor (count, summed nanoseconds, then
 * each bucket alone) into v, the count raised to the buckets' sum when a
 * mount was read between a request's bucket and its count; 0, or -1
 * when they are not that. */
static int
http_api_ws_figures(json_object *a, unsigned long long v[2 + FSSTATS_BUCKETS])
{
	unsigned long long in = 0;

	if (!json_object_is_type(a, json_type_array) ||
	    json_object_array_length(a) != 2 + FSSTATS_BUCKETS)
		return -1;
	for (int f = 0; f < 2 + FSSTATS_BUCKETS; f++) {
		json_object *n = json_object_array_get_idx(a, (size_t)f);

		if (!json_object_is_type(n, json_type_int) ||
		    json_object_get_int64(n) < 0)
			return -1;
		v[f] = (unsigned long long)json_object_get_int64(n);
	}
	for (int i = 0; i < FSSTATS_BUCKETS; i++)
		in += v[2 + i];
	if (v[0] < in)
		v[0] = in;
	return 0;
}

/* One kind's histogram into b: cumulative buckets, +Inf equal to the
 * count. */
static void
http_api_ws_kind(struct buf *b, const char *kind,
    const unsigned long long v[2 + FSSTATS_BUCKETS])
{
	static const char *const le[FSSTATS_BUCKETS] = FSSTATS_BUCKET_LE;
	unsigned long long cum = 0;

	for (int i = 0; i < FSSTATS_BUCKETS; i++) {
		cum += v[2 + i];
		buf_printf(b, "atrium_workspace_op_seconds_bucket{op=\"%s\","
		    "le=\"%s\"} %llu\n", kind, le[i], cum);
	}
	buf_printf(b, "atrium_workspace_op_seconds_bucket{op=\"%s\","
	    "le=\"+Inf\"} %llu\n", kind, v[0]);
	buf_printf(b, "atrium_workspace_op_seconds_sum{op=\"%s\"} %llu.%09llu\n",
	    kind, v[1] / 1000000000ULL, v[1] % 1000000000ULL);
	buf_printf(b, "atrium_workspace_op_seconds_count{op=\"%s\"} %llu\n",
	    kind, v[0]);
}

/* Every room's workspace requests by kind and their latency, as the
 * monitor sums them from the mounts (at most two seconds late), into b. */
static void
http_api_metrics_workspace(json_object *ans, struct buf *b)
{
	static const char *const kinds[FSSTATS_KINDS] = FSSTATS_KIND_NAMES;
	unsigned long long v[FSSTATS_KINDS][2 + FSSTATS_BUCKETS];
	int ok[FSSTATS_KINDS];
	json_object *ws, *a;

	if (!json_object_object_get_ex(ans, "workspace", &ws))
		ws = NULL;
	for (int k = 0; k < FSSTATS_KINDS; k++)
		ok[k] = ws && json_object_object_get_ex(ws, kinds[k], &a) &&
		    http_api_ws_figures(a, v[k]) == 0;
	buf_printf(b, "# HELP atrium_workspace_ops_total Workspace requests "
	    "served (FUSE requests of every room's mount), by kind.\n"
	    "# TYPE atrium_workspace_ops_total counter\n");
	for (int k = 0; k < FSSTATS_KINDS; k++)
		if (ok[k])
			buf_printf(b, "atrium_workspace_ops_total{op=\"%s\"} "
			    "%llu\n", kinds[k], v[k][0]);
	buf_printf(b, "# HELP atrium_workspace_op_seconds Time atrium-fs "
	    "took to serve a workspace request, by kind.\n"
	    "# TYPE atrium_workspace_op_seconds histogram\n");
	for (int k = 0; k < FSSTATS_KINDS; k++)
		if (ok[k])
			http_api_ws_kind(b, kinds[k], v[k]);
}

/* The monitor's counts into b. */
static void
http_api_metrics_monitor(struct http_req *r, struct buf *b)
{
	json_object *req = json_object_new_object(), *ans;

	if (req)
		json_object_object_add(req, "type",
		    json_object_new_string("metrics"));
	if (http_ask(r->srv, req, &ans, NULL, NULL, 0) < 0)
		return;
	buf_printf(b, "# HELP atrium_rooms_active Rooms whose processes "
	    "run, by state.\n# TYPE atrium_rooms_active gauge\n");
	buf_printf(b, "atrium_rooms_active{state=\"ready\"} %lld\n",
	    json_get_int(ans, "rooms_ready", 0));
	buf_printf(b, "atrium_rooms_active{state=\"starting\"} %lld\n",
	    json_get_int(ans, "rooms_starting", 0));
	buf_printf(b, "atrium_rooms_active{state=\"stopping\"} %lld\n",
	    json_get_int(ans, "rooms_stopping", 0));
	http_api_metrics_cmds(r->srv, ans, b);
	http_api_metrics_ssh(ans, b);
	http_api_metrics_models(ans, b);
	http_api_metrics_workspace(ans, b);
	json_object_put(ans);
}

/* This process's counts into b. */
static void
http_api_metrics_http(struct http_server *srv, struct buf *b)
{
	static const char *const why[HTTP_REFUSED_N] = {
		"auth", "forbidden", "limit", "bad_request", "unavailable",
	};
	const struct http_stats *s = &srv->stats;
	long long sse, ws, commands;

	http_api_metric(b, "atrium_http_requests_total", "counter",
	    "HTTP requests answered.", (unsigned long long)s->requests);
	buf_printf(b, "# HELP atrium_http_responses_total HTTP responses by "
	    "status class.\n# TYPE atrium_http_responses_total counter\n");
	for (int i = 1; i < 6; i++)
		buf_printf(b, "atrium_http_responses_total{code=\"%dxx\"} "
		    "%llu\n", i, (unsigned long long)s->by_class[i]);
	buf_printf(b, "# HELP atrium_http_refusals_total HTTP requests "
	    "refused, by reason.\n# TYPE atrium_http_refusals_total "
	    "counter\n");
	for (int i = 0; i < HTTP_REFUSED_N; i++)
		buf_printf(b, "atrium_http_refusals_total{reason=\"%s\"} "
		    "%llu\n", why[i], (unsigned long long)s->refused[i]);
	http_api_metric(b, "atrium_http_response_bytes_total", "counter",
	    "Response body bytes sent.", (unsigned long long)s->bytes_out);
	http_stream_counts(srv, &sse, &ws, &commands);
	buf_printf(b, "# HELP atrium_http_sessions Room connections over "
	    "HTTP, by kind.\n# TYPE atrium_http_sessions gauge\n"
	    "atrium_http_sessions{kind=\"events\"} %lld\n"
	    "atrium_http_sessions{kind=\"websocket\"} %lld\n", sse, ws);
	http_api_metric(b, "atrium_http_commands_running", "gauge", "People's "
	    "commands started over WebSockets, not ended.",
	    (unsigned long long)commands);
	http_api_metric(b, "atrium_http_stream_drops_total", "counter",
	    "Backlogs dropped for slow readers.",
	    (unsigned long long)s->streams_dropped);
	http_api_metric(b, "atrium_http_slow_heads_closed_total", "counter",
	    "Connections closed for taking longer than http-request-timeout "
	    "to send a request head.", srv->slow.closed);
}

/* See http_api.h. */
int
http_api_metrics(struct http_req *r)
{
	struct buf b;
	int ret;

	if (!http_auth_loopback(r)) {
		if (http_auth_check(r, 0, &ret))
			return ret;
		if (!r->admin)
			return http_reply_error(r, 403, "metrics are the "
			    "operator's: a token of an atrium-admin key, or a "
			    "client on a loopback address");
	}
	buf_init(&b, HTTP_METRICS_MAX);
	http_api_metrics_monitor(r, &b);
	http_api_metrics_http(r->srv, &b);
	ret = http_reply_text(r, 200, "text/plain; version=0.0.4; "
	    "charset=utf-8", b.data ? b.data : "", b.len);
	buf_free(&b);
	return ret;
}

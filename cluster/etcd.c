/*
 * etcd.c: the v3 JSON gateway client (etcd.h has the contract and the
 * rules).  Three layers, top-down: base64; the parsers of answers (pure,
 * unit-tested from raw bytes); the transport (one curl easy handle,
 * endpoints tried in turn); the calls, each one request body built with
 * json-c and one parser.
 *
 * What the gateway sends (etcd 3.4, seen on Debian's 3.4.23):
 *   grant      {"header":{..},"ID":"N","TTL":"5"}
 *   keepalive  {"result":{"header":{..},"ID":"N","TTL":"5"}}   (no TTL: gone)
 *   timetolive {"header":{..},"ID":"N","TTL":"4","grantedTTL":"5"} (TTL -1: gone)
 *   range      {"header":{..},"kvs":[{"key":B64,"create_revision":"2",
 *               "mod_revision":"2","version":"1","value":B64,"lease":"N"}],
 *               "count":"1"}
 *   txn        {"header":{..},"succeeded":true,"responses":[{"response_put":..}
 *               | {"response_range":{..range..}}]}
 *   error      {"error":"..","message":"..","code":5}   (gRPC codes)
 * 64-bit numbers come as strings; zero-valued fields are left out.
 */
#include "etcd.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "log.h"

#define ETCD_URLS_MAX	8	/* endpoints of one client */
#define ETCD_URL_MAX	256	/* bytes of one endpoint */

/* gRPC status codes the gateway puts in "code". */
#define GRPC_NOT_FOUND		5
#define GRPC_UNAVAILABLE	14

struct etcd {
	CURL *curl;			/* one handle: keeps its connection */
	char urls[ETCD_URLS_MAX][ETCD_URL_MAX];
	int nurls;
	int cur;			/* endpoint that last answered */
	long timeout_ms;
	struct curl_slist *headers;
	char *body;			/* the answer being read */
	size_t len, cap;
	int too_big;			/* the answer passed ETCD_RESPONSE_MAX */
};

/* --- base64 ------------------------------------------------------------ */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
etcd_b64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t outlen = (len + 2) / 3 * 4;
	char *out = malloc(outlen + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*o++ = b64_alphabet[(v >> 18) & 63];
		*o++ = b64_alphabet[(v >> 12) & 63];
		*o++ = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
		*o++ = i + 2 < len ? b64_alphabet[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

static int
b64_value(unsigned char c)
{
	const char *p = c ? strchr(b64_alphabet, c) : NULL;
	return p ? (int)(p - b64_alphabet) : -1;
}

int
etcd_b64_decode(const char *in, size_t inlen, size_t max, char **out,
    size_t *outlen)
{
	*out = NULL;
	*outlen = 0;
	if (inlen % 4 != 0)
		return -EPROTO;
	size_t pad = 0;
	if (inlen >= 1 && in[inlen - 1] == '=')
		pad++;
	if (inlen >= 2 && in[inlen - 2] == '=')
		pad++;
	size_t n = inlen / 4 * 3 - pad;
	if (n > max)
		return -E2BIG;
	char *buf = malloc(n + 1);
	if (!buf)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < inlen; i += 4) {
		int v[4];
		for (int k = 0; k < 4; k++) {
			int last = i + 4 == inlen;
			if (last && in[i + k] == '=' && k >= 4 - (int)pad)
				v[k] = 0;
			else if ((v[k] = b64_value((unsigned char)in[i + k])) < 0) {
				free(buf);
				return -EPROTO;
			}
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
		    (uint32_t)v[2] << 6 | (uint32_t)v[3];
		unsigned char bytes[3] = { w >> 16, (w >> 8) & 0xff, w & 0xff };
		for (int k = 0; k < 3 && o < n; k++)
			buf[o++] = (char)bytes[k];
	}
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return 0;
}

/* --- parsers ----------------------------------------------------------- */

/* BODY as a JSON object, or NULL (malformed, or not an object). */
static struct json_object *
parse_object(const char *body, size_t len)
{
	if (!body || len == 0 || len > ETCD_RESPONSE_MAX)
		return NULL;
	struct json_tokener *tok = json_tokener_new_ex(32);
	if (!tok)
		return NULL;
	struct json_object *o = json_tokener_parse_ex(tok, body, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t used = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	/* Only white space may follow the object (keepalive adds a newline). */
	while (o && used < len && isspace((unsigned char)body[used]))
		used++;
	if (!o || jerr != json_tokener_success || used != len ||
	    !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* NAME of O as an int64: absent is DEF; a string of digits or an integer;
 * anything else -EPROTO. */
static int
field_int64(struct json_object *o, const char *name, int64_t def, int64_t *out)
{
	struct json_object *v;

	*out = def;
	if (!json_object_object_get_ex(o, name, &v))
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EPROTO;
	const char *s = json_object_get_string(v);
	char *end;
	errno = 0;
	long long n = strtoll(s, &end, 10);
	if (errno || end == s || *end || (!isdigit((unsigned char)*s) && *s != '-'))
		return -EPROTO;
	*out = n;
	return 0;
}

/* etcd's own error answer ({"error":..,"code":N}) as -errno; 0 if O is not
 * one. */
static int
error_answer(struct json_object *o)
{
	struct json_object *v;
	int64_t code;

	if (!json_object_object_get_ex(o, "error", &v) &&
	    !json_object_object_get_ex(o, "code", &v))
		return 0;
	if (field_int64(o, "code", 0, &code) < 0)
		return -EPROTO;
	if (code == GRPC_NOT_FOUND)
		return -ENOENT;
	if (code == GRPC_UNAVAILABLE)
		return -EAGAIN;
	return -EIO;
}

int
etcd_parse_grant(const char *body, size_t len, int64_t *id, int64_t *ttl)
{
	struct json_object *o = parse_object(body, len);
	int r;

	*id = *ttl = 0;
	if (!o)
		return -EPROTO;
	if ((r = error_answer(o)) == 0 &&
	    (field_int64(o, "ID", 0, id) < 0 || field_int64(o, "TTL", 0, ttl) < 0 ||
	    *id == 0 || *ttl <= 0))
		r = -EPROTO;
	json_object_put(o);
	return r;
}

int
etcd_parse_keepalive(const char *body, size_t len, int64_t *ttl)
{
	struct json_object *o = parse_object(body, len), *res;
	int r;

	*ttl = 0;
	if (!o)
		return -EPROTO;
	if ((r = error_answer(o)) == 0) {
		if (!json_object_object_get_ex(o, "result", &res) ||
		    !json_object_is_type(res, json_type_object) ||
		    field_int64(res, "TTL", 0, ttl) < 0)
			r = -EPROTO;
		else
			r = *ttl > 0;
	}
	json_object_put(o);
	return r;
}

int
etcd_parse_ttl(const char *body, size_t len, int64_t *ttl)
{
	struct json_object *o = parse_object(body, len);
	int r;

	*ttl = 0;
	if (!o)
		return -EPROTO;
	if ((r = error_answer(o)) == 0) {
		if (field_int64(o, "TTL", 0, ttl) < 0)
			r = -EPROTO;
		else
			r = *ttl > 0;
	}
	json_object_put(o);
	return r;
}

void
etcd_kvs_free(struct etcd_kv *kvs, size_t n)
{
	if (!kvs)
		return;
	for (size_t i = 0; i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].val);
	}
	free(kvs);
}

/* A base64 string field NAME of O, decoded; absent is "" when OPTIONAL. */
static int
field_b64(struct json_object *o, const char *name, int optional, size_t max,
    char **out, size_t *outlen)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, name, &v)) {
		*outlen = 0;
		if (!optional)
			return -EPROTO;
		*out = strdup("");
		return *out ? 0 : -ENOMEM;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EPROTO;
	return etcd_b64_decode(json_object_get_string(v),
	    (size_t)json_object_get_string_len(v), max, out, outlen);
}

static int
parse_kv(struct json_object *o, struct etcd_kv *kv)
{
	size_t keylen;
	int r;

	memset(kv, 0, sizeof(*kv));
	if (!json_object_is_type(o, json_type_object))
		return -EPROTO;
	if ((r = field_b64(o, "key", 0, ETCD_KEY_MAX, &kv->key, &keylen)) < 0)
		return r;
	if (keylen == 0 || strlen(kv->key) != keylen)
		return -EPROTO;	/* an empty key, or a NUL inside one */
	if ((r = field_b64(o, "value", 1, ETCD_VALUE_MAX, &kv->val, &kv->len)) < 0)
		return r;
	if (field_int64(o, "create_revision", 0, &kv->create_rev) < 0 ||
	    field_int64(o, "mod_revision", 0, &kv->mod_rev) < 0 ||
	    field_int64(o, "lease", 0, &kv->lease) < 0 || kv->create_rev <= 0)
		return -EPROTO;
	return 0;
}

/* The "kvs" array of a range answer O. */
static int
parse_kvs(struct json_object *o, struct etcd_kv **kvs, size_t *n)
{
	struct json_object *arr;

	*kvs = NULL;
	*n = 0;
	if (!json_object_object_get_ex(o, "kvs", &arr))
		return 0;	/* nothing matched */
	if (!json_object_is_type(arr, json_type_array))
		return -EPROTO;
	size_t count = json_object_array_length(arr);
	if (count > ETCD_RANGE_MAX)
		return -E2BIG;
	if (count == 0)
		return 0;
	struct etcd_kv *out = calloc(count, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		int r = parse_kv(json_object_array_get_idx(arr, i), &out[i]);
		if (r < 0) {
			etcd_kvs_free(out, i + 1);
			return r;
		}
	}
	*kvs = out;
	*n = count;
	return 0;
}

int
etcd_parse_range(const char *body, size_t len, struct etcd_kv **kvs, size_t *n)
{
	struct json_object *o = parse_object(body, len);
	int r;

	*kvs = NULL;
	*n = 0;
	if (!o)
		return -EPROTO;
	if ((r = error_answer(o)) == 0)
		r = parse_kvs(o, kvs, n);
	json_object_put(o);
	return r;
}

/* The first "response_range" among a txn's RESPONSES, if any. */
static int
txn_first_range(struct json_object *responses, struct etcd_kv **kvs, size_t *n)
{
	if (!json_object_is_type(responses, json_type_array))
		return -EPROTO;
	size_t count = json_object_array_length(responses);
	for (size_t i = 0; i < count; i++) {
		struct json_object *resp = json_object_array_get_idx(responses, i);
		struct json_object *range;
		if (!json_object_is_type(resp, json_type_object))
			return -EPROTO;
		if (json_object_object_get_ex(resp, "response_range", &range)) {
			if (!json_object_is_type(range, json_type_object))
				return -EPROTO;
			return parse_kvs(range, kvs, n);
		}
	}
	return 0;
}

int
etcd_parse_txn(const char *body, size_t len, int *succeeded,
    struct etcd_kv **kvs, size_t *n)
{
	struct json_object *o = parse_object(body, len), *v;
	int r;

	*succeeded = 0;
	*kvs = NULL;
	*n = 0;
	if (!o)
		return -EPROTO;
	if ((r = error_answer(o)) == 0) {
		if (!json_object_object_get_ex(o, "header", &v) ||
		    !json_object_is_type(v, json_type_object))
			r = -EPROTO;
		else if (json_object_object_get_ex(o, "succeeded", &v) &&
		    !json_object_is_type(v, json_type_boolean))
			r = -EPROTO;
		else
			*succeeded = v && json_object_get_boolean(v);
		if (r == 0 && json_object_object_get_ex(o, "responses", &v))
			r = txn_first_range(v, kvs, n);
	}
	json_object_put(o);
	return r;
}

/* --- transport --------------------------------------------------------- */

static size_t
on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct etcd *e = arg;
	size_t n = size * nmemb;

	if (e->len + n > ETCD_RESPONSE_MAX) {
		e->too_big = 1;
		return 0;	/* curl stops with CURLE_WRITE_ERROR */
	}
	if (e->len + n + 1 > e->cap) {
		size_t cap = e->cap ? e->cap : 4096;
		while (cap < e->len + n + 1)
			cap *= 2;
		char *p = realloc(e->body, cap);
		if (!p)
			return 0;
		e->body = p;
		e->cap = cap;
	}
	memcpy(e->body + e->len, data, n);
	e->len += n;
	e->body[e->len] = '\0';
	return n;
}

static int
add_url(struct etcd *e, const char *url, size_t len, char *err, size_t errlen)
{
	if (e->nurls == ETCD_URLS_MAX || len == 0 || len >= ETCD_URL_MAX ||
	    (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)) {
		snprintf(err, errlen, "etcd endpoint '%.*s': expected http://HOST:PORT "
		    "(at most %d, comma-separated)", (int)(len > 80 ? 80 : len), url,
		    ETCD_URLS_MAX);
		return -EINVAL;
	}
	memcpy(e->urls[e->nurls], url, len);
	e->urls[e->nurls][len] = '\0';
	/* "http://h:p/" and "http://h:p" name the same gateway. */
	if (len > 1 && e->urls[e->nurls][len - 1] == '/')
		e->urls[e->nurls][len - 1] = '\0';
	e->nurls++;
	return 0;
}

struct etcd *
etcd_open(const char *urls, char *err, size_t errlen)
{
	struct etcd *e = calloc(1, sizeof(*e));

	if (!e) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (const char *p = urls ? urls : ""; *p;) {
		size_t n = strcspn(p, ",");
		if (add_url(e, p, n, err, errlen) < 0)
			goto fail;
		p += n + (p[n] == ',');
	}
	if (e->nurls == 0) {
		snprintf(err, errlen, "no etcd endpoint given (etcd=URL[,URL...])");
		goto fail;
	}
	e->timeout_ms = ETCD_TIMEOUT_MS;
	e->curl = curl_easy_init();
	e->headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (!e->curl || !e->headers) {
		snprintf(err, errlen, "cannot start libcurl");
		goto fail;
	}
	return e;
fail:
	etcd_close(e);
	return NULL;
}

void
etcd_close(struct etcd *e)
{
	if (!e)
		return;
	if (e->curl)
		curl_easy_cleanup(e->curl);
	curl_slist_free_all(e->headers);
	free(e->body);
	free(e);
}

void
etcd_set_timeout(struct etcd *e, long ms)
{
	e->timeout_ms = ms < 50 ? 50 : ms;
}

/* One POST of REQ to PATH on endpoint I: 0 with e->body/e->len the answer
 * (any HTTP status: etcd's errors are JSON too), 1 when this endpoint is
 * out of reach (try another), -errno. */
static int
post_once(struct etcd *e, int i, const char *path, const char *req)
{
	char url[ETCD_URL_MAX + 64];
	long status = 0;

	snprintf(url, sizeof(url), "%s%s", e->urls[i], path);
	e->len = 0;
	e->too_big = 0;
	curl_easy_reset(e->curl);
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, e->headers);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
	CURLcode cr = curl_easy_perform(e->curl);
	if (e->too_big) {
		log_warn("etcd %s%s: answer over %u bytes", e->urls[i], path,
		    ETCD_RESPONSE_MAX);
		return -E2BIG;
	}
	if (cr != CURLE_OK) {
		log_debug("etcd %s%s: %s", e->urls[i], path, curl_easy_strerror(cr));
		return 1;
	}
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
	/* A member that lost its quorum or is stopping: ask another. */
	if (status == 502 || status == 503 || status == 504)
		return 1;
	if (e->len == 0)
		return 1;
	return 0;
}

/* POST REQ to PATH, starting at the endpoint that last answered: 0 with
 * the answer in e->body/e->len, or -errno (-ETIMEDOUT: none answered). */
static int
post(struct etcd *e, const char *path, const char *req)
{
	for (int k = 0; k < e->nurls; k++) {
		int i = (e->cur + k) % e->nurls;
		int r = post_once(e, i, path, req);
		if (r < 0)
			return r;
		if (r == 0) {
			e->cur = i;
			return 0;
		}
	}
	log_warn("etcd %s: no endpoint of %d answered", path, e->nurls);
	return -ETIMEDOUT;
}

/* POST the JSON object REQ (consumed) to PATH. */
static int
post_json(struct etcd *e, const char *path, struct json_object *req)
{
	if (!req)
		return -ENOMEM;
	const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	int r = s ? post(e, path, s) : -ENOMEM;
	json_object_put(req);
	return r;
}

/* --- request bodies ---------------------------------------------------- */

static int
add_int64(struct json_object *o, const char *name, int64_t v)
{
	char s[32];
	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_object_object_add(o, name, json_object_new_string(s));
}

/* Add NAME = base64(DATA) to O: 0 or -ENOMEM. */
static int
add_b64(struct json_object *o, const char *name, const void *data, size_t len)
{
	char *b = etcd_b64_encode(data, len);
	if (!b)
		return -ENOMEM;
	int r = json_object_object_add(o, name, json_object_new_string(b));
	free(b);
	return r < 0 ? -ENOMEM : 0;
}

static struct json_object *
key_object(const char *key)
{
	struct json_object *o = json_object_new_object();
	if (o && add_b64(o, "key", key, strlen(key)) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static struct json_object *
put_request(const char *key, const void *val, size_t len, int64_t lease)
{
	struct json_object *o = key_object(key);
	if (o && (add_b64(o, "value", val, len) < 0 ||
	    (lease && add_int64(o, "lease", lease) < 0))) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* A compare of KEY: TARGET is "CREATE", "MOD" (REV is the revision
 * either way) or "VALUE". */
static struct json_object *
compare(const char *key, const char *target, int64_t create_rev,
    const void *val, size_t len)
{
	struct json_object *c = key_object(key);
	if (!c)
		return NULL;
	json_object_object_add(c, "target", json_object_new_string(target));
	json_object_object_add(c, "result", json_object_new_string("EQUAL"));
	if (strcmp(target, "CREATE") == 0)
		add_int64(c, "create_revision", create_rev);
	else if (strcmp(target, "MOD") == 0)
		add_int64(c, "mod_revision", create_rev);
	else if (add_b64(c, "value", val, len) < 0) {
		json_object_put(c);
		return NULL;
	}
	return c;
}

/* {"OP": REQ} as one operation of a txn branch. */
static struct json_object *
op(const char *name, struct json_object *req)
{
	struct json_object *o = req ? json_object_new_object() : NULL;
	if (!o) {
		json_object_put(req);
		return NULL;
	}
	json_object_object_add(o, name, req);
	return o;
}

/* A txn of the compares CMP (N of them, consumed), then SUCCESS and
 * FAILURE (consumed, either may be NULL). */
static struct json_object *
txn_request(struct json_object **cmp, int n, struct json_object *success,
    struct json_object *failure)
{
	struct json_object *t = json_object_new_object();
	struct json_object *c = json_object_new_array();
	int ok = t && c;

	for (int i = 0; i < n; i++) {
		if (!cmp[i] || !c || json_object_array_add(c, cmp[i]) < 0) {
			json_object_put(cmp[i]);
			ok = 0;
		}
	}
	struct json_object *s = json_object_new_array();
	struct json_object *f = json_object_new_array();
	if (!s || !f || (success && json_object_array_add(s, success) < 0) ||
	    (failure && json_object_array_add(f, failure) < 0))
		ok = 0;
	if (!ok) {
		json_object_put(t);
		json_object_put(c);
		json_object_put(s);
		json_object_put(f);
		return NULL;
	}
	json_object_object_add(t, "compare", c);
	json_object_object_add(t, "success", s);
	json_object_object_add(t, "failure", f);
	return t;
}

/* --- calls ------------------------------------------------------------- */

static struct json_object *
lease_request(int64_t id)
{
	struct json_object *o = json_object_new_object();
	if (o && add_int64(o, "ID", id) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

int
etcd_lease_grant(struct etcd *e, int64_t ttl, int64_t *id)
{
	struct json_object *o = json_object_new_object();
	int64_t got;
	int r;

	*id = 0;
	if (o)
		add_int64(o, "TTL", ttl);
	if ((r = post_json(e, "/v3/lease/grant", o)) < 0)
		return r;
	if ((r = etcd_parse_grant(e->body, e->len, id, &got)) < 0)
		log_warn("etcd lease grant: bad answer (%s)", strerror(-r));
	return r;
}

int
etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl)
{
	int r;

	*ttl = 0;
	if ((r = post_json(e, "/v3/lease/keepalive", lease_request(id))) < 0)
		return r;
	if ((r = etcd_parse_keepalive(e->body, e->len, ttl)) < 0)
		log_warn("etcd lease keepalive: bad answer (%s)", strerror(-r));
	return r;
}

int
etcd_lease_ttl(struct etcd *e, int64_t id, int64_t *ttl)
{
	int r;

	*ttl = 0;
	if ((r = post_json(e, "/v3/lease/timetolive", lease_request(id))) < 0)
		return r;
	r = etcd_parse_ttl(e->body, e->len, ttl);
	return r == -ENOENT ? 0 : r;
}

int
etcd_lease_revoke(struct etcd *e, int64_t id)
{
	struct json_object *o;
	int r;

	if ((r = post_json(e, "/v3/lease/revoke", lease_request(id))) < 0)
		return r;
	if (!(o = parse_object(e->body, e->len)))
		return -EPROTO;
	r = error_answer(o);
	json_object_put(o);
	return r == -ENOENT ? 0 : r;
}

int
etcd_put(struct etcd *e, const char *key, const void *val, size_t len,
    int64_t lease)
{
	struct json_object *o;
	int r;

	if ((r = post_json(e, "/v3/kv/put", put_request(key, val, len, lease))) < 0)
		return r;
	if (!(o = parse_object(e->body, e->len)))
		return -EPROTO;
	r = error_answer(o);
	json_object_put(o);
	if (r < 0)
		log_warn("etcd put %s: %s", key, strerror(-r));
	return r;
}

/* Take KV[0]'s value and revisions into the caller's outputs. */
static void
take_first(struct etcd_kv *kvs, size_t n, char **val, size_t *len,
    int64_t *create_rev, int64_t *mod_rev)
{
	if (val) {
		*val = n ? kvs[0].val : NULL;
		if (n)
			kvs[0].val = NULL;
	}
	if (len)
		*len = n ? kvs[0].len : 0;
	if (create_rev)
		*create_rev = n ? kvs[0].create_rev : 0;
	if (mod_rev)
		*mod_rev = n ? kvs[0].mod_rev : 0;
}

/* A range of the one key KEY (its value too unless keys_only): what
 * etcd_get answers. */
static int
get_one(struct etcd *e, const char *key, int keys_only, char **val,
    size_t *len, int64_t *create_rev, int64_t *mod_rev)
{
	struct json_object *o = key_object(key);
	struct etcd_kv *kvs;
	size_t n;
	int r;

	take_first(NULL, 0, val, len, create_rev, mod_rev);
	if (o && keys_only)
		json_object_object_add(o, "keys_only",
		    json_object_new_boolean(1));
	if ((r = post_json(e, "/v3/kv/range", o)) < 0)
		return r;
	if ((r = etcd_parse_range(e->body, e->len, &kvs, &n)) < 0) {
		log_warn("etcd get %s: bad answer (%s)", key, strerror(-r));
		return r;
	}
	/* A range of one key answers that key or nothing. */
	if (n > 1 || (n == 1 && strcmp(kvs[0].key, key) != 0)) {
		etcd_kvs_free(kvs, n);
		return -EPROTO;
	}
	take_first(kvs, n, val, len, create_rev, mod_rev);
	etcd_kvs_free(kvs, n);
	return n == 1;
}

int
etcd_get(struct etcd *e, const char *key, char **val, size_t *len,
    int64_t *create_rev, int64_t *mod_rev)
{
	return get_one(e, key, 0, val, len, create_rev, mod_rev);
}

/* The key just past every key that starts with PREFIX (its last byte
 * raised by one), as the range's end. */
static int
prefix_end(const char *prefix, char *end, size_t size)
{
	size_t n = strlen(prefix);
	if (n == 0 || n >= size)
		return -EINVAL;
	memcpy(end, prefix, n + 1);
	while (n > 0 && (unsigned char)end[n - 1] == 0xff)
		end[--n] = '\0';
	if (n == 0)
		return -EINVAL;
	end[n - 1]++;
	return 0;
}

int
etcd_range_prefix(struct etcd *e, const char *prefix, struct etcd_kv **kvs,
    size_t *n)
{
	char end[ETCD_KEY_MAX + 1];
	struct json_object *o;
	int r;

	*kvs = NULL;
	*n = 0;
	if ((r = prefix_end(prefix, end, sizeof(end))) < 0)
		return r;
	o = key_object(prefix);
	if (o && add_b64(o, "range_end", end, strlen(end)) < 0) {
		json_object_put(o);
		o = NULL;
	}
	if (o)
		add_int64(o, "limit", ETCD_RANGE_MAX + 1);
	if ((r = post_json(e, "/v3/kv/range", o)) < 0)
		return r;
	if ((r = etcd_parse_range(e->body, e->len, kvs, n)) < 0)
		log_warn("etcd range %s: bad answer (%s)", prefix, strerror(-r));
	return r;
}

/* Send the txn T; 1 succeeded, 0 not, with its first range's kvs. */
static int
txn(struct etcd *e, struct json_object *t, struct etcd_kv **kvs, size_t *n)
{
	int ok, r;

	*kvs = NULL;
	*n = 0;
	if ((r = post_json(e, "/v3/kv/txn", t)) < 0)
		return r;
	if ((r = etcd_parse_txn(e->body, e->len, &ok, kvs, n)) < 0) {
		log_warn("etcd txn: bad answer (%s)", strerror(-r));
		return r;
	}
	return ok;
}

int
etcd_create(struct etcd *e, const char *key, const void *val, size_t len,
    int64_t lease, int64_t *create_rev, char **cur)
{
	struct json_object *cmp = compare(key, "CREATE", 0, NULL, 0);
	struct json_object *t = txn_request(&cmp, 1,
	    op("requestPut", put_request(key, val, len, lease)),
	    op("requestRange", key_object(key)));
	struct etcd_kv *kvs;
	size_t n;
	int r;

	*create_rev = 0;
	if (cur)
		*cur = NULL;
	if ((r = txn(e, t, &kvs, &n)) < 0)
		return r;
	if (r == 0) {
		/* It exists (or was deleted between the compare and the read:
		 * then it is absent and the caller may try again). */
		take_first(kvs, n, cur, NULL, create_rev, NULL);
		etcd_kvs_free(kvs, n);
		return 0;
	}
	etcd_kvs_free(kvs, n);
	/* The put's revision is the new key's creation revision; read it
	 * back rather than trust the header of another member's answer. */
	char *v;
	size_t vl;
	int64_t cr;
	if ((r = etcd_get(e, key, &v, &vl, &cr, NULL)) < 0)
		return r;
	int mine = r == 1 && vl == len && memcmp(v, val, len) == 0;
	free(v);
	if (!mine)
		return -EAGAIN;	/* gone already (its lease ended): try again */
	*create_rev = cr;
	return 1;
}

int
etcd_delete_if(struct etcd *e, const char *key, const void *val, size_t len,
    int64_t create_rev)
{
	struct json_object *cmp[2] = {
		compare(key, "VALUE", 0, val, len),
		compare(key, "CREATE", create_rev, NULL, 0),
	};
	struct json_object *t = txn_request(cmp, 2,
	    op("requestDeleteRange", key_object(key)), NULL);
	struct etcd_kv *kvs;
	size_t n;
	int r = txn(e, t, &kvs, &n);

	etcd_kvs_free(kvs, n);
	return r;
}

int
etcd_put_if_home(struct etcd *e, const char *room, const char *node,
    int64_t epoch, const char *key, const void *val, size_t len)
{
	char home[ETCD_KEY_MAX];
	struct etcd_kv *kvs;
	size_t n;

	if ((size_t)snprintf(home, sizeof(home), "/atrium/rooms/%s/home", room) >=
	    sizeof(home) || epoch <= 0)
		return -EINVAL;
	struct json_object *cmp[2] = {
		compare(home, "VALUE", 0, node, strlen(node)),
		compare(home, "CREATE", epoch, NULL, 0),
	};
	struct json_object *t = txn_request(cmp, 2,
	    op("requestPut", put_request(key, val, len, 0)), NULL);
	int r = txn(e, t, &kvs, &n);

	etcd_kvs_free(kvs, n);
	return r;
}

int
etcd_delete_if_home(struct etcd *e, const char *room, const char *node,
    int64_t epoch, const char *key, int64_t create_rev)
{
	char home[ETCD_KEY_MAX];
	struct etcd_kv *kvs;
	size_t n;

	if ((size_t)snprintf(home, sizeof(home), "/atrium/rooms/%s/home", room) >=
	    sizeof(home) || epoch <= 0 || create_rev <= 0)
		return -EINVAL;
	struct json_object *cmp[3] = {
		compare(home, "VALUE", 0, node, strlen(node)),
		compare(home, "CREATE", epoch, NULL, 0),
		compare(key, "CREATE", create_rev, NULL, 0),
	};
	struct json_object *t = txn_request(cmp, 3,
	    op("requestDeleteRange", key_object(key)), NULL);
	int r = txn(e, t, &kvs, &n);

	etcd_kvs_free(kvs, n);
	return r;
}

int
etcd_put_if_mod(struct etcd *e, const char *key, const void *val, size_t len,
    int64_t mod_rev)
{
	struct json_object *cmp = compare(key, "MOD", mod_rev, NULL, 0);
	struct json_object *t = txn_request(&cmp, 1,
	    op("requestPut", put_request(key, val, len, 0)), NULL);
	struct etcd_kv *kvs;
	size_t n;
	int r = mod_rev > 0 ? txn(e, t, &kvs, &n) : -EINVAL;

	if (mod_rev <= 0)
		json_object_put(t);
	else
		etcd_kvs_free(kvs, n);
	return r;
}

int
etcd_delete(struct etcd *e, const char *key)
{
	struct json_object *o;
	int64_t deleted = 0;
	int r;

	if ((r = post_json(e, "/v3/kv/deleterange", key_object(key))) < 0)
		return r;
	if (!(o = parse_object(e->body, e->len)))
		return -EPROTO;
	if ((r = error_answer(o)) == 0 &&
	    field_int64(o, "deleted", 0, &deleted) < 0)
		r = -EPROTO;
	json_object_put(o);
	if (r < 0)
		log_warn("etcd delete %s: %s", key, strerror(-r));
	return r < 0 ? r : deleted > 0;
}

int
etcd_get_rev(struct etcd *e, const char *key, int64_t *mod_rev)
{
	return get_one(e, key, 1, NULL, NULL, NULL, mod_rev);
}

int
etcd_prefix_stamp(struct etcd *e, const char *prefix, int64_t *count,
    int64_t *max_mod)
{
	char end[ETCD_KEY_MAX + 1];
	struct json_object *o, *ans;
	struct etcd_kv *kvs = NULL;
	size_t n = 0;
	int r;

	*count = *max_mod = 0;
	if ((r = prefix_end(prefix, end, sizeof(end))) < 0)
		return r;
	/* The newest key alone, and how many there are. */
	o = key_object(prefix);
	if (o && add_b64(o, "range_end", end, strlen(end)) < 0) {
		json_object_put(o);
		o = NULL;
	}
	if (o) {
		add_int64(o, "limit", 1);
		json_object_object_add(o, "keys_only", json_object_new_boolean(1));
		json_object_object_add(o, "sort_order",
		    json_object_new_string("DESCEND"));
		json_object_object_add(o, "sort_target",
		    json_object_new_string("MOD"));
	}
	if ((r = post_json(e, "/v3/kv/range", o)) < 0)
		return r;
	if (!(ans = parse_object(e->body, e->len)))
		return -EPROTO;
	if ((r = error_answer(ans)) == 0 &&
	    (r = field_int64(ans, "count", 0, count)) == 0 &&
	    (r = parse_kvs(ans, &kvs, &n)) == 0 && n > 0)
		*max_mod = kvs[0].mod_rev;
	etcd_kvs_free(kvs, n);
	json_object_put(ans);
	if (r < 0)
		log_warn("etcd range %s: bad answer (%s)", prefix, strerror(-r));
	return r;
}

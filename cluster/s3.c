/*
 * s3.c: the object store client (s3.h says what it offers and its
 * rules).
 *
 * A request is one struct s3_req: method, key (or none, for the bucket),
 * a canonical query (its pairs already encoded and sorted, because
 * libcurl 7.88 signs the query as it is given: an unsorted or unencoded
 * one is a signature S3 does not match), a body, a Range, and where the
 * answer goes (a buffer with a cap).  s3_perform sends it, with retries;
 * the operations below only fill one in.
 *
 * Signing is libcurl's (CURLOPT_AWS_SIGV4, "aws:amz:REGION:s3"): it
 * signs the method, path, query and headers, and takes the payload's hash
 * from the x-amz-content-sha256 header that we send (S3 needs that header
 * anyway, and libcurl hashes nothing itself for "s3").  The body's SHA-256
 * is computed here (libcrypto).  The secret goes to libcurl only, as
 * CURLOPT_PASSWORD, and is wiped on s3_free.
 */
#include "s3.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define S3_ERR_BODY_MAX	4096	/* bytes of an error answer kept */

struct s3 {
	CURL *curl;
	struct s3_config c;
	struct s3_creds k;		/* never logged; wiped on free */
	char sigv4[S3_NAME_MAX + 16];	/* "aws:amz:REGION:s3" */
	int tries;
	long first_wait_ms;
};

/* Where an answer's body goes: up to cap bytes, or over (the transfer
 * is stopped); into a file instead when fd >= 0 (len counts it). */
struct s3_body {
	char *p;
	size_t len, cap;
	int over;
	int fd;			/* -1: memory */
	int failed;		/* -errno of a write to fd */
};

struct s3_req {
	const char *method;		/* "GET", "PUT", "HEAD", "DELETE" */
	const char *key;		/* NULL: the bucket */
	const char *query;		/* canonical, or NULL */
	const void *data;		/* PUT's body */
	size_t data_len;
	int data_fd;			/* or PUT's body from this file, or -1 */
	uint64_t data_off;		/* the file's bytes sent so far */
	char hash[65];			/* the body's SHA-256, hex */
	char range[64];			/* "" or "bytes=A-B" */
	struct s3_body body;		/* the answer's */
	long status;			/* the last try's */
	uint64_t length;		/* HEAD's Content-Length */
};

static size_t
s3_on_body(char *p, size_t size, size_t n, void *arg)
{
	struct s3_body *b = arg;
	size_t want = size * n;
	char *grown;

	if (b->fd >= 0) {
		for (size_t done = 0; done < want;) {
			ssize_t w = pwrite(b->fd, p + done, want - done,
			    (off_t)(b->len + done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				b->failed = w < 0 ? -errno : -EIO;
				return 0;
			}
			done += (size_t)w;
		}
		b->len += want;
		return want;
	}
	if (want > b->cap - b->len) {
		b->over = 1;
		return 0;
	}
	if (!(grown = realloc(b->p, b->len + want + 1)))
		return 0;
	b->p = grown;
	memcpy(b->p + b->len, p, want);
	b->len += want;
	b->p[b->len] = '\0';
	return want;
}

/* The lower-case hex SHA-256 of the n bytes of file fd into hex (65
 * bytes), read in pieces: 0 or -errno. */
static int
s3_sha256_fd(int fd, uint64_t n, char *hex)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE], *buf = malloc(1u << 16);
	unsigned int mdlen = 0;
	uint64_t at = 0;
	int r = 0;

	if (!c || !buf || !EVP_DigestInit_ex(c, EVP_sha256(), NULL))
		r = -ENOMEM;
	while (r == 0 && at < n) {
		size_t want = n - at < (1u << 16) ? (size_t)(n - at) : 1u << 16;
		ssize_t got = pread(fd, buf, want, (off_t)at);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			r = got < 0 ? -errno : -EIO;
		else if (!EVP_DigestUpdate(c, buf, (size_t)got))
			r = -EIO;
		at += got > 0 ? (uint64_t)got : 0;
	}
	if (r == 0 && (!EVP_DigestFinal_ex(c, md, &mdlen) || mdlen != 32))
		r = -EIO;
	for (unsigned i = 0; r == 0 && i < mdlen; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
	EVP_MD_CTX_free(c);
	free(buf);
	return r;
}

/* libcurl's read callback of a PUT from a file. */
static size_t
s3_on_read(char *p, size_t size, size_t n, void *arg)
{
	struct s3_req *q = arg;
	size_t want = size * n;
	ssize_t got;

	if (want > q->data_len - q->data_off)
		want = (size_t)(q->data_len - q->data_off);
	if (want == 0)
		return 0;
	do
		got = pread(q->data_fd, p, want, (off_t)q->data_off);
	while (got < 0 && errno == EINTR);
	if (got <= 0)
		return CURL_READFUNC_ABORT;
	q->data_off += (uint64_t)got;
	return (size_t)got;
}

/* The lower-case hex SHA-256 of n bytes of p into hex (65 bytes). */
static int
s3_sha256_hex(const void *p, size_t n, char *hex)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(p ? p : "", n, md, &mdlen, EVP_sha256(), NULL) ||
	    mdlen != 32)
		return -EIO;
	for (unsigned i = 0; i < mdlen; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
	return 0;
}

int
s3_key_ok(const char *key)
{
	size_t n = key ? strlen(key) : 0;

	if (n == 0 || n >= S3_KEY_MAX || key[0] == '/')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)key[i]) && !strchr("/._-", key[i]))
			return 0;
	return !strstr(key, "..") && !strstr(key, "//");
}

/* AWS's UriEncode of s into out (outlen): every byte but A-Z a-z 0-9
 * - _ . ~ as %XY.  0 or -E2BIG. */
static int
s3_uri_encode(const char *s, char *out, size_t outlen)
{
	size_t o = 0;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (o + 4 > outlen)
			return -E2BIG;
		if (isalnum(ch) || strchr("-_.~", ch))
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, outlen - o, "%%%02X", ch);
	}
	out[o] = '\0';
	return 0;
}

struct s3 *
s3_new(const struct s3_config *c, const struct s3_creds *k, char *err,
    size_t errlen)
{
	struct s3 *s;
	size_t ul = strlen(c->url);

	if (strncmp(c->url, "http://", 7) != 0 &&
	    strncmp(c->url, "https://", 8) != 0) {
		snprintf(err, errlen, "--s3 must be an http:// or https:// URL");
		return NULL;
	}
	if (!c->bucket[0] || !s3_key_ok(c->bucket) || strchr(c->bucket, '/')) {
		snprintf(err, errlen, "--s3-bucket must be a bucket name");
		return NULL;
	}
	if (!(s = calloc(1, sizeof(*s))) || !(s->curl = curl_easy_init())) {
		free(s);
		snprintf(err, errlen, "cannot start libcurl");
		return NULL;
	}
	s->c = *c;
	while (ul && s->c.url[ul - 1] == '/')
		s->c.url[--ul] = '\0';
	if (!s->c.region[0])
		snprintf(s->c.region, sizeof(s->c.region), "us-east-1");
	snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", s->c.region);
	s->k = *k;
	s->tries = S3_TRIES;
	s->first_wait_ms = 100;
	return s;
}

void
s3_free(struct s3 *s)
{
	if (!s)
		return;
	curl_easy_cleanup(s->curl);
	s3_creds_clear(&s->k);
	free(s);
}

void
s3_set_retry(struct s3 *s, int tries, long first_wait_ms)
{
	s->tries = tries < 1 ? 1 : tries;
	s->first_wait_ms = first_wait_ms < 0 ? 0 : first_wait_ms;
}

/* The request's URL into url (S3_URL_MAX + key + query): 0 or -E2BIG. */
static int
s3_url(const struct s3 *s, const struct s3_req *q, char *url, size_t len)
{
	int n = snprintf(url, len, "%s/%s%s%s%s%s", s->c.url, s->c.bucket,
	    q->key ? "/" : "", q->key ? q->key : "", q->query ? "?" : "",
	    q->query ? q->query : "");

	return n < 0 || (size_t)n >= len ? -E2BIG : 0;
}

/* Set up the handle for q's one try: 0 or -errno.  *hdrs to free. */
static int
s3_setup(struct s3 *s, struct s3_req *q, struct curl_slist **hdrs)
{
	char url[S3_URL_MAX + S3_KEY_MAX * 4 + 64], line[128];
	CURL *h = s->curl;
	struct curl_slist *l = NULL, *t;

	if (s3_url(s, q, url, sizeof(url)) < 0)
		return -E2BIG;
	snprintf(line, sizeof(line), "x-amz-content-sha256: %s", q->hash);
	/* No "Expect: 100-continue" round trip, no form content type. */
	if (!(t = curl_slist_append(l, line)) || !(l = t, t =
	    curl_slist_append(l, "Expect:")) || !(l = t, t =
	    curl_slist_append(l, "Content-Type:")))
		goto nomem;
	l = t;
	if (q->range[0]) {
		snprintf(line, sizeof(line), "Range: %s", q->range);
		if (!(t = curl_slist_append(l, line)))
			goto nomem;
		l = t;
	}
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	curl_easy_setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(h, CURLOPT_USERNAME, s->k.access);
	curl_easy_setopt(h, CURLOPT_PASSWORD, s->k.secret);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)S3_CONNECT_MS);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)S3_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, s3_on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &q->body);
	if (strcmp(q->method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else if (strcmp(q->method, "GET") != 0)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
	if (strcmp(q->method, "PUT") == 0 && q->data_fd >= 0) {
		q->data_off = 0;
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, s3_on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, q);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
		    (curl_off_t)q->data_len);
	} else if (strcmp(q->method, "PUT") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)q->data_len);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->data ? q->data : "");
	}
	*hdrs = l;
	return 0;
nomem:
	curl_slist_free_all(l);
	return -ENOMEM;
}

/* S3's <Code> of an error answer, letters only, into code (64). */
static void
s3_error_code(const struct s3_body *b, char *code, size_t len)
{
	const char *at = b->p ? strstr(b->p, "<Code>") : NULL;
	size_t n = 0;

	if (at)
		for (at += 6; n + 1 < len && isalnum((unsigned char)*at); at++)
			code[n++] = *at;
	code[n] = '\0';
}

/* 1 when a try that ended with cr and status may be tried again. */
static int
s3_retryable(CURLcode cr, long status)
{
	if (cr == CURLE_WRITE_ERROR || cr == CURLE_OUT_OF_MEMORY ||
	    cr == CURLE_URL_MALFORMAT || cr == CURLE_UNSUPPORTED_PROTOCOL)
		return 0;
	if (cr != CURLE_OK)
		return 1;
	return status == 429 || status == 500 || status == 502 ||
	    status == 503 || status == 504;
}

/* q's result from its last try: 0 or -errno, logged. */
static int
s3_result(const struct s3_req *q, CURLcode cr, int retried_out)
{
	char code[64];

	if (cr == CURLE_WRITE_ERROR && q->body.failed) {
		log_error("%s %s: writing the answer to its file failed: %s",
		    q->method, q->key, strerror(-q->body.failed));
		return q->body.failed;
	}
	if (cr == CURLE_WRITE_ERROR && q->body.over) {
		log_warn("%s %s: the answer is larger than %zu bytes",
		    q->method, q->key ? q->key : "(bucket)", q->body.cap);
		return -EFBIG;
	}
	if (cr != CURLE_OK || retried_out) {
		s3_error_code(&q->body, code, sizeof(code));
		log_warn("%s %s: the store still fails after the retries "
		    "(%s, status %ld%s%s)", q->method, q->key ? q->key :
		    "(bucket)", curl_easy_strerror(cr), q->status,
		    code[0] ? " " : "", code);
		return cr == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EAGAIN;
	}
	if (q->status >= 200 && q->status < 300)
		return 0;
	if (q->status == 404)
		return -ENOENT;
	s3_error_code(&q->body, code, sizeof(code));
	log_warn("%s %s: status %ld %s", q->method, q->key ? q->key :
	    "(bucket)", q->status, code[0] ? code : "(no code)");
	return q->status == 403 ? -EACCES : q->status == 416 ? -ERANGE : -EIO;
}

/* Sleep ms milliseconds (EINTR restarts the rest). */
static void
s3_sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* Send q, trying again as the rules say: 0 or -errno. */
static int
s3_perform(struct s3 *s, struct s3_req *q)
{
	struct curl_slist *hdrs = NULL;
	size_t cap = q->body.cap;
	long wait = s->first_wait_ms;
	CURLcode cr = CURLE_OK;
	int fd = q->body.fd, r;

	if ((r = q->data_fd >= 0 ? s3_sha256_fd(q->data_fd, q->data_len,
	    q->hash) : s3_sha256_hex(q->data, q->data_len, q->hash)) < 0)
		return r;
	for (int try = 1;; try++) {
		free(q->body.p);
		q->body = (struct s3_body){ .cap = cap, .fd = fd };
		q->status = 0;
		if (fd >= 0 && ftruncate(fd, 0) < 0)
			return -errno;
		if ((r = s3_setup(s, q, &hdrs)) < 0)
			return r;
		cr = curl_easy_perform(s->curl);
		curl_slist_free_all(hdrs);
		curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &q->status);
		if (!s3_retryable(cr, q->status))
			break;
		if (try >= s->tries)
			return s3_result(q, cr, 1);
		log_debug("%s %s: try %d failed (%s, status %ld), again in "
		    "%ld ms", q->method, q->key ? q->key : "(bucket)", try,
		    curl_easy_strerror(cr), q->status, wait);
		s3_sleep_ms(wait);
		wait = wait * 2 > 2000 ? 2000 : wait * 2;
	}
	if (cr == CURLE_OK && strcmp(q->method, "HEAD") == 0) {
		curl_off_t n = -1;

		curl_easy_getinfo(s->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
		    &n);
		q->length = n < 0 ? 0 : (uint64_t)n;
	}
	return s3_result(q, cr, 0);
}

/* A request for key, its answer capped at cap bytes. */
static struct s3_req
s3_req_make(const char *method, const char *key, size_t cap)
{
	return (struct s3_req){ .method = method, .key = key, .data_fd = -1,
	    .body = { .cap = cap, .fd = -1 } };
}

/* -EINVAL, logged, for a key s3.c does not send. */
static int
s3_bad_key(const char *key)
{
	log_error("refusing the object key \"%.64s\": only [A-Za-z0-9/._-]",
	    key ? key : "");
	return -EINVAL;
}

int
s3_put(struct s3 *s, const char *key, const void *data, size_t len)
{
	struct s3_req q = s3_req_make("PUT", key, S3_ERR_BODY_MAX);
	int r;

	if (!s3_key_ok(key))
		return s3_bad_key(key);
	q.data = data;
	q.data_len = len;
	r = s3_perform(s, &q);
	free(q.body.p);
	return r;
}

int
s3_get(struct s3 *s, const char *key, uint64_t off, size_t max, void **out,
    size_t *len)
{
	struct s3_req q = s3_req_make("GET", key, max);
	int r;

	*out = NULL;
	*len = 0;
	if (!s3_key_ok(key))
		return s3_bad_key(key);
	if (max == 0)
		return -EINVAL;
	snprintf(q.range, sizeof(q.range), "bytes=%llu-%llu",
	    (unsigned long long)off, (unsigned long long)(off + max - 1));
	if ((r = s3_perform(s, &q)) < 0) {
		free(q.body.p);
		return r;
	}
	/* An empty object has no byte to answer a range with. */
	*out = q.body.p ? q.body.p : calloc(1, 1);
	*len = q.body.len;
	return *out ? 0 : -ENOMEM;
}

int
s3_put_file(struct s3 *s, const char *key, int fd, uint64_t size)
{
	struct s3_req q = s3_req_make("PUT", key, S3_ERR_BODY_MAX);
	int r;

	if (!s3_key_ok(key))
		return s3_bad_key(key);
	q.data_fd = fd;
	q.data_len = (size_t)size;
	r = s3_perform(s, &q);
	free(q.body.p);
	return r;
}

int
s3_get_file(struct s3 *s, const char *key, int fd, uint64_t *size)
{
	struct s3_req q = s3_req_make("GET", key, 0);
	int r;

	*size = 0;
	if (!s3_key_ok(key))
		return s3_bad_key(key);
	q.body.fd = fd;
	if ((r = s3_perform(s, &q)) == 0)
		*size = q.body.len;
	free(q.body.p);
	return r;
}

int
s3_head(struct s3 *s, const char *key, uint64_t *size)
{
	struct s3_req q = s3_req_make("HEAD", key, S3_ERR_BODY_MAX);
	int r;

	*size = 0;
	if (!s3_key_ok(key))
		return s3_bad_key(key);
	r = s3_perform(s, &q);
	free(q.body.p);
	if (r == 0)
		*size = q.length;
	return r;
}

int
s3_delete(struct s3 *s, const char *key)
{
	struct s3_req q = s3_req_make("DELETE", key, S3_ERR_BODY_MAX);
	int r;

	if (!s3_key_ok(key))
		return s3_bad_key(key);
	r = s3_perform(s, &q);
	free(q.body.p);
	return r == -ENOENT ? 0 : r;
}

/* The text between open and close tags at the start of [p, end) into out
 * (XML's five entities decoded): the end of the close tag, or NULL when
 * malformed or longer than outlen - 1. */
static const char *
s3_xml_text(const char *p, const char *end, const char *close, char *out,
    size_t outlen)
{
	static const char *const ent[][2] = { { "&amp;", "&" },
		{ "&lt;", "<" }, { "&gt;", ">" }, { "&quot;", "\"" },
		{ "&apos;", "'" } };
	const char *stop = memmem(p, (size_t)(end - p), close, strlen(close));
	size_t o = 0;

	if (!stop)
		return NULL;
	while (p < stop) {
		size_t i = 0, el = 0;

		if (*p == '&') {
			for (i = 0; i < 5; i++)
				if ((size_t)(stop - p) >= (el = strlen(ent[i][0]))
				    && memcmp(p, ent[i][0], el) == 0)
					break;
			if (i == 5)
				return NULL;
		}
		if (o + 1 >= outlen)
			return NULL;
		out[o++] = *p == '&' ? ent[i][1][0] : *p;
		p += *p == '&' ? el : 1;
	}
	out[o] = '\0';
	return stop + strlen(close);
}

/* One <Contents> element in [p, end): its key and size to each.  0,
 * each's result, or -EPROTO. */
static int
s3_parse_contents(const char *p, const char *end, s3_each_fn each, void *arg)
{
	const char *k = memmem(p, (size_t)(end - p), "<Key>", 5);
	const char *z = memmem(p, (size_t)(end - p), "<Size>", 6);
	char key[S3_KEY_MAX], num[32], *stop;
	unsigned long long size;

	if (!k || !z || !s3_xml_text(k + 5, end, "</Key>", key, sizeof(key)) ||
	    !s3_xml_text(z + 6, end, "</Size>", num, sizeof(num)) || !num[0])
		return -EPROTO;
	errno = 0;
	size = strtoull(num, &stop, 10);
	if (*stop || errno || num[0] == '-')
		return -EPROTO;
	return each(arg, key, (uint64_t)size);
}

int
s3_parse_list(const char *body, size_t len, s3_each_fn each, void *arg,
    char *next, size_t nextlen)
{
	const char *p = body, *end = body + len, *t;
	int r;

	next[0] = '\0';
	if (!memmem(body, len, "<ListBucketResult", 17))
		return -EPROTO;
	while ((p = memmem(p, (size_t)(end - p), "<Contents>", 10))) {
		const char *ce = memmem(p, (size_t)(end - p), "</Contents>", 11);

		if (!ce)
			return -EPROTO;
		if ((r = s3_parse_contents(p, ce, each, arg)) != 0)
			return r;
		p = ce + 11;
	}
	if (!memmem(body, len, "<IsTruncated>true</IsTruncated>", 31))
		return 0;
	if (!(t = memmem(body, len, "<NextContinuationToken>", 23)) ||
	    !s3_xml_text(t + 23, end, "</NextContinuationToken>", next,
	    nextlen) || !next[0])
		return -EPROTO;
	return 0;
}

/* The canonical query of one listing page into out: the pairs sorted. */
static int
s3_list_query(const char *prefix, const char *token, char *out, size_t len)
{
	char ep[S3_KEY_MAX * 3 + 1], et[S3_KEY_MAX * 3 + 1];
	int n;

	if (s3_uri_encode(prefix, ep, sizeof(ep)) < 0 ||
	    s3_uri_encode(token, et, sizeof(et)) < 0)
		return -E2BIG;
	n = token[0] ? snprintf(out, len, "continuation-token=%s&list-type=2"
	    "&prefix=%s", et, ep) : snprintf(out, len, "list-type=2&prefix=%s",
	    ep);
	return n < 0 || (size_t)n >= len ? -E2BIG : 0;
}

int
s3_list(struct s3 *s, const char *prefix, s3_each_fn each, void *arg)
{
	char token[S3_KEY_MAX] = "", query[S3_KEY_MAX * 6 + 64];
	int r;

	if (strlen(prefix) >= S3_KEY_MAX)
		return s3_bad_key(prefix);
	do {
		struct s3_req q = s3_req_make("GET", NULL, S3_LIST_BODY_MAX);

		if ((r = s3_list_query(prefix, token, query, sizeof(query))) < 0)
			return r;
		q.query = query;
		if ((r = s3_perform(s, &q)) == 0 && (r = s3_parse_list(
		    q.body.p ? q.body.p : "", q.body.len, each, arg, token,
		    sizeof(token))) == -EPROTO)
			log_warn("the listing of %s is malformed", prefix);
		free(q.body.p);
	} while (r == 0 && token[0]);
	return r;
}

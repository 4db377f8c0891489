/*
 * fuzz_http_routes.c: libFuzzer entry point for how atriumd-http reads a
 * request's path and query (sshd/http/http_routes.c, api_util.c): the
 * route matcher with its {room} and {path...} captures, one segment's
 * percent-decoding, a query value's decoding and the working-directory
 * check of the command routes.  api_util.c is included, not linked, for
 * its static query decoder.
 *
 * The input's first byte picks the method (the rest of the input is the
 * path as the client sent it, cut at its first NUL as MHD gives it).
 * What the matcher accepts must be what the routes rely on: a room
 * capture is a valid room name, a path capture has only non-empty
 * segments that are neither "." nor "..", and no control byte; a
 * refusal is a 400, 404 or 405 with a reason.  A decoded segment holds
 * no '/' and no control byte, and one without '%' decodes to itself.
 */
#include <string.h>

#include "../../sshd/http/api_util.c"

#include "fuzz.h"
#include "http_routes.h"

static const char *const methods[] = {
	"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "get", "",
};

/* A {path...} capture: '/'-separated, each segment clean. */
static void
check_rest(const char *rest)
{
	const char *p = rest;

	if (!*p)
		return;
	for (;;) {
		size_t n = strcspn(p, "/");

		FUZZ_CHECK(n > 0);
		FUZZ_CHECK(!(n == 1 && p[0] == '.'));
		FUZZ_CHECK(!(n == 2 && p[0] == '.' && p[1] == '.'));
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK((unsigned char)p[i] >= 0x20 && p[i] != 0x7f);
		if (!p[n])
			break;
		p += n + 1;
	}
}

/* The matcher's answer for method and url. */
static void
check_match(const char *method, const char *url)
{
	struct http_req *r = calloc(1, sizeof(*r));
	const struct http_route *e;
	unsigned status = 0;
	const char *why = NULL;

	FUZZ_CHECK(r != NULL);
	e = http_routes_match(r, method, url, &status, &why);
	if (e) {
		FUZZ_CHECK(strcmp(e->method, method) == 0 ||
		    (strcmp(method, "HEAD") == 0 &&
		    strcmp(e->method, "GET") == 0));
		FUZZ_CHECK(url[0] == '/');
		if (strstr(e->pattern, "{room}"))
			FUZZ_CHECK(room_name_valid(r->room));
		else
			FUZZ_CHECK(r->room[0] == '\0');
		if (strstr(e->pattern, "{path...}"))
			check_rest(r->rest);
		FUZZ_CHECK(memchr(r->rest, '\0', sizeof(r->rest)) != NULL);
	} else {
		FUZZ_CHECK(status == 400 || status == 404 || status == 405);
		FUZZ_CHECK(why && why[0]);
	}
	free(r);
}

/* One segment's decoding (the whole input as one segment). */
static void
check_segment(const char *s, size_t n)
{
	char out[256];
	int r = http_segment_decode(s, n, out, sizeof(out));

	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r < 0)
		return;
	FUZZ_CHECK(strlen(out) <= n && out[0]);
	FUZZ_CHECK(strcmp(out, ".") != 0 && strcmp(out, "..") != 0);
	for (const char *p = out; *p; p++)
		FUZZ_CHECK(*p != '/' && (unsigned char)*p >= 0x20 && *p != 0x7f);
	if (!memchr(s, '%', n))
		FUZZ_CHECK(strlen(out) == n && memcmp(out, s, n) == 0);
}

/* A query value's decoding, and the cwd check on what it gives. */
static void
check_query(const char *v)
{
	char out[API_QUERY_MAX];
	int r = api_query_decode(v, out, sizeof(out));

	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r < 0)
		return;
	FUZZ_CHECK(strlen(out) <= strlen(v));
	if (!strpbrk(v, "%+"))
		FUZZ_CHECK(strcmp(out, v) == 0);
	if (api_cwd_valid(out)) {
		/* Under /workspace: never a ".." segment, never another
		 * absolute path. */
		FUZZ_CHECK(out[0] != '/' || strncmp(out, "/workspace", 10) == 0);
		for (const char *p = out; (p = strstr(p, "..")); p++)
			FUZZ_CHECK(!((p == out || p[-1] == '/') &&
			    (p[2] == '/' || p[2] == '\0')));
	}
}

/* libFuzzer's entry: a method byte, then the path. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *method;
	char *url;

	if (size < 1)
		return 0;
	method = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
	url = fuzz_cstring(data + 1, size - 1);
	check_match(method, url);
	check_segment(url, strlen(url));
	check_query(url);
	free(url);
	return 0;
}

/*
 * test_http_routes.c: how a request path finds its row of atriumd-http's
 * route table (sshd/http/http_routes.c): exact routes, methods (405,
 * HEAD served by GET), the {room} capture decoded and checked (400 for
 * "..", "%2e%2e", an encoded "/", a bad escape, an empty segment, a name
 * that is not a room's), and the segment decoder on its own.
 */
#include <errno.h>
#include <string.h>

#include "unit.h"
#include "http_req.h"
#include "http_routes.h"

/* Match method and url in a fresh request: the row's pattern, or NULL
 * with *status. */
static const char *
match(const char *method, const char *url, unsigned *status,
    struct http_req *r)
{
	const struct http_route *e;
	const char *why = NULL;

	memset(r, 0, sizeof(*r));
	*status = 0;
	e = http_routes_match(r, method, url, status, &why);
	if (!e)
		CHECK(why != NULL && why[0] != '\0');
	return e ? e->pattern : NULL;
}

static void
test_exact_routes_and_methods(void)
{
	struct http_req r;
	unsigned st;

	CHECK_STR(match("GET", "/health", &st, &r), "/health");
	CHECK_STR(match("HEAD", "/health", &st, &r), "/health");
	CHECK(match("POST", "/health", &st, &r) == NULL);
	CHECK_INT(st, 405);
	CHECK(match("GET", "/healthz", &st, &r) == NULL);
	CHECK_INT(st, 404);
	CHECK(match("GET", "/health/", &st, &r) == NULL);
	CHECK_INT(st, 404);
	CHECK(match("GET", "health", &st, &r) == NULL);
	CHECK_INT(st, 400);
	CHECK_STR(match("POST", "/api/session", &st, &r), "/api/session");
	CHECK_STR(match("DELETE", "/api/session", &st, &r), "/api/session");
}

static void
test_room_capture(void)
{
	struct http_req r;
	unsigned st;

	CHECK_STR(match("GET", "/api/rooms/demo-1/events", &st, &r),
	    "/api/rooms/{room}/events");
	CHECK_STR(r.room, "demo-1");
	CHECK_STR(match("GET", "/api/rooms/%64emo/ws", &st, &r),
	    "/api/rooms/{room}/ws");
	CHECK_STR(r.room, "demo");
	CHECK(match("GET", "/api/rooms/demo/nothing", &st, &r) == NULL);
	CHECK_INT(st, 404);
}

static void
test_room_capture_refuses_what_is_not_a_name(void)
{
	static const char *const bad[] = {
		"/api/rooms/../events", "/api/rooms/%2e%2e/events",
		"/api/rooms/%2E%2E/events", "/api/rooms/a%2Fb/events",
		"/api/rooms/a%2fb/events", "/api/rooms/%zz/events",
		"/api/rooms/a%2/events", "/api/rooms//events",
		"/api/rooms/Demo/events", "/api/rooms/-x/events",
		"/api/rooms/a%00b/events", "/api/rooms/.git/events",
	};
	struct http_req r;
	unsigned st;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(match("GET", bad[i], &st, &r) == NULL);
		CHECK_INT(st, 400);
	}
}

static void
test_segment_decode(void)
{
	char out[16];

	CHECK_INT(http_segment_decode("a%20b", 5, out, sizeof(out)), 0);
	CHECK_STR(out, "a b");
	CHECK_INT(http_segment_decode("abc", 2, out, sizeof(out)), 0);
	CHECK_STR(out, "ab");
	CHECK_INT(http_segment_decode(".", 1, out, sizeof(out)), -EINVAL);
	CHECK_INT(http_segment_decode("%2e", 3, out, sizeof(out)), -EINVAL);
	CHECK_INT(http_segment_decode("..", 2, out, sizeof(out)), -EINVAL);
	CHECK_INT(http_segment_decode("", 0, out, sizeof(out)), -EINVAL);
	CHECK_INT(http_segment_decode("%2F", 3, out, sizeof(out)), -EINVAL);
	CHECK_INT(http_segment_decode("a%0a", 4, out, sizeof(out)), -EINVAL);
	CHECK_INT(http_segment_decode("a%7f", 4, out, sizeof(out)), -EINVAL);
	CHECK_INT(http_segment_decode("%", 1, out, sizeof(out)), -EINVAL);
	/* Too long for out: refused, never cut. */
	CHECK_INT(http_segment_decode("0123456789abcdefg", 17, out,
	    sizeof(out)), -EINVAL);
}

int
main(void)
{
	TEST(test_exact_routes_and_methods);
	TEST(test_room_capture);
	TEST(test_room_capture_refuses_what_is_not_a_name);
	TEST(test_segment_decode);
	return unit_done("test_http_routes");
}

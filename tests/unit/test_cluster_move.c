/*
 * test_cluster_move.c: the parser of a move request (cluster/move.h) from
 * raw bytes, as any node or command may have written them in etcd: the
 * shape the command writes, and what a broken or hostile writer could
 * put there instead (bad names, a missing or mistyped epoch, trailing
 * bytes, NULs, a value past its cap).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "move.h"
#include "unit.h"

#define K "/atrium/moves/demo"
#define P(s) s, strlen(s)

static void
test_parse(void)
{
	struct move_req m;

	CHECK_INT(move_req_parse(K, P("{\"from\":\"a\",\"epoch\":41,"
	    "\"to\":\"node-b.x\"}"), &m), 0);
	CHECK_STR(m.room, "demo");
	CHECK_STR(m.from, "a");
	CHECK_STR(m.to, "node-b.x");
	CHECK(m.epoch == 41);
	CHECK_INT(move_req_parse(K, P("{\"to\":\"b\",\"from\":\"a\","
	    "\"epoch\":9007199254740993}"), &m), 0);
	CHECK(m.epoch == 9007199254740993LL);
}

static void
test_hostile(void)
{
	static const char *bad[] = {
		"{\"from\":\"a\",\"epoch\":41}",
		"{\"from\":\"a\",\"to\":\"b\"}",
		"{\"from\":\"a\",\"epoch\":0,\"to\":\"b\"}",
		"{\"from\":\"a\",\"epoch\":-3,\"to\":\"b\"}",
		"{\"from\":\"a\",\"epoch\":\"41\",\"to\":\"b\"}",
		"{\"from\":\"a\",\"epoch\":4.5,\"to\":\"b\"}",
		"{\"from\":\"-a\",\"epoch\":41,\"to\":\"b\"}",
		"{\"from\":\"a\",\"epoch\":41,\"to\":\"b\\u001b[2J\"}",
		"{\"from\":\"a\",\"epoch\":41,\"to\":\"\"}",
		"{\"from\":[\"a\"],\"epoch\":41,\"to\":\"b\"}",
		"{\"from\":\"a\",\"epoch\":41,\"to\":\"b\"} {}",
		"{\"from\":\"a\",\"epoch\":41,\"to\":\"b\"",
		"[\"a\",41,\"b\"]",
		"",
	};
	struct move_req m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_INT(move_req_parse(K, P(bad[i]), &m), -EPROTO);
		CHECK(m.room[0] == '\0' && m.epoch == 0);
	}
	/* A NUL inside the value. */
	CHECK_INT(move_req_parse(K, "{\"from\":\"a\"\0,\"epoch\":41,\"to\":\"b\"}",
	    34, &m), -EPROTO);
	/* Keys that do not name a room. */
	const char *ok = "{\"from\":\"a\",\"epoch\":41,\"to\":\"b\"}";
	CHECK_INT(move_req_parse("/atrium/moves/", P(ok), &m), -EPROTO);
	CHECK_INT(move_req_parse("/atrium/moves/a/b", P(ok), &m), -EPROTO);
	CHECK_INT(move_req_parse("/atrium/moves/\x1b", P(ok), &m), -EPROTO);
	CHECK_INT(move_req_parse("/atrium/drain/demo", P(ok), &m), -EPROTO);
	/* A value past the cap. */
	char *big = malloc(MOVE_REQ_MAX + 64);
	CHECK(big != NULL);
	if (big) {
		int n = snprintf(big, MOVE_REQ_MAX + 64, "{\"from\":\"a\","
		    "\"epoch\":41,\"to\":\"b\",\"pad\":\"%*s\"}", MOVE_REQ_MAX,
		    "");
		CHECK_INT(move_req_parse(K, big, (size_t)n, &m), -EPROTO);
		free(big);
	}
}

static void
test_round_trip(void)
{
	struct move_req m = { .room = "demo", .from = "a", .to = "b",
	    .epoch = 77 }, back;
	char *s = move_req_json(&m);

	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_INT(move_req_parse(K, s, strlen(s), &back), 0);
	CHECK_STR(back.from, "a");
	CHECK_STR(back.to, "b");
	CHECK(back.epoch == 77);
	free(s);
}

int
main(void)
{
	TEST(test_parse);
	TEST(test_hostile);
	TEST(test_round_trip);
	return unit_done("cluster_move");
}

/*
 * fuzz_move.c: libFuzzer entry point for cluster/move.c's parser of a move
 * request (/atrium/moves/ROOM in etcd, which any node or command of the
 * cluster may have written).
 *
 * The input is the value, parsed under a fixed key and, split at its
 * first newline, as a key and a value.  Invariants: the parser returns 0
 * or -EPROTO; on -EPROTO every field is cleared; on 0 the room and both
 * node names are valid and the epoch positive, and the request written
 * back as JSON parses to the same request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "move.h"
#include "names.h"

static void
check(const char *key, const char *val, size_t len)
{
	struct move_req m, back;
	int r = move_req_parse(key, val, len, &m);

	FUZZ_CHECK(r == 0 || r == -EPROTO);
	if (r < 0) {
		FUZZ_CHECK(!m.room[0] && !m.from[0] && !m.to[0] && !m.epoch);
		return;
	}
	FUZZ_CHECK(room_name_valid(m.room) && cluster_valid_node(m.from) &&
	    cluster_valid_node(m.to) && m.epoch > 0);
	char *s = move_req_json(&m);
	FUZZ_CHECK(s != NULL);
	FUZZ_CHECK(move_req_parse(key, s, strlen(s), &back) == 0);
	FUZZ_CHECK(memcmp(&m, &back, sizeof(m)) == 0);
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *nl;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	check("/atrium/moves/demo", buf, size);
	if ((nl = memchr(buf, '\n', size))) {
		*nl = '\0';
		check(buf, nl + 1, size - (size_t)(nl + 1 - buf));
	}
	free(buf);
	return 0;
}

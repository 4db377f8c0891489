/*
 * fuzz_stored_event.c: libFuzzer entry point for agent/stored_event.c, the
 * constructors every stored event passes through: a row of room.db's
 * events (from an imported archive, or a file anyone with the disk wrote)
 * before it is stored from an archive or replayed to a client.
 *
 * The input is the row's json text.  Whatever it holds, an event that
 * comes out must be one a client may be sent: an object of a type the
 * room stores (event_types.h), with the row's seq and time, whose line has
 * no raw control byte but DEL (conn.c escapes that one as it queues),
 * that is valid UTF-8 and parses back as one JSON object; and building
 * it again gives the same line (a stored event is already what its
 * constructor makes).  A refusal must say why.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "event_types.h"
#include "jsonl.h"
#include "stored_event.h"
#include "utf8.h"

#define FUZZ_TIME "2026-01-02T03:04:05.678Z"

/* The line of ev as the journal writes it. */
static const char *
line_of(json_object *ev)
{
	return json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* The invariants of the head on a built event. */
static void
check_event(json_object *ev)
{
	const char *line = line_of(ev), *err;
	size_t n = strlen(line);
	char note[256], again[1 << 16];
	json_object *back, *built;

	FUZZ_CHECK(event_type_stored(json_get_string(ev, "type")));
	FUZZ_CHECK(json_get_int(ev, "seq", 0) == 42);
	FUZZ_CHECK(strcmp(json_get_string(ev, "time"), FUZZ_TIME) == 0);
	FUZZ_CHECK(utf8_valid(line, n));
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK((unsigned char)line[i] >= 0x20);
	back = jsonl_parse_object(line, n, &err);
	FUZZ_CHECK(back != NULL);
	FUZZ_CHECK(stored_event_build(back, &built, note, sizeof(note)) == 0);
	FUZZ_CHECK(note[0] == '\0');
	snprintf(again, sizeof(again), "%s", line_of(built));
	FUZZ_CHECK(n >= sizeof(again) - 1 || strcmp(again, line) == 0);
	json_object_put(built);
	json_object_put(back);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *json = malloc(size + 1), note[256];
	json_object *ev = NULL;
	int r;

	if (!json)
		return 0;
	memcpy(json, data, size);
	json[size] = '\0';
	r = stored_event_from_row(42, FUZZ_TIME, json, &ev, note,
	    sizeof(note));
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r == 0)
		check_event(ev);
	else
		FUZZ_CHECK(r == -ENOMEM || note[0] != '\0');
	json_object_put(ev);
	free(json);
	return 0;
}

/*
 * fuzz_skills.c: libFuzzer entry point for agent/skills.c, the parser of
 * SKILL.md files (anyone in a room writes them) and of config skills.
 *
 * The input is a SKILL.md's bytes.  A skill that parses must have a valid
 * name, a one-line description within its bound, and a body that is the
 * input's tail; the same bytes as a config skill's body must parse too
 * when they did as a file (a fallback name is given to both).
 */
#include <string.h>

#include "fuzz.h"
#include "../../agent/skills.h"
#include "jsonl.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	json_object *s, *cfg, *one, *set;
	const char *body, *desc;

	s = skills_parse((const char *)data, size, "dir", NULL, "workspace",
	    err, sizeof(err));
	if (!s)
		return 0;
	FUZZ_CHECK(skills_name_valid(json_get_string(s, "name")));
	desc = json_get_string(s, "description");
	FUZZ_CHECK(desc && strlen(desc) <= SKILLS_MAX_DESC &&
	    !strchr(desc, '\n'));
	body = json_get_string(s, "body");
	FUZZ_CHECK(body && strlen(body) <= size && memcmp(body, data + size -
	    strlen(body), strlen(body)) == 0);
	cfg = json_object_new_array();
	one = json_object_new_object();
	json_object_object_add(one, "name", json_object_new_string("dir"));
	json_object_object_add(one, "body", json_object_new_string_len(
	    (const char *)data, (int)size));
	json_object_array_add(cfg, one);
	set = skills_from_config(cfg, err, sizeof(err));
	FUZZ_CHECK(set && json_object_array_length(set) == 1);
	json_object_put(set);
	json_object_put(cfg);
	json_object_put(s);
	return 0;
}

/*
 * test_agent_skills.c: skills from text and config (agent/skills.c):
 * front matter, names, limits, and hostile input.
 */
#include <stdlib.h>
#include <string.h>

#include "../../agent/skills.h"
#include "jsonl.h"
#include "unit.h"

static json_object *
parse(const char *text, const char *fallback)
{
	char err[256];

	return skills_parse(text, strlen(text), fallback, NULL, "workspace",
	    err, sizeof(err));
}

static void
test_front_matter(void)
{
	json_object *s = parse("---\r\nname: 'ship'\r\ndescription: Ship it"
	    "\r\nother: x\r\n---\r\nBODY\n", "dir");

	CHECK(s != NULL);
	CHECK_STR(json_get_string(s, "name"), "ship");
	CHECK_STR(json_get_string(s, "description"), "Ship it");
	CHECK_STR(json_get_string(s, "body"), "BODY\n");
	json_object_put(s);
	/* No front matter: the directory names it, the body is all. */
	s = parse("just text\n---\n", "dir");
	CHECK_STR(json_get_string(s, "name"), "dir");
	CHECK_STR(json_get_string(s, "description"), "");
	CHECK_STR(json_get_string(s, "body"), "just text\n---\n");
	json_object_put(s);
	/* Never closed: not front matter. */
	s = parse("---\nname: x\nbody\n", "dir");
	CHECK_STR(json_get_string(s, "name"), "dir");
	json_object_put(s);
}

static void
test_names_and_descriptions(void)
{
	char big[SKILLS_MAX_DESC * 2 + 64];
	json_object *s;

	CHECK(skills_name_valid("a-b_c.d"));
	CHECK(!skills_name_valid(""));
	CHECK(!skills_name_valid("has space"));
	CHECK(!skills_name_valid("tab\there"));
	CHECK(!skills_name_valid("caf\xc3\xa9"));
	memset(big, 'n', SKILLS_MAX_NAME + 1);
	big[SKILLS_MAX_NAME + 1] = '\0';
	CHECK(!skills_name_valid(big));
	big[SKILLS_MAX_NAME] = '\0';
	CHECK(skills_name_valid(big));
	CHECK(parse("---\nname: bad name\n---\n", "dir") == NULL);
	CHECK(parse("x", NULL) == NULL);
	CHECK(parse("bad \xff utf8", "dir") == NULL);
	/* A description stays on one line, without control characters,
	 * cut at its maximum. */
	s = parse("---\ndescription: a\x1b[31m\tb\n---\n", "d");
	CHECK_STR(json_get_string(s, "description"), "a[31m b");
	json_object_put(s);
	strcpy(big, "---\ndescription: ");
	memset(big + strlen(big), 'd', SKILLS_MAX_DESC + 10);
	strcpy(big + 17 + SKILLS_MAX_DESC + 10, "\n---\nB");
	s = parse(big, "d");
	CHECK(s != NULL);
	CHECK(strlen(json_get_string(s, "description")) <= SKILLS_MAX_DESC);
	json_object_put(s);
}

static void
test_config_and_set(void)
{
	char err[256];
	json_object *v = json_tokener_parse("[{\"name\":\"a\",\"description\":"
	    "\"A\",\"body\":\"x\"},{\"body\":\"---\\nname: b\\n---\\ny\"}]");
	json_object *set = skills_from_config(v, err, sizeof(err));

	CHECK(set != NULL);
	CHECK_INT(json_object_array_length(set), 2);
	CHECK_STR(json_get_string(skills_find(set, "b"), "body"), "y");
	CHECK(skills_find(set, "c") == NULL);
	CHECK_INT(skills_add(set, parse("z", "a")), 0);	/* name taken */
	for (int i = 0; i < SKILLS_MAX + 5; i++) {
		char name[16];

		snprintf(name, sizeof(name), "n%d", i);
		skills_add(set, parse("z", name));
	}
	CHECK_INT(json_object_array_length(set), SKILLS_MAX);
	json_object_put(set);
	json_object_put(v);
	v = json_tokener_parse("[{\"name\":\"a\",\"body\":7}]");
	CHECK(skills_from_config(v, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "skills[0]") != NULL);
	json_object_put(v);
	v = json_tokener_parse("{\"name\":\"a\"}");
	CHECK(skills_from_config(v, err, sizeof(err)) == NULL);
	json_object_put(v);
}

int
main(void)
{
	TEST(test_front_matter);
	TEST(test_names_and_descriptions);
	TEST(test_config_and_set);
	return unit_done("test_agent_skills");
}

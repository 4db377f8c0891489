/*
 * prompt.c: the system prompt and tool schemas (prompt.h).  The text of a
 * person's prompt is never edited: the speaker's name goes on a line of its
 * own before it.
 */
#include "prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

#define PROMPT_MAX	(PROMPT_MAX_AGENTS_MD + 16 * 1024)

char *
prompt_system(const char *room, json_object *members, const char *agents_md,
    size_t agents_len)
{
	struct buf b;
	size_t n = members ? json_object_array_length(members) : 0;
	int r;

	buf_init(&b, PROMPT_MAX);
	r = buf_printf(&b, "You are the agent of the Atrium room \"%s\": a "
	    "shared workspace where people chat with each other and with you. "
	    "Several people may talk to you; each prompt starts with a line "
	    "naming who wrote it.\n\n"
	    "You work in the room's workspace, mounted at /workspace (your "
	    "current directory). Use the bash tool to run commands there; "
	    "they run in a sandbox without network access, and everyone in "
	    "the room sees them and their output. Some commands may need a "
	    "person's approval, and a denied command is reported to you as "
	    "denied. Be concise: your answers appear in a terminal chat.\n",
	    room);
	if (r == 0 && n) {
		r = buf_printf(&b, "\nPeople in the room now:");
		for (size_t i = 0; r == 0 && i < n; i++)
			r = buf_printf(&b, "%s %s", i ? "," : "",
			    json_object_get_string(
			    json_object_array_get_idx(members, i)));
		if (r == 0)
			r = buf_printf(&b, ".\n");
	}
	if (r == 0 && agents_md && agents_len) {
		size_t keep = agents_len > PROMPT_MAX_AGENTS_MD ?
		    PROMPT_MAX_AGENTS_MD : agents_len;

		r = buf_printf(&b, "\nThe workspace's AGENTS.md, the room's "
		    "instructions for you:\n\n");
		if (r == 0)
			r = buf_append(&b, agents_md, keep);
		if (r == 0 && keep < agents_len)
			r = buf_printf(&b, "\n[AGENTS.md is %zu bytes; only "
			    "the first %zu are shown: read the rest with bash "
			    "if you need it]", agents_len, keep);
		if (r == 0)
			r = buf_printf(&b, "\n");
	}
	if (r < 0) {
		buf_free(&b);
		return NULL;
	}
	return b.data;
}

json_object *
prompt_tools(int timeout_s)
{
	char desc[512];
	json_object *tools, *bash, *schema;

	snprintf(desc, sizeof(desc), "Run a bash command in the room's "
	    "workspace (/workspace) and get its combined stdout and stderr, "
	    "with the exit status when it is not 0. No network. Output over "
	    "64 KiB is cut in the middle. Default timeout %d s.", timeout_s);
	schema = json_tokener_parse("{\"type\":\"object\",\"properties\":{"
	    "\"command\":{\"type\":\"string\",\"description\":\"The bash "
	    "command to run.\"},\"timeout\":{\"type\":\"integer\","
	    "\"description\":\"Seconds before the command is killed.\"}},"
	    "\"required\":[\"command\"]}");
	bash = json_object_new_object();
	json_object_object_add(bash, "name", json_object_new_string("bash"));
	json_object_object_add(bash, "description",
	    json_object_new_string(desc));
	json_object_object_add(bash, "input_schema", schema);
	tools = json_object_new_array();
	json_object_array_add(tools, bash);
	return tools;
}

char *
prompt_user_text(const char *user, const char *text)
{
	size_t n = strlen(user) + strlen(text) + 3;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s:\n%s", user, text);
	return s;
}

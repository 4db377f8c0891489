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
#include "jsonl.h"
#include "skills.h"

#define PROMPT_MAX	(PROMPT_MAX_AGENTS_MD + PROMPT_MAX_SKILLS + 16 * 1024)
#define PROMPT_MAX_SKILLS	(SKILLS_MAX * (SKILLS_MAX_NAME + \
				 SKILLS_MAX_DESC + 8) + 512)

/* The skills' names and descriptions, one a line.  0 or -errno. */
static int
prompt_skills(struct buf *b, json_object *skills)
{
	size_t n = skills ? json_object_array_length(skills) : 0;
	int r;

	if (n == 0)
		return 0;
	r = buf_printf(b, "\nSkills: instructions for particular tasks. When "
	    "a task matches one, load its instructions with the skill tool "
	    "(input: its name) before you start:\n");
	for (size_t i = 0; r == 0 && i < n; i++) {
		json_object *s = json_object_array_get_idx(skills, i);
		const char *d = json_get_string(s, "description");

		r = buf_printf(b, "- %s%s%s\n", json_get_string(s, "name"),
		    d && *d ? ": " : "", d ? d : "");
	}
	return r;
}

char *
prompt_system(const char *room, json_object *members, const char *agents_md,
    size_t agents_len, json_object *skills)
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
	    "the room sees them and their output. To look at and change "
	    "files, prefer the read, write, edit, ls and grep tools: paths "
	    "are relative to /workspace. Some calls may need a person's "
	    "approval, and a denied call is reported to you as denied. Be "
	    "concise: your answers appear in a terminal chat.\n",
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
	if (r == 0)
		r = prompt_skills(&b, skills);
	if (r < 0) {
		buf_free(&b);
		return NULL;
	}
	return b.data;
}

/* The file tools' schemas: name, description, JSON schema. */
static const char *const prompt_file_tools[][3] = {
	{ "read", "Read a text file of the workspace. Lines come numbered "
	    "(number, tab, text); at most 2000 lines or 256 KiB per call, with "
	    "a note saying the offset to read on from when more remains.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"path\":{\"type\":\"string\",\"description\":\"The file, "
	    "relative to /workspace.\"},"
	    "\"offset\":{\"type\":\"integer\",\"description\":\"First "
	    "line to show, 1-based (default 1).\"},"
	    "\"limit\":{\"type\":\"integer\",\"description\":\"Lines to "
	    "show (default and most 2000).\"}},"
	    "\"required\":[\"path\"]}" },
	{ "write", "Create or replace a file of the workspace with the given "
	    "content, making missing parent directories. The file is replaced "
	    "whole and atomically. To change part of a file, use edit.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"path\":{\"type\":\"string\",\"description\":\"The file, "
	    "relative to /workspace.\"},"
	    "\"content\":{\"type\":\"string\",\"description\":\"The "
	    "file's entire new content.\"}},"
	    "\"required\":[\"path\",\"content\"]}" },
	{ "edit", "Replace an exact piece of text in a file: old_string must "
	    "occur exactly once (include enough surrounding lines, with exact "
	    "whitespace), unless replace_all is true. Read the file first.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"path\":{\"type\":\"string\",\"description\":\"The file, "
	    "relative to /workspace.\"},"
	    "\"old_string\":{\"type\":\"string\",\"description\":\"The "
	    "exact text to replace.\"},"
	    "\"new_string\":{\"type\":\"string\",\"description\":\"The "
	    "text to put in its place.\"},"
	    "\"replace_all\":{\"type\":\"boolean\",\"description\":"
	    "\"Replace every occurrence (default false).\"}},"
	    "\"required\":[\"path\",\"old_string\",\"new_string\"]}" },
	{ "ls", "List a directory of the workspace, or find files with a glob "
	    "pattern. Paths come relative to /workspace, directories ending "
	    "in /. A pattern with a / matches the path below the directory "
	    "(\"src/**/*.c\", \"**\" spans directories), one without matches "
	    "names at any depth (\"*.c\"). .git is not searched.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"path\":{\"type\":\"string\",\"description\":\"The "
	    "directory (default: the workspace).\"},"
	    "\"pattern\":{\"type\":\"string\",\"description\":\"A glob "
	    "such as **/*.c; without it, only the directory's own entries.\"}}}" },
	{ "grep", "Search file contents with a regular expression in PCRE2 "
	    "(Perl) syntax: \\d, \\b, [[:alpha:]], lazy quantifiers and "
	    "lookarounds work. Matching lines come as file:line: text, "
	    "capped. A pattern that backtracks too much on a line is "
	    "refused with an error: avoid nested repetition like (a+)+.",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"pattern\":{\"type\":\"string\",\"description\":\"The "
	    "regular expression.\"},"
	    "\"path\":{\"type\":\"string\",\"description\":\"A file or "
	    "directory to search (default: the workspace).\"},"
	    "\"glob\":{\"type\":\"string\",\"description\":\"Only files "
	    "matching this glob, e.g. *.py.\"},"
	    "\"ignore_case\":{\"type\":\"boolean\"}},"
	    "\"required\":[\"pattern\"]}" },
};

/* One tool object {name, description, input_schema}. */
static json_object *
prompt_tool(const char *name, const char *desc, json_object *schema)
{
	json_object *t = json_object_new_object();

	json_object_object_add(t, "name", json_object_new_string(name));
	json_object_object_add(t, "description", json_object_new_string(desc));
	json_object_object_add(t, "input_schema", schema);
	return t;
}

/* The skill tool's schema, offered only to a room with skills. */
static json_object *
prompt_skill_tool(void)
{
	return prompt_tool("skill", "Load one of the room's skills, listed "
	    "in the system prompt: returns its full instructions.",
	    json_tokener_parse("{\"type\":\"object\",\"properties\":{"
	    "\"name\":{\"type\":\"string\",\"description\":\"The "
	    "skill's name, as listed.\"}},\"required\":[\"name\"]}"));
}

json_object *
prompt_tools(int timeout_s, int with_skill)
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
	bash = prompt_tool("bash", desc, schema);
	tools = json_object_new_array();
	json_object_array_add(tools, bash);
	for (size_t i = 0; i < sizeof(prompt_file_tools) /
	    sizeof(prompt_file_tools[0]); i++)
		json_object_array_add(tools, prompt_tool(prompt_file_tools[i][0],
		    prompt_file_tools[i][1],
		    json_tokener_parse(prompt_file_tools[i][2])));
	if (with_skill)
		json_object_array_add(tools, prompt_skill_tool());
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

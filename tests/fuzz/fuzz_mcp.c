/*
 * fuzz_mcp.c: libFuzzer entry point for agent/mcp/mcp_proto.c and
 * agent/mcp/mcp_config.c, what reads an MCP server's stdout lines (a program
 * the room's owner chose, running in the sandbox) and a config line's
 * `mcp` list.
 *
 * The input is one line as a server would write it.  Whatever it is: a
 * message is classified without crashing; a tools/list result adds only
 * tools whose names follow the providers' rule, each with an object
 * schema; a tools/call result's text is valid UTF-8 and no longer than
 * the head and tail bash keeps; the same JSON as a config list is either
 * refused or comes back with only known, bounded fields.
 */
#include <string.h>

#include "fuzz.h"
#include "../../agent/mcp/mcp_config.h"
#include "../../agent/mcp/mcp_proto.h"
#include "../../agent/tools/tool_bash.h"
#include "jsonl.h"
#include "utf8.h"

/* Check the tools added from result. */
static void
fuzz_tools(json_object *result)
{
	json_object *tools = json_object_new_array();
	json_object *names = json_object_new_object();
	char note[200] = "";
	int skipped = 0;

	if (mcp_proto_add_tools(result, "srv", tools, names, 8, &skipped, note,
	    sizeof(note)) == 0) {
		FUZZ_CHECK(json_object_array_length(tools) <= 8);
		for (size_t i = 0; i < json_object_array_length(tools); i++) {
			json_object *t = json_object_array_get_idx(tools, i);
			const char *n = json_get_string(t, "name");
			json_object *sc = NULL;

			FUZZ_CHECK(n && strlen(n) <= MCP_TOOL_NAME_MAX &&
			    strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
			    "KLMNOPQRSTUVWXYZ0123456789_-") == strlen(n));
			FUZZ_CHECK(json_object_object_get_ex(t, "input_schema",
			    &sc) && json_object_is_type(sc, json_type_object));
		}
		FUZZ_CHECK(utf8_valid(note, strlen(note)) || !note[0]);
	}
	json_object_put(tools);
	json_object_put(names);
}

/* Check the text of result as a tools/call answer. */
static void
fuzz_call(json_object *result)
{
	int err = 0;
	char *text = mcp_proto_call_text(result, &err);

	if (!text)
		return;
	FUZZ_CHECK(utf8_valid(text, strlen(text)) || !text[0]);
	FUZZ_CHECK(strlen(text) <= TOOL_BASH_HEAD + TOOL_BASH_TAIL + 256);
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	json_object *m = jsonl_parse_object((const char *)data, size, &why);
	json_object *res = NULL, *list, *cfg;
	char err[300], line[400];
	long long id;

	if (!m)
		return 0;
	if (mcp_proto_classify(m, &id) == MCP_MSG_ERROR) {
		mcp_proto_error_text(m, line, sizeof(line));
		FUZZ_CHECK(utf8_valid(line, strlen(line)) || !line[0]);
	}
	json_object_put(mcp_proto_answer(m));
	if (!json_object_object_get_ex(m, "result", &res))
		res = m;
	fuzz_tools(res);
	fuzz_call(res);
	if (json_object_object_get_ex(m, "mcp", &list) &&
	    (cfg = mcp_config_parse(list, NULL, err, sizeof(err)))) {
		FUZZ_CHECK(json_object_array_length(cfg) <= MCP_MAX_SERVERS);
		json_object_put(cfg);
	}
	json_object_put(m);
	return 0;
}

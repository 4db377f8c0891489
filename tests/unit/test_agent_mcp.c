/*
 * test_agent_mcp.c: the room's MCP server list as a config line gives it
 * (agent/mcp/mcp_config.c) and the MCP messages read from a server
 * (agent/mcp/mcp_proto.c), from raw JSON as a hostile server or owner would
 * write it.
 */
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "keys.h"
#include "../../agent/mcp/mcp_config.h"
#include "../../agent/mcp/mcp_proto.h"
#include "../../agent/tools/tool_bash.h"
#include "unit.h"

/* mcp_config_parse of the JSON text j; NULL and why when refused. */
static json_object *
parse(const char *j, const struct keys *k, char *why, size_t n)
{
	json_object *v = json_tokener_parse(j), *out;

	why[0] = '\0';
	out = mcp_config_parse(v, k, why, n);
	json_object_put(v);
	return out;
}

static void
test_config(void)
{
	static struct keys k;
	char why[300];
	json_object *out;

	snprintf(k.key[KEYS_ANTHROPIC], KEYS_MAX, "sk-the-operators-key");
	out = parse("[{\"name\":\"fs\",\"command\":\"npx\",\"args\":[\"-y\","
	    "\"\"],\"env\":{\"HOME_DIR\":\"ws\"}}]", &k, why,
	    sizeof(why));
	CHECK(out != NULL);
	CHECK_STR(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN),
	    "[{\"name\":\"fs\",\"command\":\"npx\",\"args\":[\"-y\",\"\"],"
	    "\"env\":{\"HOME_DIR\":\"ws\"}}]");
	json_object_put(out);
	/* args and env are optional and come back empty. */
	out = parse("[{\"name\":\"a-1_b\",\"command\":\"x\"}]", &k, why,
	    sizeof(why));
	CHECK_STR(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN),
	    "[{\"name\":\"a-1_b\",\"command\":\"x\",\"args\":[],\"env\":{}}]");
	json_object_put(out);
	CHECK(!parse("{}", &k, why, sizeof(why)));
	CHECK(!parse("[{\"name\":\"a__b\",\"command\":\"x\"}]", &k, why,
	    sizeof(why)));
	CHECK(!parse("[{\"name\":\"a b\",\"command\":\"x\"}]", &k, why,
	    sizeof(why)));
	CHECK(!parse("[{\"name\":\"\",\"command\":\"x\"}]", &k, why,
	    sizeof(why)));
	CHECK(!parse("[{\"name\":\"x\",\"command\":\"a\\u0000b\"}]", &k, why,
	    sizeof(why)));
	CHECK(!parse("[{\"name\":\"x\",\"command\":\"a\",\"args\":[1]}]", &k,
	    why, sizeof(why)));
	CHECK(!parse("[{\"name\":\"x\",\"command\":\"a\",\"env\":{\"1A\":"
	    "\"v\"}}]", &k, why, sizeof(why)));
	CHECK(!parse("[{\"name\":\"x\",\"command\":\"a\",\"env\":{\"T\":"
	    "\"Bearer sk-the-operators-key\"}}]", &k, why, sizeof(why)));
	CHECK(strstr(why, "API keys") != NULL);
	CHECK(!parse("[{\"name\":\"x\",\"command\":\"a\",\"url\":\"u\"}]", &k,
	    why, sizeof(why)));
	CHECK(!parse("[{\"name\":\"x\",\"command\":\"a\"},{\"name\":\"x\","
	    "\"command\":\"b\"}]", &k, why, sizeof(why)));
	CHECK(strstr(why, "differ") != NULL);
	CHECK(!parse("[{},{},{},{},{},{},{},{},{}]", &k, why, sizeof(why)));
}

static void
test_names(void)
{
	char out[80];

	CHECK_INT(mcp_proto_tool_name("fs", "read_file", out, sizeof(out)), 0);
	CHECK_STR(out, "mcp__fs__read_file");
	CHECK_INT(mcp_proto_tool_name("fs", "read.file", out, sizeof(out)),
	    -22);
	CHECK_INT(mcp_proto_tool_name("fs", "", out, sizeof(out)), -22);
	CHECK_INT(mcp_proto_tool_name("fs", "a-very-long-tool-name-that-goes-"
	    "over-the-limit-of-64-bytes", out, sizeof(out)), -22);
}

static void
test_classify(void)
{
	long long id;
	json_object *m;

#define KIND(text, want) do { \
	m = json_tokener_parse(text); \
	CHECK_INT(mcp_proto_classify(m, &id), want); \
	json_object_put(m); \
} while (0)
	KIND("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", MCP_MSG_RESULT);
	CHECK_INT(id, 3);
	KIND("{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":1}}",
	    MCP_MSG_ERROR);
	KIND("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"ping\"}",
	    MCP_MSG_REQUEST);
	KIND("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}",
	    MCP_MSG_NOTIFICATION);
	KIND("{\"jsonrpc\":\"1.0\",\"id\":3,\"result\":{}}", MCP_MSG_INVALID);
	KIND("{\"id\":3,\"result\":{}}", MCP_MSG_INVALID);
	KIND("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":[]}", MCP_MSG_INVALID);
	KIND("{\"jsonrpc\":\"2.0\",\"id\":3}", MCP_MSG_INVALID);
	KIND("{\"jsonrpc\":\"2.0\",\"method\":7}", MCP_MSG_INVALID);
#undef KIND
	m = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":"
	    "\"ping\"}");
	json_object *a = mcp_proto_answer(m);
	CHECK_STR(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN),
	    "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}");
	json_object_put(a);
	json_object_put(m);
	m = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":"
	    "\"sampling/createMessage\"}");
	a = mcp_proto_answer(m);
	CHECK(strstr(json_object_to_json_string(a), "-32601") != NULL);
	json_object_put(a);
	json_object_put(m);
}

static void
test_tools(void)
{
	json_object *res = json_tokener_parse("{\"tools\":["
	    "{\"name\":\"ok\",\"description\":\"fine\\u0007\",\"inputSchema\":"
	    "{\"type\":\"object\"}},"
	    "{\"name\":\"bad.name\",\"inputSchema\":{\"type\":\"object\"}},"
	    "{\"name\":\"noschema\"},"
	    "{\"name\":\"arr\",\"inputSchema\":{\"type\":\"array\"}},"
	    "{\"name\":\"ok\",\"inputSchema\":{\"type\":\"object\"}},"
	    "{\"name\":\"two\",\"inputSchema\":{\"type\":\"object\"}},"
	    "{\"name\":\"three\",\"inputSchema\":{\"type\":\"object\"}}],"
	    "\"nextCursor\":\"c2\"}");
	json_object *tools = json_object_new_array();
	json_object *names = json_object_new_object(), *t, *v;
	char note[200] = "";
	int skipped = 0;

	CHECK_INT(mcp_proto_add_tools(res, "s", tools, names, 2, &skipped,
	    note, sizeof(note)), 0);
	CHECK_INT(json_object_array_length(tools), 2);
	CHECK_INT(skipped, 5);
	CHECK(strstr(note, "bad.name") != NULL);
	t = json_object_array_get_idx(tools, 0);
	CHECK_STR(json_get_string(t, "name"), "mcp__s__ok");
	CHECK_STR(json_get_string(t, "description"), "fine");
	CHECK(json_object_object_get_ex(t, "input_schema", &v));
	CHECK(json_object_object_get_ex(names, "mcp__s__two", &v));
	CHECK_STR(json_object_get_string(v), "two");
	CHECK_STR(mcp_proto_next_cursor(res), "c2");
	json_object_put(res);
	res = json_tokener_parse("{\"tools\":{}}");
	CHECK_INT(mcp_proto_add_tools(res, "s", tools, names, 2, &skipped,
	    note, sizeof(note)), -22);
	CHECK(mcp_proto_next_cursor(res) == NULL);
	json_object_put(res);
	json_object_put(tools);
	json_object_put(names);
}

static void
test_call_text(void)
{
	json_object *res = json_tokener_parse("{\"content\":["
	    "{\"type\":\"text\",\"text\":\"one\"},"
	    "{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"},"
	    "{\"type\":\"resource_link\",\"uri\":\"file:///a\"},"
	    "{\"type\":\"resource\",\"resource\":{\"uri\":\"r:x\",\"text\":"
	    "\"body\"}},"
	    "{\"type\":\"resource\",\"resource\":{\"uri\":\"r:b\",\"blob\":"
	    "\"AA\"}},{\"type\":\"video\"}],\"isError\":true}");
	char *s, *big;
	int err = 0;
	size_t n = 3 * (TOOL_BASH_HEAD + TOOL_BASH_TAIL);

	s = mcp_proto_call_text(res, &err);
	CHECK_INT(err, 1);
	CHECK_STR(s, "one\n[image content (image/png) not shown: the agent "
	    "passes on only text]\n[resource link: file:///a]\n[resource "
	    "r:x]\nbody\n[binary resource r:b not shown]\n[content of type "
	    "video not shown]");
	free(s);
	json_object_put(res);
	res = json_tokener_parse("{\"structuredContent\":{\"n\":1}}");
	s = mcp_proto_call_text(res, &err);
	CHECK_INT(err, 0);
	CHECK_STR(s, "{\"n\":1}");
	free(s);
	json_object_put(res);
	res = json_tokener_parse("{\"content\":\"text\"}");
	CHECK(mcp_proto_call_text(res, &err) == NULL);
	json_object_put(res);
	/* A huge text keeps its head and tail, as bash's output does. */
	big = malloc(n + 1);
	memset(big, 'x', n);
	big[n] = '\0';
	res = json_object_new_object();
	json_object *content = json_object_new_array(), *b =
	    json_object_new_object();
	json_object_object_add(b, "type", json_object_new_string("text"));
	json_object_object_add(b, "text", json_object_new_string(big));
	json_object_array_add(content, b);
	json_object_object_add(res, "content", content);
	s = mcp_proto_call_text(res, &err);
	CHECK(strlen(s) < TOOL_BASH_HEAD + TOOL_BASH_TAIL + 200);
	CHECK(strstr(s, "bytes") != NULL);
	free(s);
	free(big);
	json_object_put(res);
}

int
main(void)
{
	TEST(test_config);
	TEST(test_names);
	TEST(test_classify);
	TEST(test_tools);
	TEST(test_call_text);
	return unit_done("test_agent_mcp");
}

/*
 * test_agent_tools.c: the pure parts of the file tools: path checks
 * (wsio_path), error messages, edit's replacement and counting, read's line
 * numbering and caps, glob matching (against the old backtracking
 * matcher, kept here as the reference, and with a bound on its work), and
 * grep's regex budget.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "unit.h"
#include "../fuzz/glob_ref.h"
#include "../../agent/tools/output_save.h"
#include "../../agent/tools/pathglob.h"
#include "../../agent/prompt.h"
#include "../../agent/tools/tool_files.h"
#include "../../agent/tools/tool_regex.h"
#include "../../agent/tools/tools.h"
#include "../../agent/wsio.h"

/* wsio_path's result for in, or "ERR" when refused. */
static const char *
path_of(const char *in)
{
	static char out[4096];
	char err[512];

	if (wsio_path(in, out, sizeof(out), err, sizeof(err)) < 0) {
		CHECK(strstr(err, "path escapes the workspace") != NULL);
		return "ERR";
	}
	return out;
}

static void
test_paths(void)
{
	CHECK_STR(path_of(NULL), ".");
	CHECK_STR(path_of(""), ".");
	CHECK_STR(path_of("."), ".");
	CHECK_STR(path_of("a.txt"), "a.txt");
	CHECK_STR(path_of("./a//b/"), "a/b");
	CHECK_STR(path_of("/workspace"), ".");
	CHECK_STR(path_of("/workspace/"), ".");
	CHECK_STR(path_of("/workspace/src/x.c"), "src/x.c");
	CHECK_STR(path_of("a/../b"), "a/../b");
	CHECK_STR(path_of("a/.."), "a/..");
	CHECK_STR(path_of(".."), "ERR");
	CHECK_STR(path_of("../x"), "ERR");
	CHECK_STR(path_of("a/../../x"), "ERR");
	CHECK_STR(path_of("/workspace/../etc"), "ERR");
	CHECK_STR(path_of("/etc/passwd"), "ERR");
	CHECK_STR(path_of("/workspacex/a"), "ERR");
	CHECK_STR(path_of("/"), "ERR");
}

static void
test_errors(void)
{
	char m[512];

	wsio_error(m, sizeof(m), "x", -EXDEV);
	CHECK(strstr(m, "path escapes the workspace") != NULL);
	wsio_error(m, sizeof(m), "x", -ENOENT);
	CHECK(strstr(m, "x does not exist") != NULL);
	wsio_error(m, sizeof(m), "x", -EACCES);
	CHECK(strstr(m, "permission denied") != NULL);
}

static void
test_edit(void)
{
	char *out;
	size_t len, n;
	const char *t = "b = 2\nb = 2\nc\n";

	CHECK_INT(tool_edit_apply(t, strlen(t), "c", 1, "d", 1, 0, &out, &len,
	    &n), 0);
	CHECK_STR(out, "b = 2\nb = 2\nd\n");
	CHECK_INT(n, 1);
	CHECK_INT(len, strlen(t));
	free(out);
	CHECK_INT(tool_edit_apply(t, strlen(t), "b = 2", 5, "x", 1, 0, &out,
	    &len, &n), -EEXIST);
	CHECK_INT(n, 2);
	CHECK(out == NULL);
	CHECK_INT(tool_edit_apply(t, strlen(t), "b = 2", 5, "x", 1, 1, &out,
	    &len, &n), 0);
	CHECK_STR(out, "x\nx\nc\n");
	CHECK_INT(len, 6);
	free(out);
	CHECK_INT(tool_edit_apply(t, strlen(t), "zz", 2, "x", 1, 1, &out, &len,
	    &n), -ENOENT);
	CHECK_INT(n, 0);
	/* Occurrences do not overlap: "aaaa" holds "aa" twice. */
	CHECK_INT(tool_edit_apply("aaaa", 4, "aa", 2, "b", 1, 1, &out, &len,
	    &n), 0);
	CHECK_INT(n, 2);
	CHECK_STR(out, "bb");
	free(out);
	/* Deleting, and text with a NUL in it. */
	CHECK_INT(tool_edit_apply("a\0b", 3, "\0", 1, "", 0, 0, &out, &len,
	    &n), 0);
	CHECK_INT(len, 2);
	CHECK(memcmp(out, "ab", 2) == 0);
	free(out);
}

/* read's output for text with first/limit/max. */
static char *
read_of(const char *text, long first, long limit, size_t max, int *full,
    size_t chunk)
{
	struct tool_read_fmt f;
	struct buf out;
	size_t n = strlen(text), i = 0;

	buf_init(&out, 1 << 20);
	tool_read_fmt_init(&f, &out, first, limit, max);
	while (i < n && !f.full) {
		size_t k = n - i < chunk ? n - i : chunk;

		i += tool_read_fmt_feed(&f, text + i, k);
	}
	if (!f.full)
		tool_read_fmt_end(&f);
	*full = f.full;
	tool_read_fmt_free(&f);
	if (!out.data)
		buf_printf(&out, "%s", "");
	return out.data;
}

static void
test_read_format(void)
{
	int full;
	char *s;

	s = read_of("a\nb\nc", 1, 2000, 1 << 20, &full, 1);
	CHECK_STR(s, "     1\ta\n     2\tb\n     3\tc\n");
	CHECK_INT(full, 0);
	free(s);
	s = read_of("a\nb\nc\nd\n", 2, 2, 1 << 20, &full, 3);
	CHECK_STR(s, "     2\tb\n     3\tc\n");
	CHECK_INT(full, 1);
	free(s);
	/* The byte cap stops before a line that does not fit. */
	s = read_of("aaaa\nbbbb\ncccc\n", 1, 2000, 20, &full, 100);
	CHECK_STR(s, "     1\taaaa\n");
	CHECK_INT(full, 2);
	free(s);
	s = read_of("", 1, 2000, 100, &full, 10);
	CHECK_STR(s, "");
	free(s);
}

static void
test_read_long_line(void)
{
	size_t n = TOOL_READ_LINE_MAX + 100;
	char *text = malloc(n + 2), *s;
	int full;

	memset(text, 'x', n);
	text[n] = '\n';
	text[n + 1] = '\0';
	s = read_of(text, 1, 10, 1 << 20, &full, 4096);
	CHECK(strstr(s, "[... 100 more bytes on this line]") != NULL);
	CHECK_INT(strlen(s), 7 + TOOL_READ_LINE_MAX +
	    strlen(" [... 100 more bytes on this line]") + 1);
	free(s);
	free(text);
}

/* ---- globs ---------------------------------------------------------------- */

/* pathglob's answer for one pattern and path, and its work in *steps. */
static int
gm_steps(const char *pat, const char *path, unsigned long *steps)
{
	struct pathglob *g = NULL;
	int m;

	*steps = 0;
	if (pathglob_new(pat, &g) < 0)
		return -1;
	m = pathglob_match(g, path, steps);
	CHECK(*steps <= pathglob_states(g) * strlen(path) + 1);
	pathglob_free(g);
	return m;
}

static int
gm(const char *pat, const char *path)
{
	unsigned long steps;

	return gm_steps(pat, path, &steps);
}

/* ls's rule on a compiled pattern. */
static int
fm(const char *pat, const char *rel)
{
	struct pathglob *g = NULL;
	int m;

	if (pathglob_new(pat, &g) < 0)
		return -1;
	m = tool_find_match(g, rel);
	pathglob_free(g);
	return m;
}

static void
test_glob(void)
{
	CHECK(gm("*.c", "a.c"));
	CHECK(!gm("*.c", "src/a.c"));
	CHECK(gm("**/*.c", "a.c"));
	CHECK(gm("**/*.c", "src/x/a.c"));
	CHECK(!gm("**/*.c", "src/x/a.h"));
	CHECK(gm("src/**", "src/x/a.h"));
	CHECK(gm("src/**/a.h", "src/a.h"));
	CHECK(gm("src/**/a.h", "src/x/y/a.h"));
	CHECK(!gm("src/**/a.h", "srcx/a.h"));
	CHECK(gm("a?c", "abc"));
	CHECK(!gm("a?c", "a/c"));
	CHECK(!gm("a*c", "a/c"));
	CHECK(gm("[a-c]x", "bx"));
	CHECK(!gm("[!a-c]x", "bx"));
	CHECK(gm("[!a-c]x", "dx"));
	CHECK(gm("\\*", "*"));
	CHECK(!gm("\\*", "a"));
	CHECK(gm("a[", "a["));
	CHECK(gm("a**b", "axxb"));
	CHECK(gm("**", ""));
	CHECK(gm("**", "a/b/c"));
	CHECK(!gm("src/**", "src"));
	CHECK(gm("[]]", "]"));
	CHECK(!gm("[!]]", "/"));
	CHECK(gm("a\\", "a\\"));
	CHECK(fm("*.h", "src/util/x.h"));
	CHECK(!fm("util/*", "src/util/x.h"));
	CHECK(fm("util/*", "util/x.h"));
}

/* The pattern that froze the agent: * before each of 14 a's, then *b,
 * against a name of 200 a's.  The old matcher's work grows as C(200, 14);
 * pathglob's is bounded by its states per byte. */
static void
test_glob_bomb(void)
{
	const char *pat = "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";
	char name[201], path[4097], many[1025];
	unsigned long steps;

	memset(name, 'a', 200);
	name[200] = '\0';
	CHECK_INT(gm_steps(pat, name, &steps), 0);
	CHECK(steps <= 201 * (2 * strlen(pat) + 2));
	CHECK(steps < 20000);
	name[199] = 'b';
	CHECK_INT(gm_steps(pat, name, &steps), 1);
	CHECK(steps < 20000);

	/* The largest pattern ls takes, all stars, over a longest path. */
	for (size_t i = 0; i < 1024; i += 2)
		many[i] = '*', many[i + 1] = 'a';
	many[1023] = 'b';
	many[1024] = '\0';
	memset(path, 'a', 4096);
	path[4096] = '\0';
	CHECK_INT(gm_steps(many, path, &steps), 0);
	CHECK(steps <= 4097UL * 2050);
	/* With slashes and ** too. */
	for (size_t i = 0; i < 4096; i += 8)
		path[i] = '/';
	CHECK_INT(gm_steps("**/*a*a*a*a*a*a*a*a*a*a/**/*b", path, &steps), 0);
	CHECK(steps <= 4097UL * 64);
}

/* Random short patterns and paths over a small alphabet: pathglob agrees
 * with the reference on every one. */
static void
test_glob_random(void)
{
	static const char *const ptoks[] = { "a", "b", "/", "*", "**", "?",
	    "[ab]", "[!a]", "[a-", "\\*", "\\", "[]a]", "[^/]", "**/", "/**",
	    "-", "]", "[b-a]", "[\\]]" };
	static const char sbytes[] = "aaabb//*[-]\\";
	unsigned long long x = 0x9e3779b97f4a7c15ULL;
	char pat[64], path[16];
	int bad = 0;

	for (int iter = 0; iter < 200000 && bad < 5; iter++) {
		size_t np = 0, ns;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		for (int k = (int)(x % 7); k >= 0; k--) {
			const char *t;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			t = ptoks[x % (sizeof(ptoks) / sizeof(ptoks[0]))];
			memcpy(pat + np, t, strlen(t));
			np += strlen(t);
		}
		pat[np] = '\0';
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		ns = x % 10;
		for (size_t i = 0; i < ns; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			path[i] = sbytes[x % (sizeof(sbytes) - 1)];
		}
		path[ns] = '\0';
		if (gm(pat, path) != ref_glob(pat, pat, path)) {
			fprintf(stderr, "glob %s on %s: pathglob %d, reference "
			    "%d\n", pat, path, gm(pat, path),
			    ref_glob(pat, pat, path));
			bad++;
		}
	}
	CHECK_INT(bad, 0);
}

/* ---- grep's regexes ----------------------------------------------------------- */

static int
rm(const char *pat, int icase, const char *s)
{
	struct tool_regex *re = NULL;
	char err[256];
	int m;

	if (tool_regex_new(pat, icase, &re, err, sizeof(err)) < 0)
		return -100;
	m = tool_regex_match(re, s, strlen(s));
	tool_regex_free(re);
	return m;
}

static void
test_regex(void)
{
	struct tool_regex *re = NULL;
	char err[256] = "", *line;
	size_t n = 5000;

	CHECK_INT(rm("return [0-9]+", 0, "\treturn 42;"), 1);
	CHECK_INT(rm("^int", 0, "x int"), 0);
	CHECK_INT(rm("RETURN", 1, "return"), 1);
	CHECK_INT(rm("[[:digit:]]{2}", 0, "a42"), 1);
	CHECK_INT(rm("\\d+\\b", 0, "x 7"), 1);
	CHECK_INT(rm("(ab)\\1", 0, "abab"), 1);
	CHECK_INT(rm("é", 0, "café"), 1);
	/* A line that is not UTF-8 still matches where it can. */
	CHECK_INT(rm("abc", 0, "\xff\xfe abc"), 1);
	CHECK_INT(rm("^.$", 0, "\xff"), 0);
	CHECK_INT(tool_regex_new("(unclosed", 0, &re, err, sizeof(err)),
	    -EINVAL);
	CHECK(re == NULL && strstr(err, "missing closing parenthesis"));

	/* Backtracking bombs end with -ERANGE, not after minutes. */
	line = malloc(n + 1);
	memset(line, 'a', n);
	line[n] = '\0';
	CHECK_INT(rm("(.*)(.*)(.*)(.*)(.*)\\5[xy]", 0, line), -ERANGE);
	CHECK_INT(rm("^(a|aa)+\\1[xy]", 0, line), -ERANGE);
	CHECK_INT(rm("^(a+)+b", 0, line), -ERANGE);
	CHECK_INT(rm("a{4000}", 0, line), 1);
	free(line);
}

static void
test_table(void)
{
	CHECK(tools_find("bash") && tools_find("bash")->modifies);
	CHECK(tools_find("write") && tools_find("write")->modifies);
	CHECK(tools_find("edit") && tools_find("edit")->modifies);
	CHECK(tools_find("read") && !tools_find("read")->modifies);
	CHECK(tools_find("ls") && !tools_find("ls")->modifies);
	CHECK(tools_find("grep") && !tools_find("grep")->modifies);
	CHECK(tools_find("rm") == NULL);
	CHECK(tools_find(NULL) == NULL);
	CHECK(tool_files_binary("a\0b", 3));
	CHECK(!tool_files_binary("abc", 3));
}

/* Every tool of the table has a schema the model sees, bash first. */
static void
test_schemas(void)
{
	static const char *const names[] = { "bash", "read", "write", "edit",
	    "ls", "grep", "skill" };
	json_object *t = prompt_tools(120, 1), *schema;

	CHECK_INT(json_object_array_length(t), 7);
	for (size_t i = 0; i < 7; i++) {
		json_object *tool = json_object_array_get_idx(t, i);

		schema = NULL;
		CHECK_STR(json_get_string(tool, "name"), names[i]);
		CHECK(tools_find(names[i]) != NULL);
		CHECK(json_object_object_get_ex(tool, "input_schema", &schema));
		CHECK(schema && json_object_is_type(schema, json_type_object));
		CHECK_STR(json_get_string(schema, "type"), "object");
	}
	json_object_put(t);
}

/* A saved output's name: UTC time to the millisecond (so names sort by
 * age), then the call id with anything that could make a path dropped. */
static void
test_output_save_name(void)
{
	char name[128];

	output_save_name(name, sizeof(name), "toolu_01AbC-9", 1764577200123LL);
	CHECK_STR(name, "bash-20251201-082000-123-toolu_01AbC-9.txt");
	output_save_name(name, sizeof(name), "../../etc/x y\n", 5);
	CHECK_STR(name, "bash-19700101-000000-005-etcxy.txt");
	output_save_name(name, sizeof(name), "", 0);
	CHECK_STR(name, "bash-19700101-000000-000.txt");
}

int
main(void)
{
	TEST(test_paths);
	TEST(test_errors);
	TEST(test_edit);
	TEST(test_read_format);
	TEST(test_read_long_line);
	TEST(test_glob);
	TEST(test_glob_bomb);
	TEST(test_glob_random);
	TEST(test_regex);
	TEST(test_table);
	TEST(test_schemas);
	TEST(test_output_save_name);
	return unit_done("test_agent_tools");
}

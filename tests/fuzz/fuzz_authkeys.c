/*
 * fuzz_authkeys.c: libFuzzer entry point for sshd/shared/authkeys.c's line
 * parser (authkeys_parse_line), which reads DATA/authorized_keys, a file admins
 * fill by pasting what users send them.
 *
 * The input is one line (cut at its first NUL, as the loader sees it).
 * Checks: the result is 1, 0 or -EINVAL; 0 only for a blank or '#' line;
 * on 1 the type is known, the key blob is one non-empty word, the comment
 * has no surrounding blanks, every pointer lies in the line, and the user
 * is a valid user name; option strings lie in the line and a from= list
 * parsed is one addr_match_list accepts.  A refused line says why.  A
 * line ending in \n or \r\n parses the same.
 */
#include <errno.h>
#include <string.h>

#include "addr_match.h"
#include "authkeys.h"
#include "fuzz.h"
#include "names.h"

/* p points into [line, line + n]. */
static int
inside(const char *p, const char *line, size_t n)
{
	return p >= line && p <= line + n;
}

/* Parse a copy of s with suffix appended; the result and the fields. */
static int
parse(const char *s, const char *suffix, struct authkeys_line *out,
    char **copy)
{
	size_t n = strlen(s), m = strlen(suffix);
	int r;

	*copy = malloc(n + m + 1);
	FUZZ_CHECK(*copy != NULL);
	memcpy(*copy, s, n);
	memcpy(*copy + n, suffix, m + 1);
	r = authkeys_parse_line(*copy, out);
	FUZZ_CHECK(r == 1 || r == 0 || r == -EINVAL);
	if (r == -EINVAL)
		FUZZ_CHECK(out->why[0] != '\0');
	if (r != 1)
		return r;
	FUZZ_CHECK(!out->opts.command || inside(out->opts.command, *copy, n + m));
	FUZZ_CHECK(!out->opts.from || (inside(out->opts.from, *copy, n + m) &&
	    addr_match_list("192.0.2.1", out->opts.from) >= 0));
	FUZZ_CHECK(out->type && out->base64 && out->comment);
	FUZZ_CHECK(inside(out->type, *copy, n + m));
	FUZZ_CHECK(inside(out->base64, *copy, n + m));
	FUZZ_CHECK(out->comment[0] == '\0' ||
	    inside(out->comment, *copy, n + m));
	FUZZ_CHECK(authkeys_is_type(out->type));
	FUZZ_CHECK(out->base64[0] != '\0');
	FUZZ_CHECK(strpbrk(out->base64, " \t") == NULL);
	FUZZ_CHECK(out->comment[0] != ' ' && out->comment[0] != '\t');
	n = strlen(out->comment);
	FUZZ_CHECK(n == 0 || (out->comment[n - 1] != ' ' &&
	    out->comment[n - 1] != '\t' && out->comment[n - 1] != '\r' &&
	    out->comment[n - 1] != '\n'));
	FUZZ_CHECK(memchr(out->user, '\0', sizeof(out->user)) != NULL);
	FUZZ_CHECK(user_name_valid(out->user));
	return r;
}

/* libFuzzer's entry: One authorized_keys line. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstring(data, size), *a, *b, *c;
	struct authkeys_line la, lb, lc;
	int r = parse(s, "", &la, &a);
	const char *p = s + strspn(s, " \t\r\n");

	if (r == 0)
		FUZZ_CHECK(*p == '\0' || *p == '#');
	FUZZ_CHECK(parse(s, "\n", &lb, &b) == r);
	FUZZ_CHECK(parse(s, "\r\n", &lc, &c) == r);
	if (r == 1) {
		FUZZ_CHECK(strcmp(la.type, lb.type) == 0);
		FUZZ_CHECK(strcmp(la.base64, lb.base64) == 0);
		FUZZ_CHECK(strcmp(la.comment, lb.comment) == 0);
		FUZZ_CHECK(strcmp(la.user, lb.user) == 0);
		FUZZ_CHECK(strcmp(la.user, lc.user) == 0);
	}
	free(a);
	free(b);
	free(c);
	free(s);
	return 0;
}

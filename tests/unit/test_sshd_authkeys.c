/*
 * test_sshd_authkeys.c: authorized_keys line parsing (sshd/authkeys.c)
 * from raw lines: key types, options with quotes, user names from comments
 * and from user="...", and lines that must be refused.
 */
#include <errno.h>
#include <stdlib.h>

#include "unit.h"
#include "../../sshd/authkeys.h"

#define KEY "AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyBlobForParsingOnly0123456789abc"

/* Parse a copy of text; the result code, *l filled. */
static int
parse(const char *text, struct authkeys_line *l, char *store, size_t len)
{
	snprintf(store, len, "%s", text);
	return authkeys_parse_line(store, l);
}

static void
test_plain_key_with_comment(void)
{
	char s[512];
	struct authkeys_line l;

	CHECK_INT(parse("ssh-ed25519 " KEY " alice@laptop\n", &l, s, sizeof(s)), 1);
	CHECK_STR(l.type, "ssh-ed25519");
	CHECK_STR(l.base64, KEY);
	CHECK_STR(l.comment, "alice@laptop");
	CHECK_STR(l.user, "alice");
}

static void
test_comment_with_spaces_and_crlf(void)
{
	char s[512];
	struct authkeys_line l;

	CHECK_INT(parse("  ssh-rsa\t" KEY "   Bob Smith \r\n", &l, s, sizeof(s)), 1);
	CHECK_STR(l.type, "ssh-rsa");
	CHECK_STR(l.comment, "Bob Smith");
	CHECK_STR(l.user, "Bob");
}

static void
test_no_comment(void)
{
	char s[512];
	struct authkeys_line l;

	CHECK_INT(parse("ssh-ed25519 " KEY, &l, s, sizeof(s)), 1);
	CHECK_STR(l.comment, "");
	CHECK_STR(l.user, "user");
}

static void
test_options_and_user_option(void)
{
	char s[512];
	struct authkeys_line l;

	CHECK_INT(parse("no-pty,user=\"carol\" ssh-ed25519 " KEY " c@x", &l, s,
	    sizeof(s)), 1);
	CHECK_STR(l.user, "carol");
	CHECK_STR(l.comment, "c@x");
	/* Quoted option values may hold spaces and commas. */
	CHECK_INT(parse("command=\"echo a, b\",user=\"dave\" ecdsa-sha2-nistp256 "
	    KEY " other", &l, s, sizeof(s)), 1);
	CHECK_STR(l.type, "ecdsa-sha2-nistp256");
	CHECK_STR(l.user, "dave");
	/* Options without user=: the comment names the user. */
	CHECK_INT(parse("restrict ssh-ed25519 " KEY " erin@host", &l, s,
	    sizeof(s)), 1);
	CHECK_STR(l.user, "erin");
}

static void
test_blank_and_comment_lines(void)
{
	char s[512];
	struct authkeys_line l;

	CHECK_INT(parse("", &l, s, sizeof(s)), 0);
	CHECK_INT(parse("   \t \n", &l, s, sizeof(s)), 0);
	CHECK_INT(parse("# ssh-ed25519 " KEY " x", &l, s, sizeof(s)), 0);
	CHECK_INT(parse("   # note", &l, s, sizeof(s)), 0);
}

static void
test_bad_lines(void)
{
	char s[512];
	struct authkeys_line l;

	CHECK_INT(parse("ssh-ed25519", &l, s, sizeof(s)), -EINVAL);
	CHECK_INT(parse("not-a-type " KEY " x", &l, s, sizeof(s)), -EINVAL);
	CHECK_INT(parse("opts=\"unterminated ssh-ed25519 " KEY, &l, s,
	    sizeof(s)), -EINVAL);
	/* A user= that is not a valid user name. */
	CHECK_INT(parse("user=\"bad name!\" ssh-ed25519 " KEY " x", &l, s,
	    sizeof(s)), -EINVAL);
	CHECK_INT(parse("user=\"\" ssh-ed25519 " KEY " x", &l, s, sizeof(s)),
	    -EINVAL);
}

static void
test_types(void)
{
	CHECK(authkeys_is_type("ssh-ed25519"));
	CHECK(authkeys_is_type("sk-ssh-ed25519@openssh.com"));
	CHECK(!authkeys_is_type("ssh-ed2551"));
	CHECK(!authkeys_is_type(""));
}

/* Found by tests/fuzz/fuzz_authkeys.c: a '"' in the key blob was taken as
 * an option's quote, so the blob ran on to the end of the line, spaces and
 * comment included. */
static void
test_quote_in_blob(void)
{
	char s[512];
	struct authkeys_line l;

	CHECK_INT(parse("ssh-ed25519 AAAA\"C3Nz x\n", &l, s, sizeof(s)), 1);
	CHECK_STR(l.base64, "AAAA\"C3Nz");
	CHECK_STR(l.comment, "x");
	CHECK_STR(l.user, "x");
}

int
main(void)
{
	TEST(test_plain_key_with_comment);
	TEST(test_comment_with_spaces_and_crlf);
	TEST(test_no_comment);
	TEST(test_options_and_user_option);
	TEST(test_blank_and_comment_lines);
	TEST(test_bad_lines);
	TEST(test_types);
	TEST(test_quote_in_blob);
	return unit_done("test_sshd_authkeys");
}

/*
 * test_sshd_authkeys.c: authorized_keys line parsing (sshd/shared/authkeys.c,
 * sshd/shared/authkeys_opts.c) from raw lines: key types, options with quotes
 * and \" escapes, user names from comments and from user="...", every
 * option sshd(8) knows and how atriumd treats it, expiry times, the
 * from=/expiry check, and lines that must be refused.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "unit.h"
#include "../../sshd/shared/authkeys.h"

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
	CHECK(l.has_opts);
	CHECK(l.opts.no_pty);
	CHECK_INT(parse("ssh-ed25519 " KEY " plain", &l, s, sizeof(s)), 1);
	CHECK(!l.has_opts);
	CHECK(!l.opts.no_pty && !l.opts.command && !l.opts.from);
}

/* Parse a line with opts before the key; the result code. */
static int
parse_opts(const char *opts, struct authkeys_line *l, char *store,
    size_t len)
{
	snprintf(store, len, "%s ssh-ed25519 %s c@x", opts, KEY);
	return authkeys_parse_line(store, l);
}

static void
test_command_quoting_and_escapes(void)
{
	char s[1024];
	struct authkeys_line l;

	CHECK_INT(parse_opts("command=\"echo \\\"hi there\\\", x\"", &l, s,
	    sizeof(s)), 1);
	CHECK_STR(l.opts.command, "echo \"hi there\", x");
	CHECK_STR(l.type, "ssh-ed25519");
	CHECK_STR(l.comment, "c@x");
	/* Only \" is an escape: other backslashes stay as written. */
	CHECK_INT(parse_opts("command=\"a\\nb\\\\c\"", &l, s, sizeof(s)), 1);
	CHECK_STR(l.opts.command, "a\\nb\\\\c");
	/* Option names are case-insensitive. */
	CHECK_INT(parse_opts("COMMAND=\"ls\",No-Pty", &l, s, sizeof(s)), 1);
	CHECK_STR(l.opts.command, "ls");
	CHECK(l.opts.no_pty);
	/* An empty command is a command (it runs nothing). */
	CHECK_INT(parse_opts("command=\"\"", &l, s, sizeof(s)), 1);
	CHECK_STR(l.opts.command, "");
}

static void
test_pty_flags_last_wins(void)
{
	char s[512];
	struct authkeys_line l;

	CHECK_INT(parse_opts("restrict,pty", &l, s, sizeof(s)), 1);
	CHECK(!l.opts.no_pty);
	CHECK_INT(parse_opts("pty,restrict", &l, s, sizeof(s)), 1);
	CHECK(l.opts.no_pty);
	CHECK_INT(parse_opts("no-pty", &l, s, sizeof(s)), 1);
	CHECK(l.opts.no_pty);
	CHECK_INT(parse_opts("no-pty,pty", &l, s, sizeof(s)), 1);
	CHECK(!l.opts.no_pty);
}

static void
test_accepted_options_without_effect(void)
{
	static const char *const ok[] = {
		"no-port-forwarding", "no-agent-forwarding", "no-X11-forwarding",
		"no-user-rc", "port-forwarding", "agent-forwarding",
		"x11-forwarding", "user-rc", "no-touch-required",
		"permitopen=\"localhost:80\"", "permitlisten=\"8080\"",
		"tunnel=\"0\"", "environment=\"A=b c\"",
	};
	char s[512];
	struct authkeys_line l;

	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
		CHECK_INT(parse_opts(ok[i], &l, s, sizeof(s)), 1);
		CHECK(!l.opts.no_pty && !l.opts.command && !l.opts.from);
	}
	CHECK_INT(parse_opts("environment=\"A=1\",environment=\"B=2\"", &l, s,
	    sizeof(s)), 1);
	CHECK_INT(l.opts.environment, 2);
}

/* The reason a refused options field gives contains want. */
static void
check_refused(const char *opts, const char *want)
{
	char s[1024];
	struct authkeys_line l;

	CHECK_INT(parse_opts(opts, &l, s, sizeof(s)), -EINVAL);
	if (!strstr(l.why, want)) {
		fprintf(stderr, "  %s: why \"%s\" lacks \"%s\"\n", opts, l.why,
		    want);
		CHECK(0);
	}
}

static void
test_refused_options(void)
{
	check_refused("frobnicate", "unknown option 'frobnicate'");
	check_refused("no-pty,frob=\"x\"", "unknown option 'frob'");
	check_refused("cert-authority", "cert-authority");
	check_refused("principals=\"alice\"", "principals=");
	check_refused("verify-required", "verify-required");
	check_refused("command=\"a\",command=\"b\"", "command= given twice");
	check_refused("from=\"1.2.3.4\",from=\"5.6.7.8\"", "from= given twice");
	check_refused("user=\"a\",user=\"b\"", "user= given twice");
	check_refused("no-pty=\"x\"", "takes no value");
	check_refused("command", "needs a value");
	check_refused("command=ls", "double-quoted");
	check_refused("command=\"ls\"x", "',' expected");
	check_refused("environment=\"NOEQUALS\"", "NAME=value");
	check_refused("environment=\"=x\"", "NAME=value");
	check_refused("tunnel=\"\"", "empty");
	check_refused("from=\"10.0.0.1/8\"", "not a valid pattern list");
	check_refused("from=\"\"", "not a valid pattern list");
	check_refused("from=\"1.2.3.4,,5.6.7.8\"", "not a valid pattern list");
	check_refused("expiry-time=\"2020\"", "expiry-time=");
	/* A name is shown printable and bounded. */
	check_refused("x\001y", "unknown option 'x?y'");
	check_refused("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'");
}

static void
test_bounds(void)
{
	size_t n = AUTHKEY_MAX_COMMAND + 200;
	char *s = malloc(n + 200), *big = malloc(n);
	struct authkeys_line l;

	/* A command of the maximum length passes, one byte more does not. */
	memset(big, 'x', AUTHKEY_MAX_COMMAND);
	big[AUTHKEY_MAX_COMMAND] = '\0';
	snprintf(s, n + 200, "command=\"%s\" ssh-ed25519 %s", big, KEY);
	CHECK_INT(authkeys_parse_line(s, &l), 1);
	big[AUTHKEY_MAX_COMMAND] = 'x';
	big[AUTHKEY_MAX_COMMAND + 1] = '\0';
	snprintf(s, n + 200, "command=\"%s\" ssh-ed25519 %s", big, KEY);
	CHECK_INT(authkeys_parse_line(s, &l), -EINVAL);
	CHECK(strstr(l.why, "longer than") != NULL);
	/* More than AUTHKEY_MAX_OPTS options. */
	s[0] = '\0';
	for (int i = 0; i <= AUTHKEY_MAX_OPTS; i++)
		strcat(s, "no-pty,");
	strcat(s, "no-pty ssh-ed25519 " KEY);
	CHECK_INT(authkeys_parse_line(s, &l), -EINVAL);
	CHECK(strstr(l.why, "more than") != NULL);
	free(s);
	free(big);
}

static void
test_from_and_expiry_parsed(void)
{
	char s[512];
	struct authkeys_line l;

	CHECK_INT(parse_opts("from=\"!10.1.2.3,10.0.0.0/8,*.example.com\"", &l, s,
	    sizeof(s)), 1);
	CHECK_STR(l.opts.from, "!10.1.2.3,10.0.0.0/8,*.example.com");
	CHECK_INT(parse_opts("expiry-time=\"20300101Z\"", &l, s, sizeof(s)), 1);
	CHECK_INT(l.opts.expiry, 1893456000);
	/* Several: the earliest wins, as in sshd. */
	CHECK_INT(parse_opts("expiry-time=\"20300101Z\",expiry-time=\""
	    "202001010000Z\"", &l, s, sizeof(s)), 1);
	CHECK_INT(l.opts.expiry, 1577836800);
}

static void
test_expiry_formats(void)
{
	time_t t;

	CHECK_INT(authkey_expiry_parse("20200101Z", &t), 0);
	CHECK_INT(t, 1577836800);
	CHECK_INT(authkey_expiry_parse("202001011230Z", &t), 0);
	CHECK_INT(t, 1577836800 + 12 * 3600 + 30 * 60);
	CHECK_INT(authkey_expiry_parse("20200101123045UTC", &t), 0);
	CHECK_INT(t, 1577836800 + 12 * 3600 + 30 * 60 + 45);
	/* Local time without a Z. */
	setenv("TZ", "UTC+2", 1);
	tzset();
	CHECK_INT(authkey_expiry_parse("20200101", &t), 0);
	CHECK_INT(t, 1577836800 + 2 * 3600);
	unsetenv("TZ");
	tzset();
	CHECK_INT(authkey_expiry_parse("2020010", &t), -EINVAL);
	CHECK_INT(authkey_expiry_parse("2020010112", &t), -EINVAL);
	CHECK_INT(authkey_expiry_parse("20201301", &t), -EINVAL);
	CHECK_INT(authkey_expiry_parse("20200100", &t), -EINVAL);
	CHECK_INT(authkey_expiry_parse("202001012460", &t), -EINVAL);
	CHECK_INT(authkey_expiry_parse("2020o101", &t), -EINVAL);
	CHECK_INT(authkey_expiry_parse("", &t), -EINVAL);
	CHECK_INT(authkey_expiry_parse("Z", &t), -EINVAL);
}

static void
test_check_from_and_expiry(void)
{
	char s[512], why[300];
	struct authkeys_line l;

	CHECK_INT(parse_opts("from=\"10.0.0.0/8\",expiry-time=\"20300101Z\"",
	    &l, s, sizeof(s)), 1);
	CHECK_INT(authkey_opts_check(&l.opts, "10.9.8.7", 1893455999, why,
	    sizeof(why)), 0);
	/* Valid through the second it names, as sshd. */
	CHECK_INT(authkey_opts_check(&l.opts, "10.9.8.7", 1893456000, why,
	    sizeof(why)), 0);
	CHECK_INT(authkey_opts_check(&l.opts, "10.9.8.7", 1893456001, why,
	    sizeof(why)), -EACCES);
	CHECK(strstr(why, "expired") != NULL);
	CHECK_INT(authkey_opts_check(&l.opts, "127.0.0.1", 0, why, sizeof(why)),
	    -EACCES);
	CHECK_STR(why, "from=\"10.0.0.0/8\" does not match its address "
	    "127.0.0.1");
}

static void
test_copy_owns_strings(void)
{
	char s[512];
	struct authkeys_line l;
	struct authkey_opts c;

	CHECK_INT(parse_opts("command=\"ls\",from=\"::1\",user=\"zed\"", &l, s,
	    sizeof(s)), 1);
	CHECK_STR(l.user, "zed");
	CHECK_INT(authkey_opts_copy(&c, &l.opts), 0);
	memset(s, 'q', sizeof(s) - 1);	/* the line is gone */
	CHECK_STR(c.command, "ls");
	CHECK_STR(c.from, "::1");
	CHECK_STR(c.user, "zed");
	authkey_opts_free(&c);
	CHECK(c.command == NULL && c.from == NULL);
	authkey_opts_free(NULL);
}

/* \" outside quotes is skipped whole when the options end is found, as
 * sshd's sshkey_advance_past_options does. */
static void
test_escaped_quote_ends_options_like_sshd(void)
{
	char s[512];
	struct authkeys_line l;

	CHECK_INT(parse("command=\"echo \\\" x\" ssh-ed25519 " KEY, &l, s,
	    sizeof(s)), 1);
	CHECK_STR(l.opts.command, "echo \" x");
	CHECK_INT(parse("command=\"echo \\\\\" ssh-ed25519 " KEY, &l, s,
	    sizeof(s)), -EINVAL);
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
	TEST(test_command_quoting_and_escapes);
	TEST(test_pty_flags_last_wins);
	TEST(test_accepted_options_without_effect);
	TEST(test_refused_options);
	TEST(test_bounds);
	TEST(test_from_and_expiry_parsed);
	TEST(test_expiry_formats);
	TEST(test_check_from_and_expiry);
	TEST(test_copy_owns_strings);
	TEST(test_escaped_quote_ends_options_like_sshd);
	return unit_done("test_sshd_authkeys");
}

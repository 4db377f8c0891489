/*
 * test_sshd_cluster_keys.c: the check a cluster's authorized_keys passes
 * before it is pushed and before a host uses it
 * (sshd/monitor/cluster_keys.c: cluster_keys_valid): a good file passes;
 * a file with any bad line is refused whole, naming the first bad line by
 * its number (blank and comment lines counted); a file with no key, a NUL
 * byte, a key named agent or a key that does not decode is refused.
 */
#include <errno.h>
#include <string.h>

#include "unit.h"
#include "../../sshd/monitor/cluster_keys.h"

#define ALICE "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKNfSybk6inYx9U6oP5" \
    "muqEWZOG+cZba420CYYZ6xJSt alice@test"
#define BOB "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK4iuvoEmpmSXgaw4w/NNe" \
    "XsRblNcn22ycOhHliZ1KB4 bob@test"
#define BLOB "AAAAC3NzaC1lZDI1NTE5AAAAIKNfSybk6inYx9U6oP5" \
    "muqEWZOG+cZba420CYYZ6xJSt"

/* cluster_keys_valid of the C string text. */
static int
valid(const char *text, char *why, size_t len)
{
	why[0] = '\0';
	return cluster_keys_valid(text, strlen(text), why, len);
}

static void
test_good_files_pass(void)
{
	char why[300];

	CHECK_INT(valid(ALICE "\n", why, sizeof(why)), 0);
	CHECK_INT(valid("# team\n\n" ALICE "\n" BOB, why, sizeof(why)), 0);
	CHECK_INT(valid("from=\"10.0.0.0/8\",no-pty " ALICE "\r\n", why,
	    sizeof(why)), 0);
}

static void
test_the_first_bad_line_is_named(void)
{
	char why[300];

	CHECK_INT(valid(ALICE "\n\nnosuch-option " BOB "\n", why, sizeof(why)),
	    -EINVAL);
	CHECK(strncmp(why, "line 3: ", 8) == 0);
	CHECK(strstr(why, "nosuch-option") != NULL);
	CHECK_INT(valid("# c\njust words\n" ALICE "\nmore words\n", why,
	    sizeof(why)), -EINVAL);
	CHECK(strncmp(why, "line 2: ", 8) == 0);
}

static void
test_keys_that_cannot_be_used_are_refused(void)
{
	char why[300];

	CHECK_INT(valid(ALICE "\nssh-ed25519 !!notbase64!! x@y\n", why,
	    sizeof(why)), -EINVAL);
	CHECK(strstr(why, "line 2: ") && strstr(why, "does not decode"));
	CHECK_INT(valid("ssh-ed25519 " BLOB " agent@host\n", why, sizeof(why)),
	    -EINVAL);
	CHECK(strstr(why, "line 1: ") && strstr(why, "agent"));
}

static void
test_files_that_let_nobody_in_are_refused(void)
{
	char why[300];
	static const char nul[] = ALICE "\n\0" BOB "\n";

	CHECK_INT(valid("", why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "no key") != NULL);
	CHECK_INT(valid("# nobody\n\n", why, sizeof(why)), -EINVAL);
	CHECK_INT(cluster_keys_valid(nul, sizeof(nul) - 1, why, sizeof(why)),
	    -EINVAL);
	CHECK(strstr(why, "NUL") != NULL);
}

int
main(void)
{
	TEST(test_good_files_pass);
	TEST(test_the_first_bad_line_is_named);
	TEST(test_keys_that_cannot_be_used_are_refused);
	TEST(test_files_that_let_nobody_in_are_refused);
	return unit_done("test_sshd_cluster_keys");
}

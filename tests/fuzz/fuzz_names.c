/*
 * fuzz_names.c: libFuzzer entry point for common/names.c, the checks on
 * names users choose: room names (the ssh user), user names made from
 * authorized_keys comments, and workspace paths from clients.
 *
 * The input is one string (cut at its first NUL, as C callers see it).
 * workspace_path_normalize is compared with a reference written another
 * way (split into components, then a stack), for several output sizes; its
 * output must never hold "..", "." or empty components nor start with '/',
 * and normalising it again must give it back.  user_name_from must always
 * give a valid user name; the validity checks must match references.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "names.h"

#define REF_MAX 8192

/* Reference room-name check: [a-z0-9][a-z0-9-]{0,62}. */
static int
ref_room_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "0123456789-") != n)
		return 0;
	return s[0] != '-';
}

/* Reference user-name check: 1-32 of [A-Za-z0-9._-], no leading '-'. */
static int
ref_user_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32 || s[0] == '-')
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._-") == n;
}

/* Reference normaliser: components on a stack, joined at the end.  Same
 * errors in the same order of discovery as names.h promises. */
static int
ref_normalize(const char *path, char *out, size_t outlen)
{
	static const char *comp[REF_MAX];
	static size_t clen[REF_MAX];
	size_t depth = 0, used = 0, i = 0, total;

	for (const char *q = path; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			return -EINVAL;
	while (path[i]) {
		size_t len = strcspn(path + i, "/");

		if (len > 255)
			return -ENAMETOOLONG;
		if (len == 2 && memcmp(path + i, "..", 2) == 0) {
			if (depth == 0)
				return -EPERM;
			depth--;
			used -= clen[depth] + (depth > 0 ? 1 : 0);
		} else if (len > 0 && !(len == 1 && path[i] == '.')) {
			/* Every intermediate result must fit, too. */
			total = used + len + (depth > 0);
			if (total + 1 > outlen)
				return -ENAMETOOLONG;
			comp[depth] = path + i;
			clen[depth++] = len;
			used = total;
		}
		i += len;
		if (path[i] == '/')
			i++;
	}
	if (depth == 0) {
		strcpy(out, ".");
		return 0;
	}
	used = 0;
	for (size_t d = 0; d < depth; d++) {
		if (d > 0)
			out[used++] = '/';
		memcpy(out + used, comp[d], clen[d]);
		used += clen[d];
	}
	out[used] = '\0';
	return 0;
}

/* The output of a successful normalisation is clean. */
static void
check_clean(const char *out, size_t outlen)
{
	size_t n = strlen(out);
	const char *p = out;

	FUZZ_CHECK(n > 0 && n < outlen);
	if (strcmp(out, ".") == 0)
		return;
	FUZZ_CHECK(out[0] != '/' && out[n - 1] != '/');
	while (*p) {
		size_t len = strcspn(p, "/");

		FUZZ_CHECK(len > 0 && len <= 255);
		FUZZ_CHECK(!(len == 1 && p[0] == '.'));
		FUZZ_CHECK(!(len == 2 && p[0] == '.' && p[1] == '.'));
		p += len;
		if (*p == '/')
			p++;
	}
}

/* workspace_path_normalize against the reference, for one output size. */
static void
check_path(const char *s, size_t outlen)
{
	static char out[REF_MAX], ref[REF_MAX], again[REF_MAX];
	int r = workspace_path_normalize(s, out, outlen);
	int rr = ref_normalize(s, ref, outlen);

	FUZZ_CHECK(r == rr);
	if (r < 0) {
		FUZZ_CHECK(r == -EINVAL || r == -EPERM || r == -ENAMETOOLONG);
		return;
	}
	FUZZ_CHECK(strcmp(out, ref) == 0);
	check_clean(out, outlen);
	FUZZ_CHECK(workspace_path_normalize(out, again, outlen) == 0);
	FUZZ_CHECK(strcmp(out, again) == 0);
}

/* user_name_from gives a valid name whenever "user" fits. */
static void
check_user_from(const char *s, size_t outlen)
{
	static char out[128];

	memset(out, 'X', sizeof(out));
	user_name_from(s, out, outlen);
	FUZZ_CHECK(memchr(out, '\0', outlen) != NULL);
	FUZZ_CHECK(out[outlen] == 'X');		/* nothing written past */
	if (outlen >= 5)
		FUZZ_CHECK(user_name_valid(out));
	if (outlen > 1)
		FUZZ_CHECK(out[0] != '\0');
}

/* libFuzzer's entry: One string through every check. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t outlens[] = { 2, 3, 16, 300, 4096 };
	static const size_t userlens[] = { 1, 2, 5, 33, 64, 100 };
	char *s = fuzz_cstring(data, size);

	FUZZ_CHECK(room_name_valid(s) == ref_room_valid(s));
	FUZZ_CHECK(user_name_valid(s) == ref_user_valid(s));
	for (size_t i = 0; i < sizeof(outlens) / sizeof(outlens[0]); i++)
		check_path(s, outlens[i]);
	for (size_t i = 0; i < sizeof(userlens) / sizeof(userlens[0]); i++)
		check_user_from(s, userlens[i]);
	free(s);
	return 0;
}

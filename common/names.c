/*
 * names.c: checks on room names, user names and workspace paths (names.h).
 * Everything here is pure and bounded by its output buffer.
 */
#include "names.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int
room_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n < 1 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    (c == '-' && i > 0);
		if (!ok)
			return 0;
	}
	return 1;
}

/* Characters allowed in user names. */
static int
user_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int
user_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n < 1 || n > 32 || name[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!user_char(name[i]))
			return 0;
	return 1;
}

void
user_name_from(const char *text, char *out, size_t outlen)
{
	size_t n = 0;

	if (outlen == 0)
		return;
	while (*text == ' ' || *text == '-')
		text++;
	for (; *text && *text != '@' && n + 1 < outlen && n < 32; text++) {
		if (*text == ' ' && n > 0)
			break;
		out[n++] = user_char(*text) ? *text : '_';
	}
	out[n] = '\0';
	if (n == 0)
		snprintf(out, outlen, "user");
}

/* Append component c (clen bytes) to out at *n, with a '/' before it
 * when out is not empty.  -ENAMETOOLONG when it does not fit. */
static int
path_push(char *out, size_t outlen, size_t *n, const char *c, size_t clen)
{
	size_t need = clen + (*n ? 1 : 0);

	if (*n + need + 1 > outlen)
		return -ENAMETOOLONG;
	if (*n)
		out[(*n)++] = '/';
	memcpy(out + *n, c, clen);
	*n += clen;
	out[*n] = '\0';
	return 0;
}

/* Remove the last component of out. */
static void
path_pop(char *out, size_t *n)
{
	while (*n > 0 && out[*n - 1] != '/')
		(*n)--;
	if (*n > 0)
		(*n)--;
	out[*n] = '\0';
}

int
workspace_path_normalize(const char *path, char *out, size_t outlen)
{
	size_t n = 0, depth = 0;
	const char *p = path;

	if (outlen < 2)
		return -ENAMETOOLONG;
	out[0] = '\0';
	for (const char *q = path; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			return -EINVAL;
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t clen = (size_t)(end - p);
		int r;

		if (clen > 255)
			return -ENAMETOOLONG;
		if (clen == 2 && p[0] == '.' && p[1] == '.') {
			if (depth == 0)
				return -EPERM;
			path_pop(out, &n);
			depth--;
		} else if (clen > 0 && !(clen == 1 && p[0] == '.')) {
			r = path_push(out, outlen, &n, p, clen);
			if (r < 0)
				return r;
			depth++;
		}
		p = *end ? end + 1 : end;
	}
	if (n == 0)
		snprintf(out, outlen, ".");
	return 0;
}

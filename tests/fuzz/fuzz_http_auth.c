/*
 * fuzz_http_auth.c: libFuzzer entry point for the headers atriumd-http
 * reads before it asks the monitor who a request is for
 * (sshd/http/http_auth.c): Authorization and the session cookie's value
 * (the token taken from them), Origin against Host, and a trusted
 * proxy's X-Forwarded-For.  The Cookie header itself is split by
 * libmicrohttpd, not here: what comes in is the atrium_session value.
 *
 * The input's first byte says which of the values are present (bit 0:
 * Authorization, bit 1: the cookie, bit 2: Origin, bit 3: Host); the
 * rest is four values separated by '\n' (missing ones are empty).
 * What is taken must be what the rules say: a token only from a
 * "Bearer " header (any case) or, with no Authorization at all, from the
 * cookie; never empty, never longer than HTTP_MAX_TOKEN, and the
 * header's own bytes after "Bearer " and its spaces; an origin matches a
 * host only when the part after "://" is that host (any case); a
 * forwarded address is one of the last entry's numeric characters or
 * nothing.
 */
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "http_auth.h"
#include "http_req.h"

#define FIELDS	4

/* The token rules of http_auth.h. */
static void
check_token(const char *h, const char *cookie)
{
	char out[HTTP_MAX_TOKEN + 1];
	const char *why = NULL;
	int by_cookie = -1;
	int r = http_auth_token_of(h, cookie, out, sizeof(out), &by_cookie,
	    &why);

	FUZZ_CHECK(r == 0 || r == -1);
	FUZZ_CHECK(by_cookie == 0 || by_cookie == 1);
	if (r < 0) {
		FUZZ_CHECK(why && why[0]);
		return;
	}
	FUZZ_CHECK(out[0] && strlen(out) <= HTTP_MAX_TOKEN);
	if (by_cookie) {
		FUZZ_CHECK(!h && cookie && strcmp(out, cookie) == 0);
	} else {
		const char *t = h + 7;

		FUZZ_CHECK(h && strncasecmp(h, "Bearer ", 7) == 0);
		t += strspn(t, " ");
		FUZZ_CHECK(strcmp(out, t) == 0);
	}
}

/* Origin against Host. */
static void
check_origin(const char *origin, const char *host)
{
	const char *p;

	if (!http_auth_origin_is(origin, host))
		return;
	FUZZ_CHECK(origin && host && host[0]);
	FUZZ_CHECK((p = strstr(origin, "://")) != NULL);
	FUZZ_CHECK(strcasecmp(p + 3, host) == 0);
}

/* A proxy's X-Forwarded-For: an address's characters, or nothing. */
static void
check_forwarded(const char *xff)
{
	char out[64] = "unchanged";

	http_auth_forwarded(xff, out, sizeof(out));
	if (strcmp(out, "unchanged") == 0)
		return;
	FUZZ_CHECK(xff && out[0]);
	FUZZ_CHECK(strspn(out, "0123456789abcdefABCDEF.:%") == strlen(out));
	FUZZ_CHECK(strstr(xff, out) != NULL);
}

/* libFuzzer's entry: which values are there, then the values. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, *v[FIELDS] = { 0 }, *p;
	unsigned present;

	if (size < 1)
		return 0;
	present = data[0];
	s = fuzz_cstring(data + 1, size - 1);
	p = s;
	for (int i = 0; i < FIELDS; i++) {
		v[i] = p;
		if ((p = strchr(p, '\n')))
			*p++ = '\0';
		else
			p = s + strlen(s);	/* the rest are empty */
	}
	for (int i = 0; i < FIELDS; i++)
		if (!(present & (1u << i)))
			v[i] = NULL;
	check_token(v[0], v[1]);
	check_origin(v[2], v[3]);
	check_forwarded(v[0]);
	free(s);
	return 0;
}

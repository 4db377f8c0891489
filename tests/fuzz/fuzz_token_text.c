/*
 * fuzz_token_text.c: libFuzzer entry point for the monitor's check of a
 * token's text (tokens_text_valid, sshd/monitor/tokens.c, included for
 * the static function), which every HTTP request's bearer token or
 * session cookie reaches as the client sent it, before any lookup.
 *
 * The input is the token (cut at its first NUL).  A text the check
 * accepts is exactly "atrium_" and 43 base64url digits; one tokens_make
 * writes is always accepted; and a token's id (tokens_hash) is 12 hex
 * digits whatever the text, so a log line never carries the token's
 * own bytes.
 */
#include "../../sshd/monitor/tokens.c"

#include "fuzz.h"

/* The shape, spelled out again. */
static int
shape_ok(const char *t)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_";

	if (strlen(t) != 7 + 43 || strncmp(t, "atrium_", 7) != 0)
		return 0;
	for (const char *p = t + 7; *p; p++)
		if (!memchr(b64, *p, sizeof(b64) - 1))
			return 0;
	return 1;
}

/* libFuzzer's entry: one token text. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *t = fuzz_cstring(data, size), made[TOKENS_LEN + 1];
	unsigned char hash[TOKENS_HASH_LEN];
	char id[TOKEN_ID_LEN + 1];

	FUZZ_CHECK(tokens_text_valid(t) == shape_ok(t));
	FUZZ_CHECK(tokens_hash(t, hash, id) == 0);
	FUZZ_CHECK(strlen(id) == TOKEN_ID_LEN);
	FUZZ_CHECK(strspn(id, "0123456789abcdef") == TOKEN_ID_LEN);
	if (size == 0) {	/* now and then, a made one */
		FUZZ_CHECK(tokens_make(made) == 0);
		FUZZ_CHECK(tokens_text_valid(made));
	}
	free(t);
	return 0;
}

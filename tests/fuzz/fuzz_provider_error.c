/*
 * fuzz_provider_error.c: libFuzzer entry point for what
 * agent/provider/provider.c reads from a model server that refused a request:
 * the error body (provider_error_message, provider_should_retry) and the
 * Retry-After and retry-after-ms header values (provider_retry_delay_ms).
 *
 * The input is the body, and also (cut at its first NUL) a header value.
 * The message must fit its buffer, be NUL-terminated, non-empty, and hold
 * no control characters (it is shown to people); a delay must lie within
 * 0..60 s whatever the header says.
 */
#include <string.h>

#include "fuzz.h"
#include "provider.h"

/* The message for one status and buffer size. */
static void
check_message(enum provider_kind kind, int status, const char *body,
    size_t len, size_t outlen)
{
	static char out[2048];

	memset(out, 'X', sizeof(out));
	provider_error_message(kind, status, body, len, out, outlen);
	FUZZ_CHECK(out[outlen] == 'X');		/* nothing written past */
	FUZZ_CHECK(memchr(out, '\0', outlen) != NULL);
	if (outlen > 1)
		FUZZ_CHECK(out[0] != '\0');
	for (const char *c = out; *c; c++)
		FUZZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
}

/* libFuzzer's entry: One error body and header value. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int statuses[] = { 0, 200, 400, 401, 429, 503, 529 };
	static const size_t outlens[] = { 1, 2, 24, 512, 1024 };
	/* An exact copy, so ASan sees a read past the body's end. */
	char *body = size ? malloc(size) : NULL;
	char *header = fuzz_cstring(data, size);
	long ms;

	if (size)
		memcpy(body, data, size);
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
		int r = provider_should_retry(statuses[i], body, size);

		FUZZ_CHECK(r == 0 || r == 1);
		for (size_t j = 0; j < sizeof(outlens) / sizeof(outlens[0]);
		    j++)
			check_message(i & 1 ? PROVIDER_OPENAI :
			    PROVIDER_ANTHROPIC, statuses[i], body, size,
			    outlens[j]);
	}
	FUZZ_CHECK(provider_error_retryable(header) == 0 ||
	    provider_error_retryable(header) == 1);
	ms = provider_retry_delay_ms(1, header, NULL, 1000);
	FUZZ_CHECK(ms >= 0 && ms <= 60000);
	ms = provider_retry_delay_ms(3, NULL, header, 1000);
	FUZZ_CHECK(ms >= 0 && ms <= 60000);
	ms = provider_retry_delay_ms(2, header, header, 0);
	FUZZ_CHECK(ms >= 0 && ms <= 60000);
	free(body);
	free(header);
	return 0;
}

/*
 * fuzz_http_range.c: libFuzzer entry point for atriumd-http's Range
 * header parser (api_files_range, sshd/http/api_files.c), which reads a
 * client's header to choose the bytes of a file it sends.
 *
 * The input is the header's value (cut at its first NUL, as MHD gives
 * it), tried against files of several sizes: empty, one byte, a small
 * one, one whose size comes from the input's hash, and the largest.
 * Whatever the value, a range it accepts lies inside the file, first
 * not after last; one it cannot satisfy is said so only for a file it
 * names bytes outside of; and a value it accepts for one size it reads
 * the same way for any size that holds that range (the header does not
 * depend on the file, only its cut does).
 */
#include <string.h>

#include "api_files.h"
#include "fuzz.h"

/* One value against a file of size bytes: the invariants of a range. */
static int
check_size(const char *value, unsigned long long size,
    unsigned long long *first, unsigned long long *last)
{
	int r = api_files_range(value, size, first, last);

	FUZZ_CHECK(r == -1 || r == 0 || r == 1);
	if (r == 1) {
		FUZZ_CHECK(size > 0);
		FUZZ_CHECK(*first <= *last);
		FUZZ_CHECK(*last < size);
	}
	if (r != 0)	/* only "bytes=" values are read at all */
		FUZZ_CHECK(strncmp(value, "bytes=", 6) == 0);
	return r;
}

/* libFuzzer's entry: one header value, several file sizes. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *v = fuzz_cstring(data, size);
	unsigned long long sizes[] = { 0, 1, 100, fuzz_hash(data, size) >> 20,
	    ~0ULL };
	unsigned long long f, l, f2, l2;
	int well_formed = -1;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int r = check_size(v, sizes[i], &f, &l);

		/* Well formed or not is the value's, not the file's. */
		if (well_formed < 0)
			well_formed = r != 0;
		FUZZ_CHECK(well_formed == (r != 0));
		if (r == 1 && l + 1 < sizes[i]) {
			/* Not cut by the file's end (so not a suffix range,
			 * which always ends there): the biggest file gives
			 * the same range. */
			FUZZ_CHECK(check_size(v, ~0ULL, &f2, &l2) == 1);
			FUZZ_CHECK(f2 == f && l2 == l);
		}
	}
	free(v);
	return 0;
}

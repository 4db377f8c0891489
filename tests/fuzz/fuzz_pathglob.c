/*
 * fuzz_pathglob.c: libFuzzer entry point for agent/tools/pathglob.c, the glob
 * matcher of the ls and grep tools, whose patterns the model chooses.
 *
 * The input is a pattern, a NUL, then a path (a path without a NUL is
 * matched against itself as the pattern).  Every input must compile and
 * match within the work bound (states per byte of the path, plus one); with
 * at most three stars, where the reference stays fast, the answer must be
 * the reference's (tests/fuzz/glob_ref.h, the old backtracking matcher).
 */
#include <string.h>

#include "fuzz.h"
#include "glob_ref.h"
#include "../../agent/tools/pathglob.h"

#define FUZZ_GLOB_MAX 4096

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[2 * FUZZ_GLOB_MAX + 2];
	const char *pat = buf, *path;
	struct pathglob *g = NULL;
	unsigned long steps = 0;
	size_t stars = 0;
	int m;

	if (size > 2 * FUZZ_GLOB_MAX)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	buf[size + 1] = '\0';
	path = strlen(buf) < size ? buf + strlen(buf) + 1 : buf;
	FUZZ_CHECK(pathglob_new(pat, &g) == 0);
	m = pathglob_match(g, path, &steps);
	FUZZ_CHECK(m == 0 || m == 1);
	FUZZ_CHECK(steps <= pathglob_states(g) * strlen(path) + 1);
	for (const char *p = pat; *p; p++)
		stars += *p == '*';
	if (stars <= 3 && strlen(path) <= 256)
		FUZZ_CHECK(m == ref_glob(pat, pat, path));
	pathglob_free(g);
	return 0;
}

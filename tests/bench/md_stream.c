/*
 * md_stream.c: what drawing the agent's streamed answer costs atriumd per
 * member and per delta, for the chat's Markdown (sshd/chat/tui_draw.c,
 * tui_markdown.c, tui_wrap.c).  A test tool, not part of Atrium.
 *
 * Why it exists: every member of a room draws each delta of the answer
 * (its blocks not yet closed are parsed and drawn again), so the cost of
 * one delta is paid once per member.  This runs that path as chat.c does
 * (clear the bottom region, tui_draw_stream, tui_draw_bottom into a
 * frame) for MEMBERS members, half of them 80 columns wide and half 120,
 * over an answer of paragraphs, a list, a code block and a table cut
 * into deltas of 1 to 12 bytes (as a model's tokens come), and prints the
 * CPU time per member per delta: once with every member parsing and
 * drawing alone (no shared cache, as before the cache), once with the
 * members sharing one (as atriumd-net does).  It also checks that both
 * drew the same bytes.
 *
 * Usage: md_stream [MEMBERS [ROUNDS]]   (defaults 100 and 5)
 * Build: make build/tests/md_stream
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "../../sshd/chat/tui_draw.h"
#include "../../sshd/chat/tui_editor.h"

static const char answer[] =
    "Here is what **`make check`** runs, and why each step is there.\n"
    "\n"
    "The *unit tests* come first: they take a few seconds and catch most "
    "mistakes before anything slower starts. Each one is a C program under "
    "`tests/unit/`, linked with the objects of its part.\n"
    "\n"
    "1. `make unit` builds and runs them once.\n"
    "2. `make unit-asan` runs them again under AddressSanitizer, which "
    "finds the use of freed memory and reads past a buffer.\n"
    "3. `make unit-tsan` runs the threaded ones under ThreadSanitizer.\n"
    "4. Then the **integration tests**: Python, driving the real `ssh` "
    "client against a real `atriumd`.\n"
    "\n"
    "To run only one of them:\n"
    "\n"
    "```sh\n"
    "/usr/bin/python3 -m pytest tests/test_chat_text.py -q -x -k wrap\n"
    "make -j2 WERROR=1 all && make unit\n"
    "```\n"
    "\n"
    "| step | time | catches |\n"
    "|------|-----:|---------|\n"
    "| unit | 4 s | logic |\n"
    "| asan | 20 s | memory |\n"
    "| tsan | 30 s | races |\n"
    "\n"
    "> A test that cannot fail is worse than none: check that it fails "
    "first.\n"
    "\n"
    "That is all; ask if a step fails for you, and paste its ~~first~~ "
    "last lines.";

static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The deltas: pieces of 1 to 12 bytes, cut the same way every run. */
static int
cut_deltas(char deltas[][16], int max)
{
	size_t pos = 0, len = strlen(answer);
	unsigned seed = 12345;
	int n = 0;

	while (pos < len && n < max) {
		size_t k;

		seed = seed * 1103515245u + 12345u;
		k = 1 + (seed >> 16) % 12;
		if (k > len - pos)
			k = len - pos;
		memcpy(deltas[n], answer + pos, k);
		deltas[n++][k] = '\0';
		pos += k;
	}
	return n;
}

/* Stream the answer to every member (cache: shared, or NULL); the CPU
 * seconds it took, and the last two members' frames (with the cache,
 * drawn from what others kept) in frames[] when frames is not NULL. */
static double
run(int members, char deltas[][16], int ndeltas, struct tui_draw_cache *cache,
    struct buf *frames)
{
	struct tui_draw *d = calloc((size_t)members, sizeof(*d));
	struct tui_editor e;
	struct buf f;
	double t0, t;

	if (!d) {
		perror("calloc");
		exit(1);
	}
	tui_editor_init(&e, 1024);
	buf_init(&f, 1 << 20);
	for (int m = 0; m < members; m++) {
		tui_draw_init(&d[m], 1, 1, 1, m % 2 ? 120 : 80, 35);
		d[m].cache = cache;
		d[m].time_ms = 1700000000000LL;
	}
	t0 = cpu_now();
	for (int i = 0; i < ndeltas; i++) {
		for (int m = 0; m < members; m++) {
			buf_reset(&f);
			tui_draw_clear_bottom(&d[m], &f);
			tui_draw_stream(&d[m], &f, deltas[i]);
			tui_draw_bottom(&d[m], &f, "room", &e);
			if (frames && m >= members - 2)
				buf_append(&frames[m % 2], f.data, f.len);
		}
	}
	t = cpu_now() - t0;
	for (int m = 0; m < members; m++) {
		buf_reset(&f);
		tui_draw_stream_end(&d[m], &f);
		if (frames && m >= members - 2)
			buf_append(&frames[m % 2], f.data, f.len);
		tui_draw_free(&d[m]);
	}
	free(d);
	buf_free(&f);
	tui_editor_free(&e);
	return t;
}

int
main(int argc, char **argv)
{
	static char deltas[4096][16];
	int members = argc > 1 ? atoi(argv[1]) : 100;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	int n = cut_deltas(deltas, 4096);
	struct tui_draw_cache cache;
	struct buf alone[2], shared[2];
	double best_alone = 1e9, best_shared = 1e9;

	if (members < 2 || rounds < 1) {
		fprintf(stderr, "usage: md_stream [MEMBERS >= 2 [ROUNDS]]\n");
		return 2;
	}
	memset(&cache, 0, sizeof(cache));
	for (int i = 0; i < 2; i++) {
		buf_init(&alone[i], 1 << 24);
		buf_init(&shared[i], 1 << 24);
	}
	for (int r = 0; r < rounds; r++) {
		double a = run(members, deltas, n, NULL, r ? NULL : alone);
		double s = run(members, deltas, n, &cache, r ? NULL : shared);

		best_alone = a < best_alone ? a : best_alone;
		best_shared = s < best_shared ? s : best_shared;
	}
	tui_draw_cache_free(&cache);
	for (int i = 0; i < 2; i++) {
		if (alone[i].len != shared[i].len || memcmp(alone[i].data,
		    shared[i].data, alone[i].len) != 0) {
			fprintf(stderr, "md_stream: the shared cache drew other "
			    "bytes than drawing alone (member %d)\n", i);
			return 1;
		}
		buf_free(&alone[i]);
		buf_free(&shared[i]);
	}
	printf("%d members (80 and 120 columns), %d deltas of %zu bytes, best "
	    "of %d\n", members, n, strlen(answer), rounds);
	printf("each member alone:   %.2f us per member per delta\n",
	    best_alone * 1e6 / members / n);
	printf("one shared cache:    %.2f us per member per delta\n",
	    best_shared * 1e6 / members / n);
	return 0;
}

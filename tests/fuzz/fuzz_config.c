/*
 * fuzz_config.c: libFuzzer entry point for common/config.c: atrium.conf
 * with arbitrary contents (config_load_file, through a memfd), and one
 * config_set from text.
 *
 * Checks: a load either succeeds or names the first bad line as
 * "PATH:LINE: ..." with LINE counted as an editor counts it (a reference
 * reads the file line by line itself); whatever was loaded survives the
 * trip a parent makes to hand settings to a child (config_each, then
 * config_set of each pair into fresh defaults gives the same settings);
 * the same text as a price table (prices.c) is either accepted whole or
 * refused with a message, and a refused table prices no model.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"
#include "prices.h"

/* Every setting as "key=value\n" text, for comparing two configs. */
struct dump {
	char text[64 * 1024];
	size_t len;
};

/* Append one "key=value" line. */
static void
dump_one(const char *key, const char *value, void *arg)
{
	struct dump *d = arg;
	int n = snprintf(d->text + d->len, sizeof(d->text) - d->len,
	    "%s=%s\n", key, value);

	FUZZ_CHECK(n > 0 && (size_t)n < sizeof(d->text) - d->len);
	d->len += (size_t)n;
}

/* Set each pair on a fresh config; every one must be accepted. */
static void
set_one(const char *key, const char *value, void *arg)
{
	struct config *c = arg;
	char err[256];
	int r = config_set(c, key, value, err, sizeof(err));

	if (r < 0)
		fprintf(stderr, "config_set(%s, %s): %s\n", key, value, err);
	FUZZ_CHECK(r == 0);
}

/* The settings survive config_each and config_set. */
static void
check_roundtrip(const struct config *c)
{
	static struct dump a, b;
	static struct config fresh;

	a.len = b.len = 0;
	config_defaults(&fresh);
	config_each(c, set_one, &fresh);
	config_each(c, dump_one, &a);
	config_each(&fresh, dump_one, &b);
	FUZZ_CHECK(a.len == b.len && memcmp(a.text, b.text, a.len) == 0);
}

/* Trim spaces in place, as a reader would. */
static char *
ref_trim(char *s)
{
	char *e;

	while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || (e[-1] >= '\t' && e[-1] <= '\r')))
		*--e = '\0';
	return s;
}

/* The reference reader: the number of the first bad line, or 0. */
static int
ref_bad_line(const uint8_t *p, size_t n)
{
	static char line[(1 << 20) + 1];
	static struct config scratch;
	size_t start = 0;
	int lineno = 0;

	config_defaults(&scratch);
	while (start < n) {
		const uint8_t *nl = memchr(p + start, '\n', n - start);
		size_t len = nl ? (size_t)(nl - (p + start)) : n - start;
		char *l, *eq, *hash, err[256];

		lineno++;
		if (memchr(p + start, '\0', len) || len >= sizeof(line))
			return lineno;	/* NUL: not a text file */
		memcpy(line, p + start, len);
		line[len] = '\0';
		start += len + 1;
		if ((hash = strchr(line, '#')))
			*hash = '\0';
		l = ref_trim(line);
		if (!*l)
			continue;
		if (!(eq = strchr(l, '=')))
			return lineno;
		*eq = '\0';
		if (config_set(&scratch, ref_trim(l), ref_trim(eq + 1), err,
		    sizeof(err)) < 0)
			return lineno;
	}
	return 0;
}

/* Load the input as a settings file. */
static void
check_load(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	static struct config c;
	char err[512], want[128];
	int r, bad;

	if (fd < 0) {
		fd = memfd_create("atrium.conf", 0);
		FUZZ_CHECK(fd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	FUZZ_CHECK(ftruncate(fd, 0) == 0);
	FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
	config_defaults(&c);
	err[0] = '\0';
	r = config_load_file(&c, path, err, sizeof(err));
	bad = ref_bad_line(data, size);
	if (bad == 0) {
		if (r != 0)
			fprintf(stderr, "unexpected failure: %s\n", err);
		FUZZ_CHECK(r == 0);
		check_roundtrip(&c);
		return;
	}
	FUZZ_CHECK(r == -EINVAL);
	snprintf(want, sizeof(want), "%s:%d: ", path, bad);
	if (strncmp(err, want, strlen(want)) != 0)
		fprintf(stderr, "expected '%s...', got '%s'\n", want, err);
	FUZZ_CHECK(strncmp(err, want, strlen(want)) == 0);
	FUZZ_CHECK(strlen(err) > strlen(want));
}

/* key NUL value: one config_set. */
static void
check_set(const uint8_t *data, size_t size)
{
	static struct config c;
	const uint8_t *nul = memchr(data, '\0', size);
	char *key, *value, err[256];
	int r;

	if (!nul)
		return;
	key = fuzz_cstring(data, (size_t)(nul - data));
	value = fuzz_cstring(nul + 1, size - (size_t)(nul - data) - 1);
	config_defaults(&c);
	err[0] = '\0';
	r = config_set(&c, key, value, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOENT);
	FUZZ_CHECK(r == 0 || err[0] != '\0');
	check_roundtrip(&c);
	free(key);
	free(value);
}

/* The input as a price table, looked up under the name of its first
 * entry's model. */
static void
check_prices(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstring(data, size), err[256], model[64] = "";
	double in = -1, out = -1;
	int r;

	err[0] = '\0';
	r = prices_check(text, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	FUZZ_CHECK(r == 0 ? err[0] == '\0' : strlen(err) > 0);
	sscanf(text, " %63[^=,]", model);
	model[sizeof(model) - 1] = '\0';
	if (prices_lookup(text, model, &in, &out)) {
		FUZZ_CHECK(r == 0);
		FUZZ_CHECK(in >= 0 && out >= 0);
	}
	free(text);
}

/* libFuzzer's entry: One file, and one key NUL value pair. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_load(data, size);
	check_set(data, size);
	check_prices(data, size);
	return 0;
}

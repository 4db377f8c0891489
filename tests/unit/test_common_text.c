/*
 * test_common_text.c: the pure pieces of common/: the capped buffer, UTF-8
 * repair and cleaning, the JSON-lines framer (fed at every split point),
 * names and paths, settings.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "jsonl.h"
#include "keys.h"
#include "names.h"
#include "prices.h"
#include "utf8.h"
#include "unit.h"

static void
test_buf_caps(void)
{
	struct buf b;

	buf_init(&b, 8);
	CHECK_INT(buf_append(&b, "abcd", 4), 0);
	CHECK_INT(buf_printf(&b, "%d", 1234), 0);
	CHECK_STR(b.data, "abcd1234");
	CHECK_INT(buf_append(&b, "x", 1), -ENOBUFS);
	CHECK_INT(buf_printf(&b, "y"), -ENOBUFS);
	CHECK_INT(b.len, 8);
	buf_consume(&b, 3);
	CHECK_STR(b.data, "d1234");
	CHECK_INT(buf_room(&b), 3);
	buf_consume(&b, 100);
	CHECK_INT(b.len, 0);
	buf_free(&b);
	buf_free(&b);
}

/* An emptied buffer past keep gives its bytes back; a small one, or one
 * still holding bytes, keeps them; it works again after. */
static void
test_buf_shrink(void)
{
	struct buf b;
	char big[10000] = { 0 };

	buf_init(&b, 1 << 20);
	CHECK_INT(buf_append(&b, big, sizeof(big)), 0);
	buf_shrink(&b, 4096);
	CHECK(b.data != NULL);		/* not empty: kept */
	buf_consume(&b, sizeof(big));
	buf_shrink(&b, 4096);
	CHECK(b.data == NULL);
	CHECK_INT(b.cap, 0);
	CHECK_INT(buf_append(&b, "ab", 2), 0);
	buf_shrink(&b, 4096);
	buf_consume(&b, 2);
	buf_shrink(&b, 4096);
	CHECK(b.data != NULL);		/* under keep: kept */
	CHECK_STR(b.data, "");
	buf_free(&b);
}

/* A framer that handed out every line gives its buffer back; a partial
 * line stays, whole, and is completed later. */
static void
test_jsonl_shrink(void)
{
	struct jsonl j;
	char line[9000], *got;
	size_t len;

	memset(line, 'a', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	jsonl_init(&j, 1 << 16);
	CHECK_INT(jsonl_feed(&j, line, sizeof(line)), 0);
	CHECK_INT(jsonl_feed(&j, "{\"x\"", 4), 0);
	CHECK_INT(jsonl_next(&j, &got, &len), 1);
	CHECK_INT(len, sizeof(line) - 1);
	jsonl_shrink(&j, 4096);
	CHECK(j.in.data != NULL);	/* the partial line is kept */
	CHECK_INT(jsonl_feed(&j, ":1}\n", 4), 0);
	CHECK_INT(jsonl_next(&j, &got, &len), 1);
	CHECK_STR(got, "{\"x\":1}");
	CHECK_INT(jsonl_next(&j, &got, &len), 0);
	jsonl_shrink(&j, 4096);
	CHECK(j.in.data == NULL);
	CHECK_INT(jsonl_feed(&j, "{}\n", 3), 0);
	CHECK_INT(jsonl_next(&j, &got, &len), 1);
	CHECK_STR(got, "{}");
	jsonl_free(&j);
}

/* Feed text in two parts split at k; collect the lines, joined by '|'. */
static void
jsonl_split(const char *text, size_t k, size_t max, char *out, size_t outlen,
    int *overlong)
{
	struct jsonl j;
	char *line;
	size_t len, n = 0, total = strlen(text);
	int r;

	jsonl_init(&j, max);
	*overlong = 0;
	out[0] = '\0';
	for (int part = 0; part < 2; part++) {
		const char *p = part ? text + k : text;
		size_t plen = part ? total - k : k;

		CHECK_INT(jsonl_feed(&j, p, plen), 0);
		while ((r = jsonl_next(&j, &line, &len)) != 0) {
			if (r == -EMSGSIZE) {
				(*overlong)++;
				continue;
			}
			CHECK_INT(strlen(line), len);
			n += (size_t)snprintf(out + n, outlen - n, "%s|", line);
		}
	}
	jsonl_free(&j);
}

static void
test_jsonl_every_split(void)
{
	const char *text = "{\"a\":1}\n\n{\"b\":2}\r\n0123456789ABCDEF\n{\"c\":3}\n";
	char out[256];
	int overlong;

	for (size_t k = 0; k <= strlen(text); k++) {
		jsonl_split(text, k, 12, out, sizeof(out), &overlong);
		CHECK_STR(out, "{\"a\":1}|{\"b\":2}|{\"c\":3}|");
		CHECK_INT(overlong, 1);
	}
}

static void
test_jsonl_parse(void)
{
	const char *err;
	json_object *o;
	struct buf b;

	o = jsonl_parse_object("{\"type\":\"chat\",\"n\":3,\"ok\":true}", 31, &err);
	CHECK(o != NULL);
	CHECK_STR(json_get_string(o, "type"), "chat");
	CHECK_INT(json_get_int(o, "n", -1), 3);
	CHECK_INT(json_get_bool(o, "ok", 0), 1);
	CHECK(json_get_string(o, "n") == NULL);
	buf_init(&b, 1024);
	CHECK_INT(jsonl_format(&b, o), 0);
	CHECK_STR(b.data, "{\"type\":\"chat\",\"n\":3,\"ok\":true}\n");
	buf_free(&b);
	json_object_put(o);
	CHECK(jsonl_parse_object("[1,2]", 5, &err) == NULL);
	CHECK_STR(err, "not a JSON object");
	CHECK(jsonl_parse_object("{\"a\":", 5, &err) == NULL);
	CHECK(err != NULL);
	CHECK(jsonl_parse_object("{} x", 4, &err) == NULL);
}

static void
test_room_names(void)
{
	CHECK(room_name_valid("demo"));
	CHECK(room_name_valid("a"));
	CHECK(room_name_valid("0-team-1"));
	CHECK(!room_name_valid(""));
	CHECK(!room_name_valid("-x"));
	CHECK(!room_name_valid("Demo"));
	CHECK(!room_name_valid("a_b"));
	CHECK(!room_name_valid("a/b"));
	CHECK(!room_name_valid(".."));
	CHECK(room_name_valid("abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123"));
	CHECK(!room_name_valid("abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234"));
}

static void
test_user_names(void)
{
	char out[40];

	user_name_from("alice@laptop", out, sizeof(out));
	CHECK_STR(out, "alice");
	user_name_from("Bob Smith", out, sizeof(out));
	CHECK_STR(out, "Bob");
	user_name_from("", out, sizeof(out));
	CHECK_STR(out, "user");
	user_name_from("e\033[2Jvil", out, sizeof(out));
	CHECK_STR(out, "e__2Jvil");
	CHECK(user_name_valid(out));
	CHECK(!user_name_valid("a b"));
	CHECK(user_name_valid("alice"));
}

static void
test_paths(void)
{
	char out[64];

	CHECK_INT(workspace_path_normalize("a/./b/../c", out, sizeof(out)), 0);
	CHECK_STR(out, "a/c");
	CHECK_INT(workspace_path_normalize("/x//y/", out, sizeof(out)), 0);
	CHECK_STR(out, "x/y");
	CHECK_INT(workspace_path_normalize("", out, sizeof(out)), 0);
	CHECK_STR(out, ".");
	CHECK_INT(workspace_path_normalize("a/../..", out, sizeof(out)), -EPERM);
	CHECK_INT(workspace_path_normalize("../etc/passwd", out, sizeof(out)), -EPERM);
	CHECK_INT(workspace_path_normalize("a\nb", out, sizeof(out)), -EINVAL);
	CHECK_INT(workspace_path_normalize("aaaaaaaaaaaaaaaa/bbbbbbbbbbbbbbbbbbbbbbb/"
	    "cccccccccccccccccccccccccccc", out, sizeof(out)), -ENAMETOOLONG);
}

static void
test_config(void)
{
	char path[] = "/tmp/atrium-conf-XXXXXX", err[256];
	struct config c;
	struct keys k;
	FILE *f;
	int fd;

	config_defaults(&c);
	CHECK_INT(c.idle_timeout, 900);
	CHECK_STR(c.listen, ":2222");
	CHECK_INT(config_set(&c, "model_url", "http://127.0.0.1:9/v1", err,
	    sizeof(err)), 0);
	CHECK_STR(c.model_url, "http://127.0.0.1:9/v1");
	CHECK_INT(config_set(&c, "idle-timeout", "ten", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "idle-timeout must be a whole number") != NULL);
	CHECK_INT(config_set(&c, "nonsense", "1", err, sizeof(err)), -ENOENT);
	CHECK_INT(config_set(&c, "provider", "gemini", err, sizeof(err)), -EINVAL);
	CHECK_INT(config_set(&c, "open", "", err, sizeof(err)), 0);
	CHECK_INT(c.open, 1);

	fd = mkstemp(path);
	CHECK(fd >= 0);
	f = fdopen(fd, "w");
	fprintf(f, "# settings\nprovider = openai\nmodel=llama3 # local\n\n"
	    "api-key-file = %s\n", path);
	fclose(f);
	config_defaults(&c);
	CHECK_INT(config_load_file(&c, path, err, sizeof(err)), 0);
	CHECK_STR(c.provider, "openai");
	CHECK_STR(c.model, "llama3");
	CHECK_STR(config_provider_url(&c, "openai"), "");
	CHECK_STR(config_public_url("openai"), "https://api.openai.com/v1");
	/* The key file here is the settings file itself: several lines. */
	CHECK_INT(keys_load(&k, &c, err, sizeof(err)), -EINVAL);
	f = fopen(path, "w");
	fprintf(f, "provider = openai\nbogus line\n");
	fclose(f);
	CHECK_INT(config_load_file(&c, path, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, ":2: expected 'key = value'") != NULL);
	f = fopen(path, "w");
	fprintf(f, "  sk-test-key \n");
	fclose(f);
	setenv("OPENAI_API_KEY", "sk-env-openai", 1);
	setenv("ANTHROPIC_API_KEY", "sk-env-anthropic", 1);
	CHECK_INT(keys_load(&k, &c, err, sizeof(err)), 0);
	/* The file is openai's (the provider it came with); the env the
	 * other's. */
	CHECK_STR(keys_get(&k, "openai"), "sk-test-key");
	CHECK_STR(keys_get(&k, "anthropic"), "sk-env-anthropic");
	keys_scrub_env();
	CHECK(getenv("OPENAI_API_KEY") == NULL);
	CHECK(getenv("ANTHROPIC_API_KEY") == NULL);
	unlink(path);
	CHECK_INT(config_load_file(&c, path, err, sizeof(err)), 0);
}

/* The operator's price table: "MODEL=IN/OUT", comma separated; one bad
 * entry makes the whole table malformed, named in the message. */
static void
test_prices(void)
{
	char err[512];
	double in = 0, out = 0;

	CHECK_INT(prices_lookup("a=3/15, b-2=0.25/1.5", "b-2", &in, &out), 1);
	CHECK(in == 0.25 && out == 1.5);
	CHECK_INT(prices_lookup("a=3/15", "a", &in, &out), 1);
	CHECK(in == 3 && out == 15);
	CHECK_INT(prices_lookup("a=3/15", "b", &in, &out), 0);
	CHECK_INT(prices_lookup("aa=3/15", "a", &in, &out), 0);
	CHECK_INT(prices_lookup("", "a", &in, &out), 0);
	CHECK_INT(prices_lookup("x=1, a=3", "a", &in, &out), 0);
	CHECK_INT(prices_check("", err, sizeof(err)), 0);
	CHECK_INT(prices_check(" a=3/15 , b=0/0,", err, sizeof(err)), 0);
	CHECK_INT(prices_check("vendor/m:8b=1e-1/2.5", err, sizeof(err)), 0);
	static const char *const bad[] = {
		"a=3", "a=-1/2", "a=1/2x", "a=nan/1", "a=inf/1", "=1/2",
		"a =1/2", "a= 1/2", "a=1/", "a=/2", "a=1/2 b=3/4", "a",
		"a=1//2", "a=+1/2",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char table[64];

		snprintf(table, sizeof(table), "ok=1/2, %s", bad[i]);
		err[0] = '\0';
		CHECK_INT(prices_check(table, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, bad[i]) != NULL);
		CHECK(strstr(err, "MODEL=IN/OUT") != NULL);
		CHECK_INT(prices_lookup(table, "ok", &in, &out), 0);
	}
}

/* Models and URLs per provider: openai has no default model, and
 * model-url is the configured provider's URL only. */
static void
test_config_finish(void)
{
	char err[512];
	struct config c;

	config_defaults(&c);
	CHECK_INT(config_finish(&c, err, sizeof(err)), 0);
	CHECK_STR(c.model, CONFIG_ANTHROPIC_MODEL);
	config_defaults(&c);
	CHECK_INT(config_set(&c, "provider", "openai", err, sizeof(err)), 0);
	CHECK_INT(config_finish(&c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "--model NAME") != NULL);
	CHECK_INT(config_set(&c, "model", "llama3", err, sizeof(err)), 0);
	CHECK_INT(config_set(&c, "model-url", "http://o/v1", err,
	    sizeof(err)), 0);
	CHECK_INT(config_set(&c, "anthropic-url", "http://a", err,
	    sizeof(err)), 0);
	CHECK_INT(config_finish(&c, err, sizeof(err)), 0);
	CHECK_STR(config_provider_url(&c, "openai"), "http://o/v1");
	CHECK_STR(config_provider_url(&c, "anthropic"), "http://a");
	CHECK_INT(config_set(&c, "openai-url", "http://other/v1", err,
	    sizeof(err)), 0);
	CHECK_INT(config_finish(&c, err, sizeof(err)), -EINVAL);
	config_defaults(&c);
	CHECK_INT(config_set(&c, "prices", "m=3/15,n=3-15", err,
	    sizeof(err)), 0);
	CHECK_INT(config_finish(&c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "\"n=3-15\"") != NULL);
}

/* Keys cross a pipe (an agent started by hand) whole, each under its
 * own provider. */
static void
test_keys_pipe(void)
{
	struct keys back;
	char err[256];
	int p[2];

	CHECK(pipe(p) == 0);
	CHECK(write(p[1], "openai sk-o\n", 12) == 12);
	close(p[1]);
	CHECK_INT(keys_read_fd(&back, p[0], err, sizeof(err)), 0);
	CHECK(keys_get(&back, "anthropic") == NULL);
	CHECK_STR(keys_get(&back, "openai"), "sk-o");
	CHECK(keys_get(&back, "gemini") == NULL);
	CHECK(pipe(p) == 0);
	CHECK(write(p[1], "google sk\n", 10) == 10);
	close(p[1]);
	CHECK_INT(keys_read_fd(&back, p[0], err, sizeof(err)), -EINVAL);
	CHECK(keys_get(&back, "openai") == NULL);
}

/* A channel carries the first set, then each renewal whole (an empty set
 * included), refuses a bad one, and reports atriumd's end closing. */
static void
test_keys_channel(void)
{
	struct keys k, back;
	char err[256];
	int agent, mine;

	keys_clear(&k);
	snprintf(k.key[KEYS_ANTHROPIC], KEYS_MAX, "sk-a1");
	agent = keys_channel(&k, &mine);
	CHECK(agent >= 0 && mine >= 0);
	CHECK(keys_is_channel(agent));
	CHECK_INT(keys_recv(&back, agent, err, sizeof(err)), 0);
	CHECK_STR(keys_get(&back, "anthropic"), "sk-a1");
	CHECK_INT(keys_recv(&back, agent, err, sizeof(err)), -EAGAIN);
	snprintf(k.key[KEYS_ANTHROPIC], KEYS_MAX, "sk-a2");
	snprintf(k.key[KEYS_OPENAI], KEYS_MAX, "sk-o2");
	CHECK_INT(keys_send(mine, &k), 0);
	keys_clear(&k);
	CHECK_INT(keys_send(mine, &k), 0);
	CHECK_INT(keys_recv(&back, agent, err, sizeof(err)), 0);
	CHECK_STR(keys_get(&back, "anthropic"), "sk-a2");
	CHECK_STR(keys_get(&back, "openai"), "sk-o2");
	CHECK_INT(keys_recv(&back, agent, err, sizeof(err)), 0);
	CHECK(keys_get(&back, "anthropic") == NULL);
	CHECK(send(mine, "google sk\n", 10, 0) == 10);
	CHECK_INT(keys_recv(&back, agent, err, sizeof(err)), -EINVAL);
	close(mine);
	CHECK_INT(keys_recv(&back, agent, err, sizeof(err)), -EPIPE);
	close(agent);
}

/* Found by tests/fuzz/fuzz_config.c: blank lines were not counted in the
 * line an error names, and a NUL byte hid the rest of the file. */
static void
test_config_fuzzfound(void)
{
	char path[] = "/tmp/atrium-conf-XXXXXX", err[256];
	static const char nul[] = "model = a\0\nprovider = gemini\n";
	struct config c;
	FILE *f;
	int fd;

	fd = mkstemp(path);
	CHECK(fd >= 0);
	f = fdopen(fd, "w");
	fprintf(f, "\n\x01\n");
	fclose(f);
	config_defaults(&c);
	CHECK_INT(config_load_file(&c, path, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, ":2: expected 'key = value'") != NULL);
	f = fopen(path, "w");
	fprintf(f, "# head\n\n\nmodel = x\n\n\nbogus\n");
	fclose(f);
	CHECK_INT(config_load_file(&c, path, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, ":7: expected 'key = value'") != NULL);
	f = fopen(path, "w");
	fwrite(nul, 1, sizeof(nul) - 1, f);
	fclose(f);
	config_defaults(&c);
	CHECK_INT(config_load_file(&c, path, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, ":1: a NUL byte") != NULL);
	unlink(path);
}

static void
test_utf8_complete(void)
{
	CHECK_INT(utf8_complete("abc", 3), 3);
	CHECK_INT(utf8_complete("a\xc3", 2), 1);		/* é cut */
	CHECK_INT(utf8_complete("a\xc3\xa9", 3), 3);
	CHECK_INT(utf8_complete("\xe2\x82", 2), 0);	/* € cut */
	CHECK_INT(utf8_complete("x\xf0\x9f\x98", 4), 1);	/* emoji cut */
	CHECK_INT(utf8_complete("x\xff", 2), 2);		/* invalid: send */
	CHECK_INT(utf8_complete("", 0), 0);
}

static void
test_utf8_repair(void)
{
	struct buf b;

	buf_init(&b, 1024);
	CHECK_INT(utf8_repair(&b, "ok \xc3\xa9", 5), 0);
	CHECK_STR(b.data, "ok \xc3\xa9");
	buf_reset(&b);
	CHECK_INT(utf8_repair(&b, "a\xff" "b\xc3", 4), 0);
	CHECK_STR(b.data, "a\xef\xbf\xbd" "b\xef\xbf\xbd");
	buf_reset(&b);
	CHECK_INT(utf8_repair(&b, "n\0m", 3), 0);	/* NUL replaced */
	CHECK_STR(b.data, "n\xef\xbf\xbdm");
	buf_reset(&b);
	CHECK_INT(utf8_repair(&b, "\xed\xa0\x80", 3), 0);	/* surrogate */
	CHECK_INT(b.len, 9);
	buf_free(&b);
}

static void
test_buf_truncate(void)
{
	struct buf b;

	buf_init(&b, 64);
	buf_truncate(&b, 0);			/* nothing allocated yet */
	CHECK_INT(b.len, 0);
	CHECK_INT(buf_append(&b, "abcdef", 6), 0);
	buf_truncate(&b, 10);			/* longer: kept whole */
	CHECK_STR(b.data, "abcdef");
	buf_truncate(&b, 3);
	CHECK_INT(b.len, 3);
	CHECK_STR(b.data, "abc");
	CHECK_INT(buf_append(&b, "x", 1), 0);
	CHECK_STR(b.data, "abcx");
	buf_free(&b);
}

/* What people send each other: valid UTF-8 without controls. */
static void
test_utf8_clean(void)
{
	struct buf b;
	char *s;

	buf_init(&b, 1024);
	/* ESC, BEL, CR and DEL go; tab and newline stay. */
	CHECK_INT(utf8_clean(&b, "a\x1b[2Jb\tc\r\nd\x07\x7f" "e", 14), 0);
	CHECK_STR(b.data, "a[2Jb\tc\nde");
	buf_reset(&b);
	/* C1 as UTF-8 (U+009B CSI) goes; U+00A0 stays. */
	CHECK_INT(utf8_clean(&b, "x\xc2\x9by\xc2\x85z\xc2\xa0", 10), 0);
	CHECK_STR(b.data, "xyz\xc2\xa0");
	buf_reset(&b);
	/* A raw C1 byte is invalid UTF-8: replaced, never passed on. */
	CHECK_INT(utf8_clean(&b, "p\x9bq\x85r\xff", 6), 0);
	CHECK_STR(b.data, "p\xef\xbf\xbdq\xef\xbf\xbdr\xef\xbf\xbd");
	buf_reset(&b);
	CHECK_INT(utf8_clean(&b, "n\0m\xe2\x82\xac", 6), 0);	/* NUL goes */
	CHECK_STR(b.data, "nm\xe2\x82\xac");
	buf_free(&b);
	s = utf8_clean_str("\x1b]0;title\x07hi \xc0\xaf");
	CHECK_STR(s, "]0;titlehi \xef\xbf\xbd\xef\xbf\xbd");
	free(s);
}

static void
test_utf8_valid(void)
{
	CHECK_INT(utf8_valid("ok \xc3\xa9 \xf0\x9f\x98\x80", 10), 1);
	CHECK_INT(utf8_valid("", 0), 1);
	CHECK_INT(utf8_valid("a\x9b", 2), 0);		/* raw C1 byte */
	CHECK_INT(utf8_valid("\xc0\xaf", 2), 0);		/* overlong */
	CHECK_INT(utf8_valid("\xed\xa0\x80", 3), 0);	/* surrogate */
	CHECK_INT(utf8_valid("\xf4\x90\x80\x80", 4), 0);	/* > U+10FFFF */
	CHECK_INT(utf8_valid("\xe2\x82", 2), 0);		/* cut */
	CHECK_INT(utf8_valid("a\0b", 3), 0);
}

int
main(void)
{
	TEST(test_buf_caps);
	TEST(test_buf_shrink);
	TEST(test_jsonl_shrink);
	TEST(test_utf8_complete);
	TEST(test_utf8_repair);
	TEST(test_buf_truncate);
	TEST(test_utf8_clean);
	TEST(test_utf8_valid);
	TEST(test_jsonl_every_split);
	TEST(test_jsonl_parse);
	TEST(test_room_names);
	TEST(test_user_names);
	TEST(test_paths);
	TEST(test_config);
	TEST(test_config_finish);
	TEST(test_prices);
	TEST(test_keys_pipe);
	TEST(test_keys_channel);
	TEST(test_config_fuzzfound);
	return unit_done("test_common_text");
}

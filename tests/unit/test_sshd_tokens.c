/*
 * test_sshd_tokens.c: tokens for HTTP (sshd/monitor/tokens.c,
 * tokens_serve.c, tokens_db.c, sshd/shared/token_args.c) in a DATA
 * directory made by the test: atrium-token's words parsed strictly; a
 * token made by the `token` request resolves to its key's user and grant;
 * and it stops resolving when it is altered, revoked or expired, when its
 * key is removed from authorized_keys, expired, or not allowed from the
 * client's address, and when tokens.db is damaged (fail closed).  Its
 * last_used is written on use.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"
#include "jsonl.h"
#include "../../sshd/monitor/monitor_loop.h"
#include "../../sshd/monitor/tokens.h"
#include "../../sshd/shared/token_args.h"

#define ALICE_KEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKNfSybk6inYx9U6oP5" \
    "muqEWZOG+cZba420CYYZ6xJSt alice@test"
#define ALICE_FP "SHA256:dw+Xunko8SND/cDmU2i+EDs2d8VBzgHX1VMD4cbC1G4"
#define BOB_KEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK4iuvoEmpmSXgaw4w/NNe" \
    "XsRblNcn22ycOhHliZ1KB4 bob@test"

/* A monitor with a DATA directory of its own. */
struct fixture {
	char dir[64];
	struct config cfg;
	struct monitor srv;
};

/* Write authorized_keys with text (a new size each time, so that the
 * monitor's parse sees the change). */
static void
write_keys(struct fixture *f, const char *text)
{
	char path[PATH_MAX];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/authorized_keys", f->dir);
	fp = fopen(path, "w");
	CHECK(fp != NULL);
	if (!fp)
		return;
	fputs(text, fp);
	fclose(fp);
}

static void
fixture_init(struct fixture *f, const char *keys)
{
	char path[PATH_MAX];

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_tokens.XXXXXX");
	CHECK(mkdtemp(f->dir) != NULL);
	snprintf(f->cfg.data_dir, sizeof(f->cfg.data_dir), "%s", f->dir);
	f->srv.cfg = &f->cfg;
	write_keys(f, keys);
	snprintf(path, sizeof(path), "%s/authorized_keys", f->dir);
	f->srv.keys = authkeys_new(path);
	authkeys_set_quiet(f->srv.keys);
	f->srv.tokens = tokens_new(f->dir);
	CHECK(f->srv.keys && f->srv.tokens);
}

static void
fixture_free(struct fixture *f)
{
	char cmd[128];

	tokens_free(f->srv.tokens);
	authkeys_free(f->srv.keys);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	CHECK_INT(system(cmd), 0);
}

/* Send the token request text (a JSON object less WHO) for alice's key
 * from 127.0.0.1; the answer (the caller's), or NULL when the request
 * was refused as malformed. */
static json_object *
ask(struct fixture *f, const char *fields)
{
	char text[1024];
	json_object *req, *ans = json_object_new_object();
	struct monitor_identity id;
	char why[400];
	int r;

	snprintf(text, sizeof(text), "{\"type\":\"token\",\"user\":\"alice\","
	    "\"key\":\"" ALICE_FP "\",\"addr\":\"127.0.0.1\",%s}", fields);
	req = json_tokener_parse(text);
	CHECK(req != NULL);
	r = monitor_identity_get(&f->srv, req, &id, why, sizeof(why));
	CHECK_INT(r, 0);
	if (r == 0 && tokens_serve(&f->srv, req, &id, ans) < 0) {
		json_object_put(ans);
		ans = NULL;
	}
	json_object_put(req);
	return ans;
}

/* A new token of alice's into out (TOKENS_LEN + 1). */
static void
make_token(struct fixture *f, const char *fields, char *out)
{
	json_object *ans = ask(f, fields);
	const char *t = json_get_string(ans, "token");

	CHECK(t != NULL);
	snprintf(out, TOKENS_LEN + 1, "%s", t ? t : "");
	json_object_put(ans);
}

#define CREATE	"\"op\":\"create\",\"rooms\":null,\"expires\":\"30d\"," \
    "\"read_only\":false,\"name\":null,\"id\":null"

/* tokens_identity from 127.0.0.1; its result, why in why. */
static int
resolve(struct fixture *f, const char *token, struct monitor_identity *id,
    struct token_grant *g, char *why, size_t len)
{
	return tokens_identity(&f->srv, token, "127.0.0.1", id, g, why, len);
}

static void
test_words(void)
{
	struct token_args a;
	char why[300];

	CHECK_INT(token_args_parse("atrium-token create --rooms a,b-2 "
	    "--expires=12h --read-only --name 'my laptop'", &a, why,
	    sizeof(why)), 0);
	CHECK_INT(a.op, TOKEN_OP_CREATE);
	CHECK_INT(a.nrooms, 2);
	CHECK_STR(a.rooms[1], "b-2");
	CHECK_STR(a.expires, "12h");
	CHECK_INT(a.read_only, 1);
	CHECK_STR(a.name, "my laptop");
	CHECK_INT(token_args_parse("atrium-token create --name \"a \\\"b\\\"\"",
	    &a, why, sizeof(why)), 0);
	CHECK_STR(a.name, "a \"b\"");
	CHECK_STR(a.expires, TOKEN_DEFAULT_EXPIRES);
	CHECK_INT(token_args_parse("atrium-token revoke 0123456789ab", &a, why,
	    sizeof(why)), 0);
	CHECK_STR(a.id, "0123456789ab");
	CHECK(token_is_command("  atrium-token list"));
	CHECK(!token_is_command("atrium-tokens list"));
	CHECK(!token_is_command("echo atrium-token"));
}

static void
test_bad_words(void)
{
	static const char *const bad[] = {
		"atrium-token", "atrium-token create --rooms", "atrium-token "
		"create --rooms a,a", "atrium-token create --rooms ,a",
		"atrium-token create --expires 0h", "atrium-token create "
		"--expires 87601h", "atrium-token create --expires 3651d",
		"atrium-token create --name 'a\x1b[2J'", "atrium-token create "
		"--name \xc2\x9b", "atrium-token create 'unclosed",
		"atrium-token create --read-only=yes", "atrium-token list -a",
		"atrium-token revoke 0123456789AB", "atrium-token revoke 01",
		"atrium-token create --x", "atrium-token create trailing\\",
		"'atrium-token' list", "atrium\\-token list",
	};
	struct token_args a;
	char why[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		if (token_args_parse(bad[i], &a, why, sizeof(why)) != -EINVAL ||
		    !why[0])
			fprintf(stderr, "accepted: %s\n", bad[i]);
		CHECK(token_args_parse(bad[i], &a, why, sizeof(why)) == -EINVAL);
	}
}

static void
test_a_token_resolves_to_its_key(void)
{
	struct fixture f;
	struct monitor_identity id;
	struct token_grant g;
	char tok[TOKENS_LEN + 1], why[400];

	fixture_init(&f, ALICE_KEY "\n" BOB_KEY "\n");
	make_token(&f, "\"op\":\"create\",\"rooms\":[\"alpha\",\"beta\"],"
	    "\"expires\":\"12h\",\"read_only\":true,\"name\":\"ci\",\"id\":null",
	    tok);
	CHECK_INT(strlen(tok), TOKENS_LEN);
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), 0);
	CHECK_STR(id.user, "alice");
	CHECK(!id.guest && id.opts != NULL);
	CHECK_INT(g.read_only, 1);
	CHECK_INT(g.nrooms, 2);
	CHECK(token_grant_allows(&g, "beta"));
	CHECK(!token_grant_allows(&g, "gamma"));
	CHECK(g.expires > time(NULL) + 11 * 3600);
	/* One digit changed, a token of no shape, none at all. */
	tok[20] = tok[20] == 'A' ? 'B' : 'A';
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), -EACCES);
	CHECK(strstr(why, "unknown") != NULL);
	CHECK_INT(resolve(&f, "atrium_short", &id, &g, why, sizeof(why)),
	    -EACCES);
	CHECK_INT(resolve(&f, NULL, &id, &g, why, sizeof(why)), -EACCES);
	fixture_free(&f);
}

static void
test_a_removed_key_takes_its_tokens(void)
{
	struct fixture f;
	struct monitor_identity id;
	struct token_grant g;
	char tok[TOKENS_LEN + 1], why[400];

	fixture_init(&f, ALICE_KEY "\n" BOB_KEY "\n");
	make_token(&f, CREATE, tok);
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), 0);
	write_keys(&f, BOB_KEY "\n");
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), -EACCES);
	CHECK(strstr(why, "not in authorized_keys") != NULL);
	CHECK(strstr(why, tok) == NULL);
	/* Even with --open, where the key would be a guest. */
	f.cfg.open = 1;
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), -EACCES);
	f.cfg.open = 0;
	/* Back, under another user's name. */
	write_keys(&f, "user=\"mallory\" " ALICE_KEY "\n");
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), -EACCES);
	/* Back, but only from elsewhere; then expired. */
	write_keys(&f, "from=\"10.0.0.1\" " ALICE_KEY "\n");
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), -EACCES);
	write_keys(&f, "expiry-time=\"20000101\" " ALICE_KEY "\n");
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), -EACCES);
	write_keys(&f, ALICE_KEY "\n");
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), 0);
	fixture_free(&f);
}

/* Run sql on f's tokens.db with a connection of the test's own. */
static void
poke(struct fixture *f, const char *sql)
{
	char path[PATH_MAX];
	sqlite3 *db = NULL;

	snprintf(path, sizeof(path), "%s/tokens.db", f->dir);
	CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* One integer from f's tokens.db, -1 for NULL or none. */
static long long
peek(struct fixture *f, const char *sql)
{
	char path[PATH_MAX];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long long v = -1;

	snprintf(path, sizeof(path), "%s/tokens.db", f->dir);
	CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void
test_expired_revoked_and_used(void)
{
	struct fixture f;
	struct monitor_identity id;
	struct token_grant g;
	char tok[TOKENS_LEN + 1], tok2[TOKENS_LEN + 1], why[400], rev[200];
	json_object *ans;

	fixture_init(&f, ALICE_KEY "\n");
	make_token(&f, CREATE, tok);
	make_token(&f, CREATE, tok2);
	CHECK_INT(peek(&f, "SELECT last_used FROM tokens LIMIT 1"), -1);
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), 0);
	CHECK(peek(&f, "SELECT max(last_used) FROM tokens") >= time(NULL) - 5);
	/* Expired. */
	poke(&f, "UPDATE tokens SET expires = 1000");
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), -EACCES);
	CHECK(strstr(why, "expired") != NULL);
	poke(&f, "UPDATE tokens SET expires = NULL");
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), 0);
	/* Revoked. */
	snprintf(rev, sizeof(rev), "\"op\":\"revoke\",\"rooms\":null,"
	    "\"expires\":null,\"read_only\":false,\"name\":null,\"id\":\"%s\"",
	    g.id);
	ans = ask(&f, rev);
	CHECK(json_get_string(ans, "text") != NULL);
	json_object_put(ans);
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), -EACCES);
	CHECK_INT(resolve(&f, tok2, &id, &g, why, sizeof(why)), 0);
	fixture_free(&f);
}

static void
test_a_damaged_store_fails_closed(void)
{
	struct fixture f;
	struct monitor_identity id;
	struct token_grant g;
	char tok[TOKENS_LEN + 1], why[400], path[PATH_MAX];
	int fd;

	fixture_init(&f, ALICE_KEY "\n");
	make_token(&f, CREATE, tok);
	tokens_free(f.srv.tokens);
	f.srv.tokens = tokens_new(f.dir);
	snprintf(path, sizeof(path), "%s/tokens.db-wal", f.dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/tokens.db", f.dir);
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, "not a database, not at all, no", 30), 30);
	close(fd);
	CHECK_INT(resolve(&f, tok, &id, &g, why, sizeof(why)), -EIO);
	CHECK(!id.user[0]);
	fixture_free(&f);
}

static void
test_malformed_requests_break_the_rules(void)
{
	static const char *const bad[] = {
		"\"op\":\"create\",\"rooms\":null,\"expires\":\"soon\","
		    "\"read_only\":false,\"name\":null,\"id\":null",
		"\"op\":\"create\",\"rooms\":[\"Bad Room\"],\"expires\":\"1d\","
		    "\"read_only\":false,\"name\":null,\"id\":null",
		"\"op\":\"create\",\"rooms\":null,\"expires\":\"1d\","
		    "\"read_only\":\"yes\",\"name\":null,\"id\":null",
		"\"op\":\"list\",\"rooms\":null,\"expires\":\"1d\","
		    "\"read_only\":false,\"name\":null,\"id\":null",
		"\"op\":\"revoke\",\"rooms\":null,\"expires\":null,"
		    "\"read_only\":false,\"name\":null,\"id\":\"x\"",
		"\"op\":\"drop\",\"rooms\":null,\"expires\":null,"
		    "\"read_only\":false,\"name\":null,\"id\":null",
	};
	struct fixture f;

	fixture_init(&f, ALICE_KEY "\n");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object *ans = ask(&f, bad[i]);

		CHECK(ans == NULL);
		json_object_put(ans);
	}
	fixture_free(&f);
}

int
main(void)
{
	TEST(test_words);
	TEST(test_bad_words);
	TEST(test_a_token_resolves_to_its_key);
	TEST(test_a_removed_key_takes_its_tokens);
	TEST(test_expired_revoked_and_used);
	TEST(test_a_damaged_store_fails_closed);
	TEST(test_malformed_requests_break_the_rules);
	return unit_done("test_sshd_tokens");
}

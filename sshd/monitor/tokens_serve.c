/*
 * tokens_serve.c: the `token` request (tokens.h: tokens_serve; the wire is
 * privsep.h), what `ssh HOST atrium-token ...` asks.  Called by monitor.c
 * once it has established who the request is for (monitor_identity_get).
 *
 * Rules, each the monitor's own (the network process checked the words
 * too, but is trusted no more than a client):
 * - only a key in authorized_keys makes tokens: an --open guest has no
 *   line whose removal could take the token back;
 * - a key with a forced command (command=) may only run that command, so
 *   it gets a token only when its forced command is itself atrium-token
 *   and the request is exactly that command;
 * - a token names only rooms the key's rooms= allows, and expires no later
 *   than the key's expiry-time;
 * - list and revoke reach the caller's own tokens (by user: whichever of
 *   the user's keys made them), every token for an atrium-admin key;
 * - the token's text goes back once, in the answer, and is never logged
 *   nor stored (tokens_db.h keeps its SHA-256).
 * What goes back is text for the client's terminal: names and comments
 * are cleaned of control characters before they are put in it.
 */
#include "tokens.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "jsonl.h"
#include "log.h"
#include "monitor_loop.h"
#include "tokens_db.h"
#include "utf8.h"

#define TOKENS_TEXT_MAX	(256 * 1024)	/* an answer's text */
#define TOKENS_LINE_MAX	2048		/* list's line, at most */
#define TOKENS_MAKE_TRIES	4	/* ids taken by chance, then give up */
/* list's columns: id, user, access, expires, last used, rooms ("*": the
 * key's), then the key's comment and the token's name. */
#define TOKENS_LIST_FORMAT	"%-12s  %-10s  %-10s  %-20s  %-20s  %-16s  "

/* Set ans's error. */
static void
tokens_error(json_object *ans, const char *why)
{
	json_object_object_add(ans, "error", json_object_new_string(why));
}

/* Append s, cleaned of control characters, to b. */
static void
tokens_put_clean(struct buf *b, const char *s)
{
	char *c = utf8_clean_str(s);

	if (c)
		buf_append(b, c, strlen(c));
	free(c);
}

/* Append printf text to b (cut at TOKENS_LINE_MAX a call). */
static void __attribute__((format(printf, 2, 3)))
tokens_put(struct buf *b, const char *fmt, ...)
{
	char line[TOKENS_LINE_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		buf_append(b, line, (size_t)n < sizeof(line) ? (size_t)n :
		    sizeof(line) - 1);
}

/* May id make or manage tokens with request a?  1, or 0 with why. */
static int
tokens_may(const struct monitor_identity *id, const struct token_args *a,
    char *why, size_t len)
{
	struct token_args forced;
	char fwhy[160];

	if (id->guest || !id->opts) {
		snprintf(why, len, "%s is an --open guest, not a key in "
		    "authorized_keys: a token is tied to such a key (ask the "
		    "server's operator to add yours)", id->user);
		return 0;
	}
	if (!id->opts->command)
		return 1;
	if (!token_is_command(id->opts->command) ||
	    token_args_parse(id->opts->command, &forced, fwhy,
	    sizeof(fwhy)) < 0) {
		snprintf(why, len, "this key has a forced command (command= in "
		    "authorized_keys): it may not make or manage tokens, which "
		    "would reach rooms past that restriction");
		return 0;
	}
	if (!token_args_same(&forced, a)) {
		snprintf(why, len, "this key may only run its forced command, "
		    "which is another atrium-token command than this one");
		return 0;
	}
	return 1;
}

/* The token's rooms for create: each one the key's rooms= allows, joined
 * into out.  0, or -EPERM with why. */
static int
tokens_rooms(const struct monitor_identity *id, const struct token_args *a,
    char *out, size_t olen, char *why, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < a->nrooms; i++) {
		if (!monitor_identity_may_create(id, a->rooms[i])) {
			snprintf(why, len, "this key's rooms= does not allow "
			    "room '%s': a token names only rooms its key's "
			    "rooms= pattern allows", a->rooms[i]);
			return -EPERM;
		}
		used += (size_t)snprintf(out + used, olen - used, "%s%s",
		    i ? "," : "", a->rooms[i]);
	}
	return 0;
}

/* When a new token expires: now plus --expires, but never later than
 * the key's expiry-time (*capped then set). */
static long long
tokens_expiry(const struct monitor_identity *id, const struct token_args *a,
    long long now, int *capped)
{
	long long s = 0, when, key = (long long)id->opts->expiry;

	token_expires_parse(a->expires, &s);	/* checked by from_json */
	when = s ? now + s : 0;
	*capped = key > 0 && (when == 0 || when > key);
	return *capped ? key : when;
}

/* A new row for id's key (fingerprint fp) from a, less its token; 0, or
 * -EPERM / -EIO with why. */
static int
tokens_new_row(struct monitor *srv, const struct monitor_identity *id,
    const char *fp, const char *addr, const struct token_args *a,
    struct token_row *r, int *capped, char *why, size_t len)
{
	struct authkeys_found found;
	time_t now = time(NULL);
	int n;

	memset(r, 0, sizeof(*r));
	if (tokens_rooms(id, a, r->rooms, sizeof(r->rooms), why, len) < 0)
		return -EPERM;
	if ((n = tokens_db_count(srv->tokens, id->user)) < 0) {
		snprintf(why, len, "tokens cannot be made now; the server's log "
		    "says why");
		return -EIO;
	}
	if (n >= TOKENS_MAX_PER_USER) {
		snprintf(why, len, "%s has %d tokens, the most there may be: "
		    "revoke some first (atrium-token list shows them)", id->user,
		    n);
		return -EPERM;
	}
	snprintf(r->user, sizeof(r->user), "%s", id->user);
	snprintf(r->key, sizeof(r->key), "%s", fp);
	if (authkeys_match_fp(srv->keys, fp, addr, now, &found) == 1)
		snprintf(r->comment, sizeof(r->comment), "%s", found.comment);
	snprintf(r->name, sizeof(r->name), "%s", a->name);
	r->read_only = a->read_only;
	r->created = now;
	r->expires = tokens_expiry(id, a, now, capped);
	return 0;
}

/* Store r under a new token into text (TOKENS_LEN + 1).  0 or -EIO. */
static int
tokens_store(struct monitor *srv, struct token_row *r, char *text)
{
	int rc = -EEXIST;

	for (int i = 0; i < TOKENS_MAKE_TRIES && rc == -EEXIST; i++) {
		if (tokens_make(text) < 0 ||
		    tokens_hash(text, r->hash, r->id) < 0)
			return -EIO;
		rc = tokens_db_insert(srv->tokens, r);
	}
	return rc < 0 ? -EIO : 0;
}

/* What a new token grants, for the one who made it. */
static void
tokens_created_text(struct buf *b, const struct token_row *r, int capped)
{
	char when[64];

	tokens_when(r->expires, when, sizeof(when));
	tokens_put(b, "id:      %s\n", r->id);
	if (r->name[0]) {
		tokens_put(b, "name:    ");
		tokens_put_clean(b, r->name);
		tokens_put(b, "\n");
	}
	tokens_put(b, "user:    %s, key %s\n", r->user, r->key);
	tokens_put(b, "rooms:   %s\n", r->rooms[0] ? r->rooms :
	    "every room this key may enter");
	tokens_put(b, "access:  %s\n", r->read_only ? "read-only" :
	    "read-write");
	tokens_put(b, "expires: %s%s\n", when, capped ?
	    " (the key's expiry-time)" : "");
	tokens_put(b, "It is shown only this once: keep it secret.  Send it "
	    "as \"Authorization: Bearer TOKEN\"; revoke it with: "
	    "atrium-token revoke %s\n", r->id);
}

/* create: a new token. */
static void
tokens_create(struct monitor *srv, json_object *req,
    const struct monitor_identity *id, const struct token_args *a,
    json_object *ans)
{
	char text[TOKENS_LEN + 1], why[300];
	struct token_row r;
	struct buf b;
	int capped = 0;

	if (tokens_new_row(srv, id, json_get_string(req, "key"),
	    json_get_string(req, "addr"), a, &r, &capped, why,
	    sizeof(why)) < 0) {
		tokens_error(ans, why);
		return;
	}
	if (tokens_store(srv, &r, text) < 0) {
		tokens_error(ans, "the token could not be stored; the server's "
		    "log says why");
		return;
	}
	log_info("monitor: %s made token %s with key %s (rooms %s, %s)",
	    r.user, r.id, r.key, r.rooms[0] ? r.rooms : "the key's",
	    r.read_only ? "read-only" : "read-write");
	buf_init(&b, TOKENS_TEXT_MAX);
	tokens_created_text(&b, &r, capped);
	json_object_object_add(ans, "token", json_object_new_string(text));
	json_object_object_add(ans, "text", json_object_new_string_len(
	    b.data ? b.data : "", (int)b.len));
	buf_free(&b);
	memset(text, 0, sizeof(text));
}

/* One line of list. */
static int
tokens_list_row(void *arg, const struct token_row *r)
{
	struct buf *b = arg;
	char exp[64], used[64];

	if (b->len > TOKENS_TEXT_MAX - TOKENS_LINE_MAX) {
		tokens_put(b, "(more tokens than one answer holds: revoke "
		    "some)\n");
		return 1;
	}
	tokens_when(r->expires, exp, sizeof(exp));
	tokens_when(r->last_used, used, sizeof(used));
	tokens_put(b, TOKENS_LIST_FORMAT, r->id, r->user, r->read_only ?
	    "read-only" : "read-write", exp, used, r->rooms[0] ? r->rooms :
	    "*");
	tokens_put_clean(b, r->comment[0] ? r->comment : r->key);
	tokens_put(b, "  ");
	tokens_put_clean(b, r->name);
	tokens_put(b, "\n");
	return 0;
}

/* list: the caller's tokens (an admin's: everyone's). */
static void
tokens_list(struct monitor *srv, const struct monitor_identity *id,
    json_object *ans)
{
	struct buf b;

	buf_init(&b, TOKENS_TEXT_MAX);
	tokens_put(&b, TOKENS_LIST_FORMAT "%s\n", "ID", "USER", "ACCESS",
	    "EXPIRES", "LAST USED", "ROOMS", "KEY  NAME");
	if (tokens_db_each(srv->tokens, id->admin ? NULL : id->user,
	    tokens_list_row, &b) < 0)
		tokens_error(ans, "tokens cannot be listed now; the server's "
		    "log says why");
	else
		json_object_object_add(ans, "text", json_object_new_string_len(
		    b.data ? b.data : "", (int)b.len));
	buf_free(&b);
}

/* revoke ID: one of the caller's tokens (an admin's: anyone's). */
static void
tokens_revoke(struct monitor *srv, const struct monitor_identity *id,
    const struct token_args *a, json_object *ans)
{
	char text[160];
	int r = tokens_db_delete(srv->tokens, a->id, id->admin ? NULL :
	    id->user);

	if (r < 0) {
		tokens_error(ans, "tokens cannot be revoked now; the server's "
		    "log says why");
		return;
	}
	if (r == 0) {
		snprintf(text, sizeof(text), "%s has no token %s (atrium-token "
		    "list shows yours)", id->user, a->id);
		tokens_error(ans, text);
		return;
	}
	log_info("monitor: %s revoked token %s", id->user, a->id);
	snprintf(text, sizeof(text), "revoked token %s\n", a->id);
	json_object_object_add(ans, "text", json_object_new_string(text));
}

/* See tokens.h. */
int
tokens_serve(struct monitor *srv, json_object *req,
    const struct monitor_identity *id, json_object *ans)
{
	struct token_args a;
	char why[300];

	if (token_args_from_json(req, &a) < 0)
		return -1;
	if (!tokens_may(id, &a, why, sizeof(why))) {
		log_warn("monitor: %s: token %s refused: %s", id->user,
		    a.op == TOKEN_OP_CREATE ? "create" : a.op == TOKEN_OP_LIST ?
		    "list" : "revoke", why);
		tokens_error(ans, why);
		return 0;
	}
	if (a.op == TOKEN_OP_CREATE)
		tokens_create(srv, req, id, &a, ans);
	else if (a.op == TOKEN_OP_LIST)
		tokens_list(srv, id, ans);
	else
		tokens_revoke(srv, id, &a, ans);
	return 0;
}

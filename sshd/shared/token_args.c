/*
 * token_args.c: the `atrium-token` command line (token_args.h).  Called
 * by atriumd-net's chan_requests.c for an exec request, and by the
 * monitor's tokens.c for the `token` request and a key's forced command.
 *
 * Every field is checked here the same way whichever side reads it, so
 * the network process never sends what the monitor would refuse as
 * malformed (the monitor ends a network process that does).
 */
#include "token_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "names.h"
#include "utf8.h"

const char token_usage[] =
    "usage: atrium-token create [--rooms ROOM,ROOM...] "
    "[--expires 30d|12h|never] [--read-only] [--name TEXT]\n"
    "       atrium-token list\n"
    "       atrium-token revoke ID\n";

/* Words of a command, split in place into a copy. */
struct token_words {
	char text[TOKEN_MAX_COMMAND + 1];
	char *w[TOKEN_MAX_WORDS];
	int n;
};

/* Split one word starting at *pp into *op (the output runs behind the
 * input, so one buffer holds both); *pp is left past it.  0 or -EINVAL
 * (an unterminated quote or a trailing backslash). */
static int
token_word(char **pp, char **op)
{
	char *p = *pp, *o = *op, quote = 0;

	for (; *p && (quote || (*p != ' ' && *p != '\t')); p++) {
		if (quote == '\'' && *p != '\'') {
			*o++ = *p;
		} else if (*p == quote) {
			quote = 0;
		} else if (!quote && (*p == '\'' || *p == '"')) {
			quote = *p;
		} else if (*p == '\\' && (!quote || p[1] == '"' ||
		    p[1] == '\\')) {
			if (!*++p)
				return -EINVAL;
			*o++ = *p;
		} else {
			*o++ = *p;
		}
	}
	if (quote)
		return -EINVAL;
	*pp = p;
	*op = o;
	return 0;
}

/* Split command into words.  0 or -EINVAL with why. */
static int
token_split(const char *command, struct token_words *t, char *why,
    size_t len)
{
	char *p = t->text, *o = t->text;

	t->n = 0;
	if (strlen(command) > TOKEN_MAX_COMMAND) {
		snprintf(why, len, "the command is longer than %d bytes",
		    TOKEN_MAX_COMMAND);
		return -EINVAL;
	}
	snprintf(t->text, sizeof(t->text), "%s", command);
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return 0;
		if (t->n == TOKEN_MAX_WORDS) {
			snprintf(why, len, "too many words (at most %d)",
			    TOKEN_MAX_WORDS);
			return -EINVAL;
		}
		t->w[t->n++] = o;
		if (token_word(&p, &o) < 0) {
			snprintf(why, len, "a quote is not closed, or a "
			    "backslash ends the command");
			return -EINVAL;
		}
		/* The output never passes the input: end the word here,
		 * after stepping past the blank it overwrites. */
		if (*p)
			p++;
		*o++ = '\0';
	}
}

/* See token_args.h. */
int
token_is_command(const char *command)
{
	size_t n = strlen(TOKEN_COMMAND);

	while (*command == ' ' || *command == '\t')
		command++;
	return strncmp(command, TOKEN_COMMAND, n) == 0 &&
	    (command[n] == '\0' || command[n] == ' ' || command[n] == '\t');
}

/* See token_args.h. */
int
token_expires_parse(const char *text, long long *seconds)
{
	char *end;
	long long n;

	if (strcmp(text, "never") == 0) {
		*seconds = 0;
		return 0;
	}
	if (text[0] < '1' || text[0] > '9' || strlen(text) > 8)
		return -EINVAL;
	n = strtoll(text, &end, 10);
	if ((end[0] != 'h' && end[0] != 'd') || end[1])
		return -EINVAL;
	if (end[0] == 'd')
		n *= 24;
	if (n > TOKEN_MAX_HOURS)
		return -EINVAL;
	*seconds = n * 3600;
	return 0;
}

/* The rooms of --rooms: distinct room names separated by commas.  0 or
 * -EINVAL with why. */
static int
token_rooms(const char *list, struct token_args *out, char *why, size_t len)
{
	const char *p = list;

	out->nrooms = 0;
	do {
		size_t n = strcspn(p, ",");
		char *room;

		if (out->nrooms == TOKEN_MAX_ROOMS) {
			snprintf(why, len, "--rooms names more than %d rooms",
			    TOKEN_MAX_ROOMS);
			return -EINVAL;
		}
		room = out->rooms[out->nrooms];
		if (n > 0 && n < sizeof(out->rooms[0])) {
			memcpy(room, p, n);
			room[n] = '\0';
		}
		if (n == 0 || n >= sizeof(out->rooms[0]) ||
		    !room_name_valid(room)) {
			snprintf(why, len, "--rooms takes room names separated by "
			    "commas (1-63 characters of a-z, 0-9 and '-')");
			return -EINVAL;
		}
		for (int i = 0; i < out->nrooms; i++)
			if (strcmp(out->rooms[i], room) == 0) {
				snprintf(why, len, "--rooms names %s twice", room);
				return -EINVAL;
			}
		out->nrooms++;
		p += n;
	} while (*p++ == ',');
	return 0;
}

/* 1 when name can be a token's name: valid UTF-8, no control character
 * (C0, DEL, C1), 1 to TOKEN_MAX_NAME bytes. */
static int
token_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > TOKEN_MAX_NAME || !utf8_valid(name, n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x20 || c == 0x7f || (c == 0xc2 && i + 1 < n &&
		    (unsigned char)name[i + 1] < 0xa0))
			return 0;
	}
	return 1;
}

/* 1 when id is TOKEN_ID_LEN lowercase hex digits. */
static int
token_id_valid(const char *id)
{
	return strlen(id) == TOKEN_ID_LEN &&
	    strspn(id, "0123456789abcdef") == TOKEN_ID_LEN;
}

/* create's options, in the order of the bits of token_option's seen. */
enum token_flag { FLAG_ROOMS, FLAG_EXPIRES, FLAG_READ_ONLY, FLAG_NAME,
    FLAG_COUNT };
static const char *const token_flags[FLAG_COUNT] = { "--rooms",
    "--expires", "--read-only", "--name" };

/* Take value (checked) for flag f into out.  0 or -EINVAL with why. */
static int
token_value(enum token_flag f, const char *value, struct token_args *out,
    char *why, size_t len)
{
	long long s;

	switch (f) {
	case FLAG_ROOMS:
		return token_rooms(value, out, why, len);
	case FLAG_EXPIRES:
		if (strlen(value) >= sizeof(out->expires) ||
		    token_expires_parse(value, &s) < 0) {
			snprintf(why, len, "--expires takes a count of hours or "
			    "days (12h, 30d; at most 3650d) or never");
			return -EINVAL;
		}
		snprintf(out->expires, sizeof(out->expires), "%s", value);
		return 0;
	case FLAG_NAME:
		if (!token_name_valid(value)) {
			snprintf(why, len, "--name takes 1 to %d bytes of text "
			    "without control characters", TOKEN_MAX_NAME);
			return -EINVAL;
		}
		snprintf(out->name, sizeof(out->name), "%s", value);
		return 0;
	default:
		out->read_only = 1;
		return 0;
	}
}

/* One option of create (flag, with its value when it takes one) into
 * out; seen marks the flags met (each may come once).  0 or -EINVAL. */
static int
token_option(const char *flag, const char *value, struct token_args *out,
    unsigned *seen, char *why, size_t len)
{
	int f;

	for (f = 0; f < FLAG_COUNT && strcmp(flag, token_flags[f]) != 0; f++)
		;
	if (f == FLAG_COUNT) {
		snprintf(why, len, "unknown option '%.40s'", flag);
		return -EINVAL;
	}
	if (*seen & (1u << f)) {
		snprintf(why, len, "%s is given twice", flag);
		return -EINVAL;
	}
	*seen |= 1u << f;
	if (f == FLAG_READ_ONLY && value) {
		snprintf(why, len, "--read-only takes no value");
		return -EINVAL;
	}
	if (f != FLAG_READ_ONLY && !value) {
		snprintf(why, len, "%s needs a value", flag);
		return -EINVAL;
	}
	return token_value((enum token_flag)f, value, out, why, len);
}

/* create's options, words w[0..n): "--flag VALUE", "--flag=VALUE" or
 * --read-only.  0 or -EINVAL with why. */
static int
token_create_options(char **w, int n, struct token_args *out, char *why,
    size_t len)
{
	unsigned seen = 0;

	for (int i = 0; i < n; i++) {
		char *flag = w[i], *eq = strchr(flag, '=');
		const char *value = NULL;
		int r;

		if (strncmp(flag, "--", 2) != 0) {
			snprintf(why, len, "unexpected '%.40s'", flag);
			return -EINVAL;
		}
		if (eq) {
			*eq = '\0';
			value = eq + 1;
		} else if (strcmp(flag, "--read-only") != 0 && i + 1 < n) {
			value = w[++i];
		}
		if ((r = token_option(flag, value, out, &seen, why, len)) < 0)
			return r;
	}
	if (!out->expires[0])
		snprintf(out->expires, sizeof(out->expires), "%s",
		    TOKEN_DEFAULT_EXPIRES);
	return 0;
}

/* A word after list or help: a usage error.  Always -EINVAL. */
static int
token_extra(const char *op, char *why, size_t len)
{
	snprintf(why, len, "%s takes nothing more", op);
	return -EINVAL;
}

/* The operation word and what follows it.  0 or -EINVAL with why. */
static int
token_operation(char **w, int n, struct token_args *out, char *why,
    size_t len)
{
	if (n == 0) {
		snprintf(why, len, "say what to do: create, list or revoke");
		return -EINVAL;
	}
	if (strcmp(w[0], "create") == 0) {
		out->op = TOKEN_OP_CREATE;
		return token_create_options(w + 1, n - 1, out, why, len);
	}
	if (strcmp(w[0], "help") == 0 || strcmp(w[0], "--help") == 0) {
		out->op = TOKEN_OP_HELP;
		return n == 1 ? 0 : token_extra("help", why, len);
	}
	if (strcmp(w[0], "list") == 0) {
		out->op = TOKEN_OP_LIST;
		return n == 1 ? 0 : token_extra("list", why, len);
	}
	if (strcmp(w[0], "revoke") == 0) {
		out->op = TOKEN_OP_REVOKE;
		if (n != 2 || !token_id_valid(w[1])) {
			snprintf(why, len, "revoke takes one token id, the %d "
			    "hex digits list shows", TOKEN_ID_LEN);
			return -EINVAL;
		}
		snprintf(out->id, sizeof(out->id), "%s", w[1]);
		return 0;
	}
	snprintf(why, len, "unknown command '%.40s': use create, list or "
	    "revoke", w[0]);
	return -EINVAL;
}

/* See token_args.h. */
int
token_args_parse(const char *command, struct token_args *out, char *why,
    size_t len)
{
	struct token_words *t = malloc(sizeof(*t));
	int r;

	memset(out, 0, sizeof(*out));
	if (!t) {
		snprintf(why, len, "out of memory");
		return -EINVAL;
	}
	/* The first word as written, unquoted: what atriumd-net routes. */
	r = token_split(command, t, why, len);
	if (r == 0 && (!token_is_command(command) ||
	    strcmp(t->w[0], TOKEN_COMMAND) != 0)) {
		snprintf(why, len, "not an %s command", TOKEN_COMMAND);
		r = -EINVAL;
	}
	if (r == 0)
		r = token_operation(t->w + 1, t->n - 1, out, why, len);
	free(t);
	if (r < 0)
		memset(out, 0, sizeof(*out));
	return r;
}

/* See token_args.h. */
int
token_args_to_json(const struct token_args *a, json_object *req)
{
	static const char *const ops[] = { "", "create", "list", "revoke" };
	json_object *rooms = NULL;

	if (a->op < TOKEN_OP_CREATE || a->op > TOKEN_OP_REVOKE)
		return -EINVAL;
	if (a->nrooms && !(rooms = json_object_new_array()))
		return -ENOMEM;
	for (int i = 0; i < a->nrooms; i++)
		json_object_array_add(rooms, json_object_new_string(a->rooms[i]));
	json_object_object_add(req, "op", json_object_new_string(ops[a->op]));
	json_object_object_add(req, "rooms", rooms);
	json_object_object_add(req, "expires", a->op == TOKEN_OP_CREATE ?
	    json_object_new_string(a->expires) : NULL);
	json_object_object_add(req, "read_only",
	    json_object_new_boolean(a->read_only));
	json_object_object_add(req, "name", a->name[0] ?
	    json_object_new_string(a->name) : NULL);
	json_object_object_add(req, "id", a->id[0] ?
	    json_object_new_string(a->id) : NULL);
	return 0;
}

/* The string field key of req into out (size len): 1 copied, 0 absent or
 * null, -EPROTO another type or too long. */
static int
token_json_string(json_object *req, const char *key, char *out, size_t len)
{
	json_object *v;
	const char *s;

	out[0] = '\0';
	if (!json_object_object_get_ex(req, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_string) ||
	    strlen(s = json_object_get_string(v)) >= len)
		return -EPROTO;
	snprintf(out, len, "%s", s);
	return 1;
}

/* The rooms field: null or an array of strings, re-joined and parsed as
 * --rooms would be.  0 or -EPROTO. */
static int
token_json_rooms(json_object *req, struct token_args *out)
{
	char list[TOKEN_MAX_ROOMS * 64 + 1] = "", why[128];
	json_object *v;
	size_t n, used = 0;

	if (!json_object_object_get_ex(req, "rooms", &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_array) ||
	    (n = json_object_array_length(v)) == 0 || n > TOKEN_MAX_ROOMS)
		return -EPROTO;
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(v, i);
		const char *s = json_object_is_type(r, json_type_string) ?
		    json_object_get_string(r) : NULL;

		if (!s || strchr(s, ',') || strlen(s) >= 64)
			return -EPROTO;
		used += (size_t)snprintf(list + used, sizeof(list) - used,
		    "%s%s", i ? "," : "", s);
	}
	return token_rooms(list, out, why, sizeof(why)) < 0 ? -EPROTO : 0;
}

/* See token_args.h. */
int
token_args_from_json(json_object *req, struct token_args *out)
{
	char op[16];
	json_object *ro;
	long long s;

	memset(out, 0, sizeof(*out));
	if (token_json_string(req, "op", op, sizeof(op)) != 1 ||
	    token_json_rooms(req, out) < 0 ||
	    token_json_string(req, "expires", out->expires,
	    sizeof(out->expires)) < 0 ||
	    token_json_string(req, "name", out->name, sizeof(out->name)) < 0 ||
	    token_json_string(req, "id", out->id, sizeof(out->id)) < 0 ||
	    !json_object_object_get_ex(req, "read_only", &ro) ||
	    !json_object_is_type(ro, json_type_boolean))
		return -EPROTO;
	out->read_only = json_object_get_boolean(ro);
	out->op = strcmp(op, "create") == 0 ? TOKEN_OP_CREATE :
	    strcmp(op, "list") == 0 ? TOKEN_OP_LIST :
	    strcmp(op, "revoke") == 0 ? TOKEN_OP_REVOKE : 0;
	if (out->op == TOKEN_OP_CREATE)
		return token_expires_parse(out->expires, &s) < 0 ||
		    (out->name[0] && !token_name_valid(out->name)) ||
		    out->id[0] ? -EPROTO : 0;
	/* list and revoke carry nothing of create's. */
	if (!out->op || out->nrooms || out->expires[0] || out->read_only ||
	    out->name[0])
		return -EPROTO;
	return (out->op == TOKEN_OP_REVOKE) != (token_id_valid(out->id)) ?
	    -EPROTO : 0;
}

/* See token_args.h. */
int
token_args_same(const struct token_args *a, const struct token_args *b)
{
	if (a->op != b->op || a->nrooms != b->nrooms ||
	    a->read_only != b->read_only || strcmp(a->expires, b->expires) ||
	    strcmp(a->name, b->name) || strcmp(a->id, b->id))
		return 0;
	for (int i = 0; i < a->nrooms; i++)
		if (strcmp(a->rooms[i], b->rooms[i]) != 0)
			return 0;
	return 1;
}

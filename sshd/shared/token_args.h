/*
 * token_args.h: the words of an `atrium-token` command (token_args.c), as
 * a client types them after ssh, and as the `token` request carries them
 * (privsep.h).  Both processes read them with this one parser: the
 * network process to answer a usage error before it asks, the monitor to
 * check the request again (it trusts the network process no more than a
 * client) and to compare it with a key's forced command.
 *
 *   atrium-token create [--rooms a,b] [--expires 30d|12h|never]
 *                       [--read-only] [--name TEXT]
 *   atrium-token list
 *   atrium-token revoke ID
 *   atrium-token help
 *
 * Words are split as a shell would for plain quoting only: blanks
 * separate, '...' is literal, "..." takes \" and \\, a backslash outside
 * quotes takes the next byte.  Anything odd is a usage error, never a
 * guess: an unknown flag, a flag twice, a value missing, a room name that
 * is not one, an expiry that is not a count of hours or days.
 * Pure (no I/O); unit-tested.
 */
#ifndef ATRIUMD_TOKEN_ARGS_H
#define ATRIUMD_TOKEN_ARGS_H

#include <stddef.h>

#include <json-c/json.h>

#define TOKEN_COMMAND		"atrium-token"
#define TOKEN_MAX_ROOMS		16	/* rooms one token may name */
#define TOKEN_MAX_NAME		64	/* bytes of --name */
#define TOKEN_ID_LEN		12	/* hex digits of an id */
#define TOKEN_MAX_COMMAND	4096	/* bytes of the whole command */
#define TOKEN_MAX_WORDS		32
#define TOKEN_DEFAULT_EXPIRES	"30d"
#define TOKEN_MAX_HOURS		(3650LL * 24)	/* ten years */

enum token_op {
	TOKEN_OP_CREATE = 1,
	TOKEN_OP_LIST,
	TOKEN_OP_REVOKE,
	TOKEN_OP_HELP,		/* answered by the network process alone */
};

struct token_args {
	enum token_op op;
	char rooms[TOKEN_MAX_ROOMS][64];	/* distinct room names */
	int nrooms;			/* 0: every room the key may enter */
	char expires[16];		/* "30d", "12h" or "never" */
	int read_only;
	char name[TOKEN_MAX_NAME + 1];	/* "" when none */
	char id[TOKEN_ID_LEN + 1];	/* revoke: lowercase hex */
};

/* How to use it, for a usage error (stderr) and help (stdout). */
extern const char token_usage[];

/* 1 when command's first word is atrium-token (what atriumd-net routes
 * to the monitor rather than to a room), else 0. */
int token_is_command(const char *command);

/* Parse command (its first word atrium-token) into *out.  0, or -EINVAL
 * with why saying what is wrong (a usage error). */
int token_args_parse(const char *command, struct token_args *out,
    char *why, size_t len);

/* An expiry as --expires takes it: "never" (0) or a count of hours ("12h")
 * or days ("30d"), at most TOKEN_MAX_HOURS.  0 with *seconds set, or
 * -EINVAL. */
int token_expires_parse(const char *text, long long *seconds);

/* The request's fields for a (op, rooms, expires, read_only, name, id)
 * added to req.  0 or -ENOMEM. */
int token_args_to_json(const struct token_args *a, json_object *req);

/* Read those fields back from a request, checking each as the parser
 * does.  0, or -EPROTO when one is missing, of the wrong type or not
 * what the parser could have made. */
int token_args_from_json(json_object *req, struct token_args *out);

/* 1 when a and b ask for the same thing, else 0. */
int token_args_same(const struct token_args *a, const struct token_args *b);

#endif

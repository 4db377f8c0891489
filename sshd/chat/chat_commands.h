/*
 * chat_commands.h: the chat's commands as one table.  Each entry names a
 * command, its arguments, its help line, who may use it, what Tab
 * completes after it and how its line becomes a request; chat_command
 * (chat.h) parses with it, /help is printed from it and Tab completes
 * from it, so the three cannot drift apart.  A new command is one entry
 * (and its line in man/atriumd.8).  Pure: no I/O.
 */
#ifndef ATRIUMD_CHAT_COMMANDS_H
#define ATRIUMD_CHAT_COMMANDS_H

#include <stddef.h>

#include <json-c/json.h>

/* Who may use a command.  The chat does not enforce it (the room checks
 * every request against its own list); /help marks owner commands. */
enum chat_cmd_who {
	CHAT_WHO_ANYONE,
	CHAT_WHO_OWNER,		/* the room's owner, or an admin */
};

/* What Tab completes in a command's arguments. */
enum chat_cmd_arg {
	CHAT_ARG_NONE,		/* nothing */
	CHAT_ARG_NAMES,		/* the names of the people here */
	CHAT_ARG_WORDS,		/* the entry's words */
};

struct chat_cmd;

/* Turn a command's line into what chat_command returns (enum
 * chat_action, chat.h): line is the whole line, arg what follows the
 * command word (NULL: nothing), waiting the newest unanswered approval
 * request (NULL: none). */
typedef int chat_cmd_parse(const struct chat_cmd *cmd, const char *line,
    const char *arg, const char *waiting, json_object **out, char *reply,
    size_t len);

struct chat_cmd {
	const char *name;	/* the word typed: "/kick" */
	const char *alias;	/* another word for it, or NULL (not listed) */
	const char *args;	/* as /help and usage show them, or NULL */
	const char *help;	/* what it does, a few words */
	enum chat_cmd_who who;
	enum chat_cmd_arg complete;
	const char *const *words;	/* CHAT_ARG_WORDS: NULL-terminated */
	const char *type;	/* the request it sends, where one is */
	const char *field;	/* the request's field its argument fills */
	chat_cmd_parse *parse;
};

/* The commands, in /help's order, ended by an entry whose name is NULL. */
extern const struct chat_cmd chat_cmds[];

/* The command whose name (or alias) is word[0..len), or NULL. */
const struct chat_cmd *chat_cmd_find(const char *word, size_t len);

/* /help's text, from the table: a line per command, each within 78
 * columns, then the keys.  Into out (always NUL-terminated). */
void chat_help_text(char *out, size_t len);

#endif

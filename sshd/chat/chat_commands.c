/*
 * chat_commands.c: the chat's commands as one table (chat_commands.h)
 * and chat_command (chat.h), which parses a line with it.  Called by
 * chat.c with each finished input line, by chat_input.c for Tab
 * completion, and by the unit tests.
 *
 * A line is, in order: empty; "!CMD" (an exec the room sees); y, n or
 * "n REASON" while an approval request waits (its answer); text (a chat
 * line);
 * or "/WORD ..." looked up in chat_cmds[] and parsed by the entry's
 * function.  Most entries use one of the generic parsers below, which
 * read the entry's type and field; the few that do more have their own.
 * Requests are only built here: the room checks who may make them.
 */
#include "chat_commands.h"

#include <stdio.h>
#include <string.h>

#include "chat_int.h"
#include "tui_approval.h"

#define CHAT_HELP_COL	18	/* a help line's text starts after this
				 * many columns of command (and 2 blanks) */

/* The lines of /help before the commands: what is not a /command. */
#define CHAT_HELP_HEAD \
	"commands:\n" \
	"  TEXT              say TEXT to the room\n" \
	"  @agent TEXT       ask the agent (the room sees it)\n" \
	"  !CMD              run CMD in the workspace for all to see\n"

/* The lines of /help after the commands. */
#define CHAT_HELP_KEYS \
	"keys:\n" \
	"  Up/Down           your earlier lines, also from past sessions\n" \
	"  Tab               complete a command, a name or a path after !\n" \
	"  PgUp/PgDn         scroll back through the room's history\n" \
	"  End               back to the live view (and to the line's end)\n" \
	"  mouse wheel       3 lines back or on (Shift+drag selects text)\n" \
	"  Ctrl-A/E, Home/End, Alt-B/F  move in the line\n" \
	"  Ctrl-K/U/W        cut, Ctrl-Y puts it back\n" \
	"  Ctrl-C clears the line; on an empty line it stops your !CMD\n" \
	"  Ctrl-L draws the screen again"

/* ------------------------------------------------------------ parsers -- */

/* "usage: /NAME ARGS" into reply, with the words an argument may be;
 * CHAT_ACT_REPLY. */
static int
chat_cmd_usage(const struct chat_cmd *cmd, char *reply, size_t len)
{
	int n = snprintf(reply, len, "usage: %s%s%s", cmd->name,
	    cmd->args ? " " : "", cmd->args ? cmd->args : "");

	for (const char *const *w = cmd->words; w && *w && n > 0 &&
	    (size_t)n < len; w++)
		n += snprintf(reply + n, len - (size_t)n, "%s%s%s",
		    w == cmd->words ? " (" : ", ", *w, w[1] ? "" : ")");
	return CHAT_ACT_REPLY;
}

/* The bare request of the entry's type (a query, or an order with no
 * argument). */
static int
chat_cmd_bare(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	(void)line; (void)arg; (void)waiting; (void)reply; (void)len;
	*out = chat_req(cmd->type);
	return CHAT_ACT_SEND;
}

/* The request of the entry's type with its field set to the argument,
 * which must be there. */
static int
chat_cmd_one(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	(void)line; (void)waiting;
	if (!arg)
		return chat_cmd_usage(cmd, reply, len);
	*out = chat_req(cmd->type);
	json_object_object_add(*out, cmd->field, json_object_new_string(arg));
	return CHAT_ACT_SEND;
}

/* As chat_cmd_one, for an argument that is one of the entry's words. */
static int
chat_cmd_word(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	const char *const *w = cmd->words;

	while (arg && *w && strcmp(*w, arg) != 0)
		w++;
	if (!arg || !*w)
		return chat_cmd_usage(cmd, reply, len);
	return chat_cmd_one(cmd, line, arg, waiting, out, reply, len);
}

/* A person's name: one word. */
static int
chat_cmd_user(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	if (arg && strchr(arg, ' '))
		return chat_cmd_usage(cmd, reply, len);
	return chat_cmd_one(cmd, line, arg, waiting, out, reply, len);
}

/* /kick USER [REASON]: the reason is the rest of the line. */
static int
chat_cmd_kick(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	size_t ul = arg ? strcspn(arg, " ") : 0;
	const char *reason = arg ? arg + ul + strspn(arg + ul, " ") : NULL;
	char user[64];

	(void)line; (void)waiting;
	if (!arg || ul >= sizeof(user))
		return chat_cmd_usage(cmd, reply, len);
	snprintf(user, sizeof(user), "%.*s", (int)ul, arg);
	*out = chat_req(cmd->type);
	json_object_object_add(*out, "user", json_object_new_string(user));
	if (*reason)
		json_object_object_add(*out, "reason",
		    json_object_new_string(reason));
	return CHAT_ACT_SEND;
}

/* /quit, /exit: leave. */
static int
chat_cmd_quit(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	(void)cmd; (void)line; (void)arg; (void)waiting; (void)out;
	(void)reply; (void)len;
	return CHAT_ACT_QUIT;
}

/* /help: the table. */
static int
chat_cmd_help(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	(void)cmd; (void)line; (void)arg; (void)waiting; (void)out;
	chat_help_text(reply, len);
	return CHAT_ACT_REPLY;
}

/* /term: the caller opens the room's terminal. */
static int
chat_cmd_term(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	(void)cmd; (void)line; (void)arg; (void)waiting; (void)out;
	(void)reply; (void)len;
	return CHAT_ACT_TERM;
}

/* /mouse on|off: the caller sets the mouse mode. */
static int
chat_cmd_mouse(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	(void)line; (void)waiting; (void)out;
	if (arg && (!strcmp(arg, "on") || !strcmp(arg, "off")))
		return strcmp(arg, "on") == 0 ? CHAT_ACT_MOUSE_ON : CHAT_ACT_MOUSE_OFF;
	(void)cmd;
	snprintf(reply, len, "usage: /mouse on (the wheel scrolls the chat) or "
	    "/mouse off (the terminal keeps the mouse)");
	return CHAT_ACT_REPLY;
}

/* /me TEXT: a chat line the chat shows as "* user TEXT". */
static int
chat_cmd_me(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	(void)waiting;
	if (!arg)
		return chat_cmd_usage(cmd, reply, len);
	*out = chat_req("chat");
	json_object_object_add(*out, "text", json_object_new_string(line));
	return CHAT_ACT_SEND;
}

/* /history TEXT: a search of the stored history. */
static int
chat_cmd_history(const struct chat_cmd *cmd, const char *line,
    const char *arg, const char *waiting, json_object **out, char *reply,
    size_t len)
{
	int r = chat_cmd_one(cmd, line, arg, waiting, out, reply, len);

	if (r == CHAT_ACT_SEND)
		json_object_object_add(*out, "limit",
		    json_object_new_int(CHAT_SEARCH_MAX));
	return r;
}

/* An approve request for id; a denial may say why (reason, or NULL). */
static json_object *
chat_answer(const char *id, int approve, const char *reason)
{
	json_object *o = chat_req("approve");

	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "approve", json_object_new_boolean(approve));
	if (reason)
		json_object_object_add(o, "reason",
		    json_object_new_string(reason));
	return o;
}

/* /approve [ID], /deny [ID [REASON]]: the answer to ID, or to the newest
 * request that waits; a denial may say why, which reaches the model. */
static int
chat_cmd_answer(const struct chat_cmd *cmd, const char *line,
    const char *arg, const char *waiting, json_object **out, char *reply,
    size_t len)
{
	int approve = strcmp(cmd->name, "/approve") == 0;
	size_t n = arg ? strcspn(arg, " ") : 0;
	const char *why = arg ? arg + n + strspn(arg + n, " ") : NULL;
	char id[128];

	(void)line;
	if (!arg && !waiting) {
		snprintf(reply, len, "no approval request is waiting");
		return CHAT_ACT_REPLY;
	}
	if (n >= sizeof(id) || (approve && why && *why))
		return chat_cmd_usage(cmd, reply, len);
	snprintf(id, sizeof(id), "%.*s", (int)n, arg ? arg : "");
	*out = chat_answer(arg ? id : waiting, approve, why && *why ? why :
	    NULL);
	return CHAT_ACT_SEND;
}

/* /kill [USER], /set [bell on|off] (chat_attn.c). */
static int
chat_cmd_attn(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	(void)waiting;
	return chat_attn_command(line, strlen(cmd->name), arg, out, reply, len);
}

/* /private, /public: the room's visibility (the entry's field holds the
 * value). */
static int
chat_cmd_visibility(const struct chat_cmd *cmd, const char *line,
    const char *arg, const char *waiting, json_object **out, char *reply,
    size_t len)
{
	(void)line; (void)arg; (void)waiting; (void)reply; (void)len;
	*out = chat_req("visibility");
	json_object_object_add(*out, "visibility",
	    json_object_new_string(cmd->field));
	return CHAT_ACT_SEND;
}

/* /delete ROOM: without the name, what it would do and how to confirm. */
static int
chat_cmd_delete(const struct chat_cmd *cmd, const char *line,
    const char *arg, const char *waiting, json_object **out, char *reply,
    size_t len)
{
	if (!arg) {
		snprintf(reply, len, "/delete ROOM deletes this room for "
		    "everyone, for good: its workspace, its history and its "
		    "agent's transcript.  Type /delete and the room's name to "
		    "confirm.");
		return CHAT_ACT_REPLY;
	}
	return chat_cmd_one(cmd, line, arg, waiting, out, reply, len);
}

/* /limits [memory SIZE] [pids N] [cpus N]. */
static int
chat_cmd_limits(const struct chat_cmd *cmd, const char *line,
    const char *arg, const char *waiting, json_object **out, char *reply,
    size_t len)
{
	static const struct chat_pair pairs[] = {
		{ "memory", "memory" }, { "pids", "pids" }, { "cpus", "cpus" },
		{ NULL, NULL }
	};

	(void)cmd; (void)line; (void)waiting;
	return chat_pairs_command("limits", pairs, arg, "usage: /limits shows "
	    "the room's limits; /limits memory SIZE pids N cpus N lowers them "
	    "(owner; \"max\" for the operator's)", out, reply, len);
}

/* /caps (chat_cost.c). */
static int
chat_cmd_caps(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	(void)cmd; (void)line; (void)waiting;
	return chat_caps_command(arg, out, reply, len);
}

/* /undo, /redo, /snapshot, /restore, /snapshots (chat_undo.c). */
static int
chat_cmd_undo(const struct chat_cmd *cmd, const char *line, const char *arg,
    const char *waiting, json_object **out, char *reply, size_t len)
{
	(void)waiting;
	return chat_undo_command(line, strlen(cmd->name), arg, out, reply, len);
}

/* See chat_int.h. */
int
chat_pairs_command(const char *type, const struct chat_pair *pairs,
    const char *arg, const char *usage, json_object **out, char *reply,
    size_t len)
{
	char copy[256], *save = NULL, *key, *val;
	const struct chat_pair *p;

	*out = chat_req(type);
	if (!arg)
		return CHAT_ACT_SEND;
	snprintf(copy, sizeof(copy), "%s", arg);
	for (key = strtok_r(copy, " \t", &save); key;
	    key = strtok_r(NULL, " \t", &save)) {
		val = strtok_r(NULL, " \t", &save);
		for (p = pairs; p->word && strcmp(p->word, key); p++)
			;
		if (!val || !p->word) {
			json_object_put(*out);
			*out = NULL;
			snprintf(reply, len, "%s", usage);
			return CHAT_ACT_REPLY;
		}
		json_object_object_add(*out, p->field,
		    json_object_new_string(val));
	}
	return CHAT_ACT_SEND;
}

/* -------------------------------------------------------------- table -- */

static const char *const chat_policies[] = {
	"deny_all", "allow_list", "allow_all", "ask", NULL
};
static const char *const chat_on_off[] = { "on", "off", NULL };
static const char *const chat_set_words[] = { "bell", NULL };
static const char *const chat_limit_words[] = {
	"memory", "pids", "cpus", NULL
};
static const char *const chat_cap_words[] = { "steps", "tokens", NULL };

#define ANY	CHAT_WHO_ANYONE
#define OWNER	CHAT_WHO_OWNER
#define NONE	CHAT_ARG_NONE, NULL
#define NAMES	CHAT_ARG_NAMES, NULL
#define WORDS(w) CHAT_ARG_WORDS, (w)

const struct chat_cmd chat_cmds[] = {
	{ "/me", NULL, "TEXT", "say what you do: * you TEXT", ANY, NAMES,
	    NULL, NULL, chat_cmd_me },
	{ "/who", NULL, NULL, "who is here, idle how long, in /term", ANY,
	    NONE, "who", NULL, chat_cmd_bare },
	{ "/stop", NULL, NULL, "stop the agent's turn", ANY, NONE, "stop",
	    NULL, chat_cmd_bare },
	{ "/kill", NULL, "[USER]", "stop your !CMD: SIGINT, then TERM, KILL",
	    ANY, NAMES, "signal", NULL, chat_cmd_attn },
	{ "/approve", NULL, "[ID]", "run what the agent asks (y alone too)",
	    ANY, NONE, NULL, NULL, chat_cmd_answer },
	{ "/deny", NULL, "[ID [WHY]]", "refuse it (n, or n WHY, alone too)",
	    ANY, NONE, NULL, NULL, chat_cmd_answer },
	{ "/policy", NULL, "POLICY", "approval: deny_all, allow_list, "
	    "allow_all, ask", OWNER, WORDS(chat_policies), "config", "approval",
	    chat_cmd_word },
	{ "/model", NULL, "NAME", "the agent's model", OWNER, NONE, "config",
	    "model", chat_cmd_one },
	{ "/history", NULL, "TEXT", "search the room's stored history", ANY,
	    NAMES, "history", "match", chat_cmd_history },
	{ "/cost", NULL, NULL, "tokens the model used here: today, this month",
	    ANY, NONE, "usage", NULL, chat_cmd_bare },
	{ "/caps", NULL, "[steps 20 tokens 100000]", "show; lower them "
	    "(owner)", ANY, WORDS(chat_cap_words), NULL, NULL, chat_cmd_caps },
	{ "/term", NULL, NULL, "the room's shared terminal (Ctrl-] comes "
	    "back)", ANY, NONE, NULL, NULL, chat_cmd_term },
	{ "/mouse", NULL, "on|off", "the wheel scrolls the chat, or the "
	    "terminal has it", ANY, WORDS(chat_on_off), NULL, NULL,
	    chat_cmd_mouse },
	{ "/set", NULL, "bell on|off", "ring on mentions, approvals, the "
	    "agent's end", ANY, WORDS(chat_set_words), "pref", NULL,
	    chat_cmd_attn },
	{ "/invite", NULL, "USER", "make USER a member", OWNER, NAMES,
	    "invite", "user", chat_cmd_user },
	{ "/kick", NULL, "USER [REASON]", "send USER out for 5 minutes",
	    OWNER, NAMES, "kick", "user", chat_cmd_kick },
	{ "/remove", NULL, "USER", "take USER's membership away", OWNER,
	    NAMES, "remove", "user", chat_cmd_user },
	{ "/private", NULL, NULL, "members only may enter", OWNER, NONE, NULL,
	    "private", chat_cmd_visibility },
	{ "/public", NULL, NULL, "everyone may enter", OWNER, NONE, NULL,
	    "open", chat_cmd_visibility },
	{ "/access", NULL, NULL, "who may enter", ANY, NONE, "access", NULL,
	    chat_cmd_bare },
	{ "/limits", NULL, "[memory 1G pids 200 cpus 0.5]", "show; lower "
	    "them (owner)", ANY, WORDS(chat_limit_words), NULL, NULL,
	    chat_cmd_limits },
	{ "/rooms", NULL, NULL, "the rooms you may enter", ANY, NONE, "rooms",
	    NULL, chat_cmd_bare },
	{ "/delete", NULL, "ROOM", "delete this room for good", OWNER, NONE,
	    "delete", "room", chat_cmd_delete },
	{ "/undo", NULL, "[!]", "take back the agent's last turn", OWNER,
	    NONE, NULL, NULL, chat_cmd_undo },
	{ "/redo", NULL, "[!]", "bring back what /undo took", OWNER, NONE,
	    NULL, NULL, chat_cmd_undo },
	{ "/snapshot", NULL, "NAME", "keep the workspace as it is now", OWNER,
	    NONE, NULL, NULL, chat_cmd_undo },
	{ "/restore", NULL, "NAME [!]", "take the workspace back to a snapshot",
	    OWNER, NONE, NULL, NULL, chat_cmd_undo },
	{ "/snapshots", NULL, NULL, "the workspace's snapshots", ANY, NONE,
	    NULL, NULL, chat_cmd_undo },
	{ "/help", NULL, NULL, "this list", ANY, NONE, NULL, NULL,
	    chat_cmd_help },
	{ "/quit", "/exit", NULL, "leave (or Ctrl-D on an empty line)", ANY,
	    NONE, NULL, NULL, chat_cmd_quit },
	{ NULL, NULL, NULL, NULL, ANY, NONE, NULL, NULL, NULL },
};

#undef ANY
#undef OWNER
#undef NONE
#undef NAMES
#undef WORDS

/* See chat_commands.h. */
const struct chat_cmd *
chat_cmd_find(const char *word, size_t len)
{
	for (const struct chat_cmd *c = chat_cmds; c->name; c++)
		if ((strlen(c->name) == len && !strncmp(word, c->name, len)) ||
		    (c->alias && strlen(c->alias) == len &&
		    !strncmp(word, c->alias, len)))
			return c;
	return NULL;
}

/* One command's line of /help, appended at *used. */
static void
chat_help_line(const struct chat_cmd *c, char *out, size_t len,
    size_t *used)
{
	char left[96];
	int n;

	snprintf(left, sizeof(left), "%s%s%s", c->name, c->args ? " " : "",
	    c->args ? c->args : "");
	n = snprintf(out + *used, len - *used, "  %-*s%s%s%s\n",
	    CHAT_HELP_COL, left, strlen(left) >= CHAT_HELP_COL ? "  " : "",
	    c->help, c->who == CHAT_WHO_OWNER ? " (owner)" : "");
	if (n > 0)
		*used = *used + (size_t)n < len ? *used + (size_t)n : len - 1;
}

/* See chat_commands.h. */
void
chat_help_text(char *out, size_t len)
{
	size_t used;

	if (len == 0)
		return;
	used = (size_t)snprintf(out, len, "%s", CHAT_HELP_HEAD);
	if (used >= len)
		return;
	for (const struct chat_cmd *c = chat_cmds; c->name && used < len - 1;
	    c++)
		chat_help_line(c, out, len, &used);
	if (used < len - 1)
		snprintf(out + used, len - used, "%s", CHAT_HELP_KEYS);
}

/* ------------------------------------------------------------ parsing -- */

/* The argument after a command word, or NULL when there is none. */
static const char *
chat_arg(const char *line)
{
	const char *p = strchr(line, ' ');

	while (p && *p == ' ')
		p++;
	return p && *p ? p : NULL;
}

/* See chat.h. */
int
chat_command(const char *line, const char *waiting, json_object **out,
    char *reply, size_t len)
{
	const struct chat_cmd *cmd;
	size_t wl = strcspn(line, " ");
	const char *why;
	int r;

	*out = NULL;
	reply[0] = '\0';
	if (line[strspn(line, " \t")] == '\0')
		return CHAT_ACT_EMPTY;
	if (line[0] == '!') {
		if (!line[1]) {
			snprintf(reply, len, "usage: !CMD runs CMD in the workspace");
			return CHAT_ACT_REPLY;
		}
		*out = chat_req("exec");
		json_object_object_add(*out, "command", json_object_new_string(line + 1));
		json_object_object_add(*out, "share", json_object_new_boolean(1));
		return CHAT_ACT_SEND;
	}
	/* Only "y", "n" and "n REASON" answer: "yes" and the rest are chat,
	 * shown as chat, so no answer goes unseen. */
	if (waiting && (r = tui_approval_answer(line, &why)) >= 0) {
		*out = chat_answer(waiting, r, why);
		return CHAT_ACT_SEND;
	}
	if (line[0] != '/') {
		*out = chat_req("chat");
		json_object_object_add(*out, "text", json_object_new_string(line));
		return CHAT_ACT_SEND;
	}
	if ((cmd = chat_cmd_find(line, wl)))
		return cmd->parse(cmd, line, chat_arg(line), waiting, out,
		    reply, len);
	snprintf(reply, len, "unknown command %.*s; /help lists the commands",
	    (int)(wl > 40 ? 40 : wl), line);
	return CHAT_ACT_REPLY;
}

/*
 * cmd_cap.c: one front's count of each person's running commands
 * (cmd_cap.h).  Called by monitor.c (cmd_begin, cmd_end, metrics) and
 * http_front.c (clear at the front's end).
 *
 * Workload: a handful of people with commands at once, rarely thousands;
 * each lookup is a linear scan, each removal swaps the last entry in.
 */
#include "cmd_cap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entry of user, or NULL. */
static struct cmd_cap_user *
cmd_cap_find(const struct cmd_cap *c, const char *user)
{
	for (size_t i = 0; i < c->len; i++)
		if (strcmp(c->v[i].user, user) == 0)
			return &c->v[i];
	return NULL;
}

/* See cmd_cap.h. */
int
cmd_cap_running(const struct cmd_cap *c, const char *user)
{
	const struct cmd_cap_user *u = cmd_cap_find(c, user);

	return u ? u->n : 0;
}

/* See cmd_cap.h. */
int
cmd_cap_add(struct cmd_cap *c, const char *user)
{
	struct cmd_cap_user *u = cmd_cap_find(c, user), *v;
	size_t alloc;

	if (u) {
		u->n++;
		c->running++;
		return 0;
	}
	if (strlen(user) >= CMD_CAP_USER)
		return -EINVAL;
	if (c->len == c->alloc) {
		if (c->alloc >= CMD_CAP_MAX_USERS)
			return -ENOSPC;
		alloc = c->alloc ? c->alloc * 2 : 16;
		if (!(v = realloc(c->v, alloc * sizeof(*v))))
			return -ENOMEM;
		c->v = v;
		c->alloc = alloc;
	}
	u = &c->v[c->len++];
	snprintf(u->user, sizeof(u->user), "%s", user);
	u->n = 1;
	c->running++;
	return 0;
}

/* See cmd_cap.h. */
int
cmd_cap_drop(struct cmd_cap *c, const char *user, int n)
{
	struct cmd_cap_user *u = cmd_cap_find(c, user);

	if (!u || n <= 0)
		return 0;
	if (n > u->n)
		n = u->n;
	u->n -= n;
	c->running -= n;
	if (u->n == 0)
		*u = c->v[--c->len];
	return n;
}

/* See cmd_cap.h. */
void
cmd_cap_clear(struct cmd_cap *c)
{
	unsigned long long refused = c->refused;

	free(c->v);
	memset(c, 0, sizeof(*c));
	c->refused = refused;	/* a counter of the server's life */
}

/* See cmd_cap.h. */
void
cmd_cap_words(char *out, size_t len, int running, int max)
{
	snprintf(out, len, "command refused: you already run %d commands "
	    "(ssh exec, sftp, chat !commands, atrium exec requests and HTTP "
	    "exec, across all rooms), the most allowed per user "
	    "(max-commands-per-user = %d); wait for one to end", running, max);
}

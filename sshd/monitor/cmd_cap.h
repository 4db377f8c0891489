/*
 * cmd_cap.h: max-commands-per-user, one count for both fronts (cmd_cap.c;
 * the requests are monitor.c's cmd_begin and cmd_end, privsep.h).
 *
 * A person's commands (ssh exec, sftp, chat !commands and atrium exec
 * lines over SSH; exec, Duet's and Cloudflare's exec and WebSocket exec
 * lines over HTTP) are counted where both fronts meet: here, in the
 * monitor.  Each front asks cmd_begin before it starts one (one round
 * trip, answered at once) and says cmd_end when it is over; the cap is
 * the sum over both fronts.  The counts are kept per front, so a front
 * that ends (atriumd-http is restarted after its end) takes its counts
 * with it: cmd_cap_clear when it is reaped.
 *
 * A front can only lower its own counts (cmd_end): a subverted one could
 * as well never ask, and the other front's counts are out of its reach.
 * The table holds at most CMD_CAP_MAX_USERS people with a command
 * running per front; past that a command is refused (fail closed).
 */
#ifndef ATRIUMD_CMD_CAP_H
#define ATRIUMD_CMD_CAP_H

#include <stddef.h>

#define CMD_CAP_MAX_USERS	65536	/* people with a command, per front */
#define CMD_CAP_USER		64	/* as monitor_identity's user */

struct cmd_cap_user {
	char user[CMD_CAP_USER];
	int n;				/* commands running, > 0 */
};

/* One front's counts (zeroed: empty). */
struct cmd_cap {
	struct cmd_cap_user *v;		/* people with n > 0, unordered */
	size_t len, alloc;
	long long running;		/* sum of every v[i].n */
	unsigned long long refused;	/* commands refused over the cap */
};

/* The commands user runs over this front (0 when none). */
int cmd_cap_running(const struct cmd_cap *c, const char *user);

/* Count one more for user.  0, -ENOSPC (table full) or -ENOMEM. */
int cmd_cap_add(struct cmd_cap *c, const char *user);

/* Count n fewer for user (never below 0).  How many were dropped. */
int cmd_cap_drop(struct cmd_cap *c, const char *user, int n);

/* Forget every count (the front ended) and free the table. */
void cmd_cap_clear(struct cmd_cap *c);

/* The refusal both fronts show, word for word: running commands now,
 * max the cap. */
void cmd_cap_words(char *out, size_t len, int running, int max);

#endif

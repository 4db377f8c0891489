/*
 * reload.h: what atriumd's monitor does on SIGHUP (systemctl reload).
 *
 * It reads DATA/atrium.conf again, applies the command line's flags over
 * it as at start, and compares the result with the settings in force.
 * A changed setting that is read when a room starts (the model, its URL,
 * the API key file, a room's limits and timeouts, the agent's caps) is
 * applied: rooms started from then on use it, rooms running keep theirs
 * until they stop.  A changed http-* setting (but http-listen) is
 * applied by restarting atriumd-http (http_front.h), whose running
 * requests may finish first.  Any other change (the address, the uid range, the
 * privsep user, the admission limits...) is logged as needing a restart
 * and not applied, so the process never runs on a half-new configuration.
 * The API key file is read again even when its name did not change.  A
 * file that does not parse changes nothing.  No session is dropped.
 * authorized_keys needs no reload: it is read again whenever it changes.
 */
#ifndef ATRIUMD_RELOAD_H
#define ATRIUMD_RELOAD_H

#include "config.h"
#include "keys.h"

struct rooms;
struct monitor;

struct reload {
	int argc;			/* atriumd's own command line, whose */
	char **argv;			/*   flags still override the file */
	/* main's flag parser: 0, or non-zero on a bad flag. */
	int (*flags)(struct config *c, int argc, char **argv);
	struct config *cfg;		/* the monitor's settings, changed in
					 * place (single-threaded loop) */
	struct keys *keys;		/* the monitor's API keys */
	struct rooms *rooms;		/* whose running agents get a new key
					 * at once; NULL: none */
	struct monitor *srv;		/* whose atriumd-http restarts for
					 * its settings; NULL: none */
};

/* Reload as described above, logging one line for what was applied and
 * one for what needs a restart.  Cannot fail: errors are logged and leave
 * everything as it was. */
void reload_run(const struct reload *rl);

#endif

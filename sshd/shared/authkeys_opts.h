/*
 * authkeys_opts.h: the options field of an authorized_keys line, as
 * sshd(8) AUTHORIZED_KEYS FILE FORMAT defines it:
 *
 *   options = option *( "," option )
 *   option  = NAME | NAME "=" '"' VALUE '"'     (VALUE: \" is a quote)
 *
 * Names are case-insensitive.  How atriumd treats each (man atriumd(8),
 * AUTHORIZED KEYS, says the same to operators):
 *
 *   user="NAME"          names the user (atriumd's own option)
 *   atrium-admin         atriumd's own: the key may enter and manage
 *                        every room (access.h)
 *   rooms="PATTERNS"     atriumd's own: the rooms the key may create,
 *                        an OpenSSH pattern list (pattern.h); rooms
 *                        that exist are entered by their access list
 *   from="LIST"          the client's address must match (addr_match.h)
 *   expiry-time="TIME"   YYYYMMDD[HHMM[SS]], local time ("Z": UTC);
 *                        refused from then on (several: the earliest)
 *   command="CMD"        forced: replaces exec, shell and subsystems
 *   restrict             no pty (and no forwarding of any kind, which
 *                        atriumd never offers)
 *   no-pty / pty         pty requests refused / allowed again (last wins)
 *   environment="N=V"    ignored: atriumd has no PermitUserEnvironment
 *   no-port-forwarding, no-agent-forwarding, no-X11-forwarding,
 *   no-user-rc, port-forwarding, agent-forwarding, x11-forwarding,
 *   user-rc, permitopen=, permitlisten=, tunnel=, no-touch-required
 *                        accepted, no effect: atriumd never forwards,
 *                        runs no rc file, opens no tunnel
 *   cert-authority, principals=   certificates: the key is refused
 *   verify-required      refused: atriumd cannot check a security key's
 *                        user verification, so it cannot honour it
 *   anything else        the key is refused (never silently more power)
 *
 * Parsing is pure and in place (unit-tested from raw lines); strings of a
 * parsed field point into it, authkey_opts_copy makes owned ones.
 */
#ifndef ATRIUMD_AUTHKEYS_OPTS_H
#define ATRIUMD_AUTHKEYS_OPTS_H

#include <stddef.h>
#include <time.h>

#define AUTHKEY_MAX_OPTS	64	/* options on one line */
#define AUTHKEY_MAX_NAME	32	/* bytes of an option's name */
#define AUTHKEY_MAX_COMMAND	8192	/* bytes of command="..." */
#define AUTHKEY_MAX_VALUE	4096	/* bytes of any other value */

struct authkey_opts {
	char user[64];		/* user="NAME"; "" when absent */
	char *command;		/* command="...", unquoted; NULL: none */
	char *from;		/* from="...", unquoted; NULL: any address */
	time_t expiry;		/* expiry-time=: refused from then; 0: never */
	int no_pty;		/* restrict or no-pty (not undone by pty) */
	int environment;	/* environment= options given (ignored) */
	int admin;		/* atrium-admin: enters and manages any room */
	char *rooms;		/* rooms="...": may create only these; NULL:
				 * any */
	int owned;		/* command, from and rooms are malloc'ed
				 * copies */
	char error[160];	/* why the field was refused */
};

/* Parse an options field (no blanks outside quotes) in place.  0 with
 * *out filled, or -EINVAL with out->error saying which option and why. */
int authkey_opts_parse(char *field, struct authkey_opts *out);

/* Parse an expiry-time value.  0 with *out set, or -EINVAL. */
int authkey_expiry_parse(const char *text, time_t *out);

/* May a client at numeric address addr use a key with these options at
 * time now?  0 yes; -EACCES with why (for the log) when from= does not
 * match or the key has expired. */
int authkey_opts_check(const struct authkey_opts *o, const char *addr,
    time_t now, char *why, size_t len);

/* May a key with these options create the room called room (a room that
 * does not exist yet)?  1 or 0: admins may; rooms= must match when set. */
int authkey_opts_may_create(const struct authkey_opts *o, const char *room);

/* Copy src into dst with owned strings.  0 or -ENOMEM (dst then empty). */
int authkey_opts_copy(struct authkey_opts *dst, const struct authkey_opts *src);

/* Free the strings of a copy and empty it; a parsed field is only
 * emptied.  NULL is fine. */
void authkey_opts_free(struct authkey_opts *o);

#endif

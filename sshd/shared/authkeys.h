/*
 * authkeys.h: DATA/authorized_keys, the list of who may enter.  OpenSSH
 * format, one key a line:
 *
 *   [options] TYPE BASE64 [COMMENT]
 *
 * options is a comma-separated list (quoted strings may hold commas and
 * spaces, \" is a quote); authkeys_opts.h parses and applies it, and a
 * line with an option atriumd does not honour is refused.  The user a key
 * names is its user="NAME" option, else the comment made into a name
 * (user_name_from: "alice@lap" is "alice").  Blank lines and lines
 * starting with '#' are skipped.  A key listed on several lines is
 * allowed by the first whose options allow the connection (as sshd).
 *
 * The file is re-read when its mtime or size changes, so keys can be added
 * while atriumd runs.
 */
#ifndef ATRIUMD_AUTHKEYS_H
#define ATRIUMD_AUTHKEYS_H

#include <stddef.h>
#include <time.h>
#include <libssh/libssh.h>

#include "authkeys_opts.h"

#define AUTHKEYS_AGENT_NAME	"agent"	/* reserved: the room's agent */
#define AUTHKEYS_MAX_LINE	16384	/* longer lines are refused */
#define AUTHKEYS_MAX_KEYS	10000	/* keys kept from one file */
#define AUTHKEYS_MAX_FILE	(8 * 1024 * 1024)
#define AUTHKEYS_FP_MAX		64	/* "SHA256:" and 43 base64 digits */
#define AUTHKEYS_MAX_COMMENT	128	/* bytes of a comment kept (cut) */

/* One parsed line; pointers point into the caller's (modified) line. */
struct authkeys_line {
	const char *type;	/* "ssh-ed25519" ... */
	const char *base64;	/* the key blob */
	const char *comment;	/* "" when none */
	char user[64];		/* the user the key names */
	int has_opts;		/* the line has an options field */
	struct authkey_opts opts;	/* its options (strings in the line) */
	char why[200];		/* with -EINVAL: what is wrong, for the log */
};

/* Parse one line in place.  1 with *out filled, 0 for a blank or comment
 * line, -EINVAL for a malformed line or options atriumd refuses (why). */
int authkeys_parse_line(char *line, struct authkeys_line *out);

/* Is name a key type atriumd knows (so a first word that is not one is the
 * options field)?  1 or 0. */
int authkeys_is_type(const char *name);

struct authkeys;

/* Make an empty set for the file at path (not read yet).  NULL on ENOMEM. */
struct authkeys *authkeys_new(const char *path);
void authkeys_free(struct authkeys *ak);

/* Log nothing about the file's lines, its size or its absence: for a
 * second reader of the same file (the monitor's, beside the network
 * process's, which says it all once). */
void authkeys_set_quiet(struct authkeys *ak);

/* Re-read the file, open for reading on fd, if it changed since the last
 * read (mtime or size).  The monitor opens it for the network process,
 * which may not; fd is closed.  A negative fd is the -errno of the open.
 * 0, or -errno when it cannot be read (the previous keys stay; logged once
 * per change). */
int authkeys_refresh_fd(struct authkeys *ak, int fd);

/* What authkeys_match found: valid until the next refresh. */
struct authkeys_found {
	const char *user;		/* the user the key names */
	const char *comment;		/* its line's comment ("" when none;
					 * as written: not for a terminal) */
	const struct authkey_opts *opts;	/* its line's options */
	char why[300];			/* when refused: why, for the log */
};

/* Look key up for a client at numeric address addr at time now.  1 when
 * a line allows it (*out filled), 0 when the key is not listed, -EACCES
 * when it is but no line's options allow this connection (out->why says
 * why, from the first such line). */
int authkeys_match(struct authkeys *ak, ssh_key key, const char *addr,
    time_t now, struct authkeys_found *out);

/* The same for the key whose SHA256 fingerprint (authkeys_fingerprint) is
 * fp: how the monitor, which never sees the key itself, finds the line the
 * network process authenticated a session with. */
int authkeys_match_fp(struct authkeys *ak, const char *fp, const char *addr,
    time_t now, struct authkeys_found *out);

/* key's SHA256 fingerprint ("SHA256:...") into out; "?" on failure. */
void authkeys_fingerprint(ssh_key key, char *out, size_t len);

/* Number of keys loaded. */
size_t authkeys_count(const struct authkeys *ak);

#endif

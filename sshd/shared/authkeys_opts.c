/*
 * authkeys_opts.c: an authorized_keys line's options (authkeys_opts.h).
 * Called by authkeys.c when a line is parsed (authkey_opts_parse) and
 * when a key is looked up (authkey_opts_check); session.c keeps a copy of
 * the options of the key a connection authenticated with.
 *
 * The parser walks the field once, left to right, as OpenSSH's
 * sshauthopt_parse does: an option is a name, then for value options '='
 * and a quoted string, then ',' or the end.  Later flags override earlier
 * ones (restrict,pty allows a pty); a value option given twice where
 * OpenSSH refuses that (command, from, user, tunnel) refuses the line.
 * Invariant: a field that parses leaves no option unaccounted for; every
 * option this file does not name is an error.
 */
#include "authkeys_opts.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addr_match.h"
#include "names.h"
#include "pattern.h"

/* What an option does; see the table in authkeys_opts.h. */
enum authkey_kind {
	AK_NOOP,		/* accepted, nothing to do */
	AK_RESTRICT,
	AK_NO_PTY,
	AK_PTY,
	AK_REFUSE,		/* the key is refused (certificates ...) */
	AK_ADMIN,		/* atrium-admin */
	AK_USER,		/* the options that take a value: */
	AK_COMMAND,
	AK_FROM,
	AK_EXPIRY,
	AK_ROOMS,
	AK_ENVIRONMENT,
	AK_VALUE_NOOP,		/* permitopen=, permitlisten=, tunnel= */
	AK_VALUE_REFUSE,	/* principals= */
};

struct authkey_opt_def {
	const char *name;	/* lower case */
	enum authkey_kind kind;
	const char *why;	/* AK_*REFUSE: reason for the log */
};

static const struct authkey_opt_def authkey_opt_defs[] = {
	{ "restrict", AK_RESTRICT, NULL },
	{ "no-pty", AK_NO_PTY, NULL },
	{ "pty", AK_PTY, NULL },
	{ "no-port-forwarding", AK_NOOP, NULL },
	{ "no-agent-forwarding", AK_NOOP, NULL },
	{ "no-x11-forwarding", AK_NOOP, NULL },
	{ "no-user-rc", AK_NOOP, NULL },
	{ "port-forwarding", AK_NOOP, NULL },
	{ "agent-forwarding", AK_NOOP, NULL },
	{ "x11-forwarding", AK_NOOP, NULL },
	{ "user-rc", AK_NOOP, NULL },
	{ "no-touch-required", AK_NOOP, NULL },
	{ "cert-authority", AK_REFUSE, "atriumd does not accept certificates" },
	{ "verify-required", AK_REFUSE, "atriumd cannot check a security key's "
	    "user verification" },
	{ "atrium-admin", AK_ADMIN, NULL },
	{ "rooms", AK_ROOMS, NULL },
	{ "user", AK_USER, NULL },
	{ "command", AK_COMMAND, NULL },
	{ "from", AK_FROM, NULL },
	{ "expiry-time", AK_EXPIRY, NULL },
	{ "environment", AK_ENVIRONMENT, NULL },
	{ "permitopen", AK_VALUE_NOOP, NULL },
	{ "permitlisten", AK_VALUE_NOOP, NULL },
	{ "tunnel", AK_VALUE_NOOP, NULL },
	{ "principals", AK_VALUE_REFUSE, "atriumd does not accept "
	    "certificates" },
};

/* Set out->error (printf-style); returns -EINVAL. */
static int __attribute__((format(printf, 2, 3)))
authkey_fail(struct authkey_opts *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->error, sizeof(out->error), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The definition of the option called name (len bytes), or NULL. */
static const struct authkey_opt_def *
authkey_lookup(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(authkey_opt_defs) /
	    sizeof(*authkey_opt_defs); i++)
		if (strlen(authkey_opt_defs[i].name) == len &&
		    strncasecmp(authkey_opt_defs[i].name, name, len) == 0)
			return &authkey_opt_defs[i];
	return NULL;
}

/* Unquote the value at *pp ('"' ... '"', \" for a quote) in place: it
 * ends at *value, NUL-terminated, and *pp moves past the closing quote.
 * 0, or -EINVAL for a missing quote. */
static int
authkey_unquote(char **pp, char **value)
{
	char *r = *pp, *w;

	if (*r != '"')
		return -EINVAL;
	*value = w = ++r;
	while (*r && *r != '"') {
		if (r[0] == '\\' && r[1] == '"')
			r++;
		*w++ = *r++;
	}
	if (*r != '"')
		return -EINVAL;
	*pp = r + 1;
	*w = '\0';	/* w <= r: the closing quote is already read */
	return 0;
}

/* Parse a YYYY...SS run of n digits at p into *v.  0 or -EINVAL. */
static int
authkey_digits(const char *p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			return -EINVAL;
		*v = *v * 10 + (p[i] - '0');
	}
	return 0;
}

/* See authkeys_opts.h.  Like OpenSSH's parse_absolute_time. */
int
authkey_expiry_parse(const char *text, time_t *out)
{
	size_t n = strlen(text);
	int utc = 0, y, mo, d, h = 0, mi = 0, s = 0;
	struct tm tm = { 0 };

	*out = 0;
	if (n > 1 && (text[n - 1] == 'Z' || text[n - 1] == 'z')) {
		utc = 1;
		n--;
	} else if (n > 3 && strcasecmp(text + n - 3, "UTC") == 0) {
		utc = 1;
		n -= 3;
	}
	if ((n != 8 && n != 12 && n != 14) || authkey_digits(text, 4, &y) ||
	    authkey_digits(text + 4, 2, &mo) || authkey_digits(text + 6, 2, &d) ||
	    (n >= 12 && (authkey_digits(text + 8, 2, &h) ||
	    authkey_digits(text + 10, 2, &mi))) ||
	    (n == 14 && authkey_digits(text + 12, 2, &s)))
		return -EINVAL;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || s > 60)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	tm.tm_isdst = -1;	/* local time: let mktime find DST */
	*out = utc ? timegm(&tm) : mktime(&tm);
	return *out <= 0 ? -EINVAL : 0;
}

/* Store a string value once (command=, from=); -EINVAL when given twice. */
static int
authkey_set_once(struct authkey_opts *out, char **slot, char *value,
    const char *name)
{
	if (*slot)
		return authkey_fail(out, "%s= given twice", name);
	*slot = value;
	return 0;
}

/* from="LIST": checked now, so a bad list refuses the line at load. */
static int
authkey_from(struct authkey_opts *out, char *value)
{
	char host[64];

	if (strlen(value) > ADDR_MATCH_MAX_LIST ||
	    addr_match_check(value, host, sizeof(host)) < 0)
		return authkey_fail(out, "from=\"%.64s\" is not a valid pattern "
		    "list (ADDRESS, ADDRESS/MASKLEN or a wildcard, comma-"
		    "separated, at most %d)", value, ADDR_MATCH_MAX_ENTRIES);
	return authkey_set_once(out, &out->from, value, "from");
}

/* expiry-time="TIME": the earliest of several wins, as in sshd. */
static int
authkey_expiry(struct authkey_opts *out, const char *value)
{
	time_t t;

	if (authkey_expiry_parse(value, &t) < 0)
		return authkey_fail(out, "expiry-time=\"%.32s\" is not "
		    "YYYYMMDD[HHMM[SS]][Z]", value);
	if (!out->expiry || t < out->expiry)
		out->expiry = t;
	return 0;
}

/* rooms="PATTERNS": atriumd's own; checked now, once. */
static int
authkey_rooms(struct authkey_opts *out, char *value)
{
	if (pattern_list_check(value) < 0)
		return authkey_fail(out, "rooms=\"%.64s\" is not a valid "
		    "pattern list (room names with * and ?, comma-separated, "
		    "!PATTERN to exclude, at most %d)", value,
		    PATTERN_MAX_ENTRIES);
	return authkey_set_once(out, &out->rooms, value, "rooms");
}

/* user="NAME": atriumd's own; a valid user name, once. */
static int
authkey_user(struct authkey_opts *out, const char *value)
{
	if (out->user[0])
		return authkey_fail(out, "user= given twice");
	if (strlen(value) >= sizeof(out->user) || !user_name_valid(value))
		return authkey_fail(out, "user=\"%.40s\" is not a valid user "
		    "name (1-32 of A-Z a-z 0-9 . _ -)", value);
	snprintf(out->user, sizeof(out->user), "%s", value);
	return 0;
}

/* Apply a value option.  0 or -EINVAL. */
static int
authkey_apply_value(struct authkey_opts *out, const struct authkey_opt_def *d,
    char *value)
{
	size_t n = strlen(value);

	if (n > (d->kind == AK_COMMAND ? AUTHKEY_MAX_COMMAND : AUTHKEY_MAX_VALUE))
		return authkey_fail(out, "%s= is longer than %d bytes", d->name,
		    d->kind == AK_COMMAND ? AUTHKEY_MAX_COMMAND :
		    AUTHKEY_MAX_VALUE);
	switch (d->kind) {
	case AK_USER:
		return authkey_user(out, value);
	case AK_COMMAND:
		return authkey_set_once(out, &out->command, value, "command");
	case AK_FROM:
		return authkey_from(out, value);
	case AK_EXPIRY:
		return authkey_expiry(out, value);
	case AK_ROOMS:
		return authkey_rooms(out, value);
	case AK_ENVIRONMENT:
		/* Checked like sshd (NAME=...), then ignored. */
		if (value[0] == '=' || !strchr(value, '='))
			return authkey_fail(out, "environment= is not NAME=value");
		out->environment++;
		return 0;
	case AK_VALUE_REFUSE:
		return authkey_fail(out, "%s= refuses the key: %s", d->name,
		    d->why);
	default:
		return n ? 0 : authkey_fail(out, "%s= is empty", d->name);
	}
}

/* Apply a flag option.  0 or -EINVAL. */
static int
authkey_apply_flag(struct authkey_opts *out, const struct authkey_opt_def *d)
{
	switch (d->kind) {
	case AK_RESTRICT:
	case AK_NO_PTY:
		out->no_pty = 1;
		return 0;
	case AK_PTY:
		out->no_pty = 0;
		return 0;
	case AK_REFUSE:
		return authkey_fail(out, "%s refuses the key: %s", d->name, d->why);
	case AK_ADMIN:
		out->admin = 1;
		return 0;
	case AK_NOOP:
		return 0;
	default:
		return authkey_fail(out, "option %s needs a value (%s=\"...\")",
		    d->name, d->name);
	}
}

/* Copy an unknown option's name for the log, printable and bounded. */
static void
authkey_shown_name(const char *p, size_t n, char *out, size_t len)
{
	size_t j = 0;

	for (size_t i = 0; i < n && j + 1 < len; i++)
		out[j++] = isgraph((unsigned char)p[i]) ? p[i] : '?';
	out[j] = '\0';
}

/* Parse the option at *pp and move past it.  0 or -EINVAL. */
static int
authkey_one(char **pp, struct authkey_opts *out)
{
	char *p = *pp, *value, shown[AUTHKEY_MAX_NAME + 1];
	size_t n = strcspn(p, "=,");
	const struct authkey_opt_def *d = authkey_lookup(p, n);

	if (!d) {
		authkey_shown_name(p, n, shown, sizeof(shown));
		return authkey_fail(out, "unknown option '%s%s' (atriumd refuses "
		    "a key whose options it does not know)", shown,
		    n > AUTHKEY_MAX_NAME ? "..." : "");
	}
	p += n;
	if (*p != '=') {
		*pp = p;
		return authkey_apply_flag(out, d);
	}
	if (d->kind < AK_USER)
		return authkey_fail(out, "option %s takes no value", d->name);
	p++;
	if (authkey_unquote(&p, &value) < 0)
		return authkey_fail(out, "%s= needs a double-quoted value with "
		    "both quotes", d->name);
	*pp = p;
	return authkey_apply_value(out, d, value);
}

/* See authkeys_opts.h. */
int
authkey_opts_parse(char *field, struct authkey_opts *out)
{
	char *p = field;
	int count = 0;

	memset(out, 0, sizeof(*out));
	while (*p) {
		if (++count > AUTHKEY_MAX_OPTS)
			return authkey_fail(out, "more than %d options",
			    AUTHKEY_MAX_OPTS);
		if (authkey_one(&p, out) < 0)
			return -EINVAL;
		if (*p == '\0')
			break;
		if (*p != ',')
			return authkey_fail(out, "',' expected after an option "
			    "(values go in double quotes)");
		p++;
	}
	return 0;
}

/* See authkeys_opts.h. */
int
authkey_opts_check(const struct authkey_opts *o, const char *addr,
    time_t now, char *why, size_t len)
{
	char when[32];
	struct tm tm;

	if (o->from && addr_match_list(addr, o->from) != 1) {
		snprintf(why, len, "from=\"%s\" does not match its address %s",
		    o->from, addr);
		return -EACCES;
	}
	if (o->expiry && o->expiry < now) {	/* as sshd: valid to the second */
		localtime_r(&o->expiry, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
		snprintf(why, len, "it expired at %s (expiry-time=)", when);
		return -EACCES;
	}
	return 0;
}

/* See authkeys_opts.h. */
int
authkey_opts_may_create(const struct authkey_opts *o, const char *room)
{
	return o->admin || !o->rooms || pattern_list_match(room, o->rooms) == 1;
}

/* See authkeys_opts.h. */
int
authkey_opts_copy(struct authkey_opts *dst, const struct authkey_opts *src)
{
	*dst = *src;
	dst->owned = 1;
	dst->command = src->command ? strdup(src->command) : NULL;
	dst->from = src->from ? strdup(src->from) : NULL;
	dst->rooms = src->rooms ? strdup(src->rooms) : NULL;
	if ((src->command && !dst->command) || (src->from && !dst->from) ||
	    (src->rooms && !dst->rooms)) {
		authkey_opts_free(dst);
		return -ENOMEM;
	}
	return 0;
}

/* See authkeys_opts.h. */
void
authkey_opts_free(struct authkey_opts *o)
{
	if (!o)
		return;
	if (o->owned) {
		free(o->command);
		free(o->from);
		free(o->rooms);
	}
	memset(o, 0, sizeof(*o));
}

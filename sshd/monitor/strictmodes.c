/*
 * strictmodes.c: the modes of an existing DATA (strictmodes.h).  Called by
 * monitor_main.c before anything in DATA is made or used.
 *
 * Whoever can write DATA, DATA/run or DATA/rooms can swap a file or a room
 * for their own; whoever can write authorized_keys or atrium.conf decides
 * who gets in and what runs; whoever can read hostkey can pose as the
 * server.  So, as OpenSSH's StrictModes does, atriumd refuses to start when
 * one of them is writable by group or others (hostkey: any group or other
 * access at all) or owned by someone other than root, and says how to fix
 * it.  Only what exists is checked: first start makes them with safe
 * modes.  Parent directories are not checked (the operator chose where
 * DATA lives).
 */
#include "strictmodes.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datalock.h"

struct strictmodes_rule {
	const char *name;	/* under DATA, "" for DATA itself */
	int dir;		/* 1: a directory */
	mode_t forbidden;	/* mode bits that refuse it */
	const char *fix;	/* chmod mode that fixes it */
};

static const struct strictmodes_rule strictmodes_rules[] = {
	{ "", 1, 022, "700" },
	{ "run", 1, 022, "700" },
	{ "rooms", 1, 022, "700" },
	{ "authorized_keys", 0, 022, "600" },
	{ "atrium.conf", 0, 022, "600" },
	{ "hostkey", 0, 077, "600" },
	/* Whoever could write it could hold it, and keep atriumd from
	 * starting (datalock.h). */
	{ DATALOCK_NAME, 0, 022, "600" },
};

/* Check one path against its rule.  0 (fine or missing) or -EPERM
 * (printed). */
static int
strictmodes_one(const char *data, const struct strictmodes_rule *rule)
{
	char path[PATH_MAX + 32];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s%s", data, rule->name[0] ? "/" : "",
	    rule->name);
	if (stat(path, &st) < 0)
		return 0;
	if (rule->dir && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "atriumd: %s is not a directory; move it away "
		    "and start again\n", path);
		return -EPERM;
	}
	if (st.st_uid != geteuid()) {
		fprintf(stderr, "atriumd: %s belongs to uid %u, not to root: "
		    "anyone acting as that uid could change it; fix with: "
		    "chown root %s\n", path, (unsigned)st.st_uid, path);
		return -EPERM;
	}
	if (st.st_mode & rule->forbidden) {
		fprintf(stderr, "atriumd: %s has mode %04o: it must not be %s "
		    "by group or others; fix with: chmod %s %s\n", path,
		    (unsigned)(st.st_mode & 07777), rule->forbidden == 077 ?
		    "readable or writable" : "writable", rule->fix, path);
		return -EPERM;
	}
	return 0;
}

int
strictmodes_check(const char *data)
{
	int r = 0;

	/* Every problem is reported, not just the first. */
	for (size_t i = 0; i < sizeof(strictmodes_rules) /
	    sizeof(*strictmodes_rules); i++)
		if (strictmodes_one(data, &strictmodes_rules[i]) < 0)
			r = -EPERM;
	return r;
}

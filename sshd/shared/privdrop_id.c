/*
 * privdrop_id.c: the network process's user, looked up by name
 * (privdrop_id.h).  Called by sshd/monitor/monitor_main.c once, as root, before
 * the fork: NSS may read files, or ask daemons, that atriumd-net, which
 * gets the answer on its command line, could not reach.
 */
#include "privdrop_id.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

/* See privdrop_id.h. */
int
privdrop_resolve(const char *want, struct privdrop_id *out)
{
	const char *name = want && want[0] ? want : PRIVDROP_DEFAULT_USER;
	struct passwd *pw;

	memset(out, 0, sizeof(*out));
	errno = 0;
	pw = getpwnam(name);
	if (!pw && !(want && want[0])) {
		name = PRIVDROP_FALLBACK_USER;
		pw = getpwnam(name);
		if (pw)
			log_warn("no user '%s': the network process runs as "
			    "'%s', shared with other services; make a system "
			    "user '%s' (useradd --system --no-create-home "
			    "--shell /usr/sbin/nologin %s) or set "
			    "--privsep-user", PRIVDROP_DEFAULT_USER, name,
			    PRIVDROP_DEFAULT_USER, PRIVDROP_DEFAULT_USER);
	}
	if (!pw) {
		log_error("--privsep-user: no user '%s'%s", name,
		    want && want[0] ? "" : " (nor '" PRIVDROP_DEFAULT_USER "')");
		return -ENOENT;
	}
	if (pw->pw_uid == 0 || pw->pw_gid == 0) {
		log_error("--privsep-user %s: uid or gid 0; the network process "
		    "must not run as root", name);
		return -EPERM;
	}
	out->uid = pw->pw_uid;
	out->gid = pw->pw_gid;
	snprintf(out->name, sizeof(out->name), "%s", name);
	return 0;
}

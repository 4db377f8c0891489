/*
 * privdrop_id.h: who atriumd's fronts run as (privdrop_id.c): the
 * monitor resolves --privsep-user, and passes the answer to atriumd-net
 * and atriumd-http (front_exec.h), which become that user
 * (front_privdrop.h).
 */
#ifndef ATRIUMD_PRIVDROP_ID_H
#define ATRIUMD_PRIVDROP_ID_H

#include <sys/types.h>

#define PRIVDROP_DEFAULT_USER	"atrium"
#define PRIVDROP_FALLBACK_USER	"nobody"

struct privdrop_id {
	uid_t uid;
	gid_t gid;
	char name[64];
};

/* Look the privsep user up (want: --privsep-user, "" for the default),
 * in the monitor before the fork (NSS may need files the network process
 * cannot open); atriumd-net gets the answer on its command line.
 * 0, or -errno with the reason logged (unknown user, or root). */
int privdrop_resolve(const char *want, struct privdrop_id *out);

#endif

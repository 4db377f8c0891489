/*
 * monitor_identity.c: the monitor's view of who a request is for
 * (monitor_identity.h).  Called by monitor.c for each request that acts
 * for a user, before the request's own checks.
 *
 * What the network process can and cannot make the monitor believe:
 * it authenticates clients itself (libssh checks the signature
 * in-process) and holds every key of authorized_keys, so the monitor
 * cannot tell a key a client proved from one the network process merely
 * names.  What it can tell: that the key named is in authorized_keys now,
 * that its line names the user the request names, that its options allow
 * the address the request names at this time, and what that line allows
 * (atrium-admin, rooms=).  So a subverted network process may act for any
 * user with that user's own key's rights, never with more: no admin for a
 * key without atrium-admin, no user name with another user's key.  The
 * client's address is the network process's word too (it holds the TCP
 * connection), so a key's from= binds only an honest network process.
 *
 * The monitor keeps its own parse of authorized_keys (srv->keys in the
 * monitor), re-read when the file changes (authkeys_refresh_fd compares
 * mtime and size): one open and fstat per request, a parse per edit.
 * A key removed while its session lives is refused from the next
 * request on, and so is one whose expiry-time passed: both are answered
 * (the session is told why), not treated as misbehaviour, since an honest
 * network process meets them too.
 */
#include "monitor_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "jsonl.h"
#include "log.h"
#include "monitor_loop.h"
#include "names.h"

#define IDENTITY_FP_PREFIX	"SHA256:"
#define IDENTITY_FP_DIGITS	43	/* base64 of 32 bytes, unpadded */
#define IDENTITY_MAX_ADDR	63

/* The value of one base64 digit, or -1. */
static int
identity_b64(char c)
{
	static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(digits, c) : NULL;

	return p ? (int)(p - digits) : -1;
}

/* 1 when fp is a SHA256 fingerprint as libssh writes it. */
static int
identity_fp_valid(const char *fp)
{
	size_t n = strlen(IDENTITY_FP_PREFIX);

	if (strncmp(fp, IDENTITY_FP_PREFIX, n) != 0 ||
	    strlen(fp + n) != IDENTITY_FP_DIGITS)
		return 0;
	for (const char *p = fp + n; *p; p++)
		if (identity_b64(*p) < 0)
			return 0;
	return 1;
}

/* 1 when addr can be a numeric address as the listener writes it
 * (netaddr_host): it only ever reaches from= matching, as text. */
static int
identity_addr_valid(const char *addr)
{
	size_t n = strlen(addr);

	return n > 0 && n <= IDENTITY_MAX_ADDR &&
	    strspn(addr, "0123456789abcdefABCDEF.:%") == n;
}

/* The name --open gives the key whose fingerprint is fp (session.c:
 * "guest-" and the first four bytes of the key's SHA256 in hex).  The
 * first six base64 digits hold 36 bits, the four bytes and a half. */
static void
identity_guest_name(const char *fp, char *out, size_t len)
{
	const char *d = fp + strlen(IDENTITY_FP_PREFIX);
	unsigned long long bits = 0;

	for (int i = 0; i < 6; i++)
		bits = bits << 6 | (unsigned)identity_b64(d[i]);
	bits >>= 4;
	snprintf(out, len, "guest-%08llx", bits & 0xffffffffULL);
}

/* Re-read authorized_keys if it changed.  Its failure is logged by
 * authkeys (and leaves no key: fail closed). */
static void
identity_refresh(struct monitor *srv)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/authorized_keys", srv->cfg->data_dir);
	authkeys_refresh_fd(srv->keys, open(path, O_RDONLY | O_CLOEXEC |
	    O_NOCTTY | O_NONBLOCK));
}

/* The key is in no line: an --open guest, when that is its name. */
static int
identity_guest(struct monitor *srv, const char *user, const char *fp,
    struct monitor_identity *id, char *why, size_t len)
{
	char guest[64];

	if (!srv->cfg->open) {
		snprintf(why, len, "key %s is not in authorized_keys", fp);
		return -EACCES;
	}
	identity_guest_name(fp, guest, sizeof(guest));
	if (strcmp(guest, user) != 0) {
		snprintf(why, len, "key %s is %s's (an --open guest), not %s's",
		    fp, guest, user);
		return -EACCES;
	}
	snprintf(id->user, sizeof(id->user), "%s", user);
	id->guest = 1;
	return 0;
}

/* See monitor_identity.h. */
int
monitor_identity_get(struct monitor *srv, json_object *req,
    struct monitor_identity *id, char *why, size_t len)
{
	const char *user = json_get_string(req, "user");
	const char *fp = json_get_string(req, "key");
	const char *addr = json_get_string(req, "addr");
	struct authkeys_found found;
	int r;

	memset(id, 0, sizeof(*id));
	snprintf(why, len, "the request does not say who it is for");
	if (!user || !user_name_valid(user) || !fp || !identity_fp_valid(fp) ||
	    !addr || !identity_addr_valid(addr) || !srv->keys)
		return -EPROTO;
	identity_refresh(srv);
	r = authkeys_match_fp(srv->keys, fp, addr, time(NULL), &found);
	if (r == 0)
		return identity_guest(srv, user, fp, id, why, len);
	if (r < 0) {
		snprintf(why, len, "key %s may not be used from %s now: %s", fp,
		    addr, found.why);
		return -EACCES;
	}
	if (strcmp(found.user, user) != 0) {
		snprintf(why, len, "key %s is %s's, not %s's", fp, found.user,
		    user);
		return -EACCES;
	}
	snprintf(id->user, sizeof(id->user), "%s", user);
	id->admin = found.opts->admin;
	id->opts = found.opts;
	return 0;
}

/* See monitor_identity.h. */
int
monitor_identity_may_create(const struct monitor_identity *id,
    const char *room)
{
	static const struct authkey_opts none;

	return authkey_opts_may_create(id->opts ? id->opts : &none, room);
}

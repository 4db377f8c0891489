/*
 * authkeys.c: parse and match DATA/authorized_keys (authkeys.h).  Called by
 * session.c at each public-key offer, after authkeys_refresh_fd.
 *
 * The parser is pure (unit-tested from raw lines); the set keeps libssh
 * keys with their user names and their options (owned copies, see
 * authkeys_opts.h).  Workload: a few keys to a few hundred, looked up
 * once or twice per connection, so a linear scan is fine.
 *
 * What the operator learns at load, one line each: a line refused (and
 * why: a bad option names itself), an environment= that is ignored, a
 * from= host name that can never match.  At authentication session.c
 * logs why a listed key was refused (authkeys_found.why).
 */
#include "authkeys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "addr_match.h"
#include "log.h"
#include "names.h"
#include "util.h"

struct authkeys_entry {
	ssh_key key;		/* public key */
	char fp[AUTHKEYS_FP_MAX];	/* its SHA256 fingerprint (the monitor
				 * looks keys up by it: authkeys_match_fp) */
	char user[64];		/* its user name */
	char comment[AUTHKEYS_MAX_COMMENT];	/* its comment, cut to fit (a
				 * token names the key it was made with) */
	struct authkey_opts opts;	/* its line's options (owned copy) */
};

struct authkeys {
	char path[4096];		/* DATA/authorized_keys */
	struct authkeys_entry *keys;	/* nkeys of them */
	size_t nkeys;
	time_t mtime;			/* of the file when read; 0: never */
	long mtime_ns;
	off_t size;
	int missing_logged;		/* a missing file was reported once */
	int quiet;			/* a second reader of the file: says
					 * nothing of its lines (the first
					 * one does) */
};

static const char *const authkeys_types[] = {
	"ssh-ed25519", "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256",
	"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
	"sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
	"rsa-sha2-256", "rsa-sha2-512",
};

/* 1 if name is a known key type. */
int
authkeys_is_type(const char *name)
{
	for (size_t i = 0; i < sizeof(authkeys_types) / sizeof(*authkeys_types);
	    i++)
		if (strcmp(name, authkeys_types[i]) == 0)
			return 1;
	return 0;
}

/* Skip spaces and tabs. */
static char *
authkeys_skip_space(char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* End the word at p (options may quote spaces); returns the rest, or NULL
 * for an unterminated quote.  As OpenSSH's sshkey_advance_past_options,
 * \" is skipped whole, inside quotes or not; no other escape exists. */
static char *
authkeys_cut_word(char *p)
{
	int quoted = 0;

	for (; *p; p++) {
		if (*p == '\\' && p[1] == '"') {
			p++;
			continue;
		}
		if (*p == '"')
			quoted = !quoted;
		else if (!quoted && (*p == ' ' || *p == '\t'))
			break;
	}
	if (quoted)
		return NULL;
	if (*p)
		*p++ = '\0';
	return p;
}

/* Parse one authorized_keys line in place (see authkeys.h). */
int
authkeys_parse_line(char *line, struct authkeys_line *out)
{
	char *p, *first, *opts = NULL;
	size_t n;

	memset(out, 0, sizeof(*out));
	snprintf(out->why, sizeof(out->why), "not a public key line");
	n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' ||
	    line[n - 1] == ' ' || line[n - 1] == '\t'))
		line[--n] = '\0';
	p = authkeys_skip_space(line);
	if (*p == '\0' || *p == '#')
		return 0;
	first = p;
	if (!(p = authkeys_cut_word(p)))
		return -EINVAL;
	if (!authkeys_is_type(first)) {
		opts = first;
		first = authkeys_skip_space(p);
		if (!(p = authkeys_cut_word(first)) || !authkeys_is_type(first))
			return -EINVAL;
	}
	out->type = first;
	out->base64 = authkeys_skip_space(p);
	if (*out->base64 == '\0')
		return -EINVAL;
	/* The blob is one word: quotes belong to options, not to it. */
	p = (char *)out->base64 + strcspn(out->base64, " \t");
	if (*p)
		*p++ = '\0';
	out->comment = authkeys_skip_space(p);
	out->has_opts = opts != NULL;
	if (opts && authkey_opts_parse(opts, &out->opts) < 0) {
		snprintf(out->why, sizeof(out->why), "%s", out->opts.error);
		return -EINVAL;
	}
	if (out->opts.user[0])
		snprintf(out->user, sizeof(out->user), "%s", out->opts.user);
	else
		user_name_from(out->comment, out->user, sizeof(out->user));
	return 1;
}

/* See authkeys.h. */
void
authkeys_set_quiet(struct authkeys *ak)
{
	ak->quiet = 1;
}

/* Make an empty set for path. */
struct authkeys *
authkeys_new(const char *path)
{
	struct authkeys *ak = calloc(1, sizeof(*ak));

	if (!ak)
		return NULL;
	snprintf(ak->path, sizeof(ak->path), "%s", path);
	return ak;
}

/* Free every key. */
static void
authkeys_clear(struct authkeys *ak)
{
	for (size_t i = 0; i < ak->nkeys; i++) {
		ssh_key_free(ak->keys[i].key);
		authkey_opts_free(&ak->keys[i].opts);
	}
	free(ak->keys);
	ak->keys = NULL;
	ak->nkeys = 0;
}

/* Free the set and its keys; NULL is fine. */
void
authkeys_free(struct authkeys *ak)
{
	if (!ak)
		return;
	authkeys_clear(ak);
	free(ak);
}

/* Add the key of one parsed line; 0, -EINVAL when libssh refuses it,
 * -ENOMEM. */
static int
authkeys_add(struct authkeys *ak, const struct authkeys_line *l,
    size_t *cap)
{
	ssh_key key = NULL;
	struct authkeys_entry *e;

	if (ssh_pki_import_pubkey_base64(l->base64,
	    ssh_key_type_from_name(l->type), &key) != SSH_OK)
		return -EINVAL;
	if (ak->nkeys == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct authkeys_entry *n = realloc(ak->keys, ncap * sizeof(*n));

		if (!n) {
			ssh_key_free(key);
			return -ENOMEM;
		}
		ak->keys = n;
		*cap = ncap;
	}
	e = &ak->keys[ak->nkeys];
	if (authkey_opts_copy(&e->opts, &l->opts) < 0) {
		ssh_key_free(key);
		return -ENOMEM;
	}
	e->key = key;
	authkeys_fingerprint(key, e->fp, sizeof(e->fp));
	snprintf(e->user, sizeof(e->user), "%s", l->user);
	snprintf(e->comment, sizeof(e->comment), "%s", l->comment);
	ak->nkeys++;
	return 0;
}

/* Say at load what an accepted key's options will not do: environment=
 * is ignored, a from= host name never matches (no DNS). */
static void
authkeys_notes(const struct authkeys *ak, const struct authkeys_entry *e,
    int lineno)
{
	char fp[128], host[64];

	if (ak->quiet || (!e->opts.environment && !e->opts.from))
		return;
	authkeys_fingerprint(e->key, fp, sizeof(fp));
	if (e->opts.environment)
		log_warn("%s:%d: key %s: option environment= ignored (atriumd "
		    "does not let keys set the environment)", ak->path, lineno,
		    fp);
	if (e->opts.from && addr_match_check(e->opts.from, host,
	    sizeof(host)) == 1)
		log_warn("%s:%d: key %s: from=\"%s\": '%s' is a host name, "
		    "which never matches: atriumd matches the client's address "
		    "only (no DNS)", ak->path, lineno, fp, e->opts.from, host);
}

/* Why a parsed line is skipped, or NULL to keep it. */
static const char *
authkeys_skip_why(const struct authkeys_line *l, int r)
{
	if (r < 0)
		return l->why;
	/* Nobody may speak in the room as its agent. */
	if (strcasecmp(l->user, AUTHKEYS_AGENT_NAME) == 0)
		return "the name 'agent' is the room's agent's; give this key "
		    "another name (user=\"NAME\" or its comment)";
	return NULL;
}

/* Replace the set with the keys in text; bad lines are logged and skipped. */
static void
authkeys_load_text(struct authkeys *ak, char *text)
{
	size_t cap = 0;
	int lineno = 0;
	char *save = NULL;

	authkeys_clear(ak);
	for (char *line = strtok_r(text, "\n", &save); line;
	    line = strtok_r(NULL, "\n", &save)) {
		struct authkeys_line l;
		const char *why;
		int r;

		lineno++;
		if (strlen(line) > AUTHKEYS_MAX_LINE) {
			if (!ak->quiet)
				log_warn("%s:%d: line too long, skipped",
				    ak->path, lineno);
			continue;
		}
		r = authkeys_parse_line(line, &l);
		if (r == 0)
			continue;
		if ((why = authkeys_skip_why(&l, r))) {
			if (!ak->quiet)
				log_warn("%s:%d: %s; line skipped", ak->path,
				    lineno, why);
			continue;
		}
		if (authkeys_add(ak, &l, &cap) < 0) {
			if (!ak->quiet)
				log_warn("%s:%d: not a public key line, "
				    "skipped", ak->path, lineno);
		} else
			authkeys_notes(ak, &ak->keys[ak->nkeys - 1], lineno);
		if (ak->nkeys >= AUTHKEYS_MAX_KEYS)
			break;
	}
}

/* The file could not be opened (r): no key logs in, said once. */
static int
authkeys_missing(struct authkeys *ak, int r)
{
	if (!ak->missing_logged && !ak->quiet)
		log_warn("%s: %s; no key can log in", ak->path, strerror(-r));
	ak->missing_logged = 1;
	authkeys_clear(ak);
	ak->mtime = 0;
	return r;
}

/* See authkeys.h. */
int
authkeys_refresh_fd(struct authkeys *ak, int fd)
{
	struct stat st;
	char *text = NULL;
	size_t len;
	int r;

	if (fd < 0)
		return authkeys_missing(ak, fd);
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return authkeys_missing(ak, r);
	}
	ak->missing_logged = 0;
	if (ak->mtime == st.st_mtim.tv_sec && ak->mtime_ns == st.st_mtim.tv_nsec
	    && ak->size == st.st_size) {
		close(fd);
		return 0;
	}
	r = read_small_fd(fd, AUTHKEYS_MAX_FILE, &text, &len);
	close(fd);
	if (r < 0) {
		log_error("%s: %s", ak->path, strerror(-r));
		return r;
	}
	authkeys_load_text(ak, text);
	free(text);
	ak->mtime = st.st_mtim.tv_sec;
	ak->mtime_ns = st.st_mtim.tv_nsec;
	ak->size = st.st_size;
	if (!ak->quiet)
		log_info("%s: %zu key(s)", ak->path, ak->nkeys);
	return 0;
}

/* Linear scan: the first line listing the key (key, or when NULL the
 * key whose fingerprint is fp) whose options allow this connection names
 * the user (sshd, too, tries each line in turn). */
static int
authkeys_match_any(struct authkeys *ak, ssh_key key, const char *fp,
    const char *addr, time_t now, struct authkeys_found *out)
{
	int listed = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < ak->nkeys; i++) {
		struct authkeys_entry *e = &ak->keys[i];

		if (key ? ssh_key_cmp(e->key, key, SSH_KEY_CMP_PUBLIC) != 0 :
		    strcmp(e->fp, fp) != 0 || e->fp[0] == '?')
			continue;
		if (authkey_opts_check(&e->opts, addr, now,
		    listed ? NULL : out->why, listed ? 0 : sizeof(out->why))
		    < 0) {
			listed = 1;
			continue;
		}
		out->user = e->user;
		out->comment = e->comment;
		out->opts = &e->opts;
		out->why[0] = '\0';
		return 1;
	}
	return listed ? -EACCES : 0;
}

/* See authkeys.h. */
int
authkeys_match(struct authkeys *ak, ssh_key key, const char *addr,
    time_t now, struct authkeys_found *out)
{
	return authkeys_match_any(ak, key, NULL, addr, now, out);
}

/* See authkeys.h. */
int
authkeys_match_fp(struct authkeys *ak, const char *fp, const char *addr,
    time_t now, struct authkeys_found *out)
{
	return authkeys_match_any(ak, NULL, fp, addr, now, out);
}

/* See authkeys.h. */
void
authkeys_fingerprint(ssh_key key, char *out, size_t len)
{
	unsigned char *hash = NULL;
	size_t hlen = 0;
	char *fp;

	snprintf(out, len, "?");
	if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash,
	    &hlen) < 0)
		return;
	if ((fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash,
	    hlen))) {
		snprintf(out, len, "%s", fp);
		ssh_string_free_char(fp);
	}
	ssh_clean_pubkey_hash(&hash);
}

/* Keys loaded by the last refresh. */
size_t
authkeys_count(const struct authkeys *ak)
{
	return ak->nkeys;
}

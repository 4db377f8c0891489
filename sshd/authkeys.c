/*
 * authkeys.c: parse and match DATA/authorized_keys (authkeys.h).  Called by
 * session.c at each public-key offer, after authkeys_refresh.
 *
 * The parser is pure (unit-tested from raw lines); the set keeps libssh
 * keys with their user names.  Workload: a few keys to a few hundred, looked
 * up once or twice per connection, so a linear scan is fine.
 */
#include "authkeys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "log.h"
#include "names.h"
#include "util.h"

struct authkeys_entry {
	ssh_key key;		/* public key */
	char user[64];		/* its user name */
};

struct authkeys {
	char path[4096];		/* DATA/authorized_keys */
	struct authkeys_entry *keys;	/* nkeys of them */
	size_t nkeys;
	time_t mtime;			/* of the file when read; 0: never */
	long mtime_ns;
	off_t size;
	int missing_logged;		/* a missing file was reported once */
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
 * for an unterminated quote. */
static char *
authkeys_cut_word(char *p)
{
	int quoted = 0;

	for (; *p; p++) {
		if (*p == '\\' && quoted && p[1]) {
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

/* Find user="NAME" in an options field; 1 with out set, 0 when absent,
 * -EINVAL when it is not a valid user name. */
static int
authkeys_option_user(const char *opts, char *out, size_t outlen)
{
	const char *p = opts;

	while (*p) {
		if (strncasecmp(p, "user=\"", 6) == 0) {
			const char *v = p + 6, *end = strchr(v, '"');
			size_t n;

			if (!end)
				return -EINVAL;
			n = (size_t)(end - v);
			if (n == 0 || n >= outlen)
				return -EINVAL;
			memcpy(out, v, n);
			out[n] = '\0';
			return user_name_valid(out) ? 1 : -EINVAL;
		}
		/* Next option: skip to a comma outside quotes. */
		int quoted = 0;
		for (; *p && (quoted || *p != ','); p++)
			if (*p == '"')
				quoted = !quoted;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* Parse one authorized_keys line in place (see authkeys.h). */
int
authkeys_parse_line(char *line, struct authkeys_line *out)
{
	char *p, *first, *opts = NULL;
	size_t n;
	int r;

	memset(out, 0, sizeof(*out));
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
	r = opts ? authkeys_option_user(opts, out->user, sizeof(out->user)) : 0;
	if (r < 0)
		return -EINVAL;
	if (r == 0)
		user_name_from(out->comment, out->user, sizeof(out->user));
	return 1;
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
	for (size_t i = 0; i < ak->nkeys; i++)
		ssh_key_free(ak->keys[i].key);
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

/* Add the key of one parsed line; 0, or -EINVAL when libssh refuses it. */
static int
authkeys_add(struct authkeys *ak, const struct authkeys_line *l,
    size_t *cap)
{
	ssh_key key = NULL;

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
	ak->keys[ak->nkeys].key = key;
	snprintf(ak->keys[ak->nkeys].user, sizeof(ak->keys[0].user), "%s",
	    l->user);
	ak->nkeys++;
	return 0;
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
		int r;

		lineno++;
		if (strlen(line) > AUTHKEYS_MAX_LINE) {
			log_warn("%s:%d: line too long, skipped", ak->path,
			    lineno);
			continue;
		}
		r = authkeys_parse_line(line, &l);
		if (r == 0)
			continue;
		if (r > 0 && strcasecmp(l.user, AUTHKEYS_AGENT_NAME) == 0) {
			/* Nobody may speak in the room as its agent. */
			log_warn("%s:%d: the name '%s' is the room's agent's; "
			    "give this key another name (user=\"NAME\" or its "
			    "comment), skipped", ak->path, lineno, l.user);
			continue;
		}
		if (r < 0 || authkeys_add(ak, &l, &cap) < 0)
			log_warn("%s:%d: not a public key line, skipped",
			    ak->path, lineno);
		if (ak->nkeys >= AUTHKEYS_MAX_KEYS)
			break;
	}
}

/* Re-read when mtime or size changed. */
int
authkeys_refresh(struct authkeys *ak)
{
	struct stat st;
	char *text = NULL;
	size_t len;
	int r;

	if (stat(ak->path, &st) < 0) {
		r = -errno;
		if (!ak->missing_logged)
			log_warn("%s: %s; no key can log in", ak->path,
			    strerror(-r));
		ak->missing_logged = 1;
		authkeys_clear(ak);
		ak->mtime = 0;
		return r;
	}
	ak->missing_logged = 0;
	if (ak->mtime == st.st_mtim.tv_sec && ak->mtime_ns == st.st_mtim.tv_nsec
	    && ak->size == st.st_size)
		return 0;
	r = read_small_file(ak->path, AUTHKEYS_MAX_FILE, &text, &len);
	if (r < 0) {
		log_error("%s: %s", ak->path, strerror(-r));
		return r;
	}
	authkeys_load_text(ak, text);
	free(text);
	ak->mtime = st.st_mtim.tv_sec;
	ak->mtime_ns = st.st_mtim.tv_nsec;
	ak->size = st.st_size;
	log_info("%s: %zu key(s)", ak->path, ak->nkeys);
	return 0;
}

/* Linear scan: the first listed match names the user. */
const char *
authkeys_find(struct authkeys *ak, ssh_key key)
{
	for (size_t i = 0; i < ak->nkeys; i++)
		if (ssh_key_cmp(ak->keys[i].key, key, SSH_KEY_CMP_PUBLIC) == 0)
			return ak->keys[i].user;
	return NULL;
}

/* Keys loaded by the last refresh. */
size_t
authkeys_count(const struct authkeys *ak)
{
	return ak->nkeys;
}

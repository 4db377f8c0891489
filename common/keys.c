/*
 * keys.c: the operator's API keys, per provider (keys.h).  Every buffer
 * that held a key is wiped before it is freed or goes out of scope.
 */
#include "keys.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define KEYS_FILE_MAX	16384	/* bytes of a key file */
#define KEYS_WIRE_MAX	(KEYS_PROVIDERS * (KEYS_MAX + 16))

static const char *const keys_names[KEYS_PROVIDERS] = { "anthropic",
	"openai" };
static const char *const keys_envs[KEYS_PROVIDERS] = { "ANTHROPIC_API_KEY",
	"OPENAI_API_KEY" };

int
keys_index(const char *provider)
{
	for (int i = 0; i < KEYS_PROVIDERS; i++)
		if (provider && strcmp(provider, keys_names[i]) == 0)
			return i;
	return -EINVAL;
}

const char *
keys_env_name(int idx)
{
	return idx >= 0 && idx < KEYS_PROVIDERS ? keys_envs[idx] : "";
}

const char *
keys_get(const struct keys *k, const char *provider)
{
	int i = keys_index(provider);

	return i >= 0 && k->key[i][0] ? k->key[i] : NULL;
}

void
keys_clear(struct keys *k)
{
	explicit_bzero(k, sizeof(*k));
}

/* Copy v with spaces trimmed at both ends into out.  0, -E2BIG, or
 * -EINVAL for a key that is not one line (the pipe's format needs that). */
static int
keys_set(char *out, const char *v, size_t n)
{
	while (n && isspace((unsigned char)*v))
		v++, n--;
	while (n && isspace((unsigned char)v[n - 1]))
		n--;
	if (n >= KEYS_MAX)
		return -E2BIG;
	if (memchr(v, '\n', n) || memchr(v, '\r', n) || memchr(v, '\0', n))
		return -EINVAL;
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

/* The key file's key into out.  0 or -errno (reason in err). */
static int
keys_from_file(char *out, const char *path, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int r = read_small_file(path, KEYS_FILE_MAX, &text, &len);

	if (r < 0) {
		snprintf(err, errlen, "cannot read the API key file %s: %s",
		    path, strerror(-r));
		return r;
	}
	r = keys_set(out, text, len);
	explicit_bzero(text, len);
	free(text);
	if (r < 0) {
		explicit_bzero(out, KEYS_MAX);
		snprintf(err, errlen, "the API key in %s must be one line of "
		    "at most %d bytes", path, KEYS_MAX - 1);
		return -EINVAL;
	}
	return 0;
}

int
keys_load(struct keys *k, const struct config *c, char *err, size_t errlen)
{
	int own = keys_index(c->provider);

	keys_clear(k);
	for (int i = 0; i < KEYS_PROVIDERS; i++) {
		const char *v = getenv(keys_envs[i]);
		int r;

		if (i == own && c->api_key_file[0]) {
			if ((r = keys_from_file(k->key[i], c->api_key_file,
			    err, errlen)) < 0) {
				keys_clear(k);
				return r;
			}
			continue;
		}
		if (v && keys_set(k->key[i], v, strlen(v)) < 0) {
			keys_clear(k);
			snprintf(err, errlen, "%s must be one line of at most "
			    "%d bytes", keys_envs[i], KEYS_MAX - 1);
			return -EINVAL;
		}
	}
	return 0;
}

void
keys_scrub_env(void)
{
	for (int i = 0; i < KEYS_PROVIDERS; i++) {
		char *v = getenv(keys_envs[i]);

		if (v)
			explicit_bzero(v, strlen(v));
		unsetenv(keys_envs[i]);
	}
}

/* k as the wire's lines into wire (KEYS_WIRE_MAX): their length. */
static size_t
keys_wire(const struct keys *k, char *wire)
{
	size_t n = 0;

	for (int i = 0; i < KEYS_PROVIDERS; i++)
		if (k->key[i][0])
			n += (size_t)snprintf(wire + n, KEYS_WIRE_MAX - n,
			    "%s %s\n", keys_names[i], k->key[i]);
	return n;
}

int
keys_send(int fd, const struct keys *k)
{
	char wire[KEYS_WIRE_MAX];
	size_t n = keys_wire(k, wire);
	ssize_t sent;

	/* A zero-length message would read as the channel's end. */
	if (n == 0)
		wire[n++] = '\n';
	sent = send(fd, wire, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	explicit_bzero(wire, sizeof(wire));
	if (sent < 0)
		return -errno;
	return (size_t)sent == n ? 0 : -EMSGSIZE;
}

int
keys_channel(const struct keys *k, int *mine)
{
	int sv[2], r;

	*mine = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if ((r = keys_send(sv[0], k)) < 0) {
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	*mine = sv[0];
	return sv[1];
}

int
keys_is_channel(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* One "PROVIDER KEY" line (n bytes, no newline) into k.  0 or -EINVAL. */
static int
keys_parse_line(struct keys *k, const char *line, size_t n)
{
	const char *sp = memchr(line, ' ', n);
	char name[16];
	int i;

	if (!sp || (size_t)(sp - line) >= sizeof(name))
		return -EINVAL;
	memcpy(name, line, (size_t)(sp - line));
	name[sp - line] = '\0';
	if ((i = keys_index(name)) < 0)
		return -EINVAL;
	return keys_set(k->key[i], sp + 1, n - (size_t)(sp + 1 - line)) < 0 ?
	    -EINVAL : 0;
}

/* The wire's n bytes into k: 0, or -EINVAL with the reason in err.  An
 * empty line (a channel's empty set) holds no key. */
static int
keys_parse(struct keys *k, const char *wire, size_t n, int fd, char *err,
    size_t errlen)
{
	for (size_t at = 0; at < n;) {
		const char *nl = memchr(wire + at, '\n', n - at);

		if (!nl || (nl > wire + at && keys_parse_line(k, wire + at,
		    (size_t)(nl - (wire + at))) < 0)) {
			snprintf(err, errlen, "the keys' fd %d holds a bad "
			    "line: atriumd and atrium-agent must be of one "
			    "version", fd);
			keys_clear(k);
			return -EINVAL;
		}
		at = (size_t)(nl + 1 - wire);
	}
	return 0;
}

int
keys_read_fd(struct keys *k, int fd, char *err, size_t errlen)
{
	char wire[KEYS_WIRE_MAX];
	size_t n = 0;
	ssize_t got;
	int r = 0;

	keys_clear(k);
	while (n < sizeof(wire) && (got = read(fd, wire + n,
	    sizeof(wire) - n)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			snprintf(err, errlen, "cannot read the keys' fd %d: %s",
			    fd, strerror(errno));
			break;
		}
		n += (size_t)got;
	}
	close(fd);
	if (r == 0)
		r = keys_parse(k, wire, n, fd, err, errlen);
	explicit_bzero(wire, sizeof(wire));
	return r;
}

int
keys_recv(struct keys *k, int fd, char *err, size_t errlen)
{
	char wire[KEYS_WIRE_MAX];
	ssize_t got;
	int r;

	keys_clear(k);
	do
		got = recv(fd, wire, sizeof(wire), MSG_DONTWAIT | MSG_TRUNC);
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		r = -errno;
		if (r != -EAGAIN)
			snprintf(err, errlen, "cannot read the keys' channel "
			    "%d: %s", fd, strerror(errno));
	} else if (got == 0) {
		r = -EPIPE;
	} else if ((size_t)got > sizeof(wire)) {
		r = -EINVAL;
		snprintf(err, errlen, "the keys' channel %d sent %zd bytes, "
		    "more than any set of keys", fd, got);
	} else {
		r = keys_parse(k, wire, (size_t)got, fd, err, errlen);
	}
	explicit_bzero(wire, sizeof(wire));
	return r;
}

/*
 * keys.h: the operator's API keys, one per provider (keys.c).
 *
 * Where a key comes from: api-key-file holds the key of the provider it
 * was given with (the configured provider); otherwise ANTHROPIC_API_KEY is
 * anthropic's and OPENAI_API_KEY openai's.  A key is only ever sent to its
 * own provider: nothing maps one provider's key onto another.
 *
 * How a key travels: atriumd loads the keys once at start (keys_load),
 * wipes the variables from its own environment (keys_scrub_env), and hands
 * them to each atrium-agent on a channel it inherits (keys_channel below,
 * the agent's --keys-fd), never in the environment or on the command
 * line, which /proc/PID/environ and ps show.  An atrium-agent started by
 * hand loads them itself (or reads them from a pipe) and wipes its
 * environment the same way.
 *
 * On the wire: one "PROVIDER KEY\n" line per key held, nothing else.
 */
#ifndef ATRIUM_KEYS_H
#define ATRIUM_KEYS_H

#include <stddef.h>

#include "config.h"

enum keys_provider { KEYS_ANTHROPIC, KEYS_OPENAI, KEYS_PROVIDERS };

#define KEYS_MAX	4096	/* bytes of one key, its NUL included */

struct keys {
	char key[KEYS_PROVIDERS][KEYS_MAX];	/* "" when none; never logged */
};

/* The index of provider ("anthropic", "openai"), or -EINVAL. */
int keys_index(const char *provider);

/* The environment variable holding provider idx's key. */
const char *keys_env_name(int idx);

/* provider's key, or NULL when it has none (or is unknown). */
const char *keys_get(const struct keys *k, const char *provider);

/* Load every provider's key: api-key-file for c->provider, the
 * environment for the rest (and for c->provider when no file is set).
 * 0, or -errno with the reason in err (the key file unreadable, a key
 * too long).  k is cleared first. */
int keys_load(struct keys *k, const struct config *c, char *err,
    size_t errlen);

/* Overwrite the key variables' values in place (so /proc/PID/environ no
 * longer shows them) and remove them from the environment. */
void keys_scrub_env(void);

/* Read the keys from fd to its end, and close it.  0, or -EINVAL / -errno
 * with the reason in err.  k is cleared first. */
int keys_read_fd(struct keys *k, int fd, char *err, size_t errlen);

/*
 * A keys channel: how atriumd hands a running agent new keys (a reload
 * that changed a key file) without restarting it.  A SOCK_SEQPACKET pair
 * made per agent: the agent inherits one end as its --keys-fd, atriumd's
 * monitor keeps the other, and nothing else can reach it (unlike the
 * agent's socket, which the network process dials).  Each message is one
 * whole set of keys, the pipe's lines; an empty set is a lone "\n".
 */

/* A channel whose first message is k: the agent's end (O_CLOEXEC), with
 * atriumd's end in *mine; or -errno. */
int keys_channel(const struct keys *k, int *mine);

/* Send k as the channel's next message, without blocking: 0 or -errno. */
int keys_send(int fd, const struct keys *k);

/* 1 when fd is a keys channel (a socket) rather than a pipe. */
int keys_is_channel(int fd);

/* Receive one message from a channel into k (cleared first): 0, -EPIPE
 * when atriumd closed its end, -EAGAIN when nothing waits, or -EINVAL /
 * -errno with the reason in err.  fd stays open. */
int keys_recv(struct keys *k, int fd, char *err, size_t errlen);

/* Forget every key (explicit_bzero). */
void keys_clear(struct keys *k);

#endif

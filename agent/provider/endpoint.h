/*
 * endpoint.h: where the room's model requests go, and with which key
 * (endpoint.c).
 *
 * A room chooses its provider (a `config` line), never a URL or a key:
 * both are the operator's, per provider (config.h, keys.h).  A provider's
 * requests go to the operator's URL for it, or, when the operator set none
 * but holds its key, to its public URL; they carry that provider's own key
 * and no other.  A provider with neither a key nor a URL is not configured:
 * a room cannot switch to it and a turn on it says how to configure one.
 */
#ifndef ATRIUM_AGENT_ENDPOINT_H
#define ATRIUM_AGENT_ENDPOINT_H

#include <stddef.h>

struct agent;

struct endpoint {
	const char *url;	/* base URL */
	const char *key;	/* the provider's own key, or NULL */
};

/* provider's endpoint.  0 with *e, -ENOENT when the operator configured
 * neither a key nor a URL for it, -EINVAL when it is unknown. */
int endpoint_get(const struct agent *a, const char *provider,
    struct endpoint *e);

/* 1 when endpoint_get would succeed. */
int endpoint_ready(const struct agent *a, const char *provider);

/* What to tell the room when provider is not configured.  Pure. */
void endpoint_missing(char *out, size_t outlen, const char *provider);

#endif

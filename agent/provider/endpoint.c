/*
 * endpoint.c: a provider's URL and key (endpoint.h), from the operator's
 * settings (a->cfg) and keys (a->keys) only: nothing here reads the room's
 * settings, so no room can steer a key to another URL.
 */
#include "endpoint.h"

#include <errno.h>
#include <stdio.h>

#include "agent.h"
#include "keys.h"

int
endpoint_get(const struct agent *a, const char *provider, struct endpoint *e)
{
	const char *url;

	e->url = NULL;
	e->key = NULL;
	if (keys_index(provider) < 0)
		return -EINVAL;
	url = config_provider_url(&a->cfg, provider);
	e->key = keys_get(&a->keys, provider);
	if (!url[0] && !e->key)
		return -ENOENT;
	e->url = url[0] ? url : config_public_url(provider);
	return 0;
}

int
endpoint_ready(const struct agent *a, const char *provider)
{
	struct endpoint e;

	return endpoint_get(a, provider, &e) == 0;
}

void
endpoint_missing(char *out, size_t outlen, const char *provider)
{
	int i = keys_index(provider);

	snprintf(out, outlen, "provider %s is not configured on this server: "
	    "its operator has given it neither a key (%s in atriumd's "
	    "environment, or --api-key-file with --provider %s) nor a URL "
	    "(--%s-url URL, or --model-url with --provider %s)", provider,
	    i >= 0 ? keys_env_name(i) : "?", provider, provider, provider);
}

/*
 * banner.h: atriumd's start-up lines for the operator, one log line each:
 *
 *   INFO banner_host_key: host key /var/lib/atrium/hostkey: 256 SHA256:... (ED25519)
 *   INFO banner_model: model claude-sonnet-4-5 (anthropic) at https://...; API key configured
 *   WARN banner_model: ... NO API key configured: the agent cannot answer ...
 *
 * The fingerprint is written as `ssh-keygen -lf DATA/hostkey` writes it, so
 * the operator can give it to users to check on their first connect.
 */
#ifndef ATRIUMD_BANNER_H
#define ATRIUMD_BANNER_H

#include "config.h"
#include "keys.h"

/* Log the host key's fingerprint line; a key that cannot be read is
 * logged as such (monitor_loop_bind reports it again and fails). */
void banner_host_key(const struct config *c);

/* Log the model, its URL and whether its provider has a key (a warning
 * when it has none). */
void banner_model(const struct config *c, const struct keys *k);

#endif

/*
 * http_token.h: a bearer token to the identity it acts for, for the
 * monitor's HTTP front (http_token.c, over tokens.h's tokens_identity).
 * The token is never logged; its id is.
 */
#ifndef ATRIUMD_HTTP_TOKEN_H
#define ATRIUMD_HTTP_TOKEN_H

#include <stddef.h>

struct monitor;
struct monitor_identity;

/* Resolve token, used from addr: its key's line checked as for an SSH
 * session (removed, expired, from=), then the token's grant copied into
 * *id (read_only, token_rooms and rooms).  0; -EACCES with why for a bad,
 * unknown, expired or revoked token or a key that may not be used now. */
int http_token_identity(struct monitor *srv, const char *token,
    const char *addr, struct monitor_identity *id, char *why, size_t len);

#endif

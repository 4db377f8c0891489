/*
 * http_token.c: bearer tokens for the HTTP front (http_token.h).  Until
 * the tokens store exists in this tree every token is refused.
 */
#include "http_token.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "monitor_identity.h"

/* See http_token.h. */
int
http_token_identity(struct monitor *srv, const char *token, const char *addr,
    struct monitor_identity *id, char *why, size_t len)
{
	(void)srv;
	(void)token;
	(void)addr;
	memset(id, 0, sizeof(*id));
	snprintf(why, len, "no such token");
	return -EACCES;
}

/*
 * requests.h: what each line a connection sends asks for (requests.c): a
 * table of request types, who may send each, and their handlers.  agent_main.c
 * gives requests_hooks to the connection layer (conn_listen).
 */
#ifndef ATRIUM_AGENT_REQUESTS_H
#define ATRIUM_AGENT_REQUESTS_H

#include "conn.h"

extern const struct conn_hooks requests_hooks;

#endif

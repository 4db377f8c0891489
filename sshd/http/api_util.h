/*
 * api_util.h: small pieces the command and seed routes share (api_util.c):
 * query arguments (atriumd-http unescapes no URL as a whole, so each value
 * is decoded here), the request's JSON body, a working directory check,
 * the monitor's pipes, an event's time, base64, and a waiting client's
 * hangup.
 */
#ifndef ATRIUMD_API_UTIL_H
#define ATRIUMD_API_UTIL_H

#include <stddef.h>

#include <json-c/json.h>

#include "buf.h"
#include "loop.h"

struct http_req;

#define API_QUERY_MAX	8192	/* one decoded query value */

/* The query argument key of r, decoded (%XX, '+' as space) into out: out,
 * or NULL when absent, badly escaped, holding a NUL or longer than len. */
const char *api_query(struct http_req *r, const char *key, char *out,
    size_t len);

/* Every value of key, decoded, as a JSON array (at most max of them), or
 * NULL when there is none (or one is bad). */
json_object *api_query_all(struct http_req *r, const char *key, int max);

/* r's JSON body as an object, or NULL with why (400) for the client. */
json_object *api_body_object(struct http_req *r, char *why, size_t len);

/* 1 when cwd names /workspace or a directory below it (absolute, or
 * relative to /workspace), without a ".." that climbs out; else 0. */
int api_cwd_valid(const char *cwd);

/* Three pipes from the monitor for a command's stdin, stdout, stderr
 * (p[i][0] read end, p[i][1] write end).  0 or -errno. */
int api_ask_pipes(struct http_req *r, int p[3][2]);


/* A suspended request's client, watched for going away: MHD polls no
 * suspended connection, so a client that hangs up while its request waits
 * (for a room, a command's output or end, a turn) would be noticed only
 * at the next byte sent to it; a silent command would run on for nobody.
 * On a hangup, gone is set and the request resumed: its route then fails
 * it (MHD_NO, or the end of its response with an error), and MHD's
 * completion frees what the request held. */
struct api_hangup {
	struct watch w;			/* on the connection's socket */
	struct http_req *r;
	int gone;			/* the client hung up */
};

/* Start watching r's client (h lives in r's route state). */
void api_hangup_watch(struct api_hangup *h, struct http_req *r);

/* Stop (before the socket is handed over, and when the request ends). */
void api_hangup_stop(struct api_hangup *h);

/* Append the base64 of p[0..n) to b (no newline). */
void api_base64(struct buf *b, const char *p, size_t n);

#endif

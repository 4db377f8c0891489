/*
 * api_capture.h: one command run in a room with its output captured, for
 * the routes that answer one JSON object (api_capture.c): Cloudflare's
 * POST /c/{name}/exec and Duet's POST /api/rooms/{room}/sandbox/exec.
 * The room captures stdout and stderr itself (the room protocol's exec
 * without fds: each at most 1 MiB, as valid UTF-8, "truncated" when cut),
 * so no output passes through this process until the command ended.
 *
 * A route's handler is api_capture_serve, each time MHD calls it: the
 * route's begin calls api_capture_begin once (it becomes the request's
 * ctx), and its answer gets the result once it is in; the request stays
 * suspended meanwhile.
 */
#ifndef ATRIUMD_API_CAPTURE_H
#define ATRIUMD_API_CAPTURE_H

#include <json-c/json.h>

struct http_req;
struct api_capture;

/* Start spec (command or argv, cwd: taken) in r's room as r's ctx,
 * counted against its user's max-commands-per-user (http_cap.h) until it
 * is over.  0, or -ENOMEM, or -EBUSY (over the cap: 429 with the
 * monitor's words) with r answered. */
int api_capture_begin(struct http_req *r, json_object *spec);

/* r's capture, or NULL before api_capture_begin. */
struct api_capture *api_capture_of(struct http_req *r);

/* 1 when the command is over (or refused); 0 with r suspended until it
 * is; -1 when the client went away (the route answers MHD_NO, and the
 * command is killed with the request's end). */
int api_capture_wait(struct http_req *r, struct api_capture *c);

/* Once over: the room's exec_result (borrowed), or NULL with *status and
 * *why for the client (the room refused it, or could not be reached). */
json_object *api_capture_result(struct api_capture *c, unsigned *status,
    const char **why);

/* The spec it runs (borrowed). */
json_object *api_capture_spec(struct api_capture *c);

/* Milliseconds from api_capture_begin to the end. */
long long api_capture_ms(const struct api_capture *c);

/* A capture route's handler, every time MHD calls it: begin(r) the first
 * time (it calls api_capture_begin, or answers r itself); then wait;
 * once over, the refusal's error reply, or answer(r, res) with the
 * room's exec_result (borrowed).  MHD's result. */
int api_capture_serve(struct http_req *r, int (*begin)(struct http_req *r),
    int (*answer)(struct http_req *r, json_object *res));

#endif

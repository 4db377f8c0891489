/*
 * api_talk.h: one request's conversation with its room over the room
 * protocol (api_talk.c), for the seed routes that turn one HTTP request
 * into a few room requests and the events that answer them: Duet's
 * message (a prompt, answered at its turn's end), rhema's config and
 * session.
 *
 * api_talk_begin opens a control connection (its hello replays history
 * events), sends the route's lines once it is up, and hands every line
 * of the room to the route's on_line until that says the talk is over
 * (api_talk_over) or the room fails it.  The route's handler is
 * api_talk_serve, each time MHD calls it, with the route's begin and
 * answer; the request stays suspended until the talk is over.  The talk is the request's ctx; arg is the
 * route's own state, freed with it by free_arg.
 */
#ifndef ATRIUMD_API_TALK_H
#define ATRIUMD_API_TALK_H

#include <json-c/json.h>

struct http_req;
struct api_talk;

/* A line of the room (replayed ones have "replay": true). */
typedef void (*api_talk_line_fn)(struct api_talk *t, json_object *obj);

/* Open r's room as a control connection replaying history events, send
 * lines (a JSON array of objects, taken) once connected, and feed on_line.
 * 0, or -ENOMEM with r answered (arg freed). */
int api_talk_begin(struct http_req *r, long long history, json_object *lines,
    api_talk_line_fn on_line, void *arg, void (*free_arg)(void *));

/* r's talk, or NULL before api_talk_begin. */
struct api_talk *api_talk_of(struct http_req *r);

/* The route's state given to api_talk_begin. */
void *api_talk_arg(struct api_talk *t);

/* The talk's user (the token's), for matching the room's echo. */
const char *api_talk_user(struct api_talk *t);

/* Send one more line (borrowed).  0 or -errno. */
int api_talk_send(struct api_talk *t, json_object *line);

/* The talk is over: status 0 for success, else the failure's status and
 * why.  Only the first call counts. */
void api_talk_over(struct api_talk *t, unsigned status, const char *why);

/* 1 when over, with *status and *why (borrowed) as api_talk_over set
 * them; 0 with r suspended until it is; -1 when the client went away
 * (the route answers MHD_NO). */
int api_talk_wait(struct http_req *r, struct api_talk *t, unsigned *status,
    const char **why);

/* A talk route's handler, every time MHD calls it: begin(r) the first
 * time (it calls api_talk_begin, or answers r itself); then wait; once
 * the talk is over, the failure's error reply, or answer(r, arg) with
 * the route's state.  MHD's result. */
int api_talk_serve(struct http_req *r, int (*begin)(struct http_req *r),
    int (*answer)(struct http_req *r, void *arg));

#endif

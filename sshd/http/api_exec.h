/*
 * api_exec.h: POST /api/rooms/{room}/exec (api_exec.c): stdin is the
 * request body, stdout and stderr stream back as JSON lines, the exit
 * status last.  Its row: HTTP_AUTH | HTTP_CHANGES | HTTP_BODY_STREAM.
 */
#ifndef ATRIUMD_API_EXEC_H
#define ATRIUMD_API_EXEC_H

#include <stddef.h>
#include <sys/types.h>

struct http_req;

/* A piece of the body, for the command's stdin (http_routes.h). */
ssize_t api_exec_body(struct http_req *r, const char *data, size_t len);

/* The body is in (or there is none): answer with the command's output. */
int api_exec_run(struct http_req *r);

#endif

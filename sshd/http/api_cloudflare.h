/*
 * api_cloudflare.h: Cloudflare's workspace example, its exec route
 * (api_cloudflare.c): POST /c/{name}/exec, where the computer's name is a
 * room's.  Its file routes (PUT and GET /c/{name}/file/workspace/{path})
 * are the file routes' (api_files).
 */
#ifndef ATRIUMD_API_CLOUDFLARE_H
#define ATRIUMD_API_CLOUDFLARE_H

struct http_req;

/* POST /c/{name}/exec: {"command"} or {"argv"}, optional "cwd" (inside
 * /workspace, the default) and "encoding" ("utf8"), answered with
 * {"exitCode","stdout","stderr"} once the command ended. */
int api_cloudflare_exec(struct http_req *r);

#endif

/*
 * api_cloudflare.c: POST /c/{name}/exec as Cloudflare's workspace example
 * answers it (api_cloudflare.h), over the room's captured exec
 * (api_capture.h).  What maps to what:
 *
 *   {"command": TEXT}       exec command (bash -c), as the example's
 *                           runtime runs it through a shell
 *   {"argv": [WORDS]}       exec argv, run directly (the example quotes
 *                           the words into one shell line: the same
 *                           program runs with the same words)
 *   "cwd"                   exec cwd; absent: /workspace; outside
 *                           /workspace or with "..": 400, as the example
 *                           refuses any path outside its mount
 *   "encoding"              "utf8" (the example's only one) or absent;
 *                           anything else: 400
 *   200 {exitCode, stdout, stderr}
 *                           the room's exec_result; stdout and stderr are
 *                           each cut at 1 MiB (the room's capture) and
 *                           then "truncated": true is added
 *   {"error"} with 400, 403, 503
 *                           a bad body, a refused token or room, a room
 *                           that cannot be reached
 */
#include "api_cloudflare.h"

#include <stdio.h>
#include <string.h>

#include <microhttpd.h>

#include "api_capture.h"
#include "api_util.h"
#include "http_req.h"
#include "jsonl.h"

/* A non-empty array of strings. */
static int
api_cf_argv_valid(json_object *argv)
{
	size_t n;

	if (!json_object_is_type(argv, json_type_array) ||
	    (n = json_object_array_length(argv)) == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(argv, i),
		    json_type_string))
			return 0;
	return 1;
}

/* The exec spec of a body; NULL with why (a 400). */
static json_object *
api_cf_spec(json_object *body, char *why, size_t len)
{
	const char *cmd = json_get_string(body, "command");
	const char *cwd = json_get_string(body, "cwd");
	const char *enc = json_get_string(body, "encoding");
	json_object *argv = NULL, *spec;

	json_object_object_get_ex(body, "argv", &argv);
	if (!(cmd && cmd[0]) && !(argv && api_cf_argv_valid(argv))) {
		snprintf(why, len, "must provide command or argv");
		return NULL;
	}
	if (cwd && !api_cwd_valid(cwd)) {
		snprintf(why, len, "cwd must sit under /workspace; got %.200s",
		    cwd);
		return NULL;
	}
	if (enc && strcmp(enc, "utf8") != 0 && strcmp(enc, "utf-8") != 0) {
		snprintf(why, len, "encoding must be \"utf8\"");
		return NULL;
	}
	spec = json_object_new_object();
	if (cmd && cmd[0])
		json_object_object_add(spec, "command",
		    json_object_new_string(cmd));
	else
		json_object_object_add(spec, "argv", json_object_get(argv));
	json_object_object_add(spec, "cwd",
	    json_object_new_string(cwd ? cwd : "/workspace"));
	return spec;
}

/* The answer for the room's exec_result. */
static int
api_cf_answer(struct http_req *r, json_object *res)
{
	json_object *o = json_object_new_object();
	const char *out = json_get_string(res, "stdout");
	const char *err = json_get_string(res, "stderr");
	int ret;

	json_object_object_add(o, "exitCode",
	    json_object_new_int((int)json_get_int(res, "exitCode", 255)));
	json_object_object_add(o, "stdout", json_object_new_string(out ?: ""));
	json_object_object_add(o, "stderr", json_object_new_string(err ?: ""));
	if (json_get_bool(res, "truncated", 0))
		json_object_object_add(o, "truncated",
		    json_object_new_boolean(1));
	ret = http_reply_json(r, 200, o);
	json_object_put(o);
	return ret;
}

/* Start: the body's command, run and captured. */
static int
api_cf_begin(struct http_req *r)
{
	json_object *body, *spec;
	char why[512];

	if (!(body = api_body_object(r, why, sizeof(why))))
		return http_reply_error(r, 400, why);
	spec = api_cf_spec(body, why, sizeof(why));
	json_object_put(body);
	if (!spec)
		return http_reply_error(r, 400, why);
	api_capture_begin(r, spec);
	return MHD_YES;
}

/* See api_cloudflare.h. */
int
api_cloudflare_exec(struct http_req *r)
{
	return api_capture_serve(r, api_cf_begin, api_cf_answer);
}

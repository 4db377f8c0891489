/*
 * http_cap.c: cmd_begin and cmd_end for atriumd-http's commands
 * (http_cap.h).  Called by api_exec.c, api_capture.c, http_ws.c and
 * http_stream.c.
 */
#include "http_cap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "http_ask.h"
#include "http_server.h"
#include "jsonl.h"
#include "log.h"

/* See http_cap.h. */
int
http_cap_take(struct http_server *srv, const char *token, const char *addr,
    struct http_cap *cap, char *why, size_t len)
{
	json_object *ans;
	const char *user;
	int r;

	snprintf(why, len, "command refused: the server cannot count it now; "
	    "try again");
	if ((r = http_ask(srv, http_ask_make("cmd_begin", token, addr, NULL),
	    &ans, NULL, NULL, 0)) < 0)
		return r;
	user = json_get_string(ans, "user");
	if (json_get_bool(ans, "ok", 0) && user &&
	    (!cap->held || strcmp(cap->user, user) == 0) &&
	    strlen(user) < sizeof(cap->user)) {
		snprintf(cap->user, sizeof(cap->user), "%s", user);
		cap->held++;
		r = 0;
	} else if (json_get_bool(ans, "ok", 0)) {
		/* Counted for someone this holder does not hold for (its
		 * token now names another user): give it back. */
		struct http_cap other = { .held = 1 };

		snprintf(other.user, sizeof(other.user), "%.63s", user ?: "");
		http_cap_release(srv, &other);
		log_warn("a command counted for another user than its "
		    "stream's; refused");
		r = -EPROTO;
	} else {
		snprintf(why, len, "%s", json_get_string(ans, "error") ?:
		    "command refused by the server");
		r = 1;
	}
	json_object_put(ans);
	return r;
}

/* Send cmd_end for n of cap's commands. */
static void
http_cap_give(struct http_server *srv, struct http_cap *cap, int n)
{
	json_object *req = json_object_new_object(), *ans;

	if (!req || n <= 0 || !cap->user[0]) {
		json_object_put(req);
		return;
	}
	json_object_object_add(req, "type", json_object_new_string("cmd_end"));
	json_object_object_add(req, "user", json_object_new_string(cap->user));
	json_object_object_add(req, "n", json_object_new_int(n));
	if (http_ask(srv, req, &ans, NULL, NULL, 0) == 0)
		json_object_put(ans);
	cap->held -= n;
}

/* See http_cap.h. */
void
http_cap_sync(struct http_server *srv, struct http_cap *cap, int running)
{
	if (cap->held > running)
		http_cap_give(srv, cap, cap->held - running);
}

/* See http_cap.h. */
void
http_cap_release(struct http_server *srv, struct http_cap *cap)
{
	http_cap_give(srv, cap, cap->held);
}

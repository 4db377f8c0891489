/*
 * fuzz_http_bodies.c: libFuzzer entry point for what atriumd-http makes
 * of a client's JSON: the request body (api_body_object), Cloudflare's
 * exec body (command or argv, cwd, encoding: api_cloudflare.c), Duet's
 * fields (api_duet.c), rhema's session config (api_rhema.c) and its
 * WebSocket messages (api_rhema_ws.c), a room event as rhema names it,
 * and the cleaning of a chat's or prompt's text that the WebSocket
 * applies (room_request.c, linked).
 * Those files are included, not linked, for their static parsers.
 *
 * The input is a request body as it came (any bytes).  What a parser
 * accepts must be what the room is then sent: a Cloudflare spec has a
 * non-empty command or a non-empty argv of strings, and a cwd under
 * /workspace; a rhema config line is a config of the room's own policy
 * names and fields only; a rhema message becomes a prompt, an approve
 * with a boolean, or a stop; a cleaned text has no control byte but tab
 * and newline.  A refusal says why.
 */
#include "../../sshd/http/api_cloudflare.c"
#include "../../sshd/http/api_duet.c"
#include "../../sshd/http/api_rhema.c"
#include "../../sshd/http/api_rhema_ws.c"
#include "../../sshd/http/http_ws.c"

#include "fuzz.h"

/* Cloudflare's exec body: the spec sent to the room, or why not. */
static void
check_cloudflare(json_object *body)
{
	char why[256] = "";
	json_object *spec = api_cf_spec(body, why, sizeof(why)), *argv;
	const char *cmd;

	if (!spec) {
		FUZZ_CHECK(why[0]);
		return;
	}
	FUZZ_CHECK(api_cwd_valid(json_get_string(spec, "cwd")));
	cmd = json_get_string(spec, "command");
	if (cmd) {
		FUZZ_CHECK(cmd[0]);
	} else {
		FUZZ_CHECK(json_object_object_get_ex(spec, "argv", &argv));
		FUZZ_CHECK(api_cf_argv_valid(argv));
	}
	json_object_put(spec);
}

/* Duet's required text fields: non-blank when taken. */
static void
check_duet(json_object *body)
{
	static const char *const keys[] = { "cmd", "text", "userId" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *s = api_duet_text(body, keys[i]);

		if (s)
			FUZZ_CHECK(s[strspn(s, " \t\r\n")] != '\0');
	}
}

/* rhema's config: a room config line of known fields, or why not. */
static void
check_rhema_config(json_object *body)
{
	static const char *const allowed[] = { "type", "model", "approval",
	    "allow_list", "skills", NULL };
	char why[256];
	json_object *line = api_rhema_config_line(body, why, sizeof(why));
	const char *approval;

	if (!line)
		return;	/* why may be "": nothing but seed_git was set */
	FUZZ_CHECK(why[0] == '\0');
	FUZZ_CHECK(strcmp(json_get_string(line, "type"), "config") == 0);
	if ((approval = json_get_string(line, "approval")))
		FUZZ_CHECK(api_rhema_approval(approval, 0) != NULL);
	json_object_object_foreach(line, key, val) {
		int ok = 0;

		(void)val;
		for (int i = 0; allowed[i]; i++)
			ok |= strcmp(key, allowed[i]) == 0;
		FUZZ_CHECK(ok);
	}
	json_object_put(line);
}

/* rhema's WebSocket message: a prompt, approve or stop, or why not. */
static void
check_rhema_ws(json_object *m)
{
	const char *why = NULL, *type;
	json_object *o = api_rhema_ws_in(m, &why), *v;

	if (!o) {
		FUZZ_CHECK(why && why[0]);
		return;
	}
	type = json_get_string(o, "type");
	FUZZ_CHECK(type);
	if (strcmp(type, "prompt") == 0) {
		FUZZ_CHECK(json_get_string(o, "text"));
	} else if (strcmp(type, "approve") == 0) {
		FUZZ_CHECK(json_object_object_get_ex(o, "approve", &v) &&
		    json_object_is_type(v, json_type_boolean));
		FUZZ_CHECK(json_object_object_get_ex(o, "id", NULL));
	} else {
		FUZZ_CHECK(strcmp(type, "stop") == 0);
	}
	/* What is forwarded is cleaned as any client line is. */
	FUZZ_CHECK(room_request_clean(type, o) >= 0);
	if (strcmp(type, "prompt") == 0)
		for (const char *p = json_get_string(o, "text"); *p; p++) {
			unsigned char c = (unsigned char)*p;

			FUZZ_CHECK(c >= 0x20 || c == '\t' || c == '\n');
			FUZZ_CHECK(c != 0x7f);
		}
	json_object_put(o);
}

/* The body as a room event, shown to a rhema client. */
static void
check_rhema_event(json_object *ev)
{
	json_object *o = api_rhema_event(ev);

	if (!o)
		return;
	FUZZ_CHECK(json_get_string(o, "type"));
	FUZZ_CHECK(json_object_to_json_string(o) != NULL);
	json_object_put(o);
}

/* libFuzzer's entry: one request body. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_req *r = calloc(1, sizeof(*r));
	char why[256] = "";
	json_object *body;

	FUZZ_CHECK(r != NULL);
	buf_init(&r->body, 1 << 20);
	if (buf_append(&r->body, (const char *)data, size) < 0) {
		buf_free(&r->body);
		free(r);
		return 0;
	}
	body = api_body_object(r, why, sizeof(why));
	if (!body) {
		FUZZ_CHECK(why[0]);
	} else {
		FUZZ_CHECK(json_object_is_type(body, json_type_object));
		check_cloudflare(body);
		check_duet(body);
		check_rhema_config(body);
		check_rhema_ws(body);
		check_rhema_event(body);
		json_object_put(body);
	}
	buf_free(&r->body);
	free(r);
	return 0;
}

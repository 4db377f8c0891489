/*
 * fuzz_token_args.c: libFuzzer entry point for sshd/shared/token_args.c,
 * the words of `atrium-token` as a client sends them over SSH.
 *
 * The input is one command (cut at its first NUL, as the exec request's
 * text is).  Whatever the parser accepts, the network process sends to
 * the monitor, which reads it back with token_args_from_json and ends a
 * network process whose request it refuses: so every accepted command
 * must survive that trip unchanged.  What it accepts must also be clean:
 * room names valid and distinct, an expiry --expires takes, a name with no
 * control byte; and a refusal must say why.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "names.h"
#include "token_args.h"

/* What an accepted command holds is what the parser promises. */
static void
check_clean(const struct token_args *a)
{
	long long s;

	for (int i = 0; i < a->nrooms; i++) {
		FUZZ_CHECK(room_name_valid(a->rooms[i]));
		for (int j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(a->rooms[i], a->rooms[j]) != 0);
	}
	for (const char *p = a->name; *p; p++)
		FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
	if (a->op == TOKEN_OP_CREATE)
		FUZZ_CHECK(token_expires_parse(a->expires, &s) == 0);
}

/* The request's fields and back: the same, and accepted. */
static void
check_round_trip(const struct token_args *a)
{
	struct token_args back;
	json_object *req = json_object_new_object();

	FUZZ_CHECK(req != NULL);
	FUZZ_CHECK(token_args_to_json(a, req) == 0);
	/* What crosses the wire is text: parse it again as the monitor
	 * does. */
	json_object *wire = json_tokener_parse(json_object_to_json_string(req));

	FUZZ_CHECK(wire != NULL);
	FUZZ_CHECK(token_args_from_json(wire, &back) == 0);
	FUZZ_CHECK(token_args_same(a, &back));
	json_object_put(wire);
	json_object_put(req);
}

/* libFuzzer's entry: one command through the parser. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstring(data, size), why[300] = "";
	struct token_args a;
	int r = token_args_parse(s, &a, why, sizeof(why));

	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r < 0) {
		FUZZ_CHECK(why[0] != '\0');
	} else {
		FUZZ_CHECK(token_is_command(s));
		check_clean(&a);
		if (a.op != TOKEN_OP_HELP)
			check_round_trip(&a);
	}
	free(s);
	return 0;
}

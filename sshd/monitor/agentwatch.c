/*
 * agentwatch.c: the watchdog of agentwatch.h.  Called by room.c from its
 * tick (every turn of atriumd's loop); agentwatch_next tells the loop when
 * the next ping or the timeout is due, so the watchdog's are the only
 * wake-ups of a monitor whose rooms are idle.
 *
 * The probe measures the agent's loop, not its work: the pong is queued by
 * the agent's line handler and written before its loop sleeps, so an agent
 * busy with a long turn, a command or a slow model still answers within a
 * loop turn; only a loop that does not turn (stopped, stuck in a call,
 * spinning) stays silent.  Any line from the agent counts as an answer.
 * One ping is out at a time, every WATCH_PING_MS at most (a fraction of
 * the timeout), so a stopped agent costs one queued line, not a pile.
 * The connect is non-blocking (agentlink.c): a full backlog is one more
 * silent tick, never a stalled loop.
 */
#include "agentwatch.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "jsonl.h"
#include "util.h"

#define WATCH_PING_MS	2000	/* longest gap between pings */
#define WATCH_MIN_PING_MS 100

/* Copy the string key of obj into out, keeping letters, digits and
 * ._- only: it is printed on the operator's terminal. */
static void
agentwatch_copy_word(json_object *obj, const char *key, char *out,
    size_t size)
{
	const char *s = json_get_string(obj, key);
	size_t n = 0;

	for (; s && *s && n + 1 < size; s++)
		if (isalnum((unsigned char)*s) || strchr("._-", *s))
			out[n++] = *s;
	out[n] = '\0';
}

/* The turn a pong reports; a pong without a known phase reports none. */
static void
agentwatch_read_turn(struct agentwatch_turn *t, json_object *obj)
{
	static const char *const phases[] = { "idle", "context", "model",
		"retry", "approval", "tool" };
	const char *phase = json_get_string(obj, "phase");

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; phase && i < sizeof(phases) / sizeof(*phases); i++)
		if (strcmp(phase, phases[i]) == 0)
			snprintf(t->phase, sizeof(t->phase), "%s", phases[i]);
	if (!t->phase[0])
		return;
	t->turn = json_get_int(obj, "turn", 0);
	t->step = json_get_int(obj, "step", 0);
	t->queued = json_get_int(obj, "queued", 0);
	agentwatch_copy_word(obj, "user", t->user, sizeof(t->user));
	agentwatch_copy_word(obj, "tool", t->tool, sizeof(t->tool));
}

/* What a pong says of the agent's model requests: what grew since the
 * last pong is added to w->totals.  A count that went down is a new
 * count (the agent's counts are its process's life). */
static void
agentwatch_read_model(struct agentwatch *w, json_object *obj)
{
	json_object *m;
	long long v[MODEL_COUNTS], d[MODEL_COUNTS];
	char provider[MODEL_TOTALS_NAME];

	if (!json_object_object_get_ex(obj, "model", &m) ||
	    !json_object_is_type(m, json_type_object))
		return;
	for (int k = 0; k < MODEL_COUNTS; k++) {
		v[k] = json_get_int(m, model_count_names[k], -1);
		if (v[k] < 0 || v[k] > (1LL << 50))
			return;
		d[k] = v[k] >= w->model[k] ? v[k] - w->model[k] : v[k];
	}
	agentwatch_copy_word(m, "provider", provider, sizeof(provider));
	memcpy(w->model, v, sizeof(v));
	if (w->totals)
		model_totals_add(w->totals, provider, d);
}

/* Any line: the agent's loop turned since the ping.  A pong also says
 * what the turn is doing. */
static void
agentwatch_line(void *arg, json_object *obj, const char *line, size_t len)
{
	struct agentwatch *w = arg;
	const char *type = json_get_string(obj, "type");

	(void)line; (void)len;
	w->answered_ms = time_mono_ms();
	w->ping_out = 0;
	if (type && strcmp(type, "pong") == 0) {
		agentwatch_read_turn(&w->turn, obj);
		agentwatch_read_model(w, obj);
	}
	else if (type && strcmp(type, "access") == 0 && w->on_access)
		w->on_access(w->on_access_arg, obj);
}

/* The agent closed the connection: reconnect from the next tick (not
 * inside the link's own callback). */
static void
agentwatch_end(void *arg)
{
	struct agentwatch *w = arg;

	w->ended = 1;
}

void
agentwatch_init(struct agentwatch *w,
    void (*on_access)(void *arg, json_object *obj), void *arg)
{
	memset(w, 0, sizeof(*w));
	agentlink_init(&w->link);
	w->on_access = on_access;
	w->on_access_arg = arg;
}

void
agentwatch_start(struct agentwatch *w, long long now)
{
	agentwatch_stop(w);
	w->watching = 1;
	memset(w->model, 0, sizeof(w->model));	/* a new agent: from 0 */
	w->answered_ms = now;
	w->next_ping_ms = now;
}

void
agentwatch_stop(struct agentwatch *w)
{
	agentlink_close(&w->link);
	w->watching = w->hello_sent = w->ended = w->ping_out = 0;
	memset(&w->turn, 0, sizeof(w->turn));
}

/* Connect (again) and say hello.  0 or -errno. */
static int
agentwatch_connect(struct agentwatch *w, struct loop *loop,
    const char *run_dir)
{
	json_object *hello;
	int r;

	if (w->ended) {
		agentlink_close(&w->link);
		w->ended = w->hello_sent = w->ping_out = 0;
	}
	if (w->link.fd >= 0)
		return 0;
	r = agentlink_connect(&w->link, loop, run_dir, agentwatch_line,
	    agentwatch_end, w);
	if (r < 0)
		return r;
	hello = json_object_new_object();
	json_object_object_add(hello, "type", json_object_new_string("hello"));
	json_object_object_add(hello, "user", json_object_new_string("atriumd"));
	json_object_object_add(hello, "kind", json_object_new_string("monitor"));
	r = agentlink_send(&w->link, hello);
	json_object_put(hello);
	w->hello_sent = r == 0;
	return r;
}

int
agentwatch_tick(struct agentwatch *w, struct loop *loop, const char *run_dir,
    long long now, long long timeout_ms)
{
	long long every = timeout_ms / 4;
	static const char ping[] = "{\"type\":\"ping\"}";

	if (!w->watching || timeout_ms <= 0)
		return 0;
	if (now - w->answered_ms >= timeout_ms)
		return 1;
	if (now < w->next_ping_ms || w->ping_out)
		return 0;
	if (every > WATCH_PING_MS)
		every = WATCH_PING_MS;
	if (every < WATCH_MIN_PING_MS)
		every = WATCH_MIN_PING_MS;
	w->next_ping_ms = now + every;
	if (agentwatch_connect(w, loop, run_dir) < 0 || !w->hello_sent)
		return 0;
	if (agentlink_send_line(&w->link, ping, sizeof(ping) - 1) == 0)
		w->ping_out = 1;
	return 0;
}

/* See agentwatch.h. */
long long
agentwatch_next(const struct agentwatch *w, long long timeout_ms)
{
	long long hung;

	if (!w->watching || timeout_ms <= 0)
		return 0;
	hung = w->answered_ms + timeout_ms;
	if (w->ping_out || w->next_ping_ms >= hung)
		return hung;
	return w->next_ping_ms;
}

/*
 * test_sshd_agentlink.c: what atriumd takes from a room's agent link
 * (sshd/shared/agentlink.c) over a socketpair on the real loop.  An exec_done
 * uncounts a command only as the link line the agent sends (unstamped);
 * one that is stamped or replayed, as history could hold, never does, and
 * a replayed line of a type the room never stores (exec_done,
 * access_denied, synced) reaches no owner.  The room's own replayed
 * events pass.  Links that share a cache parse a room event once: each
 * owner is handed the same object; replays and other bytes are parsed
 * per link.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "unit.h"
#include "log.h"
#include "../../sshd/shared/agentlink.h"
#include "../../sshd/shared/loop.h"

/* What the owner was handed, each line's type in order. */
struct seen {
	char types[16][32];
	int n;
};

static void
on_line(void *arg, json_object *obj, const char *line, size_t len)
{
	struct seen *s = arg;
	const char *type = json_get_string(obj, "type");

	(void)line; (void)len;
	if (s->n < 16)
		snprintf(s->types[s->n++], sizeof(s->types[0]), "%s",
		    type ? type : "");
}

static void
on_end(void *arg)
{
	(void)arg;
}

/* Write text to the agent's end and let the loop take it. */
static void
agent_says(struct loop *loop, int agent, const char *text)
{
	CHECK_INT(write(agent, text, strlen(text)), (long long)strlen(text));
	loop_sync(loop);
	CHECK_INT(ssh_event_dopoll(loop->event, 1000), SSH_OK);
}

/* Two execs counted; what history could hold leaves both counted, and
 * reaches the owner only as the room's own stored types. */
static void
test_history_never_uncounts(void)
{
	struct agentlink l;
	struct loop loop;
	struct seen s = { .n = 0 };
	json_object *exec = json_object_new_object();
	int sv[2];

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_INT(loop_init(&loop), 0);
	agentlink_init(&l);
	CHECK_INT(agentlink_attach(&l, &loop, sv[0], on_line, on_end, &s), 0);
	json_object_object_add(exec, "type", json_object_new_string("exec"));
	CHECK_INT(agentlink_send_exec(&l, exec, NULL, 0), 0);
	CHECK_INT(agentlink_send_exec(&l, exec, NULL, 0), 0);
	CHECK_INT(agentlink_execs(&l), 2);
	agent_says(&loop, sv[1],
	    "{\"type\":\"exec_done\",\"replay\":true}\n"
	    "{\"type\":\"exec_done\",\"seq\":7,\"time\":\"t\"}\n"
	    "{\"type\":\"access_denied\",\"message\":\"bye\",\"replay\":true}\n"
	    "{\"type\":\"synced\",\"id\":\"h1\",\"replay\":true}\n"
	    "{\"type\":\"message\",\"user\":\"a\",\"text\":\"t\","
	    "\"replay\":true}\n");
	CHECK_INT(agentlink_execs(&l), 2);
	/* The stamped exec_done is a room event (no owner acts on one);
	 * the replayed internal types are gone. */
	CHECK_INT(s.n, 2);
	CHECK_STR(s.types[0], "exec_done");
	CHECK_STR(s.types[1], "message");
	/* The agent's own link line still uncounts, and is not passed on. */
	agent_says(&loop, sv[1], "{\"type\":\"exec_done\"}\n");
	CHECK_INT(agentlink_execs(&l), 1);
	CHECK_INT(s.n, 2);
	json_object_put(exec);
	agentlink_close(&l);
	loop_destroy(&loop);
	close(sv[1]);
}

/* The objects an owner was handed, in order. */
struct objs {
	json_object *o[8];
	int n;
};

static void
on_obj(void *arg, json_object *obj, const char *line, size_t len)
{
	struct objs *s = arg;

	(void)line; (void)len;
	if (s->n < 8)
		s->o[s->n++] = obj;
}

#define EVENT "{\"type\":\"message\",\"seq\":9,\"user\":\"a\",\"text\":\"hi\"}\n"
#define REPLAY "{\"type\":\"message\",\"seq\":3,\"replay\":true}\n"

/* Two members' links on one cache: the room's event once parsed, the
 * same object for both (still alive once both put theirs back: the
 * cache holds one); a replay parsed for each. */
static void
test_shared_parse(void)
{
	struct agentlink_cache cache;
	struct agentlink a, b;
	struct loop loop;
	struct objs sa = { .n = 0 }, sb = { .n = 0 };
	int pa[2], pb[2], first;

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, pa), 0);
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, pb), 0);
	CHECK_INT(loop_init(&loop), 0);
	agentlink_cache_init(&cache);
	agentlink_init(&a);
	agentlink_init(&b);
	a.cache = b.cache = &cache;
	CHECK_INT(agentlink_attach(&a, &loop, pa[0], on_obj, on_end, &sa), 0);
	CHECK_INT(agentlink_attach(&b, &loop, pb[0], on_obj, on_end, &sb), 0);
	agent_says(&loop, pa[1], EVENT);
	agent_says(&loop, pb[1], EVENT);
	CHECK_INT(sa.n, 1);
	CHECK_INT(sb.n, 1);
	CHECK(sa.o[0] == sb.o[0]);
	CHECK_INT(cache.parses, 1);
	CHECK_INT(cache.hits, 1);
	CHECK_STR(json_get_string(sb.o[0], "text"), "hi");
	agent_says(&loop, pa[1], REPLAY);
	agent_says(&loop, pb[1], REPLAY);
	CHECK_INT(cache.parses, 3);
	CHECK_INT(cache.hits, 1);
	first = pb[1];
	/* A link without the cache parses its own. */
	agentlink_close(&b);
	agentlink_init(&b);
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, pb), 0);
	CHECK_INT(agentlink_attach(&b, &loop, pb[0], on_obj, on_end, &sb), 0);
	agent_says(&loop, pb[1], EVENT);
	CHECK_INT(sb.n, 3);
	CHECK(sb.o[2] != sa.o[0]);
	CHECK_INT(cache.parses, 3);
	agentlink_close(&b);
	agentlink_close(&a);
	agentlink_cache_free(&cache);
	CHECK_INT(cache.parses, 0);
	loop_destroy(&loop);
	close(pa[1]);
	close(first);
	close(pb[1]);
}

int
main(void)
{
	log_set_level(LOG_ERROR);
	TEST(test_history_never_uncounts);
	TEST(test_shared_parse);
	return unit_done("test_sshd_agentlink");
}

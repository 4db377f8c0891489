/*
 * test_sshd_agentlink.c: what atriumd takes from a room's agent link
 * (sshd/shared/agentlink.c) over a socketpair on the real loop.  An exec_done
 * uncounts a command only as the link line the agent sends (unstamped);
 * one that is stamped or replayed, as history could hold, never does, and
 * a replayed line of a type the room never stores (exec_done,
 * access_denied, synced) reaches no owner.  The room's own replayed
 * events pass.
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

int
main(void)
{
	log_set_level(LOG_ERROR);
	TEST(test_history_never_uncounts);
	return unit_done("test_sshd_agentlink");
}

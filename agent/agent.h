/*
 * agent.h: the state of one atrium-agent process, the actor of one room.
 * agent_main.c fills it; the loop's callbacks in conn.c and requests.c
 * (connections and their requests), turn.c and the turn_ files beside it
 * (the agent's turns), exec.c (people's commands) and http.c (model
 * requests) share it.  One thread: no locks.
 */
#ifndef ATRIUM_AGENT_AGENT_H
#define ATRIUM_AGENT_AGENT_H

#include <limits.h>
#include <json-c/json.h>

#include "cgroup.h"
#include "config.h"
#include "keys.h"
#include "sandbox.h"

struct loop;
struct room_db;
struct http;
struct conn;
struct conn_hooks;
struct journal;
struct input_rates;
struct turn;
struct consent;
struct file_upload;
struct exec;
struct term;
struct dirworker;
struct mcp;
struct model_window;

#define AGENT_DEFAULT_TOOL_TIMEOUT 120	/* s, the bash tool without a limit */

/* What a model server's refusals taught of its model (context.c:
 * context_learn_refusal), for the provider and model it was learned of:
 * another model starts from nothing again.  Kept in room.db too
 * (model_fit.h), so a restarted agent starts from it. */
struct model_fit {
	char provider[16];
	char model[128];
	long window;			/* the server's window, tokens; 0 */
	long scale_pm;			/* the server's tokens per 1000 of the
					 * agent's estimate (>= 1000), or 0 */
	int asked;			/* its server was asked its window
					 * (model_window.h) */
};

/* The model requests of this process's life, for atriumd's metrics (the
 * watchdog's pong: turn_report); counted by turn.c. */
struct model_counts {
	long long requests;		/* answered, their tokens counted */
	long long input_tokens, output_tokens;
	long long errors;		/* failed, each attempt (retried or
					 * not) */
};

struct agent {
	struct config cfg;		/* settings from the command line */
	char room[80];			/* the room's name (basename of room_dir) */
	char room_dir[PATH_MAX];	/* DATA/rooms/ROOM */
	char run_dir[PATH_MAX];		/* DATA/run/ROOM */
	char workspace[PATH_MAX];	/* RUN/workspace, bound as /workspace:
					 * only ever opened as the root
					 * (wsio.c, O_PATH) and bound by the
					 * sandbox, never joined with a name
					 * (ws_file.h says why) */
	char sock_path[PATH_MAX];	/* RUN/agent.sock */
	char init_path[PATH_MAX];	/* atrium-sandbox-init */
	int approval_timeout;		/* s before an unanswered ask is denied */
	long retry_base_ms;		/* backoff base for model retries */
	int max_retries;		/* model attempts in all, per step */
	int model_idle_timeout;		/* s without a byte from the model */

	struct keys keys;		/* the operator's, per provider (from
					 * atriumd's channel); never logged */
	int keys_fd;			/* atriumd's keys channel, on which a
					 * reload sends new keys; -1 */

	/* Room settings: the command line's, overridden from room.db. */
	char provider[16];
	char model[128];
	char approval[16];
	struct model_fit fit;		/* learned from refusals and from
					 * what the server says */
	struct model_counts counts;	/* this process's model requests */
	struct model_window *window_ask;	/* that question in flight, or
					 * NULL (model_window.c) */
	json_object *allow_list;	/* array of strings */
	json_object *config_skills;	/* the room's config skills (skills.h),
					 * from room.db */
	json_object *skills;		/* the skills the running turn offers:
					 * config's, then the workspace's as
					 * read at the turn's start */

	struct sandbox sb;		/* template for every command */
	struct cgroup_tree cg;		/* the host's cgroups (room_limits.c) */
	struct cgroup_set room_cg;	/* the room's group */
	struct reslimits owner_limits;	/* what the owner lowered the room's
					 * limits to (0: the operator's);
					 * room.db's limit_* (room_limits.c) */
	int owner_max_steps;		/* the owner's lowered caps (0: the */
	long long owner_max_tokens;	/* operator's); room.db's cap_* (caps.c) */
	struct loop *loop;
	struct room_db *db;
	struct http *http;
	int listen_fd;
	int signal_fd;
	struct conn *conns;		/* connected clients, newest first */
	struct turn *turn;		/* the running turn, or NULL */
	struct consent *consent;	/* an undo waiting for people's yes
					 * (consent.h), or NULL */
	long long turn_wait;		/* timer of a turn suspended by a failed
					 * checkpoint (turn.c), or 0 */
	struct exec *execs;		/* people's running commands */
	struct file_upload *uploads;	/* files opened for writing by a
					 * connection, not yet committed
					 * (file_requests.h) */
	struct term *term;		/* the room's shared terminal, NULL */
	struct seed *seed;		/* a running seed_git clone, NULL */
	json_object *mcp_config;	/* the room's MCP servers (checked,
					 * mcp_config.h), from room.db */
	struct mcp *mcp;		/* their processes (mcp.c), NULL */
	int tool_procs;			/* agent commands running */
	struct input_rates *input_rates;	/* input_limits.c's buckets */
	long long db_reserved;		/* room.db bytes promised to requests
					 * admitted and not yet stored
					 * (input_limits.c) */
	long long db_pending;		/* of those, the request being
					 * handled's, until it takes them
					 * (input_limits_take) or is done */
	struct journal *journal;	/* records, commits, announces: the
					 * room's seqs (journal.h) */
	int seed_fd;			/* O_PATH of cfg.seed_dir, or -1 */
	char seed_real[PATH_MAX];	/* its real path, or "" */
	int room_fd, run_fd;		/* O_PATH of room_dir and run_dir, which
					 * name them through /proc/self/fd once
					 * the agent gave up root (confine.c),
					 * or -1 */
	dev_t sock_dev;			/* sock_path's inode, as bound */
	ino_t sock_ino;
	const struct conn_hooks *conn_hooks;	/* what a line asks for
					 * (requests.h) */
	int spawner;			/* socket to the sandbox spawner
					 * (spawner.h), or -1 */
	struct dirworker *dirworker;	/* the file tools' getdents64 thread
					 * (dirworker.h), NULL until first
					 * needed */
	long long idle_since;		/* monotonic ms; 0 while busy */
	int heap_trimmed;		/* malloc_trim since the last work */
	int exit_code;			/* loop_run's caller returns this */
};

#endif

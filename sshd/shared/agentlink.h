/*
 * agentlink.h: one connection from atriumd to a room's agent.sock, made per
 * SSH channel (and per room for the chat's feed).  Lines out are queued in a capped buffer and written when the
 * socket takes them; lines in are framed by jsonl and handed to the owner's
 * callback.  The owner pauses reading (agentlink_pause) when it cannot keep
 * up, so the agent's socket fills and the agent sees backpressure.
 *
 * A person's commands: the owner counts each exec line it sends
 * (agentlink_send_exec); the agent answers each, on this link alone, with
 * one {"type":"exec_done"} once it was refused or its command ended, which
 * is taken here (never passed to the owner) and uncounts it.  Only the
 * agent can write to the link, so no client can end a count; when the
 * link ends, the agent's commands for it are killed and the count is 0.
 * An exec_done counts only unstamped (no seq, not a replay): the room's
 * events all carry a seq, so none of them, stored or replayed, can pass
 * for one.  A replayed line of a type the room never stores
 * (event_types.h) is dropped here: no owner acts on history as if it
 * were the room speaking now.
 *
 * Parsed once for all: the agent writes each room event as the same bytes
 * to every unfed member's link (chat sessions read the room's events from
 * one feed per room instead: sshd/chat/chat_feed.h, itself a link), and
 * links given a cache (agentlink_cache, one per process: the network's
 * server) look a line up by its exact bytes first and share the parsed object (a reference each), so a room's
 * line is parsed once whatever its members.  Only room events (stamped,
 * not replays: what every member gets alike) and lines of at most
 * AGENTLINK_CACHE_LINE bytes are kept, in AGENTLINK_CACHE_SLOTS slots
 * replaced oldest first.  Equal bytes parse to equal objects, so the
 * cache changes no owner's view; an owner never changes an object it is
 * handed (it may be another link's too).
 *
 * Descriptors the agent passes with a line (a workspace file it opened
 * for the owner) wait here until the owner takes them
 * (agentlink_take_fd).
 */
#ifndef ATRIUMD_AGENTLINK_H
#define ATRIUMD_AGENTLINK_H

#include <json-c/json.h>
#include <stdint.h>

#include "buf.h"
#include "jsonl.h"
#include "loop.h"

#define AGENTLINK_MAX_OUT	(4 * 1024 * 1024)	/* queued to the agent */
#define AGENTLINK_KEEP		4096	/* per buffer, kept once it is empty */
#define AGENTLINK_MAX_FDS	4	/* received, not yet taken */

#define AGENTLINK_CACHE_SLOTS	8	/* lines kept parsed */
#define AGENTLINK_CACHE_LINE	16384	/* longer ones are parsed per link */

struct agentlink;

/* Lines parsed once for every link that reads them (see above). */
struct agentlink_cache {
	struct {
		uint64_t hash;		/* of line */
		char *line;		/* a copy; NULL: the slot is free */
		size_t len;
		json_object *obj;	/* its parse, a reference of ours */
	} slot[AGENTLINK_CACHE_SLOTS];
	unsigned next;			/* the slot replaced next */
	unsigned long hits, parses;	/* lines found, lines parsed */
};

/* A whole line from the agent (obj parsed, line raw). */
typedef void (*agentlink_line_fn)(void *arg, json_object *obj,
    const char *line, size_t len);
/* The agent closed the connection or it failed. */
typedef void (*agentlink_end_fn)(void *arg);

struct agentlink {
	int fd;			/* the socket, -1 when closed */
	struct watch w;		/* on fd */
	struct buf out;		/* bytes not yet written */
	struct jsonl in;	/* bytes not yet framed */
	int paused;		/* owner asked not to read */
	int ended;		/* end reported (EOF or error) */
	int execs;		/* exec lines sent, not yet exec_done */
	struct agentlink_cache *cache;	/* parses shared with other links;
					 * NULL: each line parsed here */
	int fds[AGENTLINK_MAX_FDS];	/* received with lines (SCM_RIGHTS),
				 * oldest first, until taken */
	int nfds;
	agentlink_line_fn on_line;
	agentlink_end_fn on_end;
	void *arg;
};

/* Mark l unconnected (before first use); no cache until the owner sets
 * l->cache. */
void agentlink_init(struct agentlink *l);

/* An empty cache (a zeroed one is empty too). */
void agentlink_cache_init(struct agentlink_cache *c);

/* Drop every line kept; the cache is empty after it. */
void agentlink_cache_free(struct agentlink_cache *c);

/* A new non-blocking connection to RUN/agent.sock: the fd, or -errno (the
 * monitor dials for the network process, which cannot reach RUN). */
int agentlink_dial(const char *run_dir);

/* Use fd (a connection agentlink_dial made; owned from now on), or pass
 * on a negative fd as the result.  0 or that -errno. */
int agentlink_attach(struct agentlink *l, struct loop *loop, int fd,
    agentlink_line_fn on_line, agentlink_end_fn on_end, void *arg);

/* Connect to RUN/agent.sock.  0, or -errno (e.g. -ENOENT, -ECONNREFUSED
 * while the agent restarts). */
int agentlink_connect(struct agentlink *l, struct loop *loop,
    const char *run_dir, agentlink_line_fn on_line, agentlink_end_fn on_end,
    void *arg);

/* Queue obj as one line.  0, -ENOBUFS when the queue is full, -ENOTCONN. */
int agentlink_send(struct agentlink *l, json_object *obj);

/* Queue a raw line (newline added).  Same results. */
int agentlink_send_line(struct agentlink *l, const char *line, size_t len);

/* Queue an exec line (obj, or the raw line when line is not NULL) and
 * count it until its exec_done.  Same results as agentlink_send. */
int agentlink_send_exec(struct agentlink *l, json_object *obj,
    const char *line, size_t len);

/* The link's exec lines not yet done (0 once it ended or closed). */
int agentlink_execs(const struct agentlink *l);

/* Send obj as one line with fds attached (SCM_RIGHTS).  Only while nothing
 * else is queued (-EBUSY otherwise); the fds stay the caller's to close. */
int agentlink_send_fds(struct agentlink *l, json_object *obj, const int *fds,
    int nfds);

/* The oldest descriptor received and not yet taken (the caller's from
 * now on), or -1.  The agent passes one with the first byte of the line
 * that announces it ("fds": 1), so when the owner gets that line its
 * descriptor is the oldest here.  Descriptors beyond AGENTLINK_MAX_FDS
 * that nobody took are closed as more come, and all at close. */
int agentlink_take_fd(struct agentlink *l);

/* Stop or resume reading lines. */
void agentlink_pause(struct agentlink *l, int paused);

/* Bytes queued and not yet written. */
size_t agentlink_pending(const struct agentlink *l);

/* Write what is queued now (best effort), then close.  The link holds no
 * memory after it and may be connected again. */
void agentlink_close(struct agentlink *l);

#endif

/*
 * status.c: the numbers behind `atriumd status` (status.h).  Runs in the
 * monitor (root) on the operator's request, on the loop: it reads /proc
 * once (a few thousand small files at most) and stats two files a room,
 * so an answer costs milliseconds.  Nothing here changes any state.
 */
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datalock.h"
#include "jsonl.h"
#include "protocol.h"
#include "room_cli.h"
#include "util.h"

#define STATUS_MAX_PROCS	65536	/* processes read from /proc */
#define STATUS_MAX_DEPTH	64	/* parents walked up from one */

struct status_proc {
	pid_t pid, ppid;
	long long rss;		/* bytes resident */
};

struct status_procs {
	struct status_proc *p;
	size_t n;
};

/* One /proc/PID/stat into p; 0, or -1 when gone or unreadable. */
static int
status_read_stat(pid_t pid, struct status_proc *p)
{
	char path[64], buf[1024], *paren;
	long long rss = 0;
	int ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	buf[0] = '\0';
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	/* The name may hold spaces and parentheses: fields follow the last
	 * ')'. ppid is field 4, rss (pages) field 24. */
	if (!(paren = strrchr(buf, ')')) ||
	    sscanf(paren + 1, " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
	    "%*u %*u %*d %*d %*d %*d %*d %*d %*u %*u %lld", &ppid, &rss) != 2)
		return -1;
	p->pid = pid;
	p->ppid = ppid;
	p->rss = rss * sysconf(_SC_PAGESIZE);
	return 0;
}

/* qsort and bsearch order: by pid. */
static int
status_by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct status_proc *)a)->pid;
	pid_t y = ((const struct status_proc *)b)->pid;

	return (x > y) - (x < y);
}

/* Every process's pid, parent and resident size, sorted by pid.  0 or
 * -errno. */
static int
status_read_procs(struct status_procs *ps)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	ps->n = 0;
	if (!d)
		return -errno;
	if (!(ps->p = calloc(STATUS_MAX_PROCS, sizeof(*ps->p)))) {
		closedir(d);
		return -ENOMEM;
	}
	while ((e = readdir(d)) && ps->n < STATUS_MAX_PROCS) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		if (status_read_stat((pid_t)pid, &ps->p[ps->n]) == 0)
			ps->n++;
	}
	closedir(d);
	qsort(ps->p, ps->n, sizeof(*ps->p), status_by_pid);
	return 0;
}

/* The parent of pid, or 0 when unknown (ps sorted by pid). */
static pid_t
status_parent(const struct status_procs *ps, pid_t pid)
{
	struct status_proc key = { .pid = pid }, *hit;

	hit = bsearch(&key, ps->p, ps->n, sizeof(*ps->p), status_by_pid);
	return hit ? hit->ppid : 0;
}

/* 1 when pid is a or b or below either. */
static int
status_below(const struct status_procs *ps, pid_t pid, pid_t a, pid_t b)
{
	for (int depth = 0; pid > 1 && depth < STATUS_MAX_DEPTH; depth++) {
		if ((a && pid == a) || (b && pid == b))
			return 1;
		pid = status_parent(ps, pid);
	}
	return 0;
}

/* Processes and resident bytes of a room's two processes and theirs. */
static void
status_room_procs(const struct status_procs *ps, const struct room *r,
    long long *count, long long *rss)
{
	*count = *rss = 0;
	for (size_t i = 0; i < ps->n; i++) {
		if (!status_below(ps, ps->p[i].pid, r->fs.pid, r->agent.pid))
			continue;
		(*count)++;
		*rss += ps->p[i].rss;
	}
}

/* Bytes of DATA/rooms/ROOM/workspace.db and its WAL. */
static long long
status_workspace(const struct room *r)
{
	char path[PATH_MAX + 160];
	long long total = 0;
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s", r->dir, WORKSPACE_DB_NAME);
	if (stat(path, &sb) == 0)
		total += sb.st_size;
	snprintf(path, sizeof(path), "%s/%s-wal", r->dir, WORKSPACE_DB_NAME);
	if (stat(path, &sb) == 0)
		total += sb.st_size;
	return total;
}

/* Connections accepted on the room's agent socket (its listening socket
 * and the monitor's own watch are not counted). */
static long long
status_connections(const struct room *r)
{
	char want[PATH_MAX + 160], line[PATH_MAX + 256];
	long long n = 0;
	FILE *f = fopen("/proc/net/unix", "re");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), " %s/%s\n", r->run, AGENT_SOCKET_NAME);
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line), wl = strlen(want);
		unsigned st = 0;

		/* "Num RefCount Protocol Flags Type St Inode Path": an accepted
		 * socket carries its listener's path, in state 03. */
		if (len < wl || strcmp(line + len - wl, want) != 0 ||
		    sscanf(line, "%*s %*s %*s %*s %*s %x", &st) != 1 ||
		    st != 3)
			continue;
		n++;
	}
	fclose(f);
	if (r->state == ROOM_READY && n > 0)
		n--;	/* agentwatch's connection */
	return n;
}

static const char *
status_state(enum room_state s)
{
	/* By the enum's names: a state added to room.h needs its word. */
	static const char *const names[] = {
		[ROOM_COLD] = "cold",		[ROOM_RESTORE] = "restoring",
		[ROOM_FSCK] = "checking",	[ROOM_MKFS] = "mkfs",
		[ROOM_SHIPPER] = "streaming",	[ROOM_RETRY] = "retry",
		[ROOM_MOUNTING] = "mounting",	[ROOM_AGENT] = "starting",
		[ROOM_READY] = "ready",		[ROOM_STOPPING] = "stopping",
	};

	return (unsigned)s < sizeof(names) / sizeof(*names) && names[s] ?
	    names[s] : "?";
}

/* What the agent's last pong said its turn was doing. */
static void
status_add_turn(json_object *o, const struct agentwatch_turn *t)
{
	json_object_object_add(o, "agent_phase",
	    json_object_new_string(t->phase));
	json_object_object_add(o, "agent_queued",
	    json_object_new_int64(t->queued));
	if (!t->turn)
		return;
	json_object_object_add(o, "agent_turn", json_object_new_int64(t->turn));
	json_object_object_add(o, "agent_user", json_object_new_string(t->user));
	json_object_object_add(o, "agent_step", json_object_new_int64(t->step));
	if (t->tool[0])
		json_object_object_add(o, "agent_tool",
		    json_object_new_string(t->tool));
}

/* One room's entry. */
static json_object *
status_room(const struct status_procs *ps, const struct room *r)
{
	json_object *o = json_object_new_object();
	long long count, rss;

	if (!o)
		return NULL;
	status_room_procs(ps, r, &count, &rss);
	json_object_object_add(o, "room", json_object_new_string(r->name));
	json_object_object_add(o, "state",
	    json_object_new_string(status_state(r->state)));
	json_object_object_add(o, "connections",
	    json_object_new_int64(status_connections(r)));
	json_object_object_add(o, "processes", json_object_new_int64(count));
	json_object_object_add(o, "memory", json_object_new_int64(rss));
	json_object_object_add(o, "workspace",
	    json_object_new_int64(status_workspace(r)));
	json_object_object_add(o, "agent_pid",
	    json_object_new_int64(r->agent.pid));
	/* The watchdog's last answer from the agent: a busy agent still
	 * answers from its loop, a hung one does not. */
	json_object_object_add(o, "agent_answered_s",
	    json_object_new_int64(r->watch.watching ? (time_mono_ms() -
	    r->watch.answered_ms) / 1000 : -1));
	if (r->watch.watching && r->watch.turn.phase[0])
		status_add_turn(o, &r->watch.turn);
	return o;
}

json_object *
status_json(const struct rooms *rs)
{
	json_object *ev = json_object_new_object(), *arr = NULL;
	struct status_procs ps = { 0 };

	if (!ev || !(arr = json_object_new_array()) ||
	    status_read_procs(&ps) < 0) {
		json_object_put(ev);
		json_object_put(arr);
		free(ps.p);
		return NULL;
	}
	json_object_object_add(ev, "type", json_object_new_string("status"));
	for (const struct room *r = rs->list; r; r = r->next) {
		json_object *o;

		if (r->state == ROOM_COLD)
			continue;
		if ((o = status_room(&ps, r)))
			json_object_array_add(arr, o);
	}
	json_object_object_add(ev, "rooms", arr);
	free(ps.p);
	return ev;
}

/* bytes as "512", "1.5K", "61.2M", "3.0G". */
static void
status_size(long long bytes, char *out, size_t len)
{
	static const char units[] = "KMGT";
	double v = (double)bytes;
	int u = -1;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(out, len, "%lld", bytes);
	else
		snprintf(out, len, "%.1f%c", v, units[u]);
}

/* The AGENT column's turn part: "idle", "turn 12 by ann, step 3, tool
 * bash", with ", 2 queued" when prompts wait. */
static void
status_turn_text(json_object *o, char *out, size_t len)
{
	const char *phase = json_get_string(o, "agent_phase");
	const char *tool = json_get_string(o, "agent_tool");
	long long turn = json_get_int(o, "agent_turn", 0);
	long long queued = json_get_int(o, "agent_queued", 0);
	size_t n;

	out[0] = '\0';
	if (!phase)
		return;
	if (turn > 0)
		snprintf(out, len, ", turn %lld by %s, step %lld, %s%s", turn,
		    json_get_string(o, "agent_user") ?: "?",
		    json_get_int(o, "agent_step", 0), tool ? "tool " : "",
		    tool ? tool : phase);
	else
		snprintf(out, len, ", %s", phase);
	n = strlen(out);
	if (queued > 0 && n < len)
		snprintf(out + n, len - n, ", %lld queued", queued);
}

/* One room's line of the table. */
static void
status_print_room(json_object *o)
{
	char mem[32], ws[32], agent[256], turn[160];
	long long pid = json_get_int(o, "agent_pid", 0);
	long long answered = json_get_int(o, "agent_answered_s", -1);

	status_size(json_get_int(o, "memory", 0), mem, sizeof(mem));
	status_size(json_get_int(o, "workspace", 0), ws, sizeof(ws));
	status_turn_text(o, turn, sizeof(turn));
	if (pid > 0 && answered >= 0)
		snprintf(agent, sizeof(agent), "pid %lld, answered %llds ago%s",
		    pid, answered, turn);
	else if (pid > 0)
		snprintf(agent, sizeof(agent), "pid %lld", pid);
	else
		snprintf(agent, sizeof(agent), "-");
	printf("%-20s %-9s %5lld %6lld %9s %10s  %s\n",
	    json_get_string(o, "room") ?: "?",
	    json_get_string(o, "state") ?: "?",
	    json_get_int(o, "connections", 0),
	    json_get_int(o, "processes", 0), mem, ws, agent);
}

/* Why there is no answer from DATA's atriumd (err: the connect's
 * -errno): none runs, or one holds DATA's lock (datalock.h) but its
 * operator socket does not answer.  Only asks: takes nothing. */
static void
status_unreachable(const char *data, int err)
{
	char advice[PATH_MAX + 200];
	pid_t holder;

	if (datalock_probe(data, &holder) != 1) {
		fprintf(stderr, "atriumd status: no atriumd running on %s "
		    "(%s/run/atriumd.sock: %s)\n", data, data, strerror(-err));
		return;
	}
	snprintf(advice, sizeof(advice), "it does not answer on "
	    "%s/run/atriumd.sock (%s); see its log", data, strerror(-err));
	datalock_explain("atriumd status", data, holder, advice);
}

int
status_cli_main(int argc, char **argv)
{
	const char *data = argc > 1 ? argv[1] : "/var/lib/atrium";
	json_object *ans, *rooms;
	int fd;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fputs("usage: atriumd status [DATA]   (default DATA: "
		    "/var/lib/atrium)\n", stderr);
		return 2;
	}
	if ((fd = room_cli_connect(data)) < 0) {
		status_unreachable(data, fd);
		return 1;
	}
	ans = room_cli_request(fd, "{\"type\":\"status\"}\n",
	    "atriumd status");
	close(fd);
	if (!ans)
		return 1;
	printf("%-20s %-9s %5s %6s %9s %10s  %s\n", "ROOM", "STATE", "CONNS",
	    "PROCS", "MEMORY", "WORKSPACE", "AGENT");
	if (json_object_object_get_ex(ans, "rooms", &rooms) &&
	    json_object_is_type(rooms, json_type_array))
		for (size_t i = 0; i < json_object_array_length(rooms); i++)
			status_print_room(json_object_array_get_idx(rooms, i));
	json_object_put(ans);
	return 0;
}

/*
 * spawner.c: forks the agent's sandboxes from a process of their own
 * (spawner.h).
 *
 * Why a process.  fork() in a multi-threaded process is safe only for
 * async-signal-safe code in the child, and the sandbox's child side
 * (sandbox.c: cgroups, a mount namespace, dropping to the sandbox uid)
 * is more than that; it also copied the agent's page tables on its loop.
 * posix_spawn cannot make such a child, and clone(CLONE_VM | CLONE_VFORK)
 * would have to redo it all with raw system calls (glibc's setresuid, for
 * one, signals every thread of the address space) while the loop waits.
 * A spawner forked from main() before anything else keeps sandbox.c's
 * child as it is: it is single-threaded, small, and holds no key (it is
 * forked before the keys are read, and clears its environment).
 *
 * Parenthood.  The spawner makes each sandbox with clone(CLONE_PARENT)
 * (sandbox_start, beside_me), so the sandbox is the agent's child: the
 * agent reaps it, watches its pidfd and kills it as before, and the
 * sandbox's PR_SET_PDEATHSIG follows the agent.  The agent makes the
 * command's cgroups (sandbox_prepare) before asking, and removes them.
 *
 * The room's privileged side.  The spawner stays root so that the agent
 * need not (confine.h); it is the one process of the room that does, and
 * it trusts the agent no more than the agent trusts the model.  What
 * names the room is fixed when it is forked (struct spawner_room: the
 * workspace, run directory, sandbox uid and gid, the init's path, the
 * operator's settings), never taken from a request; each request is one of
 * a fixed set, and each field is checked: a command's cgroups must be
 * this room's command groups, a seed directory the operator's.  A
 * request that fails a check is answered EPERM or EINVAL.
 *
 * Wire format, one SOCK_SEQPACKET message each way:
 *
 *   spawn    JSON {"type": "spawn", "shell" | "argv": [..], "cwd",
 *            "env": [..], "tty", "network", "seed_root", "seed_rel",
 *            "tmp_bytes", "cg": [3 paths],
 *            "fds": [in?, out?, err?] (1: attached, in that order)}
 *            with the attached fds (SCM_RIGHTS), at most SPAWNER_MAX_MSG
 *   reply    JSON {"pid": N} with the status pipe's read end attached,
 *            or {"errno": E}
 *   limits   JSON {"type": "limits", "memory", "pids", "cpus"}: the
 *            owner's values; the room's group gets the operator's limits
 *            lowered by them (reslimits_nest: never above the operator's)
 *   regroup  JSON {"type": "regroup"}: make the room's group again (a
 *            stop of an earlier agent of the room removed it), with the
 *            owner's last values
 *   close    JSON {"type": "close", "sock_dev", "sock_ino"}: remove the
 *            room's group, and RUN/agent.sock when it is still the socket
 *            the agent bound (it may not remove it itself: the run
 *            directory is root's)
 *   reply    JSON {"errno": E} (0: done)
 *
 * The agent waits for the reply on its loop: the spawner answers as soon
 * as its clone returns (well under a millisecond; the sandbox's setup goes
 * on in the child), with a deadline of SPAWNER_REPLY_MS.
 */
#include "spawner.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "config.h"
#include "log.h"
#include "protocol.h"
#include "reslimits.h"

extern char **environ;

/* What the spawner holds fixed for its room: copies made before the fork,
 * never changed by a request. */
struct spawner_room {
	struct sandbox sb;		/* workspace, run dir, room, init, uid,
					 * gid, require_limits */
	const struct config *cfg;	/* the operator's settings */
	const char *room_dir;		/* for its title */
	struct cgroup_tree tree;	/* probed on first use */
	struct cgroup_set group;	/* the room's group, found then */
	struct reslimits owner;		/* the owner's last values (limits) */
};

#define SPAWNER_MAX_MSG		(1024 * 1024)	/* a request, argv and env */
#define SPAWNER_MAX_STRS	4096		/* argv or env entries */
#define SPAWNER_REPLY_MS	5000
#define SPAWNER_SOCK_FD		3	/* the spawner's end, in the spawner */

/* ---- messages ---------------------------------------------------------- */

/* Send len bytes with nfds fds.  0 or -errno. */
static int
spawner_send(int sock, const char *msg, size_t len, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 3)] = { 0 };
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds > 0) {
		struct cmsghdr *c;

		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

/* Receive one message (NUL-terminated in buf, at most cap bytes) and up
 * to maxfds fds (CLOEXEC).  Its length, 0 at the end, or -errno
 * (-EMSGSIZE: cut; -EPROTO: too many fds; both close what came). */
static ssize_t
spawner_recv(int sock, char *buf, size_t cap, int *fds, int *nfds,
    int maxfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = { buf, cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	ssize_t n;
	int bad = 0;

	*nfds = 0;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int *in = (int *)CMSG_DATA(c);

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (int i = 0; i < k; i++) {
			if (*nfds < maxfds)
				memcpy(&fds[(*nfds)++], &in[i], sizeof(int));
			else {
				int fd;

				memcpy(&fd, &in[i], sizeof(int));
				close(fd);
				bad = 1;
			}
		}
	}
	if (bad || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		return bad ? -EPROTO : -EMSGSIZE;
	}
	buf[n] = '\0';
	return n;
}

/* ---- the request ------------------------------------------------------- */

static void
spawner_put_str(json_object *o, const char *key, const char *v)
{
	if (v)
		json_object_object_add(o, key, json_object_new_string(v));
}

static json_object *
spawner_strv(char *const *v)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; v && v[i]; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

/* The request for cmd with p's cgroups; the fds to attach in
 * fds[0..*nfds). */
static json_object *
spawner_request(const struct sandbox_cmd *cmd,
    const struct sandbox_proc *p, int *fds, int *nfds)
{
	json_object *o = json_object_new_object(), *cg, *has;
	const int src[3] = { cmd->fd_in, cmd->fd_out, cmd->fd_err };

	spawner_put_str(o, "type", "spawn");
	spawner_put_str(o, "shell", cmd->shell);
	if (!cmd->shell)
		json_object_object_add(o, "argv", spawner_strv(cmd->argv));
	spawner_put_str(o, "cwd", cmd->cwd);
	json_object_object_add(o, "env", spawner_strv(cmd->env));
	json_object_object_add(o, "tty", json_object_new_boolean(cmd->tty));
	json_object_object_add(o, "network",
	    json_object_new_boolean(cmd->network));
	spawner_put_str(o, "seed_root", cmd->seed_root);
	spawner_put_str(o, "seed_rel", cmd->seed_rel);
	json_object_object_add(o, "tmp_bytes",
	    json_object_new_int64(cmd->tmp_bytes));
	cg = json_object_new_array();
	for (int i = 0; i < CGROUP_NCTL; i++)
		json_object_array_add(cg, json_object_new_string(p->cg.dir[i]));
	json_object_object_add(o, "cg", cg);
	has = json_object_new_array();
	*nfds = 0;
	for (int i = 0; i < 3; i++) {
		json_object_array_add(has, json_object_new_int(src[i] >= 0));
		if (src[i] >= 0)
			fds[(*nfds)++] = src[i];
	}
	json_object_object_add(o, "fds", has);
	return o;
}

/* ---- the agent's side --------------------------------------------------- */

/* Wait for the reply.  The pid, 0 ({"errno": 0}), or -errno; the status fd
 * in *status_fd. */
static int
spawner_reply(int sock, int *status_fd)
{
	struct pollfd pf = { .fd = sock, .events = POLLIN };
	char buf[256];
	json_object *o, *v;
	int fds[1], nfds = 0, r;
	ssize_t n;

	*status_fd = -1;
	do
		r = poll(&pf, 1, SPAWNER_REPLY_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return -ETIMEDOUT;
	n = spawner_recv(sock, buf, sizeof(buf) - 1, fds, &nfds, 1);
	if (n <= 0)
		return n == 0 ? -EPIPE : (int)n;
	o = json_tokener_parse(buf);
	if (o && json_object_object_get_ex(o, "pid", &v) && nfds == 1) {
		r = json_object_get_int(v);
		*status_fd = fds[0];
		nfds = 0;
	} else if (o && json_object_object_get_ex(o, "errno", &v)) {
		r = -json_object_get_int(v);
	} else {
		r = -EPROTO;
	}
	json_object_put(o);
	if (nfds)
		close(fds[0]);
	return r;
}

static int spawner_ask(int sock, json_object *o);

/* Ask the spawner to make the room's group again.  0 or -errno (logged). */
static int
spawner_regroup_ask(int sock)
{
	json_object *o = json_object_new_object();
	int r;

	spawner_put_str(o, "type", "regroup");
	if ((r = spawner_ask(sock, o)) < 0)
		log_warn("cannot make the room's cgroup again: %s",
		    strerror(-r));
	return r;
}

int
spawner_spawn(int sock, const struct sandbox *sb,
    const struct sandbox_cmd *cmd, struct sandbox_proc *p)
{
	json_object *req;
	const char *s;
	int fds[3], nfds, r;

	/* The agent may not make the room's group (its parent is root's):
	 * when it went, or is no longer the room's uid's, the command's group
	 * cannot be made; the spawner makes and hands the room's group over
	 * again, and the command's group is tried once more. */
	if ((r = sandbox_prepare(sb, p)) == -ENOTSUP && sb->cg && sb->room &&
	    spawner_regroup_ask(sock) == 0)
		r = sandbox_prepare(sb, p);
	if (r < 0)
		return r;
	if (sock < 0) {
		r = -EPIPE;
	} else {
		req = spawner_request(cmd, p, fds, &nfds);
		s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
		r = strlen(s) > SPAWNER_MAX_MSG ? -E2BIG :
		    spawner_send(sock, s, strlen(s), fds, nfds);
		json_object_put(req);
		if (r == 0 && (r = spawner_reply(sock, &p->status_fd)) == 0)
			r = -EPROTO;	/* no pid */
	}
	if (r < 0) {
		if (r == -E2BIG)
			log_error("cannot start the command: its command line "
			    "and environment are over %d bytes",
			    SPAWNER_MAX_MSG);
		else
			log_error("cannot start the command: the sandbox "
			    "spawner: %s", strerror(-r));
		cgroup_destroy(&p->cg);
		p->pid = -1;
		return r;
	}
	p->pid = r;
	return 0;
}

/* Send o (consumed) and wait for its {"errno": E} reply.  0 or -errno. */
static int
spawner_ask(int sock, json_object *o)
{
	const char *s = json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN);
	int fd = -1, r;

	r = sock < 0 ? -EPIPE : spawner_send(sock, s, strlen(s), NULL, 0);
	json_object_put(o);
	if (r == 0)
		r = spawner_reply(sock, &fd);
	if (fd >= 0)
		close(fd);
	return r > 0 ? -EPROTO : r;
}

int
spawner_relimit(int sock, const struct reslimits *owner)
{
	json_object *o = json_object_new_object();

	spawner_put_str(o, "type", "limits");
	json_object_object_add(o, "memory",
	    json_object_new_int64(owner->memory));
	json_object_object_add(o, "pids", json_object_new_int64(owner->pids));
	json_object_object_add(o, "cpus", json_object_new_int64(owner->cpus));
	return spawner_ask(sock, o);
}

int
spawner_close_room(int sock, dev_t sock_dev, ino_t sock_ino)
{
	json_object *o = json_object_new_object();

	spawner_put_str(o, "type", "close");
	json_object_object_add(o, "sock_dev",
	    json_object_new_int64((int64_t)sock_dev));
	json_object_object_add(o, "sock_ino",
	    json_object_new_int64((int64_t)sock_ino));
	return spawner_ask(sock, o);
}

void
spawner_stop(int sock)
{
	if (sock >= 0)
		close(sock);
}

/* ---- the spawner's side ------------------------------------------------ */

/* A string member, or NULL. */
static const char *
spawner_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static long long
spawner_int(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ?
	    json_object_get_int64(v) : 0;
}

/* A NULL-terminated vector of the array's strings (pointing into o), or
 * NULL when absent.  -EINVAL in *err for a bad one. */
static char **
spawner_vec(json_object *o, const char *key, int *err)
{
	json_object *a;
	size_t n;
	char **v;

	if (!json_object_object_get_ex(o, key, &a))
		return NULL;
	n = json_object_is_type(a, json_type_array) ?
	    json_object_array_length(a) : SPAWNER_MAX_STRS + 1;
	if (n > SPAWNER_MAX_STRS || !(v = calloc(n + 1, sizeof(*v)))) {
		*err = -EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);

		if (!json_object_is_type(e, json_type_string)) {
			free(v);
			*err = -EINVAL;
			return NULL;
		}
		v[i] = (char *)json_object_get_string(e);
	}
	return v;
}

/* Fill cmd's fds from the attached ones, by the request's "fds". */
static int
spawner_fds(json_object *o, struct sandbox_cmd *cmd, const int *fds,
    int nfds)
{
	int *dst[3] = { &cmd->fd_in, &cmd->fd_out, &cmd->fd_err }, k = 0;
	json_object *has;

	if (!json_object_object_get_ex(o, "fds", &has) ||
	    !json_object_is_type(has, json_type_array) ||
	    json_object_array_length(has) != 3)
		return -EINVAL;
	for (int i = 0; i < 3; i++) {
		*dst[i] = -1;
		if (json_object_get_int(json_object_array_get_idx(has, i))) {
			if (k >= nfds)
				return -EINVAL;
			*dst[i] = fds[k++];
		}
	}
	return k == nfds ? 0 : -EINVAL;
}

/* 1 when dir is one of the room's command groups (sandbox.c's
 * "ROOM/cmd-PID-N" below the operator's parent, in any hierarchy). */
static int
spawner_cg_ok(const struct spawner_room *room, const char *dir)
{
	const struct config *c = room->cfg;
	static const char *const v1[] = { "", "memory/", "pids/", "cpu/" };
	size_t n = strlen(c->cgroup_root);

	if (!dir[0])
		return 1;	/* no group in that hierarchy */
	if (strncmp(dir, c->cgroup_root, n) != 0 || dir[n] != '/' ||
	    strstr(dir, "/../") || strstr(dir, "//"))
		return 0;
	dir += n + 1;
	for (size_t i = 0; i < sizeof(v1) / sizeof(*v1); i++) {
		size_t k = strlen(v1[i]), p = strlen(c->cgroup_parent),
		    r = strlen(room->sb.room);
		const char *t = dir + k;

		if (strncmp(dir, v1[i], k) != 0 ||
		    strncmp(t, c->cgroup_parent, p) != 0 || t[p] != '/' ||
		    strncmp(t + p + 1, room->sb.room, r) != 0 ||
		    strncmp(t + p + 1 + r, "/cmd-", 5) != 0)
			continue;
		t += p + 1 + r + 5;
		if (*t && strspn(t, "0123456789-") == strlen(t))
			return 1;
	}
	return 0;
}

/* The request's cgroup directories into p, each one of this room's
 * command groups.  0, -EINVAL or -EPERM. */
static int
spawner_cg(const struct spawner_room *room, json_object *o,
    struct sandbox_proc *p)
{
	json_object *a;

	if (!json_object_object_get_ex(o, "cg", &a) ||
	    !json_object_is_type(a, json_type_array) ||
	    json_object_array_length(a) != CGROUP_NCTL)
		return -EINVAL;
	for (int i = 0; i < CGROUP_NCTL; i++) {
		const char *d = json_object_get_string(
		    json_object_array_get_idx(a, i));

		if (!d || strlen(d) >= sizeof(p->cg.dir[i]))
			return -EINVAL;
		if (!spawner_cg_ok(room, d)) {
			log_error("spawner: refused a command group outside "
			    "the room's: %s", d);
			return -EPERM;
		}
		snprintf(p->cg.dir[i], sizeof(p->cg.dir[i]), "%s", d);
	}
	return 0;
}

/* 0 when root is the operator's seed directory (as given or real), or
 * both are unset; else -EPERM. */
static int
spawner_seed_ok(const struct spawner_room *room, const char *root)
{
	const char *dir = room->cfg->seed_dir;
	char real[PATH_MAX];

	if (!root)
		return 0;
	if (dir[0] && (strcmp(root, dir) == 0 || (realpath(dir, real) &&
	    strcmp(root, real) == 0)))
		return 0;
	log_error("spawner: refused a seed directory that is not the "
	    "operator's: %s", root);
	return -EPERM;
}

/* Start the request's command in the room.  Its pid, or -errno. */
static int
spawner_run(const struct spawner_room *room, json_object *o, const int *fds,
    int nfds, int *status_fd)
{
	struct sandbox_cmd cmd = { 0 };
	struct sandbox_proc p = { 0 };
	char **argv = NULL, **env = NULL;
	int r = 0;

	cmd.shell = spawner_str(o, "shell");
	argv = spawner_vec(o, "argv", &r);
	env = spawner_vec(o, "env", &r);
	cmd.argv = argv;
	cmd.env = env;
	cmd.cwd = spawner_str(o, "cwd");
	cmd.tty = (int)spawner_int(o, "tty");
	cmd.network = (int)spawner_int(o, "network");
	cmd.seed_root = spawner_str(o, "seed_root");
	cmd.seed_rel = spawner_str(o, "seed_rel");
	cmd.tmp_bytes = spawner_int(o, "tmp_bytes");
	if (r == 0 && ((!cmd.shell && !argv) || cmd.tmp_bytes < 0 ||
	    (cmd.seed_root && !cmd.seed_rel)))
		r = -EINVAL;
	if (r == 0)
		r = spawner_seed_ok(room, cmd.seed_root);
	if (r == 0)
		r = spawner_fds(o, &cmd, fds, nfds);
	if (r == 0)
		r = spawner_cg(room, o, &p);
	if (r == 0)
		r = sandbox_start(&room->sb, &cmd, &p, 1);
	free(argv);
	free(env);
	*status_fd = r == 0 ? p.status_fd : -1;
	return r == 0 ? p.pid : r;
}

/* The room's group in room->group, made again if it went (a stop of an
 * earlier agent of the room removes it).  0 or -errno. */
static int
spawner_room_group(struct spawner_room *room)
{
	struct reslimits none = { 0 };

	if (!room->tree.have && !cgroup_probe(&room->tree,
	    room->cfg->cgroup_root, room->cfg->cgroup_parent))
		return -ENOTSUP;
	return cgroup_make(&room->tree, room->sb.room, &none, &room->group);
}

/* The room's group, made if it went, with the operator's limits lowered
 * by the owner's last values, and its directories handed to the room's
 * uid (cgroup_delegate).  0 or -errno. */
static int
spawner_regroup(struct spawner_room *room)
{
	struct reslimits total, group, cmd;
	const char *what;
	int r;

	reslimits_nest(room->cfg, &room->owner, &total, &group, &cmd);
	if ((r = spawner_room_group(room)) < 0 ||
	    (r = cgroup_relimit(&room->tree, &room->group, &group)) < 0)
		return r;
	if ((r = cgroup_delegate(&room->tree, &room->group, room->sb.uid,
	    room->sb.gid, &what)) < 0)
		log_error("spawner: cannot hand %s to the room's uid: %s",
		    what, strerror(-r));
	return r;
}

/* limits: keep the owner's values, then regroup.  0 or -errno. */
static int
spawner_limits(struct spawner_room *room, json_object *o)
{
	long long v[3] = { spawner_int(o, "memory"), spawner_int(o, "pids"),
	    spawner_int(o, "cpus") };

	if (v[0] < 0 || v[1] < 0 || v[1] > INT_MAX || v[2] < 0 ||
	    v[2] > INT_MAX)
		return -EINVAL;
	room->owner.memory = v[0];
	room->owner.pids = (int)v[1];
	room->owner.cpus = (int)v[2];
	return spawner_regroup(room);
}

/* close: the room's group goes (the agent is stopping), and its socket
 * if it is the one named (no other: not a later agent's).  0 or -errno. */
static int
spawner_close(struct spawner_room *room, json_object *o)
{
	char path[PATH_MAX + 32];
	struct stat st;
	int r;

	snprintf(path, sizeof(path), "%s/%s", room->sb.run_dir,
	    AGENT_SOCKET_NAME);
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	    (long long)st.st_dev == spawner_int(o, "sock_dev") &&
	    (long long)st.st_ino == spawner_int(o, "sock_ino"))
		unlink(path);
	r = spawner_room_group(room);
	if (r == 0)
		cgroup_destroy(&room->group);
	return r == -ENOTSUP ? 0 : r;
}

/* Answer one request. */
static void
spawner_serve(struct spawner_room *room, int sock, const char *msg,
    const int *fds, int nfds)
{
	json_object *o = json_tokener_parse(msg);
	const char *type = o ? spawner_str(o, "type") : NULL;
	char out[64];
	int status_fd = -1, r;

	if (!o || !json_object_is_type(o, json_type_object) || !type)
		r = -EINVAL;
	else if (strcmp(type, "spawn") == 0)
		r = spawner_run(room, o, fds, nfds, &status_fd);
	else if (strcmp(type, "limits") == 0)
		r = spawner_limits(room, o);
	else if (strcmp(type, "regroup") == 0)
		r = spawner_regroup(room);
	else if (strcmp(type, "close") == 0)
		r = spawner_close(room, o);
	else
		r = -EINVAL;
	json_object_put(o);
	if (r > 0)
		snprintf(out, sizeof(out), "{\"pid\":%d}", r);
	else
		snprintf(out, sizeof(out), "{\"errno\":%d}", -r);
	if (spawner_send(sock, out, strlen(out), &status_fd,
	    status_fd >= 0) < 0)
		_exit(0);	/* the agent has gone */
	if (status_fd >= 0)
		close(status_fd);
}

/* The spawner: serve requests until the agent closes its end. */
static void __attribute__((noreturn))
spawner_main(struct spawner_room *room)
{
	char *msg = malloc(SPAWNER_MAX_MSG + 1);
	int fds[3], nfds;
	ssize_t n;

	if (!msg)
		_exit(1);
	for (;;) {
		n = spawner_recv(SPAWNER_SOCK_FD, msg, SPAWNER_MAX_MSG, fds,
		    &nfds, 3);
		if (n == 0 || (n < 0 && n != -EMSGSIZE && n != -EPROTO))
			_exit(0);
		if (n < 0)
			spawner_send(SPAWNER_SOCK_FD, "{\"errno\":7}", 11,
			    NULL, 0);	/* E2BIG */
		else
			spawner_serve(room, SPAWNER_SOCK_FD, msg, fds, nfds);
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
	}
}

/* Wipe the environment's values in place (a key may be among them, and
 * /proc/PID/environ shows the original strings whatever clearenv does),
 * then drop it. */
static void
spawner_wipe_env(void)
{
	for (char **e = environ; e && *e; e++) {
		char *v = strchr(*e, '=');

		if (v)
			explicit_bzero(v + 1, strlen(v + 1));
	}
	clearenv();
}

/* Rewrite the command line (the argv strings, contiguous on the first
 * stack, in place) as "atrium-spawner --room-dir DIR": ps tells it from
 * the agent and still names the room.  room_dir must not point into argv. */
static void
spawner_retitle(int argc, char **argv, const char *room_dir)
{
	const char *parts[] = { "atrium-spawner", "--room-dir", room_dir };
	char *start;
	size_t cap, at = 0;

	if (argc < 1)
		return;
	start = argv[0];
	cap = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - start);
	memset(start, 0, cap);
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(parts[i]);

		if (at + n + 1 > cap)
			break;
		memcpy(start + at, parts[i], n);
		at += n + 1;
	}
}

/* In the forked spawner: only stdio and its socket stay open; no
 * environment (it may have held a key); it dies with the agent. */
static void __attribute__((noreturn))
spawner_child(int sock, pid_t agent, int argc, char **argv,
    struct spawner_room *room)
{
	if (dup2(sock, SPAWNER_SOCK_FD) < 0)
		_exit(1);
	spawner_retitle(argc, argv, room->room_dir);
	close_range(SPAWNER_SOCK_FD + 1, ~0U, 0);
	spawner_wipe_env();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != agent)
		_exit(0);
	prctl(PR_SET_NAME, "atrium-spawner", 0, 0, 0);
	spawner_main(room);
}

int
spawner_start(int argc, char **argv, const char *room_dir,
    const struct sandbox *sb, const struct config *cfg)
{
	struct spawner_room room = { .sb = *sb, .cfg = cfg,
	    .room_dir = room_dir };
	int sv[2], buf = 2 * SPAWNER_MAX_MSG;
	pid_t agent = getpid(), pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		log_error("cannot start the sandbox spawner: socketpair: %s",
		    strerror(errno));
		return -errno;
	}
	/* Room for a request of SPAWNER_MAX_MSG in one message (root may
	 * go past net.core.wmem_max). */
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
	pid = fork();
	if (pid < 0) {
		int e = errno;

		log_error("cannot start the sandbox spawner: fork: %s",
		    strerror(e));
		close(sv[0]);
		close(sv[1]);
		return -e;
	}
	if (pid == 0) {
		close(sv[0]);
		spawner_child(sv[1], agent, argc, argv, &room);
	}
	close(sv[1]);
	return sv[0];
}

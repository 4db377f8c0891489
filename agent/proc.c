/*
 * proc.c: a sandboxed command on the event loop (proc.h).
 *
 * Life: proc_spawn makes the pipes it needs, calls spawner_spawn (the
 * sandbox is forked by the spawner process, spawner.h), closes the
 * child's ends, and watches the pipes and a pidfd of bwrap.  When the pidfd
 * is readable the command has ended: it is reaped, the pipes are drained (the
 * sandbox's pid namespace is gone, so nothing writes any more), the result
 * is read from the init's status pipe, the exit callback runs, and the proc
 * is freed.  Nothing else frees it, except proc_abandon at shutdown.
 * Its cgroups are removed without waiting: one still busy (v1 keeps a
 * group until its killed processes are gone) is retried from a timer with
 * a growing interval, so the loop never sleeps on a removal.
 *
 * Signals: KILL kills the whole tree (sandbox_kill).  Others go to the
 * sandbox's atrium-sandbox-init (found by walking down from bwrap), which
 * passes them on to the command's process group.  A command stopped just
 * after it was asked for has no init yet, or one that has not set up its
 * handlers (a pid namespace's init drops a signal it has no handler for):
 * the signal waits (pending_sig) and is retried from a timer until the
 * init is there and catches it, or the command ends.
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "loop_uring.h"
#include "spawner.h"
#include "util.h"

#define PROC_SIGNAL_RETRY_MS	10	/* a signal waiting for the init */

struct proc {
	struct agent *a;
	struct sandbox_proc sp;
	int pidfd;
	int out_fd, err_fd;		/* our read ends, -1 when closed */
	int in_fd;			/* our write end of stdin, -1 */
	char *in_data;			/* stdin not yet written */
	size_t in_len, in_off;
	long long timer;		/* timeout timer id, 0 */
	int pending_sig;		/* a signal not delivered yet, 0 */
	long long sig_timer;		/* its retry timer id, 0 */
	int timed_out, killed;
	void (*output)(void *arg, int stream, const char *p, size_t n);
	void (*exit)(void *arg, const struct proc_end *end);
	void *arg;
};

static const struct {
	const char *name;
	int sig;
} proc_signals[] = {
	{ "INT", SIGINT }, { "TERM", SIGTERM }, { "KILL", SIGKILL },
	{ "HUP", SIGHUP }, { "QUIT", SIGQUIT }, { "SEGV", SIGSEGV },
	{ "ABRT", SIGABRT }, { "PIPE", SIGPIPE }, { "ALRM", SIGALRM },
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "BUS", SIGBUS },
	{ "FPE", SIGFPE }, { "ILL", SIGILL }, { "XCPU", SIGXCPU },
	{ "XFSZ", SIGXFSZ },
};

int
proc_signal_parse(const char *name)
{
	if (name && strncmp(name, "SIG", 3) == 0)
		name += 3;
	for (size_t i = 0; name && i < sizeof(proc_signals) /
	    sizeof(proc_signals[0]); i++)
		if (strcmp(proc_signals[i].name, name) == 0)
			return proc_signals[i].sig;
	return 0;
}

const char *
proc_signal_name(int sig)
{
	for (size_t i = 0; i < sizeof(proc_signals) / sizeof(proc_signals[0]);
	    i++)
		if (proc_signals[i].sig == sig)
			return proc_signals[i].name;
	return NULL;
}

static void proc_on_exit(struct loop *l, int fd, int mask, void *arg);

/* Close one of our pipe ends and stop watching it. */
static void
proc_close_fd(struct proc *p, int *fd)
{
	if (*fd < 0)
		return;
	loop_del_fd(p->a->loop, *fd);
	close(*fd);
	*fd = -1;
}

/* Read once from a captured stream; close it at EOF.  Bytes read, 0 at
 * EOF, -1 when nothing is waiting. */
static ssize_t
proc_read_stream(struct proc *p, int *fd, int stream)
{
	char chunk[PROC_CHUNK];
	ssize_t n = read(*fd, chunk, sizeof(chunk));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return -1;
	if (n <= 0) {
		proc_close_fd(p, fd);
		return 0;
	}
	if (p->output)
		p->output(p->arg, stream, chunk, (size_t)n);
	return n;
}

static void
proc_on_output(struct loop *l, int fd, int mask, void *arg)
{
	struct proc *p = arg;

	if (fd == p->out_fd)
		proc_read_stream(p, &p->out_fd, PROC_STDOUT);
	else if (fd == p->err_fd)
		proc_read_stream(p, &p->err_fd, PROC_STDERR);
}

/* Write more of stdin; close it when all is written or the reader left. */
static void
proc_on_stdin(struct loop *l, int fd, int mask, void *arg)
{
	struct proc *p = arg;
	ssize_t n;

	while (p->in_off < p->in_len) {
		n = write(p->in_fd, p->in_data + p->in_off, p->in_len - p->in_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0)
			break;	/* EPIPE: the command stopped reading */
		p->in_off += (size_t)n;
	}
	proc_close_fd(p, &p->in_fd);
}

static long
proc_on_timeout(struct loop *l, long long id, void *arg)
{
	struct proc *p = arg;

	p->timer = 0;
	p->timed_out = 1;
	sandbox_kill(&p->sp);
	return LOOP_NOMORE;
}

/* Make a pipe; *ours gets the end we keep (non-blocking). */
static int
proc_pipe(int *ours, int *theirs, int we_read)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	*ours = we_read ? fds[0] : fds[1];
	*theirs = we_read ? fds[1] : fds[0];
	fd_set_nonblock(*ours, 1);
	return 0;
}

/* Prepare our pipes and the child's fds.  0 or -errno. */
static int
proc_setup_fds(struct proc *p, const struct proc_opts *o, int child[3])
{
	int r = 0;

	child[0] = o->fds[0];
	child[1] = o->fds[1];
	child[2] = o->fds[2];
	if (o->fds[0] < 0 && o->stdin_data && o->stdin_len) {
		r = proc_pipe(&p->in_fd, &child[0], 0);
		if (r == 0) {
			p->in_data = malloc(o->stdin_len);
			if (!p->in_data)
				return -ENOMEM;
			memcpy(p->in_data, o->stdin_data, o->stdin_len);
			p->in_len = o->stdin_len;
		}
	}
	if (r == 0 && o->capture && o->fds[1] < 0)
		r = proc_pipe(&p->out_fd, &child[1], 1);
	if (r == 0 && o->capture && o->fds[2] < 0)
		r = proc_pipe(&p->err_fd, &child[2], 1);
	return r;
}

/* Close the child's ends that we made (not the caller's fds). */
static void
proc_close_child(const struct proc_opts *o, int child[3])
{
	for (int i = 0; i < 3; i++)
		if (child[i] >= 0 && child[i] != o->fds[i])
			close(child[i]);
}

static void
proc_free(struct proc *p)
{
	if (!p)
		return;
	proc_close_fd(p, &p->out_fd);
	proc_close_fd(p, &p->err_fd);
	proc_close_fd(p, &p->in_fd);
	proc_close_fd(p, &p->pidfd);
	if (p->timer)
		loop_del_timer(p->a->loop, p->timer);
	if (p->sig_timer)
		loop_del_timer(p->a->loop, p->sig_timer);
	free(p->in_data);
	free(p);
}

/* Watch our fds and arm the timeout.  0 or -errno. */
static int
proc_watch(struct proc *p, const struct proc_opts *o)
{
	int r = 0;

	p->pidfd = (int)syscall(SYS_pidfd_open, p->sp.pid, 0);
	if (p->pidfd < 0)
		return -errno;
	fd_set_cloexec(p->pidfd, 1);
	r = loop_add_fd(p->a->loop, p->pidfd, LOOP_READ, proc_on_exit, p);
	if (r == 0 && p->out_fd >= 0)
		r = loop_add_fd(p->a->loop, p->out_fd, LOOP_READ,
		    proc_on_output, p);
	if (r == 0 && p->err_fd >= 0)
		r = loop_add_fd(p->a->loop, p->err_fd, LOOP_READ,
		    proc_on_output, p);
	if (r == 0 && p->in_fd >= 0)
		r = loop_add_fd(p->a->loop, p->in_fd, LOOP_WRITE,
		    proc_on_stdin, p);
	if (r == 0 && o->timeout_s > 0) {
		p->timer = loop_add_timer(p->a->loop, o->timeout_s * 1000L,
		    proc_on_timeout, p);
		if (p->timer < 0)
			r = (int)p->timer, p->timer = 0;
	}
	return r;
}

int
proc_spawn(struct agent *a, const struct proc_opts *o, struct proc **out)
{
	struct sandbox_cmd cmd = { 0 };
	struct proc *p = calloc(1, sizeof(*p));
	int child[3] = { -1, -1, -1 }, r;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->a = a;
	p->pidfd = p->out_fd = p->err_fd = p->in_fd = -1;
	p->output = o->output;
	p->exit = o->exit;
	p->arg = o->arg;
	r = proc_setup_fds(p, o, child);
	if (r == 0) {
		cmd.shell = o->shell;
		cmd.argv = o->argv;
		cmd.cwd = o->cwd;
		cmd.env = o->env;
		cmd.tty = o->tty;
		cmd.network = o->network;
		cmd.seed_root = o->seed_root;
		cmd.seed_rel = o->seed_rel;
		cmd.tmp_bytes = o->tmp_bytes;
		cmd.fd_in = child[0];
		cmd.fd_out = child[1];
		cmd.fd_err = child[2];
		r = spawner_spawn(a->spawner, &a->sb, &cmd, &p->sp);
	}
	proc_close_child(o, child);
	if (r < 0) {
		proc_free(p);
		return r;
	}
	r = proc_watch(p, o);
	if (r < 0) {
		log_error("cannot watch command %d: %s", (int)p->sp.pid,
		    strerror(-r));
		proc_abandon(p);
		return r;
	}
	*out = p;
	return 0;
}

/* A command's cgroups that were still busy when it ended (v1 keeps a group
 * while its killed processes go): retried from a timer, never slept on. */
struct proc_cg_retry {
	struct cgroup_set cg;
	int tries;
};

#define PROC_CG_FIRST_MS	2	/* the first retry; doubled each time */
#define PROC_CG_MAX_MS		256	/* up to this */
#define PROC_CG_TRIES		40	/* about 8 s in all, then left to the
					 * next start's sweep (cgroup_sweep) */

/* Timer: remove what can go; again later while some is busy. */
static long
proc_cg_retry_tick(struct loop *l, long long id, void *arg)
{
	struct proc_cg_retry *rt = arg;
	long next = PROC_CG_FIRST_MS << (rt->tries < 7 ? rt->tries : 7);

	(void)l; (void)id;
	if (cgroup_remove_now(&rt->cg) == 0) {
		free(rt);
		return LOOP_NOMORE;
	}
	if (++rt->tries >= PROC_CG_TRIES) {
		for (int i = 0; i < CGROUP_NCTL; i++)
			if (rt->cg.dir[i][0])
				log_warn("cgroup %s still busy; leaving it to "
				    "the room's next start", rt->cg.dir[i]);
		free(rt);
		return LOOP_NOMORE;
	}
	return next > PROC_CG_MAX_MS ? PROC_CG_MAX_MS : next;
}

/* Release the sandbox without waiting for its cgroups: the busy ones go
 * to a retry timer (or, when even that cannot be had, are waited for). */
static void
proc_release(struct proc *p)
{
	struct proc_cg_retry *rt;

	if (sandbox_release_nowait(&p->sp) == 0)
		return;
	if (!(rt = calloc(1, sizeof(*rt)))) {
		cgroup_destroy(&p->sp.cg);
		return;
	}
	rt->cg = p->sp.cg;
	memset(&p->sp.cg, 0, sizeof(p->sp.cg));
	if (loop_add_timer(p->a->loop, PROC_CG_FIRST_MS, proc_cg_retry_tick,
	    rt) < 0) {
		cgroup_destroy(&rt->cg);
		free(rt);
	}
}

/* The command ended: reap, drain, report, free. */
static void
proc_on_exit(struct loop *l, int fd, int mask, void *arg)
{
	struct proc *p = arg;
	struct proc_end end = { 0 };
	int status = 0;

	if (waitpid(p->sp.pid, &status, WNOHANG) == 0)
		return;		/* not yet: a spurious wake-up */
	while (p->out_fd >= 0 && proc_read_stream(p, &p->out_fd,
	    PROC_STDOUT) > 0)
		;
	while (p->err_fd >= 0 && proc_read_stream(p, &p->err_fd,
	    PROC_STDERR) > 0)
		;
	sandbox_result(&p->sp, status, &end.how);
	proc_release(p);
	end.timed_out = p->timed_out;
	end.killed = p->killed;
	if (p->exit)
		p->exit(p->arg, &end);
	proc_free(p);
}

/* First child of pid, or 0. */
static pid_t
proc_first_child(pid_t pid)
{
	char path[64];
	long child = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
	    (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &child) != 1)
		child = 0;
	fclose(f);
	return (pid_t)child;
}

/* 1 when pid's command name is the sandbox init's. */
static int
proc_is_init(pid_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return strncmp(comm, "atrium-init", 11) == 0;
}

/* The sandbox's atrium-sandbox-init below bwrap (bwrap, its pid-1 reaper
 * and possibly a user-namespace helper come first), or 0. */
static pid_t
proc_sandbox_init_pid(pid_t bwrap)
{
	pid_t pid = bwrap;

	for (int depth = 0; depth < 5 && pid > 0; depth++) {
		pid = proc_first_child(pid);
		if (pid > 0 && proc_is_init(pid))
			return pid;
	}
	return 0;
}

/* 1 when pid catches sig, or blocks it until it does (/proc's SigCgt and
 * SigBlk masks): a signal sent now is not dropped. */
static int
proc_catches(pid_t pid, int sig)
{
	char path[64], line[128];
	unsigned long long mask, bit = 1ULL << (sig - 1);
	int ready = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (!ready && fgets(line, sizeof(line), f))
		if ((sscanf(line, "SigCgt: %llx", &mask) == 1 ||
		    sscanf(line, "SigBlk: %llx", &mask) == 1) && (mask & bit))
			ready = 1;
	fclose(f);
	return ready;
}

/* Send p's pending signal when its init can take it: 1 when sent. */
static int
proc_signal_try(struct proc *p)
{
	pid_t init = proc_sandbox_init_pid(p->sp.pid);

	if (init <= 0 || !proc_catches(init, p->pending_sig))
		return 0;
	if (kill(init, p->pending_sig) < 0)
		log_warn("signal %d to sandbox init %d: %s", p->pending_sig,
		    (int)init, strerror(errno));
	p->pending_sig = 0;
	return 1;
}

static long
proc_signal_tick(struct loop *l, long long id, void *arg)
{
	struct proc *p = arg;

	if (!p->pending_sig || proc_signal_try(p)) {
		p->sig_timer = 0;
		return LOOP_NOMORE;
	}
	return PROC_SIGNAL_RETRY_MS;
}

void
proc_signal(struct proc *p, int sig)
{
	if (sig == SIGKILL) {
		p->pending_sig = 0;
		sandbox_kill(&p->sp);
		return;
	}
	p->pending_sig = sig;
	if (proc_signal_try(p) || p->sig_timer)
		return;
	p->sig_timer = loop_add_timer(p->a->loop, PROC_SIGNAL_RETRY_MS,
	    proc_signal_tick, p);
	if (p->sig_timer < 0) {
		log_warn("no timer to retry signal %d: not sent", sig);
		p->sig_timer = 0;
		p->pending_sig = 0;
	}
}

void
proc_kill(struct proc *p)
{
	p->killed = 1;
	sandbox_kill(&p->sp);
}

void
proc_abandon(struct proc *p)
{
	int status;

	sandbox_kill(&p->sp);
	while (waitpid(p->sp.pid, &status, 0) < 0 && errno == EINTR)
		;
	sandbox_release(&p->sp);
	proc_free(p);
}

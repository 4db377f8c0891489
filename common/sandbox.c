/*
 * sandbox.c: run one command in bubblewrap over a room's workspace
 * (sandbox.h).  Called by atrium-agent for every command of a room.
 *
 * Before the fork the command's cgroup is made below the room's (remade
 * first if it has gone: a sweep by another atriumd, an operator's rmdir).
 * The forked child, still root, joins the command's cgroups, sets rlimits,
 * puts the command's stdio in place (so a sandbox that cannot be made says
 * why on the command's stderr) and gives itself a private mount namespace.
 * That namespace is a copy of the host's, and bwrap's outer process stays in
 * it while the command runs, so first every FUSE mount but the room's own
 * workspace is detached from it (sandbox_mounts.c): a copy would keep
 * another workspace's, or an sshfs's, FUSE connection and daemon alive after
 * its unmount on the host.  When one cannot be detached the command does not
 * run.  Then a small tmpfs over /tmp holds bind mounts of what the sandbox
 * needs:
 *
 *   /tmp/workspace    the room's workspace (from an fd opened beforehand,
 *                     so a workspace that lives under /tmp is still found)
 *   /tmp/passwd, /tmp/group, /tmp/atrium-init
 *
 * Then it drops to the sandbox uid and execs bwrap, which binds those.
 * bwrap canonicalises every bind source as the unprivileged uid, so the
 * sources must lie on a path that uid can traverse; DATA (0700, often under
 * /root) is not one, the private /tmp is.
 *
 * Child fd layout at exec: 0 1 2 the command's stdin, stdout, stderr;
 * 3 the write end of the status pipe that atrium-sandbox-init reports on.
 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "sandbox_mounts.h"
#include "util.h"

#define SB_STAGE	"/tmp"	/* where the child stages bind sources */
/* bwrap arguments: the fixed ones, SB_MAX_ENV variables, every host path */
#define SB_MAX_ARGS	256
#define SB_MAX_ENV	16	/* extra variables a caller may pass */
#define SB_NUM_LEN	24	/* a decimal long long, with its NUL */

static const char *const sb_bwrap_paths[] = { "/usr/bin/bwrap", "/bin/bwrap" };

/* /etc entries a shell and common tools want, bound read-only if present. */
static const char *const sb_etc[] = {
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf",
	"/etc/ld.so.conf.d", "/etc/localtime", "/etc/ssl", "/etc/ca-certificates",
	"/etc/bash.bashrc", "/etc/profile", "/etc/inputrc", "/etc/nsswitch.conf",
	"/etc/hosts", "/etc/gitconfig", "/etc/mime.types", "/etc/magic",
	"/etc/protocols", "/etc/services", "/etc/os-release", "/etc/debian_version",
	"/etc/locale.alias", "/etc/perl", "/etc/python3", "/etc/vim",
};

/* The top-level names that merged-/usr systems make symlinks. */
static const char *const sb_usr_links[] = {
	"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
};

struct sb_argv {
	const char *v[SB_MAX_ARGS];
	int n;
	int overflow;
};

/* Append arguments (NULL-terminated list) to a. */
static void
sb_add(struct sb_argv *a, ...)
{
	va_list ap;
	const char *s;

	va_start(ap, a);
	while ((s = va_arg(ap, const char *)) != NULL) {
		if (a->n + 1 >= SB_MAX_ARGS) {
			a->overflow = 1;
			break;
		}
		a->v[a->n++] = s;
	}
	va_end(ap);
	a->v[a->n] = NULL;
}

/* Host root layout: /usr, the merged-usr links, selected /etc files. */
static void
sb_add_host(struct sb_argv *a, char links[][64])
{
	struct stat st;

	sb_add(a, "--ro-bind", "/usr", "/usr", NULL);
	for (size_t i = 0; i < sizeof(sb_usr_links) / sizeof(*sb_usr_links); i++) {
		const char *p = sb_usr_links[i];
		ssize_t n;

		if (lstat(p, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(p, links[i], 63);
			if (n <= 0)
				continue;
			links[i][n] = '\0';
			sb_add(a, "--symlink", links[i], p, NULL);
		} else if (S_ISDIR(st.st_mode)) {
			sb_add(a, "--ro-bind", p, p, NULL);
		}
	}
	for (size_t i = 0; i < sizeof(sb_etc) / sizeof(*sb_etc); i++)
		if (access(sb_etc[i], F_OK) == 0)
			sb_add(a, "--ro-bind", sb_etc[i], sb_etc[i], NULL);
}

/* The sandbox's own filesystems: /proc, /dev, and the tmpfs over /tmp
 * (of cmd's tmp_bytes when set, written into size), /var/tmp and /run. */
static void
sb_add_private(struct sb_argv *a, const struct sandbox_cmd *cmd,
    char size[SB_NUM_LEN])
{
	sb_add(a, "--proc", "/proc", "--dev", "/dev", NULL);
	if (cmd->tmp_bytes > 0) {
		snprintf(size, SB_NUM_LEN, "%lld", cmd->tmp_bytes);
		sb_add(a, "--size", size, NULL);
	}
	sb_add(a, "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run",
	    NULL);
}

/* The whole bwrap command line.  Strings it points to live in the caller's
 * frame (links, envs, size) or are static. */
static void
sb_build_argv(const struct sandbox *sb, const struct sandbox_cmd *cmd,
    struct sb_argv *a, char links[][64], char names[][64],
    char size[SB_NUM_LEN], const char *bwrap)
{
	sb_add(a, bwrap, "--unshare-all", "--unshare-user", "--disable-userns",
	    cmd->network ? "--share-net" : "--unshare-net",
	    "--die-with-parent", "--new-session", "--clearenv",
	    "--setenv", "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:"
	    "/usr/bin:/sbin:/bin", "--setenv", "HOME", "/workspace",
	    "--setenv", "USER", "atrium", "--setenv", "LOGNAME", "atrium",
	    "--setenv", "SHELL", "/bin/bash", "--setenv", "LANG", "C.UTF-8",
	    NULL);
	for (char *const *e = cmd->env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t k = (size_t)(e - cmd->env);

		if (!eq || k >= SB_MAX_ENV || (size_t)(eq - *e) >= 64)
			continue;
		memcpy(names[k], *e, (size_t)(eq - *e));
		names[k][eq - *e] = '\0';
		sb_add(a, "--setenv", names[k], eq + 1, NULL);
	}
	sb_add_host(a, links);
	if (cmd->network && access("/etc/resolv.conf", F_OK) == 0)
		sb_add(a, "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf",
		    NULL);
	if (cmd->seed_root)
		sb_add(a, "--ro-bind", SB_STAGE "/seed", "/seed", NULL);
	sb_add(a, "--ro-bind", SB_STAGE "/passwd", "/etc/passwd",
	    "--ro-bind", SB_STAGE "/group", "/etc/group", NULL);
	sb_add_private(a, cmd, size);
	sb_add(a, "--ro-bind", SB_STAGE "/atrium-init", "/run/atrium-init",
	    "--bind", SB_STAGE "/workspace", "/workspace",
	    "--hostname", sb->room ? sb->room : "atrium",
	    "--chdir", cmd->cwd ? cmd->cwd : "/workspace",
	    "/run/atrium-init", "3", cmd->tty ? "-t" : "-n", "--", NULL);
	if (cmd->shell)
		sb_add(a, "/bin/bash", "-c", cmd->shell, NULL);
	else
		for (char *const *v = cmd->argv; v && *v; v++)
			sb_add(a, *v, NULL);
}

/* In the child: put fd `from` at `to` (from may equal to). */
static int
sb_place(int from, int to)
{
	if (from == to)
		return fd_set_cloexec(to, 0);
	return dup2(from, to) < 0 ? -errno : 0;
}

/* In the child: put the command's stdio at 0-2 and the status pipe at 3.
 * The caller's fds may sit anywhere, so each is first copied above 10. */
static int
sb_child_fds(const struct sandbox_cmd *cmd, int status_w)
{
	int src[4], i;

	src[0] = cmd->fd_in;
	src[1] = cmd->fd_out;
	src[2] = cmd->fd_err;
	src[3] = status_w;
	for (i = 0; i < 4; i++) {
		if (src[i] < 0)
			src[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
		src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
		if (src[i] < 0)
			return -errno;
	}
	for (i = 0; i < 4; i++)
		if (sb_place(src[i], i) < 0)
			return -errno;
	return 0;
}

/* In the child: bind the file or directory open at fd onto STAGE/name. */
static int
sb_stage_one(int fd, const char *name, int dir)
{
	char src[64], dst[64];
	int made;

	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	snprintf(dst, sizeof(dst), SB_STAGE "/%s", name);
	made = dir ? mkdir(dst, 0755) : open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (made < 0)
		return -errno;
	if (!dir)
		close(made);
	return mount(src, dst, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
}

/* In the child: open the bind sources (fd[0..3], see the head).  Opened
 * inside the new namespace (a bind mount may not cross namespaces) but
 * before the tmpfs hides anything under /tmp.  0 or -errno. */
static int
sb_child_open_sources(const struct sandbox *sb, int fd[4])
{
	char path[PATH_MAX];

	fd[0] = open(sb->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/passwd", sb->run_dir);
	fd[1] = open(path, O_PATH | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/group", sb->run_dir);
	fd[2] = open(path, O_PATH | O_CLOEXEC);
	fd[3] = open(sb->init_path, O_PATH | O_CLOEXEC);
	for (int i = 0; i < 4; i++)
		if (fd[i] < 0)
			return -errno;
	return 0;
}

int
sandbox_seed_open_at(int root, const char *rel)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

int
sandbox_seed_open(const char *root_path, const char *rel)
{
	int root, fd;

	root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	fd = sandbox_seed_open_at(root, rel);
	close(root);
	return fd;
}

/* In the child: bind the seed directory open at fd (the command's
 * seed_rel beneath its seed_root, opened before the stage's tmpfs could
 * hide it) read-only at STAGE/seed.  0 or -errno. */
static int
sb_child_stage_seed(int fd)
{
	int r = sb_stage_one(fd, "seed", 1);

	if (r == 0 && mount(NULL, SB_STAGE "/seed", NULL, MS_BIND |
	    MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		r = -errno;
	return r;
}

/* In the child: a private mount namespace holding no FUSE mount but the
 * room's workspace (sandbox_mounts.c), with the bind sources staged on a
 * tmpfs over /tmp (see the head of this file).  0 or -errno with the
 * reason in err. */
static int
sb_child_stage(const struct sandbox *sb, const struct sandbox_cmd *cmd,
    char *err, size_t errlen)
{
	int fd[4], keep, seed = -1, r = 0;

	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
	    (r = sb_child_open_sources(sb, fd)) < 0) {
		r = r < 0 ? r : -errno;
		snprintf(err, errlen, "%s", strerror(-r));
		return r;
	}
	if (cmd->seed_root &&
	    (seed = sandbox_seed_open(cmd->seed_root, cmd->seed_rel)) < 0) {
		snprintf(err, errlen, "the seed directory: %s",
		    strerror(-seed));
		return seed;
	}
	if ((r = sandbox_mounts_id(fd[0], &keep)) < 0) {
		snprintf(err, errlen, "cannot tell which mount the workspace "
		    "is (statx STATX_MNT_ID: %s)", strerror(-r));
		return r;
	}
	if ((r = sandbox_mounts_detach_fuse(keep, err, errlen)) < 0)
		return r;
	if (mount("atrium", SB_STAGE, "tmpfs", MS_NOSUID | MS_NODEV,
	    "mode=0755,size=64k") < 0)
		r = -errno;
	if (r == 0 && ((r = sb_stage_one(fd[0], "workspace", 1)) < 0 ||
	    (r = sb_stage_one(fd[1], "passwd", 0)) < 0 ||
	    (r = sb_stage_one(fd[2], "group", 0)) < 0 ||
	    (r = sb_stage_one(fd[3], "atrium-init", 0)) < 0))
		snprintf(err, errlen, "%s", strerror(-r));
	if (r == 0 && seed >= 0 && (r = sb_child_stage_seed(seed)) < 0)
		snprintf(err, errlen, "the seed directory: %s", strerror(-r));
	for (int i = 0; i < 4; i++)
		close(fd[i]);
	if (seed >= 0)
		close(seed);
	return r;
}

/* In the child: limits that hold even without cgroups. */
static void
sb_child_rlimits(void)
{
	struct rlimit core = { 0, 0 }, nofile = { 4096, 4096 };

	setrlimit(RLIMIT_CORE, &core);
	setrlimit(RLIMIT_NOFILE, &nofile);
}

/* In the child: become the sandbox uid for good. */
static int
sb_child_drop(const struct sandbox *sb)
{
	if (setgroups(0, NULL) < 0 && getuid() == 0)
		return -errno;
	if (setresgid(sb->gid, sb->gid, sb->gid) < 0)
		return -errno;
	if (setresuid(sb->uid, sb->uid, sb->uid) < 0)
		return -errno;
	if (geteuid() == 0 || getegid() == 0)
		return -EPERM;
	/* Set after the uid change, which clears it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	return 0;
}

/* The forked child: never returns. */
static void __attribute__((noreturn))
sb_child(const struct sandbox *sb, const struct sandbox_cmd *cmd,
    struct sandbox_proc *p, int status_w, const char *bwrap)
{
	char links[6][64], names[SB_MAX_ENV][64], size[SB_NUM_LEN];
	char msg[PATH_MAX + 512];
	char why[PATH_MAX + 256];
	struct sb_argv a = { .n = 0 };
	sigset_t all;
	int r;

	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	r = cgroup_join_self(&p->cg);
	if (r < 0 && sb->require_limits) {
		snprintf(msg, sizeof(msg), "atrium: cannot put the command in "
		    "its cgroup (%s), so it does not run without its limits\n",
		    strerror(-r));
		if (write(2, msg, strlen(msg)) < 0) {
			/* stderr is gone too */
		}
		_exit(126);
	}
	sb_child_rlimits();
	/* The command's stdio first, so that a sandbox that cannot be made
	 * says why on the command's stderr. */
	r = sb_child_fds(cmd, status_w);
	if (r < 0)
		snprintf(why, sizeof(why), "%s", strerror(-r));
	if (r == 0)
		r = sb_child_stage(sb, cmd, why, sizeof(why));
	if (r == 0) {
		close_range(4, ~0U, 0);
		sb_build_argv(sb, cmd, &a, links, names, size, bwrap);
		r = a.overflow ? -E2BIG : sb_child_drop(sb);
		if (r < 0)
			snprintf(why, sizeof(why), "%s", strerror(-r));
	}
	if (r == 0) {
		static char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
		execve(bwrap, (char *const *)a.v, envp);
		snprintf(why, sizeof(why), "%s", strerror(errno));
	}
	snprintf(msg, sizeof(msg), "atrium: cannot start the sandbox: %s; "
	    "the command was not run\n", why);
	if (write(2, msg, strlen(msg)) < 0) {
		/* stderr is gone too */
	}
	_exit(126);
}

/* First bwrap that exists. */
static const char *
sb_bwrap_path(void)
{
	for (size_t i = 0; i < sizeof(sb_bwrap_paths) / sizeof(*sb_bwrap_paths); i++)
		if (access(sb_bwrap_paths[i], X_OK) == 0)
			return sb_bwrap_paths[i];
	return NULL;
}

/* Make the command's cgroup ("ROOM/cmd-PID-N", cgroup.h) into p->cg.
 * 0, or -ENOTSUP (logged) when its limits cannot be applied and they are
 * required; without the requirement the command runs with what could be
 * made. */
static int
sb_cgroups(const struct sandbox *sb, struct sandbox_proc *p)
{
	struct cgroup_set room;
	struct timespec ts;
	char rel[160];
	int r = -ENOTSUP;

	if (sb->cg) {
		const char *name = sb->room ? sb->room : "cmd";
		int rc;

		r = cgroup_exists(sb->cg, name) ? 0 :
		    cgroup_make(sb->cg, name, &sb->room_limits, &room);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(rel, sizeof(rel), "%s/cmd-%d-%lld%09ld", name,
		    (int)getpid(), (long long)ts.tv_sec, ts.tv_nsec);
		rc = cgroup_make(sb->cg, rel, &sb->limits, &p->cg);
		r = r ? r : rc;
	}
	if (r == 0)
		return 0;
	if (!sb->require_limits) {
		log_debug("command runs without all its cgroup limits: %s",
		    strerror(-r));
		return 0;
	}
	log_error("cannot apply the command's cgroup limits (%s): not "
	    "running it (atriumd --no-limits runs commands without them)",
	    strerror(-r));
	cgroup_destroy(&p->cg);
	return -ENOTSUP;
}

int
sandbox_prepare(const struct sandbox *sb, struct sandbox_proc *p)
{
	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->status_fd = -1;
	if (!sb_bwrap_path()) {
		log_error("bubblewrap (bwrap) is not installed: apt-get install"
		    " bubblewrap");
		return -ENOENT;
	}
	return sb_cgroups(sb, p);
}

/* fork, or (beside_me) a clone whose parent is the caller's parent. */
static pid_t
sb_fork(int beside_me)
{
	if (!beside_me)
		return fork();
	return (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL,
	    NULL, 0);
}

int
sandbox_start(const struct sandbox *sb, const struct sandbox_cmd *cmd,
    struct sandbox_proc *p, int beside_me)
{
	const char *bwrap = sb_bwrap_path();
	int pipefd[2], r;

	p->pid = -1;
	p->status_fd = -1;
	if (!bwrap)
		return -ENOENT;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	p->pid = sb_fork(beside_me);
	if (p->pid < 0) {
		r = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		log_error("fork: %s", strerror(-r));
		return r;
	}
	if (p->pid == 0)
		sb_child(sb, cmd, p, pipefd[1], bwrap);
	close(pipefd[1]);
	p->status_fd = pipefd[0];
	return 0;
}

int
sandbox_spawn(const struct sandbox *sb, const struct sandbox_cmd *cmd,
    struct sandbox_proc *p)
{
	int r = sandbox_prepare(sb, p);

	if (r == 0 && (r = sandbox_start(sb, cmd, p, 0)) < 0)
		cgroup_destroy(&p->cg);
	return r;
}

/* Parse the init's report ("exit N" or "signal N"); 0 when it made one. */
static int
sb_read_report(int fd, struct sandbox_exit *out)
{
	char buf[64];
	ssize_t n;
	int v;

	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "exit %d", &v) == 1) {
		out->how = SANDBOX_EXITED;
		out->code = v;
		return 0;
	}
	if (sscanf(buf, "signal %d", &v) == 1) {
		out->how = SANDBOX_SIGNALED;
		out->code = v;
		return 0;
	}
	return -1;
}

void
sandbox_result(struct sandbox_proc *p, int wait_status,
    struct sandbox_exit *out)
{
	if (sb_read_report(p->status_fd, out) == 0)
		return;
	/* No report: the init never ran or was killed with the tree. */
	if (WIFSIGNALED(wait_status)) {
		out->how = SANDBOX_SIGNALED;
		out->code = WTERMSIG(wait_status);
	} else {
		out->how = SANDBOX_EXITED;
		out->code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 1;
	}
}

void
sandbox_kill(struct sandbox_proc *p)
{
	if (p->pid > 0)
		kill(p->pid, SIGKILL);
	cgroup_kill(&p->cg);
}

int
sandbox_release_nowait(struct sandbox_proc *p)
{
	if (p->status_fd >= 0)
		close(p->status_fd);
	p->status_fd = -1;
	cgroup_kill(&p->cg);
	p->pid = -1;
	return cgroup_remove_now(&p->cg);
}

void
sandbox_release(struct sandbox_proc *p)
{
	if (p->status_fd >= 0)
		close(p->status_fd);
	p->status_fd = -1;
	cgroup_kill(&p->cg);
	cgroup_destroy(&p->cg);
	p->pid = -1;
}

/* Write text to dir/name atomically, mode 0644. */
static int
sb_write_file(const char *dir, const char *name, const char *text)
{
	return write_file_atomic(dir, name, text, strlen(text), 0644, 0);
}

int
sandbox_write_identity(const char *run_dir, uid_t uid, gid_t gid)
{
	char text[512];
	int r;

	snprintf(text, sizeof(text),
	    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
	    "atrium:x:%u:%u:Atrium sandbox:/workspace:/bin/bash\n"
	    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	    (unsigned)uid, (unsigned)gid);
	r = sb_write_file(run_dir, "passwd", text);
	if (r < 0)
		return r;
	snprintf(text, sizeof(text), "root:x:0:\natrium:x:%u:\n"
	    "nogroup:x:65534:\n", (unsigned)gid);
	return sb_write_file(run_dir, "group", text);
}

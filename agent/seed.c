/*
 * seed.c: `seed_git` (seed.h).  The request is checked here, before
 * anything runs: the source's bytes, its kind (https URL without
 * credentials in it, or a local path), and for a local path that it lies
 * beneath the operator's --seed-dir, resolved the way the sandbox will bind
 * it (sandbox_seed_open: RESOLVE_BENEATH, so the answer given here is the
 * one the sandbox enforces again in its own namespace).
 *
 * Next the workspace's root is listed on the file tools' confined path
 * (ws_list.h, off the loop): a workspace with any entry is refused with an
 * `error` to the asker.  Then one sandboxed bash (SEED_SCRIPT) checks
 * again that the workspace is empty (a file may have come in between),
 * clones, and copies the clone into /workspace; its output is kept head
 * and tail (text.h) and the tail goes to the room when it ends.
 *
 * What the clone runs.  The other commands of the room run as the same
 * uid and write /workspace while the clone runs, and the clone's sandbox
 * may have the host's network for up to SEED_TIMEOUT_S: so git must run
 * nothing that the room could have written, and read no file the room
 * could have written (a repository's config names programs to run: hooks,
 * core.fsmonitor, filter drivers, ...).  Hence:
 *
 *   - git clones into the sandbox's own /tmp (sandbox.h: a tmpfs in the
 *     sandbox's own mount namespace, which no other command sees), with
 *     its cwd, HOME and XDG_CONFIG_HOME there too; the room never sees
 *     the repository while git works in it.  /tmp is capped at
 *     seed_tmp_bytes: its pages are the command's memory.
 *   - no config file but its own: GIT_CONFIG_NOSYSTEM (no /etc/gitconfig),
 *     GIT_CONFIG_GLOBAL a file the script writes in /tmp before git runs
 *     (it holds only safe.directory, which git 2.39 honours only from a
 *     global or system file; a local source belongs to a host user, not
 *     the room's uid), GIT_ATTR_NOSYSTEM.  The new repository's config is
 *     git's own, made by this clone.  What a config file alone could make
 *     git run (filter drivers, include.path, core.pager, core.editor,
 *     diff.external, gpg.program, core.gitProxy, core.sshCommand,
 *     remote.*.uploadpack, uploadpack.packObjectsHook, submodule.recurse)
 *     so never comes; and on git's command line, which wins over any file:
 *   - no hooks: core.hooksPath=/dev/null, and --template= (no template
 *     directory copied into the new .git, so no sample or other hook);
 *   - core.fsmonitor=false (a program git would run on the index);
 *   - credential.helper= and core.askPass= (with GIT_TERMINAL_PROMPT=0):
 *     no helper or prompt program for a password;
 *   - protocol.allow=never but the source's own protocol (https or file):
 *     no ext:: (runs a command), ssh (runs ssh), git:// or redirect to
 *     another scheme.
 *   - no --recurse-submodules: a submodule's URL is the repository's say.
 *
 * The copy.  When git is done, the script checks once more that the
 * workspace is empty and copies the clone's top-level entries into it
 * with cp -a (modes, symlinks and times kept; the room's uid owns it, as
 * it ran the copy); cp runs nothing and reads only the clone.  A rename
 * cannot be had: the tmpfs and the workspace are two filesystems.  When
 * the copy fails (a full quota), what it copied is removed again, as git
 * clone removes a clone it could not finish.
 */
#include "seed.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "proc.h"
#include "room_events.h"
#include "room_db.h"
#include "sandbox.h"
#include "text.h"
#include "utf8.h"
#include "ws_list.h"

#define SEED_HEAD	2048	/* bytes of git's output kept from the start */
#define SEED_TAIL	2048	/* and from the end */
#define SEED_SAID	600	/* bytes of it put in the final notice */
#define SEED_EXIT_NOT_EMPTY 3	/* the script's "workspace not empty" */

/* Clones $1 (over protocol $2, "https" or "file") into /tmp/clone and
 * copies it into the workspace, refusing a workspace that is not empty
 * before the clone and again before the copy; see the head for why each
 * piece is there.  Its environment is seed_env, its cwd /tmp. */
#define SEED_SCRIPT \
	"refuse() {\n" \
	"  echo \"the workspace is not empty$1: seed_git only fills an empty " \
	"workspace\" >&2\n" \
	"  exit 3\n" \
	"}\n" \
	"[ -z \"$(ls -A /workspace)\" ] || refuse ''\n" \
	"mkdir -m 700 /tmp/home /tmp/clone || exit 125\n" \
	"printf '[safe]\\n\\tdirectory = /seed\\n" \
	"\\tdirectory = /seed/.git\\n' > \"$GIT_CONFIG_GLOBAL\" || exit 125\n" \
	"git -c core.hooksPath=/dev/null -c core.fsmonitor=false " \
	"-c credential.helper= -c core.askPass= -c protocol.allow=never " \
	"-c \"protocol.$2.allow=always\" clone --template= --no-hardlinks " \
	"-- \"$1\" /tmp/clone || exit\n" \
	"[ -z \"$(ls -A /workspace)\" ] || " \
	"refuse ' (a file was made in it while the clone ran)'\n" \
	"cd /tmp/clone && shopt -s dotglob nullglob && names=(*) || " \
	"exit 125\n" \
	"cp -a -t /workspace -- \"${names[@]}\" && exit 0\n" \
	"r=$?\n" \
	"cd /workspace && rm -rf -- \"${names[@]}\"\n" \
	"exit $r\n"

/* The clone's environment (beyond the sandbox's PATH, USER, LANG): HOME
 * and the config files git reads are the sandbox's own (see the head). */
static char *const seed_env[] = {
	"HOME=/tmp/home", "XDG_CONFIG_HOME=/tmp/home/.config",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/tmp/seed.gitconfig",
	"GIT_ATTR_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", NULL
};

struct seed {
	struct agent *a;
	struct proc *proc;
	struct outcap out;		/* git's output, head and tail */
	long long audit_id;
	char user[64];			/* who asked */
	char source[SEED_MAX_SOURCE + 1];	/* as asked, for the room */
};

/* A seed_git waiting for the listing of the workspace's root. */
struct seed_wait {
	struct agent *a;
	struct conn *c;			/* who asked: found again by
					 * seed_asker, it may have gone */
	char user[64];			/* and as whom */
	int hidden;			/* 1: listing names starting "." */
	size_t len;			/* of source */
	char source[SEED_MAX_SOURCE + 1];	/* as asked, checked */
};

/* 1 when s is n bytes of printable ASCII without spaces. */
static int
seed_printable(const char *s, size_t n)
{
	if (n == 0 || n > SEED_MAX_SOURCE || strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return 0;
	return 1;
}

/* An https URL the sandbox may fetch: a host, no user or password in it
 * (those would end in argv and the audit).  1 or 0 with why in err. */
static int
seed_url_ok(const char *url, char *err, size_t errlen)
{
	const char *host = url + strlen("https://");
	size_t n = strcspn(host, "/?#");

	if (n == 0 || memchr(host, '@', n)) {
		snprintf(err, errlen, "seed_git's URL needs a host and no user "
		    "name or password in it (the repository must be public, "
		    "or cloned over ssh by a person)");
		return 0;
	}
	return 1;
}

/* rel: path below root (the operator's seed dir as given, or its real
 * path), into rel; 1 when path is root or beneath it, else 0. */
static int
seed_below(const char *root, const char *path, char *rel, size_t rellen)
{
	size_t n = strlen(root);

	while (n > 1 && root[n - 1] == '/')
		n--;
	if (strncmp(path, root, n) != 0 || (path[n] && path[n] != '/'))
		return 0;
	path += n;
	while (*path == '/')
		path++;
	snprintf(rel, rellen, "%s", *path ? path : ".");
	return 1;
}

/* Why sandbox_seed_open failed with err, for the person who asked. */
static const char *
seed_open_why(int err)
{
	if (err == -EXDEV || err == -ELOOP)
		return "it leads outside the seed directory (a symbolic link "
		    "or ..)";
	if (err == -ENOENT)
		return "it does not exist";
	if (err == -ENOTDIR)
		return "it is not a directory";
	return strerror(-err);
}

/* A local source: path must be a directory beneath the operator's seed
 * directory.  0 with *root and rel set, or -EPERM with why in err. */
static int
seed_local_ok(struct agent *a, const char *path, const char **root,
    char *real, char *rel, size_t rellen, char *err, size_t errlen)
{
	int fd;

	if (!a->cfg.seed_dir[0]) {
		snprintf(err, errlen, "this server clones no local repository: "
		    "its operator has set no seed directory (atriumd "
		    "--seed-dir DIR); use an https URL");
		return -EPERM;
	}
	*root = a->cfg.seed_dir;
	if (!seed_below(*root, path, rel, rellen)) {
		/* Its real path was read at start, while the agent could
		 * still walk to it (confine.c). */
		*root = a->seed_real[0] ? a->seed_real :
		    realpath(a->cfg.seed_dir, real) ? real : NULL;
		if (!*root || !seed_below(*root, path, rel, rellen)) {
			snprintf(err, errlen, "seed_git may only clone a local "
			    "repository from under %s", a->cfg.seed_dir);
			return -EPERM;
		}
	}
	fd = a->seed_fd >= 0 ? sandbox_seed_open_at(a->seed_fd, rel) :
	    sandbox_seed_open(*root, rel);
	if (fd < 0) {
		snprintf(err, errlen, "seed_git cannot clone %s: %s", path,
		    seed_open_why(fd));
		return -EPERM;
	}
	close(fd);
	return 0;
}

static void
seed_free(struct seed *s)
{
	outcap_free(&s->out);
	free(s);
}

/* The last SEED_SAID bytes of git's output, cleaned for the room, into
 * out. */
static void
seed_tail(struct seed *s, char *out, size_t outlen)
{
	char *text = NULL, *clean;
	size_t n, from;

	out[0] = '\0';
	if (outcap_text(&s->out, &text) < 0)
		return;
	for (char *q = text; *q; q++)
		if (*q == '\r')
			*q = '\n';
	if ((clean = utf8_clean_str(text))) {
		n = strlen(clean);
		while (n && clean[n - 1] == '\n')
			clean[--n] = '\0';
		from = n > SEED_SAID ? n - SEED_SAID : 0;
		while (from < n && (clean[from] & 0xc0) == 0x80)
			from++;
		snprintf(out, outlen, "%s", clean + from);
	}
	free(clean);
	free(text);
}

static void
seed_on_output(void *arg, int stream, const char *p, size_t n)
{
	struct seed *s = arg;

	(void)stream;
	outcap_add(&s->out, p, n);
}

/* Tell the room how the clone ended. */
static void
seed_report(struct seed *s, const struct proc_end *end, int code)
{
	char said[SEED_SAID + 8];

	seed_tail(s, said, sizeof(said));
	if (code == 0)
		room_notice(s->a, "seed_git: %s is cloned into the workspace",
		    s->source);
	else if (code == SEED_EXIT_NOT_EMPTY)
		room_notice(s->a, "seed_git of %s refused: %s", s->source,
		    said);
	else if (end->timed_out)
		room_notice(s->a, "seed_git of %s stopped after %d s: %s",
		    s->source, SEED_TIMEOUT_S, said);
	else
		room_notice(s->a, "seed_git of %s failed (exit %d): %s",
		    s->source, code, said);
}

static void
seed_on_exit(void *arg, const struct proc_end *end)
{
	struct seed *s = arg;
	int code = end->how.how == SANDBOX_EXITED ? end->how.code :
	    128 + end->how.code;

	if (end->timed_out && code == 0)
		code = 124;
	if (room_db_audit_end(s->a->db, s->audit_id, code, NULL) < 0)
		log_warn("seed_git's audit row has no end");
	log_info("seed_git of %s by %s ended with %d", s->source, s->user,
	    code);
	seed_report(s, end, code);
	s->a->seed = NULL;
	seed_free(s);
}

/* Bytes the clone's /tmp may hold: each is the command's memory (a
 * tmpfs), so no more than its memory limit, nor than the workspace's
 * quota that the copy must fit in; 0 (tmpfs's default) when neither is
 * set. */
static long long
seed_tmp_bytes(const struct agent *a)
{
	long long mem = a->sb.limits.memory, quota = a->cfg.quota;

	if (mem > 0 && quota > 0)
		return mem < quota ? mem : quota;
	return mem > 0 ? mem : quota > 0 ? quota : 0;
}

/* Audit and spawn the clone of src (an URL, or /seed with root and rel).
 * 0 or -errno (logged). */
static int
seed_spawn(struct seed *s, const char *src, int network, const char *root,
    const char *rel)
{
	char *argv[] = { "/bin/bash", "-c", SEED_SCRIPT, "seed", (char *)src,
	    network ? "https" : "file", NULL };
	struct proc_opts o = { .fds = { -1, -1, -1 }, .capture = 1,
	    .argv = argv, .env = seed_env, .cwd = "/tmp",
	    .timeout_s = SEED_TIMEOUT_S, .network = network,
	    .seed_root = root, .seed_rel = rel,
	    .tmp_bytes = seed_tmp_bytes(s->a),
	    .output = seed_on_output, .exit = seed_on_exit, .arg = s };
	char what[SEED_MAX_SOURCE + 32];
	int r;

	snprintf(what, sizeof(what), "git clone %s", s->source);
	if ((r = room_db_audit_start(s->a->db, s->user, "seed", what,
	    "/workspace", &s->audit_id)) < 0)
		return r;
	if ((r = proc_spawn(s->a, &o, &s->proc)) < 0)
		room_db_audit_end(s->a->db, s->audit_id, 126, NULL);
	return r;
}

/* Check src; 0 with what to spawn (network, root and rel for a local
 * one), or -errno with why in err. */
static int
seed_check(struct agent *a, const char *src, size_t len, int *network,
    const char **root, char *real, char *rel, size_t rellen, char *err,
    size_t errlen)
{
	const char *path = src;

	*network = 0;
	*root = NULL;
	if (!seed_printable(src, len)) {
		snprintf(err, errlen, "seed_git must be an https:// URL, a "
		    "file:// URL or an absolute path: 1 to %d printable "
		    "characters without spaces", SEED_MAX_SOURCE);
		return -EINVAL;
	}
	if (strncmp(src, "https://", 8) == 0) {
		*network = 1;
		return seed_url_ok(src, err, errlen) ? 0 : -EINVAL;
	}
	if (strncmp(src, "file://", 7) == 0)
		path = src + 7;
	if (path[0] != '/') {
		snprintf(err, errlen, "seed_git must be an https:// URL, or a "
		    "file:// URL or absolute path of a repository under the "
		    "server's seed directory");
		return -EINVAL;
	}
	return seed_local_ok(a, path, root, real, rel, rellen, err, errlen);
}

/* What seed_check found of a source. */
struct seed_src {
	int network;			/* an https clone */
	const char *root;		/* --seed-dir, for a local source */
	char real[PATH_MAX];
	char rel[SEED_MAX_SOURCE + 2];	/* beneath root */
};

/* May c seed from src now?  No clone may be running and the source must
 * pass seed_check; a refusal is answered to c.  0 with *ss filled, or
 * -1. */
static int
seed_admit(struct agent *a, struct conn *c, const char *src, size_t len,
    struct seed_src *ss)
{
	char err[PATH_MAX + 256];

	if (a->seed) {
		room_error(c, NULL, "seed_git is already cloning %s",
		    a->seed->source);
		return -1;
	}
	if (seed_check(a, src, len, &ss->network, &ss->root, ss->real,
	    ss->rel, sizeof(ss->rel), err, sizeof(err)) < 0) {
		room_error(c, NULL, "%s", err);
		return -1;
	}
	return 0;
}

/* Clone src for c, the workspace having been seen empty: the source is
 * checked again (it may have changed during the listing) and the clone
 * spawned.  A refusal goes to c as an `error`. */
static void
seed_start(struct agent *a, struct conn *c, const char *src, size_t len)
{
	struct seed_src ss;
	struct seed *s;

	if (seed_admit(a, c, src, len, &ss) < 0)
		return;
	s = calloc(1, sizeof(*s));
	if (!s || outcap_init(&s->out, SEED_HEAD, SEED_TAIL) < 0) {
		free(s);
		room_error(c, NULL, "seed_git did not start: out of memory");
		return;
	}
	s->a = a;
	snprintf(s->user, sizeof(s->user), "%s", c->user);
	snprintf(s->source, sizeof(s->source), "%.*s", (int)len, src);
	if (seed_spawn(s, ss.root ? "/seed" : s->source, ss.network, ss.root,
	    ss.rel) < 0) {
		room_error(c, NULL, "seed_git did not start: the agent's log "
		    "says why");
		seed_free(s);
		return;
	}
	a->seed = s;
	room_notice(a, "%s started seed_git: cloning %s into the workspace",
	    c->user, s->source);
}

/* The connection that asked for w, if it is still open as the same user. */
static struct conn *
seed_asker(struct seed_wait *w)
{
	struct conn *c = w->a->conns;

	while (c && c != w->c)
		c = c->next;
	return c && !c->closing && strcmp(c->user, w->user) == 0 ? c : NULL;
}

/* A listing of the workspace's root ended (ws_list.h): plain names first,
 * then names starting with "." (ws_list gives those only when asked).
 * Any name refuses the request; none after both starts the clone. */
static void
seed_listed(void *arg, int err, json_object *names)
{
	struct seed_wait *w = arg;
	struct conn *c = seed_asker(w);
	size_t n = names ? json_object_array_length(names) : 0;

	json_object_put(names);
	if (!c)
		log_info("seed_git of %s dropped: %s has left", w->source,
		    w->user);
	else if (err < 0)
		room_error(c, NULL, "seed_git did not start: the workspace "
		    "could not be listed (%s)", strerror(-err));
	else if (n > 0)
		room_error(c, NULL, "the workspace is not empty: seed_git only "
		    "fills an empty workspace; remove its files first, or "
		    "seed a new room");
	else if (!w->hidden) {
		w->hidden = 1;
		if (ws_list_start(w->a, ".", ".", seed_listed, w) == 0)
			return;
		room_error(c, NULL, "seed_git did not start: out of memory");
	} else
		seed_start(w->a, c, w->source, w->len);
	free(w);
}

/* The source is checked now, so that a bad one is answered at once; then
 * the workspace's root is listed on the confined path, off the loop
 * (ws_list.h), and seed_listed goes on.  The sandboxed script checks for
 * emptiness once more, for a file made in between. */
void
seed_request(struct agent *a, struct conn *c, const char *src, size_t len)
{
	struct seed_src ss;
	struct seed_wait *w;

	if (seed_admit(a, c, src, len, &ss) < 0)
		return;
	if (!(w = calloc(1, sizeof(*w)))) {
		room_error(c, NULL, "seed_git did not start: out of memory");
		return;
	}
	w->a = a;
	w->c = c;
	snprintf(w->user, sizeof(w->user), "%s", c->user);
	memcpy(w->source, src, len);	/* seed_check: len fits, no NUL */
	w->source[len] = '\0';
	w->len = len;
	if (ws_list_start(a, ".", "", seed_listed, w) < 0) {
		free(w);
		room_error(c, NULL, "seed_git did not start: out of memory");
	}
}

void
seed_shutdown(struct agent *a)
{
	struct seed *s = a->seed;

	if (!s)
		return;
	proc_abandon(s->proc);
	room_db_audit_end(a->db, s->audit_id, 137, NULL);
	a->seed = NULL;
	seed_free(s);
}

/*
 * test_common_fsctl.c: the control-socket client (fsctl_client.h) against
 * a fake daemon: a child process that listens on DB-ctl, reads one
 * request and answers with canned bytes, as a real daemon does and as a
 * broken or hostile one might (a line without end, a bad escape, an
 * answer cut short, silence).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsctl_client.h"
#include "unit.h"

static char db[256];
static char seen[512];          /* the last request the fake daemon read */

/* Serve one connection on db's socket: read the request line into
 * seen (through a pipe back to the parent), write answer (n bytes), then
 * close, or stay silent for quiet_s first.  The child's pid. */
static pid_t
fake_daemon(const char *answer, size_t n, int quiet_s, int *req_pipe)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ls, p[2];
	pid_t pid;

	fsctl_path(db, sa.sun_path, sizeof(sa.sun_path));
	unlink(sa.sun_path);
	ls = socket(AF_UNIX, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(ls, 1) < 0 || pipe(p) < 0)
		abort();
	if ((pid = fork()) == 0) {
		char req[512];
		ssize_t got = 0, k;
		int fd = accept(ls, NULL, NULL);

		while (fd >= 0 && (size_t)got < sizeof(req) - 1 &&
		    (k = read(fd, req + got, 1)) == 1 && req[got++] != '\n')
			;
		if (write(p[1], req, (size_t)got) < 0)
			_exit(1);
		if (quiet_s)
			sleep((unsigned)quiet_s);
		if (n && write(fd, answer, n) < 0)
			_exit(1);
		_exit(0);
	}
	close(ls);
	close(p[1]);
	*req_pipe = p[0];
	return pid;
}

/* Wait for the fake daemon; what it read into seen. */
static void
fake_done(pid_t pid, int req_pipe)
{
	ssize_t n = read(req_pipe, seen, sizeof(seen) - 1);

	seen[n > 0 ? n : 0] = '\0';
	close(req_pipe);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* fsctl_request against answer: its result. */
static int
request_with(const char *answer, size_t n, int quiet_s, int timeout_s)
{
	int rp, r;
	pid_t pid = fake_daemon(answer, n, quiet_s, &rp);

	r = fsctl_request(db, "snapshot", "s1", timeout_s);
	fake_done(pid, rp);
	return r;
}

static void
test_answers(void)
{
	CHECK_INT(request_with("ok\n", 3, 0, 5), 0);
	CHECK_STR(seen, "snapshot s1\n");
	CHECK_INT(request_with("error 17 File exists\n", 21, 0, 5), -EEXIST);
	CHECK_INT(request_with("error 0 nothing\n", 16, 0, 5), -EPROTO);
	CHECK_INT(request_with("error 99999 x\n", 14, 0, 5), -EPROTO);
	CHECK_INT(request_with("yes\n", 4, 0, 5), -EPROTO);
	/* the daemon died before answering, or in the middle of a line */
	CHECK_INT(request_with("", 0, 0, 5), -ECONNRESET);
	CHECK_INT(request_with("o", 1, 0, 5), -ECONNRESET);
	/* silence past the timeout */
	CHECK_INT(request_with("ok\n", 3, 3, 1), -EAGAIN);
}

static void
test_a_line_without_end_is_refused(void)
{
	size_t n = 1 << 20;
	char *flood = malloc(n);

	memset(flood, 'o', n);
	CHECK_INT(request_with(flood, n, 0, 5), -EPROTO);
	free(flood);
}

static void
test_nobody_listens(void)
{
	char path[300];

	fsctl_path(db, path, sizeof(path));
	unlink(path);
	CHECK_INT(fsctl_request(db, "drop", "s1", 1), -ECONNREFUSED);
	CHECK_INT(fsctl_request(db, "drop", "a b", 1), -EINVAL);
	CHECK_INT(fsctl_request(db, "drop", "a\nlist", 1), -EINVAL);
	CHECK_INT(fsctl_request(db, "drop", "", 1), -EINVAL);
}

/* Collects a diff's entries as "K path;" into a string. */
static char got[4096];

static int
diff_entry(void *arg, char kind, const char *path)
{
	size_t n = strlen(got);

	(void)arg;
	snprintf(got + n, sizeof(got) - n, "%c %s;", kind, path);
	return 0;
}

static int
diff_with(const char *answer, int *more)
{
	int rp, r;
	pid_t pid = fake_daemon(answer, strlen(answer), 0, &rp);

	got[0] = '\0';
	r = fsctl_diff(db, "s1", 5, diff_entry, NULL, more);
	fake_done(pid, rp);
	return r;
}

static void
test_diff(void)
{
	int more = -1;

	CHECK_INT(diff_with("A a%0Ab\nD %25x\nM m\nmore\nok\n", &more), 0);
	CHECK_STR(seen, "diff s1\n");
	CHECK_STR(got, "A a\nb;D %x;M m;");
	CHECK_INT(more, 1);
	CHECK_INT(diff_with("A a\nok\n", &more), 0);
	CHECK_INT(more, 0);
	CHECK_INT(diff_with("A a%00b\nok\n", &more), -EPROTO);   /* a NUL */
	CHECK_INT(diff_with("A a%4\nok\n", &more), -EPROTO);
	CHECK_INT(diff_with("X a\nok\n", &more), -EPROTO);
	CHECK_INT(diff_with("A a\n", &more), -ECONNRESET);       /* cut short */
	CHECK_INT(diff_with("error 2 No such file\n", &more), -ENOENT);
}

static int
list_entry(void *arg, const struct fsctl_snapshot *s)
{
	size_t n = strlen(got);

	(void)arg;
	snprintf(got + n, sizeof(got) - n, "%s %lld %llu %llu %llu;", s->name,
	    s->created_ns, s->inodes, s->shared, s->own);
	return 0;
}

static int
list_with(const char *answer)
{
	int rp, r;
	pid_t pid = fake_daemon(answer, strlen(answer), 0, &rp);

	got[0] = '\0';
	r = fsctl_list(db, 5, list_entry, NULL);
	fake_done(pid, rp);
	return r;
}

static void
test_list(void)
{
	CHECK_INT(list_with("S a 5 1 2 3\nS b 6 4 5 6\nok\n"), 0);
	CHECK_STR(seen, "list\n");
	CHECK_STR(got, "a 5 1 2 3;b 6 4 5 6;");
	CHECK_INT(list_with("S a 5 1 2\nok\n"), -EPROTO);
	CHECK_INT(list_with("S a 5 1 2 3 junk\nok\n"), -EPROTO);
	CHECK_INT(list_with("A x\nok\n"), -EPROTO);     /* no diff asked */
}

static void
test_compact(void)
{
	int rp;
	pid_t pid = fake_daemon("error 95 Operation not supported\n", 33, 0,
	    &rp);

	CHECK_INT(fsctl_compact(db, 5), -EOPNOTSUPP);
	fake_done(pid, rp);
	CHECK_STR(seen, "compact\n");
}

/* fsctl_commit_send, then fsctl_commit_wait, against answer: the
 * wait's result (or the send's, when it failed). */
static int
commit_with(const char *answer, size_t n, int quiet_s, int timeout_s)
{
	int rp, fd, r;
	pid_t pid = fake_daemon(answer, n, quiet_s, &rp);

	fd = fsctl_commit_send(db);
	r = fd < 0 ? fd : fsctl_commit_wait(fd, timeout_s);
	fake_done(pid, rp);
	return r;
}

static void
test_commit(void)
{
	char path[300];

	CHECK_INT(commit_with("ok\n", 3, 0, 5), 0);
	CHECK_STR(seen, "commit\n");
	CHECK_INT(commit_with("error 28 No space left on device\n", 33, 0, 5),
	    -ENOSPC);
	CHECK_INT(commit_with("", 0, 0, 5), -ECONNRESET);
	CHECK_INT(commit_with("ok\n", 3, 3, 1), -EAGAIN);
	/* No daemon: refused at once, and nothing is left uncommitted. */
	fsctl_path(db, path, sizeof(path));
	unlink(path);
	CHECK_INT(fsctl_commit_send(db), -ECONNREFUSED);
}

int
main(void)
{
	char dir[] = "/tmp/fsctl-test-XXXXXX";

	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		return 1;
	snprintf(db, sizeof(db), "%s/workspace.db", dir);
	TEST(test_answers);
	TEST(test_a_line_without_end_is_refused);
	TEST(test_nobody_listens);
	TEST(test_diff);
	TEST(test_list);
	TEST(test_compact);
	TEST(test_commit);
	snprintf(seen, sizeof(seen), "%s/workspace.db-ctl", dir);
	unlink(seen);
	rmdir(dir);
	return unit_done("test_common_fsctl");
}

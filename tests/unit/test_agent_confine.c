/*
 * test_agent_confine.c: what atrium-agent may still do once it has given
 * up root (agent/confine.c): it is its room's uid with no capability and
 * no_new_privs; it opens its room's files and the system's, never another
 * room's (even one that every host user may read: Landlock, not the
 * modes, refuses it); and execve, ptrace, unshare, mount and setuid fail.
 * Each case runs in a forked child, which confine_agent changes for good.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "landlock.h"
#include "unit.h"
#include "../../agent/agent.h"
#include "../../agent/confine.h"

#define ROOM_UID 3300123	/* far from every other test's uids */

static char base[64];

/* base/rel as a path. */
static const char *
at(const char *rel)
{
	static char path[4][256];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s", base, rel);
	return p;
}

/* A file of 0644 (readable by every uid) at base/rel. */
static void
plant(const char *rel)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0 && write(fd, "x\n", 2) == 2);
	if (fd >= 0)
		close(fd);
	chmod(at(rel), 0644);
}

/* Two rooms' directories, both walkable by everybody; only alpha is the
 * room's uid's, as atriumd makes it. */
static void
make_rooms(void)
{
	snprintf(base, sizeof(base), "/tmp/atrium-confine-XXXXXX");
	CHECK(mkdtemp(base) != NULL);
	chmod(base, 0755);
	mkdir(at("rooms"), 0755);
	mkdir(at("run"), 0755);
	mkdir(at("rooms/alpha"), 0755);
	mkdir(at("run/alpha"), 0755);
	mkdir(at("rooms/beta"), 0755);
	CHECK(chown(at("rooms/alpha"), ROOM_UID, ROOM_UID) == 0);
	CHECK(chown(at("run/alpha"), ROOM_UID, ROOM_UID) == 0);
	plant("rooms/beta/room.db");
	plant("secret");
}

/* errno of open(path, flags), 0 when it opened. */
static int
open_errno(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* In the child: confine as alpha's agent, then try. */
static void __attribute__((noreturn))
child(void)
{
	static struct agent a;
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[2];
	char *argv[] = { "/bin/true", NULL };
	int fd;

	snprintf(a.room_dir, sizeof(a.room_dir), "%s", at("rooms/alpha"));
	snprintf(a.run_dir, sizeof(a.run_dir), "%s", at("run/alpha"));
	a.sb.uid = ROOM_UID;
	a.sb.gid = ROOM_UID;
	CHECK_INT(confine_agent(&a), 0);
	CHECK_INT(getuid(), ROOM_UID);
	CHECK_INT(geteuid(), ROOM_UID);
	CHECK_INT(getgid(), ROOM_UID);
	CHECK_INT(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 1);
	CHECK_INT(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	CHECK(syscall(SYS_capget, &h, caps) == 0);
	CHECK(!caps[0].effective && !caps[0].permitted && !caps[1].effective &&
	    !caps[1].permitted && !caps[0].inheritable);
	CHECK_INT(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0), 0);
	/* Its own room: read and write; the system: read. */
	CHECK_INT(open_errno(at("rooms/alpha/room.db"), O_RDWR | O_CREAT), 0);
	CHECK_INT(open_errno(at("run/alpha/x"), O_RDWR | O_CREAT), 0);
	CHECK_INT(open_errno("/etc/passwd", O_RDONLY), 0);
	if (landlock_abi() > 0) {
		/* Another room's, and the host's, though their modes let
		 * every uid read them. */
		CHECK_INT(open_errno(at("rooms/beta/room.db"), O_RDONLY),
		    EACCES);
		CHECK_INT(open_errno(at("secret"), O_RDONLY), EACCES);
		CHECK_INT(open_errno(at("rooms/beta/new"), O_RDWR | O_CREAT),
		    EACCES);
		CHECK_INT(open_errno("/etc/passwd", O_WRONLY), EACCES);
	} else {
		printf("test_agent_confine: no Landlock in this kernel: "
		    "the file checks are skipped\n");
	}
	/* The calls an attacker would want next. */
	errno = 0;
	CHECK(execve(argv[0], argv, NULL) < 0 && errno == EPERM);
	errno = 0;
	CHECK(ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0 && errno == EPERM);
	errno = 0;
	CHECK(unshare(CLONE_NEWUSER) < 0 && errno == EPERM);
	errno = 0;
	CHECK(mount("none", at("run/alpha"), "tmpfs", 0, NULL) < 0 &&
	    errno == EPERM);
	errno = 0;
	CHECK(setuid(0) < 0 && errno == EPERM);
	errno = 0;
	CHECK(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 && errno == EPERM);
	/* What it needs: a socket to the model. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	_exit(unit_failed_checks ? 1 : 0);
}

static void
test_confined_agent(void)
{
	int status = -1;
	pid_t pid;

	make_rooms();
	pid = fork();
	if (pid == 0)
		child();
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int
main(void)
{
	if (geteuid() != 0) {
		printf("test_agent_confine: skipped (needs root to give it up)\n");
		return unit_done("test_agent_confine");
	}
	TEST(test_confined_agent);
	if (base[0]) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", base);
	}
	return unit_done("test_agent_confine");
}

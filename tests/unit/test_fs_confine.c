/*
 * test_fs_confine.c: what a mount's daemon may still do once it has given
 * up root (fs/daemon/mount_confine.c): it is the room's uid with no capability
 * and no_new_privs; it reads and writes its database's three files, and
 * no other file, not even its room's room.db of the same owner, nor a
 * file every uid may read (Landlock, not the modes, refuses them); it
 * makes no file in its directory; and execve, ptrace, socket, mount and
 * setuid fail.  Each case runs in a forked child, which the drop changes
 * for good.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
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
#include "../../fs/daemon/mount_confine.h"

#define ROOM_UID 3300456	/* far from every other test's uids */

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

/* A file of 0644 at base/rel, owned by uid. */
static void
plant(const char *rel, uid_t uid)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0 && write(fd, "x\n", 2) == 2);
	if (fd >= 0)
		close(fd);
	chmod(at(rel), 0644);
	CHECK(chown(at(rel), uid, uid) == 0);
}

/* A room's directory as atriumd makes it (root's, 0710 to the room's
 * group) inside a 0700 one, with its workspace's files (root's until the
 * prepare step) and its room.db (the room's uid's); and another room's. */
static void
make_rooms(void)
{
	snprintf(base, sizeof(base), "/tmp/atrium-fsconfine-XXXXXX");
	CHECK(mkdtemp(base) != NULL);
	chmod(base, 0700);
	mkdir(at("alpha"), 0710);
	CHECK(chown(at("alpha"), 0, ROOM_UID) == 0);
	chmod(at("alpha"), 0710);
	mkdir(at("beta"), 0755);
	plant("alpha/workspace.db", 0);
	plant("alpha/workspace.db-wal", 0);
	plant("alpha/workspace.db-shm", 0);
	plant("alpha/room.db", ROOM_UID);
	plant("beta/workspace.db", ROOM_UID);
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

/* The checks on the files, through the held directory's name. */
static void
check_files(const char *db)
{
	char path[320];
	int fd;

	CHECK_INT(open_errno(db, O_RDWR), 0);
	snprintf(path, sizeof(path), "%s-wal", db);
	fd = open(path, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0 && ftruncate(fd, 0) == 0);	/* SQLite's WAL reset */
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s-journal", db);
	CHECK(open_errno(path, O_RDWR | O_CREAT) != 0);
	if (landlock_abi() > 0) {
		CHECK_INT(open_errno(at("alpha/room.db"), O_RDONLY), EACCES);
		CHECK_INT(open_errno(at("beta/workspace.db"), O_RDONLY),
		    EACCES);
		CHECK_INT(open_errno("/etc/passwd", O_WRONLY), EACCES);
		CHECK_INT(open_errno("/tmp/x", O_RDWR | O_CREAT), EACCES);
	} else {
		printf("test_fs_confine: no Landlock in this kernel: the "
		    "file checks are skipped\n");
	}
	CHECK_INT(open_errno("/etc/passwd", O_RDONLY), 0);
}

/* In the child: prepare and drop as alpha's daemon, then try. */
static void __attribute__((noreturn))
child(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[2];
	char *argv[] = { "/bin/true", NULL }, db[300];
	struct stat st;

	CHECK_INT(mount_confine_prepare(at("alpha/workspace.db"), ROOM_UID,
	    ROOM_UID, db, sizeof(db)), 0);
	CHECK(strncmp(db, "/proc/self/fd/", 14) == 0);
	CHECK(stat(at("alpha/workspace.db-shm"), &st) == 0 &&
	    st.st_uid == ROOM_UID);
	CHECK_INT(mount_confine_drop(db, ROOM_UID, ROOM_UID), 0);
	CHECK_INT(getuid(), ROOM_UID);
	CHECK_INT(geteuid(), ROOM_UID);
	CHECK_INT(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 1);
	CHECK_INT(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	CHECK(syscall(SYS_capget, &h, caps) == 0);
	CHECK(!caps[0].effective && !caps[0].permitted && !caps[1].effective &&
	    !caps[1].permitted);
	check_files(db);
	errno = 0;
	CHECK(execve(argv[0], argv, NULL) < 0 && errno == EPERM);
	errno = 0;
	CHECK(ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0 && errno == EPERM);
	errno = 0;
	CHECK(socket(AF_INET, SOCK_STREAM, 0) < 0 && errno == EPERM);
	errno = 0;
	CHECK(mount("none", "/tmp", "tmpfs", 0, NULL) < 0 && errno == EPERM);
	errno = 0;
	CHECK(setuid(0) < 0 && errno == EPERM);
	errno = 0;
	CHECK(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 && errno == EPERM);
	_exit(unit_failed_checks ? 1 : 0);
}

static void
test_confined_daemon(void)
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

/* run_as's value: UID:GID, neither 0 nor missing. */
static void
test_parse(void)
{
	uid_t u;
	gid_t g;

	CHECK_INT(mount_confine_parse("1234:5678", &u, &g), 0);
	CHECK_INT(u, 1234);
	CHECK_INT(g, 5678);
	CHECK_INT(mount_confine_parse("0:5", &u, &g), -EINVAL);
	CHECK_INT(mount_confine_parse("5:0", &u, &g), -EINVAL);
	CHECK_INT(mount_confine_parse("5", &u, &g), -EINVAL);
	CHECK_INT(mount_confine_parse("5:", &u, &g), -EINVAL);
	CHECK_INT(mount_confine_parse("-5:5", &u, &g), -EINVAL);
	CHECK_INT(mount_confine_parse("5:-5", &u, &g), -EINVAL);
	CHECK_INT(mount_confine_parse("5:5x", &u, &g), -EINVAL);
	CHECK_INT(mount_confine_parse("4294967295:5", &u, &g), -EINVAL);
}

int
main(void)
{
	TEST(test_parse);
	if (geteuid() != 0) {
		printf("test_fs_confine: the drop is skipped (needs root to "
		    "give it up)\n");
		return unit_done("test_fs_confine");
	}
	TEST(test_confined_daemon);
	if (base[0]) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", base);
	}
	return unit_done("test_fs_confine");
}

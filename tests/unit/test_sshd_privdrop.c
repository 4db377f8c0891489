/*
 * test_sshd_privdrop.c: the files atriumd's network process may open once
 * it has given up root (sshd/net/privdrop.c): a pty's devices and the host's
 * /usr and /etc for reading, never a file elsewhere, such as DATA's, even
 * one whose mode lets every uid read it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "becomeuser.h"
#include "landlock.h"
#include "unit.h"
#include "../../sshd/net/privdrop.h"

#define NET_UID 3300321		/* far from every other test's uids */

/* errno of open(path, flags), 0 when it opened. */
static int
open_errno(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static void
test_network_process_files(void)
{
	char dir[] = "/tmp/atrium-privdrop-XXXXXX", file[64];
	const char *step;
	int status = -1, fd;
	pid_t pid;

	CHECK(mkdtemp(dir) != NULL);
	chmod(dir, 0755);
	snprintf(file, sizeof(file), "%s/authorized_keys", dir);
	fd = open(file, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	chmod(file, 0644);
	pid = fork();
	if (pid == 0) {
		CHECK_INT(become_user(NET_UID, NET_UID, &step), 0);
		CHECK_INT(privdrop_landlock(), 0);
		CHECK_INT(open_errno("/etc/passwd", O_RDONLY), 0);
		CHECK_INT(open_errno("/dev/null", O_RDWR), 0);
		CHECK_INT(open_errno("/dev/ptmx", O_RDWR | O_NOCTTY), 0);
		CHECK_INT(open_errno(file, O_RDONLY), EACCES);
		CHECK_INT(open_errno("/etc/passwd", O_WRONLY), EACCES);
		_exit(unit_failed_checks ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	unlink(file);
	rmdir(dir);
}

int
main(void)
{
	if (geteuid() != 0 || landlock_abi() < 1) {
		printf("test_sshd_privdrop: skipped (needs root and Landlock)\n");
		return unit_done("test_sshd_privdrop");
	}
	TEST(test_network_process_files);
	return unit_done("test_sshd_privdrop");
}

/*
 * fuzz_authkeys_file.c: libFuzzer entry point for sshd/shared/authkeys.c as a
 * whole: DATA/authorized_keys with arbitrary contents, read by
 * authkeys_refresh (through a memfd), which splits it into lines, parses
 * each and hands each key blob to libssh.  A separate target from
 * fuzz_authkeys.c because each load allocates the file cap (8 MiB).
 *
 * Checks: a readable file always loads (bad lines are skipped, not fatal),
 * never more than AUTHKEYS_MAX_KEYS keys, and nothing leaks.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "authkeys.h"
#include "fuzz.h"
#include "log.h"

/* libFuzzer's entry: one authorized_keys file. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct authkeys *ak;

	if (fd < 0) {
		fd = memfd_create("authorized_keys", 0);
		FUZZ_CHECK(fd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		log_set_level(LOG_ERROR);	/* bad lines are normal here */
	}
	FUZZ_CHECK(ftruncate(fd, 0) == 0);
	FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
	ak = authkeys_new(path);
	FUZZ_CHECK(ak != NULL);
	FUZZ_CHECK(authkeys_refresh_fd(ak, open(path, O_RDONLY | O_CLOEXEC)) == 0);
	FUZZ_CHECK(authkeys_count(ak) <= AUTHKEYS_MAX_KEYS);
	authkeys_free(ak);
	return 0;
}

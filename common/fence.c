/*
 * fence.c: the reading side of a room's fence page (fence.h).  A writer
 * maps the page its monitor passed it once at start and asks
 * fence_may_commit() before each commit; nothing here writes the page.
 * A NULL page (no --fence-fd, no cluster) never fences.
 */
#include "fence.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"

int
fence_map(int fd, const struct fence_page **out)
{
	struct stat st;

	*out = NULL;
	if (fd < 0 || fstat(fd, &st) < 0)
		return fd < 0 ? -EBADF : -errno;
	if (st.st_size < (off_t)sizeof(struct fence_page)) {
		log_error("fence fd %d: %lld bytes, not a fence page", fd,
		    (long long)st.st_size);
		return -EINVAL;
	}
	void *p = mmap(NULL, sizeof(struct fence_page), PROT_READ, MAP_SHARED,
	    fd, 0);
	if (p == MAP_FAILED) {
		int err = errno;
		log_error("fence fd %d: mmap: %s", fd, strerror(err));
		return -err;
	}
	*out = p;
	return 0;
}

int
fence_may_commit(const struct fence_page *f)
{
	struct timespec ts;

	if (!f)
		return 1;
	int64_t until = atomic_load(&f->until_ns);
	if (until == 0)
		return 1;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec < until;
}

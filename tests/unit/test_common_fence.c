/*
 * test_common_fence.c: the fence page as a room's writer sees it: mapped
 * read-only from a descriptor, and fence_may_commit() true while the
 * monotonic clock is before until_ns (or until_ns is 0), false after.
 */
#include <errno.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fence.h"
#include "unit.h"

static int64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
test_may_commit(void)
{
	struct fence_page f = { 0, 0 };
	CHECK_INT(fence_may_commit(NULL), 1);
	CHECK_INT(fence_may_commit(&f), 1);		/* 0: no cluster */
	atomic_store(&f.until_ns, now_ns() + 1000000000);
	CHECK_INT(fence_may_commit(&f), 1);
	atomic_store(&f.until_ns, now_ns() - 1);
	CHECK_INT(fence_may_commit(&f), 0);
	atomic_store(&f.until_ns, 1);			/* fenced for good */
	CHECK_INT(fence_may_commit(&f), 0);
}

static void
test_map(void)
{
	const struct fence_page *ro;
	int fd = memfd_create("fence", MFD_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_INT(fence_map(fd, &ro), -EINVAL);		/* empty */
	CHECK(ftruncate(fd, 4096) == 0);
	struct fence_page *rw = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0);
	CHECK(rw != MAP_FAILED);
	CHECK_INT(fence_map(fd, &ro), 0);
	CHECK_INT(fence_may_commit(ro), 1);
	atomic_store(&rw->epoch, 42);
	atomic_store(&rw->until_ns, now_ns() - 1);
	CHECK_INT(atomic_load(&ro->epoch), 42);
	CHECK_INT(fence_may_commit(ro), 0);		/* the writer's change is seen */
	atomic_store(&rw->until_ns, now_ns() + 5000000000LL);
	CHECK_INT(fence_may_commit(ro), 1);
	CHECK_INT(fence_map(-1, &ro), -EBADF);
	close(fd);
}

int
main(void)
{
	TEST(test_may_commit);
	TEST(test_map);
	return unit_done("common_fence");
}

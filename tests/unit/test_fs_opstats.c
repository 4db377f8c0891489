/*
 * test_fs_opstats.c: a mount's request counts (fs/engine/opstats.c): each
 * request in the first bucket whose bound it does not pass, none past
 * the last, and every kind apart.
 */
#include "unit.h"
#include "../../fs/engine/opstats.h"

static void
test_buckets(void)
{
	static struct opstats s;
	struct opstats_kind_figures f;

	opstats_note(&s, OPSTATS_CREATE, 0);
	opstats_note(&s, OPSTATS_CREATE, 100000);	/* on the bound */
	opstats_note(&s, OPSTATS_CREATE, 100001);
	opstats_note(&s, OPSTATS_CREATE, 1000000000);
	opstats_note(&s, OPSTATS_CREATE, 1000000001);	/* +Inf only */
	opstats_note(&s, OPSTATS_KINDS, 5);		/* no such kind */
	opstats_read(&s, OPSTATS_CREATE, &f);
	CHECK_INT(f.count, 5);
	CHECK_INT(f.sum_ns, 2000000000ULL + 200002);
	CHECK_INT(f.bucket[0], 2);
	CHECK_INT(f.bucket[1], 1);
	CHECK_INT(f.bucket[OPSTATS_BUCKETS - 1], 1);
	opstats_read(&s, OPSTATS_LOOKUP, &f);
	CHECK_INT(f.count, 0);
	CHECK(opstats_now_ns() > 0);
}

int
main(void)
{
	TEST(test_buckets);
	return unit_done("test_fs_opstats");
}

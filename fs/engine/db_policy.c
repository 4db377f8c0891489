/*
 * db_policy.c: what the core decides when db.c reports (fs_int.h: struct
 * db_policy), one table, db_policy_fs, that fs_open puts in fs->policy.
 *
 * Layers, each calling only downward:
 *   core.c and the other operations   call db.c, space.c, quota.c,
 *                                      reclaim.c and readers.c
 *   db_policy.c (this file)           calls space.c, reclaim.c, quota.c,
 *                                      readers.c
 *   space.c, quota.c, reclaim.c,      call db.c (statements, operations,
 *   readers.c                         commits), never db_policy.c
 *   db.c                              calls SQLite only; reaches the
 *                                      layers above through fs->policy
 * So db.c never names the policies that use it: it says what happened (an
 * operation begins or ends, a group ends, the disk was full) and this file
 * decides what that means for room, deletes, quota and readers.
 *
 * Every function here runs with fs->lock held, from inside db.c.  The
 * admission may run batches of pending deletes (reclaim_help), each an
 * operation of its own: db_op_begin is re-entered then, outside any
 * operation (reclaim_help does nothing inside one: fs->in_op).
 */
#include "fs_int.h"

#include <errno.h>

/* Room for an operation (space.c); short of it while deleted files are
 * still being freed, free them first (reclaim.c), for at most
 * RECLAIM_HELP_MS.  0 with the WAL bytes to reserve in *need, or -ENOSPC
 * or -errno. */
static int
db_policy_admit(struct fs *fs, uint64_t grow, uint64_t frees, int64_t *need)
{
	long long deadline = 0;
	int r;

	while ((r = space_admit(fs, grow, frees, need)) == -ENOSPC && grow &&
	    reclaim_help(fs, &deadline))
		;
	return r;
}

const struct db_policy db_policy_fs = {
	.admit = db_policy_admit,
	.op_begun = quota_op_begin,
	.op_check = quota_op_check,
	.op_ended = quota_op_end,
	.group_ended = readers_group_end,
	.disk_full = space_note_full,
};

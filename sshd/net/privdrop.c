/*
 * privdrop.c: the network process gives up root (privdrop.h).  Called by
 * atriumd-net's net_main.c (privdrop_apply, first thing); who it becomes, the
 * monitor looked up (privdrop_id.h).  The steps are every front's
 * (front_privdrop.h); what is the network process's own is here: the
 * trees Landlock leaves it, and its seccomp filter (privdrop_seccomp.c).
 */
#include "privdrop.h"

#include <stddef.h>

#include "front_privdrop.h"

/* What the network process opens after it gave up root. */
static const struct landlock_tree privdrop_trees[] = {
	{ "/dev/ptmx", LANDLOCK_DEVICE, 1 },
	{ "/dev/pts", LANDLOCK_DEVICE, 1 },
	{ "/dev/null", LANDLOCK_DEVICE, 1 },
	{ "/dev/urandom", LANDLOCK_READ, 1 },
	/* its threads' names (pthread_setname_np writes comm) */
	{ "/proc/self/task", LANDLOCK_DEVICE, 1 },
	{ "/usr", LANDLOCK_READ, 0 },
	{ "/etc", LANDLOCK_READ, 0 },
	{ NULL, LANDLOCK_READ, 0 },
};

/* See privdrop.h. */
int
privdrop_landlock(void)
{
	return front_privdrop_landlock("network process", privdrop_trees);
}

/* See privdrop.h. */
int
privdrop_apply(const struct privdrop_id *id, pid_t monitor)
{
	static const struct front_privdrop drop = {
		"network process", privdrop_trees, privdrop_seccomp,
	};

	return front_privdrop_apply(&drop, id, monitor);
}

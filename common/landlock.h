/*
 * landlock.h: limit the files a process may open to a few trees, with the
 * kernel's Landlock LSM (landlock.c).  Used by atrium-agent once it has
 * given up root (agent/confine.c), atriumd's network process
 * (sshd/net/privdrop.c), atrium-fs's daemon (fs/daemon/mount_confine.c)
 * and atrium-replicate restore (cluster/replicate_confine.c).
 */
#ifndef ATRIUM_LANDLOCK_H
#define ATRIUM_LANDLOCK_H

/* What a tree is opened for. */
enum landlock_use {
	LANDLOCK_READ,		/* read files and list directories */
	LANDLOCK_EXEC,		/* that, and execute (and map) files */
	LANDLOCK_WRITE,		/* everything: create, write, remove, rename */
	LANDLOCK_DEVICE,	/* read, write and ioctl a device (a tty) */
	LANDLOCK_FILE,		/* read, write and truncate a file, no more */
};

struct landlock_tree {
	const char *path;	/* an absolute path; NULL ends a list */
	enum landlock_use use;
	int optional;		/* a missing path is skipped, not an error */
};

/* The Landlock ABI version the kernel offers (0: none: not built, or
 * turned off at boot). */
int landlock_abi(void);

/* Restrict this thread, and every thread and process it creates from now
 * on, to trees (ended by a NULL path): every open, create, remove, rename
 * or execute elsewhere fails with EACCES.  The thread must have
 * no_new_privs set (or CAP_SYS_ADMIN).  Threads that exist already are not
 * restricted: call it before making any.  0, -EOPNOTSUPP when the kernel
 * has no Landlock, or -errno with what failed in err. */
int landlock_restrict(const struct landlock_tree *trees, char *err,
    int errlen);

#endif

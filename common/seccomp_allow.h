/*
 * seccomp_allow.h: a seccomp allow list, as every Atrium process that
 * gives up root loads one (seccomp_allow.c): atriumd's network process
 * (sshd/net/privdrop_seccomp.c), atrium-agent (agent/confine.c) and
 * atrium-fs's daemon (fs/daemon/mount_confine.c).  Each names its calls; the
 * rules they share are made here once.
 *
 * Linked only into those programs (libseccomp), not into libcommon.
 */
#ifndef ATRIUM_SECCOMP_ALLOW_H
#define ATRIUM_SECCOMP_ALLOW_H

#include <seccomp.h>
#include <stddef.h>

/* What a process may call; every other call fails with EPERM, so a path
 * the list lacks fails one request with an error, not the process. */
struct seccomp_allow {
	const char *const *calls;	/* by name; a name this architecture
					 * lacks is skipped */
	size_t ncalls;
	const unsigned long *ioctls;	/* the ioctl requests allowed */
	size_t nioctls;
	const int *prctls;		/* the prctl options allowed */
	size_t nprctls;
	int all_threads;		/* load it into every thread that
					 * exists (TSYNC), not only the caller */
	int (*more)(scmp_filter_ctx ctx);	/* the caller's own rules, or
						 * NULL; 0 or -errno (logged) */
};

/* The calls of another architecture's table (i386, x32) kill the process;
 * clone is allowed with exactly the flags of glibc's pthread_create (a
 * thread, never a process or a namespace), and clone3, whose flags sit in
 * memory a filter cannot read, fails with ENOSYS, on which glibc falls
 * back to clone.  Load a's list into this thread (or all).  0, or -errno
 * with what failed logged. */
int seccomp_allow_load(const struct seccomp_allow *a);

/* The element count of a static array, for struct seccomp_allow. */
#define SECCOMP_ALLOW_N(a)	(sizeof(a) / sizeof(*(a)))

#endif

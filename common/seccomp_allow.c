/*
 * seccomp_allow.c: see seccomp_allow.h.
 */
#include "seccomp_allow.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "log.h"

/* The clone flags of glibc's pthread_create (nptl/pthread_create.c): a
 * thread sharing everything, with no exit signal. */
#define SECCOMP_ALLOW_THREAD_FLAGS \
	(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SYSVSEM | CLONE_SIGHAND | \
	 CLONE_THREAD | CLONE_SETTLS | CLONE_PARENT_SETTID | \
	 CLONE_CHILD_CLEARTID)

/* One rule allowing nr with n argument checks; 0 or -errno (logged with
 * what). */
static int
seccomp_allow_rule(scmp_filter_ctx ctx, int nr, unsigned n,
    const struct scmp_arg_cmp *arg, const char *what)
{
	int r = n ? seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n, arg) :
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);

	if (r < 0)
		log_error("seccomp: cannot allow %s: %s", what, strerror(-r));
	return r;
}

/* clone for threads only, clone3 ENOSYS. */
static int
seccomp_allow_threads(scmp_filter_ctx ctx)
{
	struct scmp_arg_cmp a = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffUL,
	    SECCOMP_ALLOW_THREAD_FLAGS);
	int r, nr = seccomp_syscall_resolve_name("clone3");

	if ((r = seccomp_allow_rule(ctx, SCMP_SYS(clone), 1, &a,
	    "clone")) < 0)
		return r;
	if (nr != __NR_SCMP_ERROR &&
	    (r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0)) < 0)
		log_error("seccomp: clone3: %s", strerror(-r));
	return r;
}

/* The list's calls, ioctls and prctls. */
static int
seccomp_allow_rules(scmp_filter_ctx ctx, const struct seccomp_allow *s)
{
	struct scmp_arg_cmp a;
	int r = 0;

	for (size_t i = 0; r == 0 && i < s->ncalls; i++) {
		int nr = seccomp_syscall_resolve_name(s->calls[i]);

		if (nr != __NR_SCMP_ERROR)	/* else: not on this arch */
			r = seccomp_allow_rule(ctx, nr, 0, NULL, s->calls[i]);
	}
	for (size_t i = 0; r == 0 && i < s->nioctls; i++) {
		a = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, s->ioctls[i]);
		r = seccomp_allow_rule(ctx, SCMP_SYS(ioctl), 1, &a, "ioctl");
	}
	for (size_t i = 0; r == 0 && i < s->nprctls; i++) {
		a = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)s->prctls[i], 0);
		r = seccomp_allow_rule(ctx, SCMP_SYS(prctl), 1, &a, "prctl");
	}
	return r;
}

int
seccomp_allow_load(const struct seccomp_allow *s)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r;

	if (!ctx) {
		log_error("seccomp: libseccomp cannot make a filter");
		return -ENOMEM;
	}
	seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* A binary tree of the call numbers rather than a list walked in
	 * order: the lists are over a hundred calls long, and the FUSE
	 * daemon makes several calls per request. */
	seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (s->all_threads)
		seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if ((r = seccomp_allow_rules(ctx, s)) == 0 &&
	    (r = seccomp_allow_threads(ctx)) == 0 &&
	    (!s->more || (r = s->more(ctx)) == 0) &&
	    (r = seccomp_load(ctx)) < 0)
		log_error("seccomp: the kernel refused the filter: %s",
		    strerror(-r));
	seccomp_release(ctx);
	return r;
}

/*
 * sandbox_seccomp.c: the seccomp filters of every sandboxed command
 * (sandbox_seccomp.h).  Filters stack: the kernel runs each one and the
 * strictest answer wins, so the two below are installed one after the
 * other.
 *
 * The deny filter (libseccomp).  bwrap already leaves the command without
 * capabilities, in its own user, pid, mount and network namespaces with
 * user namespaces disabled; what is left is the kernel surface an
 * unprivileged process can still reach and that no build, test or editor
 * needs, where most local privilege escalations of recent years were found:
 *
 *   io_uring_setup, io_uring_enter, io_uring_register      ENOSYS
 *   keyctl, add_key, request_key                            EPERM
 *   bpf, perf_event_open, userfaultfd                       EPERM
 *   mount, umount2, pivot_root, fsopen, fsmount, fsconfig,
 *   move_mount, open_tree, mount_setattr                    EPERM
 *   kexec_load, kexec_file_load, init_module, finit_module,
 *   delete_module                                           EPERM
 *
 * EPERM is what an unprivileged process gets for most of these anyway, so
 * programs already handle it.  io_uring gets ENOSYS instead: it is how a
 * kernel without io_uring answers, and the programs that use it when it is
 * there (liburing users, libuv, tokio, QEMU, recent coreutils) probe for
 * it and fall back to epoll or threads on ENOSYS; some report EPERM as a
 * hard error.  On x86_64 the rules also cover the i386 and x32 syscall
 * tables, so a 32-bit call cannot go around them.  A syscall this kernel's
 * headers or libseccomp do not know is skipped (it cannot be called by
 * number on an arch that lacks it).
 *
 * The chown filter (raw BPF).  The sandbox's user namespace maps one uid
 * and one gid, and the kernel answers EINVAL for a chown to any other;
 * OpenSSH's sftp-server turns EINVAL into "bad message", so `cp -a` onto an
 * sshfs mount failed with "Bad message" where tools expect "Operation not
 * permitted".  The filter turns those into EPERM.  It is written as BPF
 * because libseccomp cannot compare one argument twice in a rule (our id,
 * and -1, "unchanged").
 */
#include "sandbox_seccomp.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

struct sandbox_seccomp_rule {
	const char *name;	/* libseccomp's name of the syscall */
	int err;		/* the errno the command gets */
};

static const struct sandbox_seccomp_rule sandbox_seccomp_denied[] = {
	{ "io_uring_setup", ENOSYS }, { "io_uring_enter", ENOSYS },
	{ "io_uring_register", ENOSYS },
	{ "keyctl", EPERM }, { "add_key", EPERM }, { "request_key", EPERM },
	{ "bpf", EPERM }, { "perf_event_open", EPERM },
	{ "userfaultfd", EPERM },
	{ "mount", EPERM }, { "umount2", EPERM }, { "umount", EPERM },
	{ "pivot_root", EPERM }, { "fsopen", EPERM }, { "fsmount", EPERM },
	{ "fsconfig", EPERM }, { "fspick", EPERM }, { "move_mount", EPERM },
	{ "open_tree", EPERM }, { "mount_setattr", EPERM },
	{ "kexec_load", EPERM }, { "kexec_file_load", EPERM },
	{ "init_module", EPERM }, { "finit_module", EPERM },
	{ "delete_module", EPERM },
};

/* Add the other syscall tables this machine can run, so the rules hold
 * for them too.  0 or a libseccomp -errno. */
static int
sandbox_seccomp_arches(scmp_filter_ctx ctx)
{
#if defined(__x86_64__)
	static const uint32_t extra[] = { SCMP_ARCH_X86, SCMP_ARCH_X32 };

	for (size_t i = 0; i < sizeof(extra) / sizeof(*extra); i++) {
		int r = seccomp_arch_add(ctx, extra[i]);

		if (r < 0 && r != -EEXIST)
			return r;
	}
#else
	(void)ctx;
#endif
	return 0;
}

/* The deny rules into ctx.  0, or -errno with the failing name in err. */
static int
sandbox_seccomp_rules(scmp_filter_ctx ctx, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(sandbox_seccomp_denied) /
	    sizeof(*sandbox_seccomp_denied); i++) {
		const struct sandbox_seccomp_rule *d = &sandbox_seccomp_denied[i];
		int nr = seccomp_syscall_resolve_name(d->name), r;

		if (nr == __NR_SCMP_ERROR)
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)d->err), nr, 0);
		if (r < 0) {
			snprintf(err, errlen, "cannot add the rule for %s: %s",
			    d->name, strerror(-r));
			return r;
		}
	}
	return 0;
}

int
sandbox_seccomp_deny(char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx) {
		snprintf(err, errlen, "libseccomp cannot make a filter");
		return -ENOMEM;
	}
	/* The kernel's own errno when it refuses, not libseccomp's
	 * ECANCELED: the reason is shown to the person. */
	seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	r = sandbox_seccomp_arches(ctx);
	if (r < 0)
		snprintf(err, errlen, "cannot add the 32-bit syscall tables: "
		    "%s", strerror(-r));
	else if ((r = sandbox_seccomp_rules(ctx, err, errlen)) == 0 &&
	    (r = seccomp_load(ctx)) < 0)
		snprintf(err, errlen, "the kernel refused the filter: %s",
		    strerror(-r));
	seccomp_release(ctx);
	return r;
}

/* The chown filter's architecture: it passes everything on any other. */
#if defined(__x86_64__)
#define SB_AUDIT_ARCH		AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SB_AUDIT_ARCH		AUDIT_ARCH_AARCH64
#endif

/* Where the low 32 bits of syscall argument i are in seccomp_data. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SB_ARG_LO(i)	(offsetof(struct seccomp_data, args) + 8 * (i))
#else
#define SB_ARG_LO(i)	(offsetof(struct seccomp_data, args) + 8 * (i) + 4)
#endif

#define SB_LD(off)	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define SB_JEQ(k, t, f)	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define SB_RET(v)	BPF_STMT(BPF_RET | BPF_K, (v))

/* Accept an id argument equal to ours or to -1 ("unchanged"), else EPERM:
 * four instructions. */
#define SB_ID_CHECK(arg, id) \
	SB_LD(SB_ARG_LO(arg)), \
	SB_JEQ((id), 2, 0), \
	SB_JEQ((uint32_t)-1, 1, 0), \
	SB_RET(SECCOMP_RET_ERRNO | EPERM)

/* Both ids of a chown whose uid is argument arg, then allow: nine
 * instructions. */
#define SB_CHOWN_CHECK(arg, uid, gid) \
	SB_ID_CHECK((arg), (uid)), \
	SB_ID_CHECK((arg) + 1, (gid)), \
	SB_RET(SECCOMP_RET_ALLOW)

int
sandbox_seccomp_chown(void)
{
#ifdef SB_AUDIT_ARCH
	uint32_t uid = (uint32_t)getuid(), gid = (uint32_t)getgid();
	struct sock_filter code[] = {
		SB_LD(offsetof(struct seccomp_data, arch)),
		SB_JEQ(SB_AUDIT_ARCH, 1, 0),
		SB_RET(SECCOMP_RET_ALLOW),
		SB_LD(offsetof(struct seccomp_data, nr)),
		/* fchown and fchownat jump over the checks before them */
		SB_JEQ(__NR_fchownat, 0, 9),
		SB_CHOWN_CHECK(2, uid, gid),
		SB_JEQ(__NR_fchown, 0, 9),
		SB_CHOWN_CHECK(1, uid, gid),
#ifdef __NR_chown
		SB_JEQ(__NR_chown, 1, 0),
		SB_JEQ(__NR_lchown, 0, 9),
		SB_CHOWN_CHECK(1, uid, gid),
#endif
		SB_RET(SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = (unsigned short)(sizeof(code) / sizeof(*code)),
		.filter = code,
	};

	/* bwrap set no_new_privs already; asking again costs nothing. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -1;
#endif
	return 0;
}

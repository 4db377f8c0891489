/*
 * sandbox_seccomp.h: the seccomp filters of atrium-sandbox-init
 * (sandbox_seccomp.c), installed before the command starts and inherited
 * by everything it runs.  Linked into atrium-sandbox-init and atriumd
 * (sshd/monitor/transfer_sandbox.c gives a room transfer's helpers the
 * same filters), not into libcommon (it links libseccomp).
 */
#ifndef ATRIUM_SANDBOX_SECCOMP_H
#define ATRIUM_SANDBOX_SECCOMP_H

#include <stddef.h>

/* Deny the kernel interfaces a sandboxed command has no use for (see
 * sandbox_seccomp.c).  0, or -errno with what failed in err: then the
 * command must not run. */
int sandbox_seccomp_deny(char *err, size_t errlen);

/* Make a chown to another user or group than ours fail with EPERM.  0, or
 * -1 when it cannot be installed: the kernel's EINVAL then stands, which is
 * no weaker (the id is unmapped anyway). */
int sandbox_seccomp_chown(void);

#endif

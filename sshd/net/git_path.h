/*
 * git_path.h: `git clone ssh://ROOM@host:2222/repo.git` asks for
 * git-upload-pack '/repo.git', an absolute path, while the repository is
 * /workspace/repo.git.  As the sftp subsystem's root is the workspace, a
 * git path that does not exist at / is looked up in the workspace.
 *
 * Pure: it rewrites the command text; the lookup runs in the sandbox.
 */
#ifndef ATRIUMD_GIT_PATH_H
#define ATRIUMD_GIT_PATH_H

#include <stddef.h>

/* When command is git-upload-pack, git-receive-pack or git-upload-archive
 * (with '-' or ' ') of one shell-quoted absolute path outside /workspace,
 * write to out a bash command that runs it on that path if it exists and
 * on /workspace/PATH otherwise, and return 1.  0 when command is anything
 * else (out untouched); -ENAMETOOLONG when out is too small. */
int git_path_command(const char *command, char *out, size_t len);

#endif

/*
 * util.h: small system helpers shared by the three programs.
 */
#ifndef ATRIUM_UTIL_H
#define ATRIUM_UTIL_H

#include <stddef.h>
#include <sys/types.h>

/* "2026-11-30T03:44:26.123Z" for now, into out (at least 32 bytes). */
void time_now_iso(char *out, size_t outlen);

/* The value of hex digit c, or -1. */
int hex_value(char c);

/* Monotonic milliseconds. */
long long time_mono_ms(void);

/* Set or clear O_NONBLOCK / FD_CLOEXEC.  0 or -errno. */
int fd_set_nonblock(int fd, int on);
int fd_set_cloexec(int fd, int on);

/* write(2) all of it, retrying EINTR and short writes (blocking fds).
 * 0 or -errno. */
int write_all(int fd, const void *p, size_t n);

/* Replace dir/name with n bytes of p, atomically: a temporary file in dir
 * renamed over it, so a reader or a crash sees the old file or the whole
 * new one.  durable: fsync the file and dir too.  0 or -errno. */
int write_file_atomic(const char *dir, const char *name, const void *p,
    size_t n, mode_t mode, int durable);

/* Which file a path names (lstat), so that a process removes at its end
 * only what it made: a socket or pid file that another process has put
 * at the same path since is left alone. */
struct file_id {
	dev_t dev;
	ino_t ino;
	int set;		/* 0: nothing recorded (nothing is removed) */
};

/* Record the file at path into id.  0 or -errno (id cleared). */
int file_id_get(const char *path, struct file_id *id);

/* Remove path if it is still the file id recorded.  0 (removed, or gone
 * already), -ESTALE (another file is there now, or none was recorded:
 * left alone) or -errno. */
int unlink_if_same(const char *path, const struct file_id *id);

/* mkdir -p with mode for each made directory.  0 or -errno. */
int mkdir_p(const char *path, mode_t mode);

/* Read a whole small file (at most max bytes) into a malloc'd NUL-terminated
 * string.  0 or -errno (-EFBIG when larger than max). */
int read_small_file(const char *path, size_t max, char **out, size_t *len);

/* The same from an open file, from its start (pread: the offset is not
 * moved). */
int read_small_fd(int fd, size_t max, char **out, size_t *len);

/* Directory of the running executable, for finding sibling binaries. */
int self_dir(char *out, size_t outlen);

#endif

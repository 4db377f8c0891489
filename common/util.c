/*
 * util.c: small system helpers (util.h).
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void
time_now_iso(char *out, size_t outlen)
{
	struct timespec ts;
	struct tm tm;
	char base[24];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, outlen, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}

int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long long
time_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
fd_set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

int
fd_set_cloexec(int fd, int on)
{
	int fl = fcntl(fd, F_GETFD);

	if (fl < 0)
		return -errno;
	fl = on ? fl | FD_CLOEXEC : fl & ~FD_CLOEXEC;
	return fcntl(fd, F_SETFD, fl) < 0 ? -errno : 0;
}

int
write_all(int fd, const void *p, size_t n)
{
	const char *s = p;

	while (n > 0) {
		ssize_t w = write(fd, s, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int
write_file_atomic(const char *dir, const char *name, const void *p,
    size_t n, mode_t mode, int durable)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int fd, r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path) || (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp",
	    dir, name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    mode);
	if (fd < 0)
		return -errno;
	r = write_all(fd, p, n);
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	if (durable && (fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

int
file_id_get(const char *path, struct file_id *id)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (lstat(path, &st) < 0)
		return -errno;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	id->set = 1;
	return 0;
}

/* The check and the unlink are two calls: this guards against a file
 * that another process put there while we ran (a second server on the
 * same data, by mistake), not against one racing us at that instant,
 * which the callers' own locks exclude. */
int
unlink_if_same(const char *path, const struct file_id *id)
{
	struct file_id now;
	int r;

	if (!id->set)
		return -ESTALE;
	if ((r = file_id_get(path, &now)) < 0)
		return r == -ENOENT ? 0 : r;
	if (now.dev != id->dev || now.ino != id->ino)
		return -ESTALE;
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

int
mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int
read_small_fd(int fd, size_t max, char **out, size_t *len)
{
	char *data = NULL;
	size_t n = 0;
	int err = 0;

	*out = NULL;
	*len = 0;
	data = malloc(max + 2);
	if (!data)
		return -ENOMEM;
	for (;;) {
		ssize_t r = pread(fd, data + n, max + 1 - n, (off_t)n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			err = -EFBIG;
			break;
		}
	}
	if (err) {
		free(data);
		return err;
	}
	data[n] = '\0';
	*out = data;
	*len = n;
	return 0;
}

int
read_small_file(const char *path, size_t max, char **out, size_t *len)
{
	int fd, r;

	*out = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read_small_fd(fd, max, out, len);
	close(fd);
	return r;
}

int
self_dir(char *out, size_t outlen)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	char *slash;

	if (n < 0)
		return -errno;
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	if ((size_t)snprintf(out, outlen, "%s", path) >= outlen)
		return -ENAMETOOLONG;
	return 0;
}

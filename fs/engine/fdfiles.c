/*
 * fdfiles.c: files given as open descriptors, opened by SQLite by name
 * (fdfiles.h).  Called by fs/fs_main.c (export-room's --fd) before any
 * database is opened, and by the code that checks a database exists.
 *
 * Why: `atrium-fs export-room` reads a room's room.db and workspace.db,
 * which are root's (0600), with their -wal and -shm while the room runs.
 * It runs as the room's own uid with no groups, so atriumd's monitor opens
 * exactly those files and passes them (room.db, room.db-wal, room.db-shm,
 * workspace.db, ...); the helper can reach nothing else of the room.
 *
 * How: SQLite's unix VFS makes every system call that names a file through
 * a table that a program may change (xSetSystemCall: "open", "stat",
 * "lstat", "access").  Here they look the name up first: SQLite names a
 * file by its full path, the working directory's followed by the file's
 * name; the -wal and -shm are the database's name with the suffix, so
 * each must be given by its own name too.  A given name opens as a
 * duplicate of its descriptor (SQLite closes what it opened), stats as
 * the descriptor does, and can be written only when its descriptor was
 * opened for writing (SQLite then falls back to read-only, as it does for
 * a file it may not write).  Every other name goes to the real call.
 *
 * The table is the process's configuration, set from its command line
 * before the first database opens and never changed after: SQLite's
 * system-call hooks take no context, so it lives in this file alone.
 */
#include "fdfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define FDFILES_NAME_MAX	64

/* One given file. */
struct fdfile {
	char name[FDFILES_NAME_MAX];	/* plain name, no '/' */
	int fd;				/* open, above 2, never closed here */
	int writable;			/* fd was opened for writing */
};

static struct fdfile fdfiles[FDFILES_MAX];
static int fdfiles_n;
static char fdfiles_cwd[PATH_MAX];	/* the working directory at install */

/* The real calls of SQLite's unix VFS, saved at install. */
static sqlite3_syscall_ptr real_open, real_stat, real_lstat, real_access;

int
fdfiles_add(const char *spec)
{
	const char *eq = strchr(spec, '=');
	size_t len = eq ? (size_t)(eq - spec) : 0;
	char *end;
	long fd;
	int fl;

	if (!eq || len == 0 || len >= FDFILES_NAME_MAX ||
	    memchr(spec, '/', len) || (len == 1 && spec[0] == '.') ||
	    (len == 2 && spec[0] == '.' && spec[1] == '.'))
		return -EINVAL;
	errno = 0;
	fd = strtol(eq + 1, &end, 10);
	if (end == eq + 1 || *end || errno || fd < 3 || fd > INT_MAX)
		return -EINVAL;
	if (fdfiles_n == FDFILES_MAX)
		return -ENOSPC;
	if ((fl = fcntl((int)fd, F_GETFL)) < 0)
		return -EBADF;
	memcpy(fdfiles[fdfiles_n].name, spec, len);
	fdfiles[fdfiles_n].name[len] = '\0';
	fdfiles[fdfiles_n].fd = (int)fd;
	fdfiles[fdfiles_n].writable = (fl & O_ACCMODE) != O_RDONLY;
	fdfiles_n++;
	return 0;
}

/* The given file path names, or NULL: "NAME", "./NAME" or the working
 * directory's path, '/', NAME. */
static const struct fdfile *
fdfiles_find(const char *path)
{
	size_t n = strlen(fdfiles_cwd);

	if (path[0] == '/') {
		if (n == 0 || strncmp(path, fdfiles_cwd, n) != 0)
			return NULL;
		path += n;
		if (n > 1 && *path++ != '/')
			return NULL;
	}
	while (path[0] == '.' && path[1] == '/')
		path += 2;
	for (int i = 0; i < fdfiles_n; i++)
		if (strcmp(path, fdfiles[i].name) == 0)
			return &fdfiles[i];
	return NULL;
}

/* SQLite's "open": a given name is a duplicate of its descriptor. */
static int
fdfiles_open(const char *path, int flags, int mode)
{
	const struct fdfile *f = fdfiles_find(path);

	if (!f)
		return ((int (*)(const char *, int, int))real_open)(path, flags,
		    mode);
	if ((flags & O_CREAT) && (flags & O_EXCL)) {
		errno = EEXIST;
		return -1;
	}
	if ((flags & O_ACCMODE) != O_RDONLY && !f->writable) {
		errno = EACCES;
		return -1;
	}
	return fcntl(f->fd, F_DUPFD_CLOEXEC, 3);
}

/* SQLite's "stat" and "lstat": a given name stats as its descriptor. */
static int
fdfiles_stat(const char *path, struct stat *sb)
{
	const struct fdfile *f = fdfiles_find(path);

	return f ? fstat(f->fd, sb) :
	    ((int (*)(const char *, struct stat *))real_stat)(path, sb);
}

static int
fdfiles_lstat(const char *path, struct stat *sb)
{
	const struct fdfile *f = fdfiles_find(path);

	return f ? fstat(f->fd, sb) :
	    ((int (*)(const char *, struct stat *))real_lstat)(path, sb);
}

int
fdfiles_access(const char *path, int mode)
{
	const struct fdfile *f = fdfiles_n ? fdfiles_find(path) : NULL;

	if (!f)
		return real_access ? ((int (*)(const char *, int))real_access)(
		    path, mode) : access(path, mode);
	if ((mode & W_OK) && !f->writable) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

/* One hook: the real call into *saved, ours in its place.  0 or -1. */
static int
fdfiles_hook(sqlite3_vfs *vfs, const char *name, sqlite3_syscall_ptr ours,
    sqlite3_syscall_ptr *saved)
{
	if (!vfs->xGetSystemCall || !(*saved = vfs->xGetSystemCall(vfs, name)))
		return -1;
	return vfs->xSetSystemCall(vfs, name, ours) == SQLITE_OK ? 0 : -1;
}

int
fdfiles_install(void)
{
	sqlite3_vfs *vfs;

	if (fdfiles_n == 0)
		return 0;
	if (!getcwd(fdfiles_cwd, sizeof(fdfiles_cwd))) {
		log_error("the working directory: %s", strerror(errno));
		return -EIO;
	}
	vfs = sqlite3_vfs_find("unix");
	if (!vfs || vfs->iVersion < 3 ||
	    fdfiles_hook(vfs, "open", (sqlite3_syscall_ptr)fdfiles_open,
	    &real_open) < 0 ||
	    fdfiles_hook(vfs, "stat", (sqlite3_syscall_ptr)fdfiles_stat,
	    &real_stat) < 0 ||
	    fdfiles_hook(vfs, "lstat", (sqlite3_syscall_ptr)fdfiles_lstat,
	    &real_lstat) < 0 ||
	    fdfiles_hook(vfs, "access", (sqlite3_syscall_ptr)fdfiles_access,
	    &real_access) < 0) {
		log_error("SQLite's unix VFS does not let its system calls be "
		    "replaced; cannot open the files given as descriptors");
		return -EIO;
	}
	return 0;
}

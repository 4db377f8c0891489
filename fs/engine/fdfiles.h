/*
 * fdfiles.h: files a process was given as open descriptors, which SQLite
 * then opens by name (fdfiles.c).  atriumd's monitor opens a room's
 * databases, which are root's, and hands them to `atrium-fs export-room
 * --fd NAME=N`, which runs as the room's own uid and could not open them
 * itself.
 */
#ifndef ATRIUM_FS_FDFILES_H
#define ATRIUM_FS_FDFILES_H

#define FDFILES_MAX	8	/* names given at most */

/* Give "NAME=FD" (NAME a plain file name in the working directory, FD an
 * open descriptor above 2).  0, or -EINVAL / -ENOSPC / -EBADF. */
int fdfiles_add(const char *spec);

/* Have SQLite's default VFS open, stat and probe the given names through
 * their descriptors from now on (other names as before).  Once, before any
 * database is opened; 0 when nothing was given.  0 or -EIO. */
int fdfiles_install(void);

/* access(path, mode) that knows the given names: 0 or -1 with errno. */
int fdfiles_access(const char *path, int mode);

#endif

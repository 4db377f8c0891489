/*
 * vfs_shim.h: what Atrium's SQLite VFS shims share (vfs_shim.c).  A
 * shim is a VFS over the default one that changes a few methods of the
 * files it opens and forwards the rest: walbuf.c gathers a writer's WAL
 * writes (atrium-fs's and atrium-agent's), fs/engine/readahead.c reads the
 * database file ahead for atrium-fs's readers; the plain shim changes
 * none (cluster/replicate_restore.c uses it for its path rule alone).
 *
 * A shim's file struct begins with a struct vfs_shim_file, and SQLite
 * gives it room for the real file right after the shim's own struct
 * (vfs_shim_register sizes it so).  Its method table names its own
 * methods where it changes them and vfs_shim_* below for the rest.
 */
#ifndef ATRIUM_VFS_SHIM_H
#define ATRIUM_VFS_SHIM_H

#include <stddef.h>
#include <sqlite3.h>

struct vfs_shim_file {
	sqlite3_file base;	/* the shim's methods */
	sqlite3_file *real;	/* the default VFS's file, after the shim's */
};

/* Build vfs as a copy of the default VFS named name, whose files are a
 * shim's struct of file_size bytes followed by the real file's, opened by
 * xopen; and register it (not as the default).  0, or -1 (logged) when
 * there is no default VFS of version 2 or later or it cannot be
 * registered. */
int vfs_shim_register(sqlite3_vfs *vfs, const char *name, size_t file_size,
    int (*xopen)(sqlite3_vfs *, const char *, sqlite3_file *, int, int *));

/* Register vfs as a shim that changes no file method: the default VFS
 * with only its path rule (a path through /proc/self/fd/N/ is kept as
 * it is, vfs_shim.c), for a process that gave up root and reaches its
 * database through a directory it holds open (atrium-replicate restore).
 * 0 or -1 (logged), as vfs_shim_register. */
int vfs_shim_register_plain(sqlite3_vfs *vfs, const char *name);

/* In a shim's xOpen: zero the shim's size bytes at f and open the real
 * file after them with vfs's real VFS.  SQLITE_OK with the real file open
 * (the caller then sets f->base.pMethods), or SQLite's error with nothing
 * open; a real file whose methods are older than version 3 (which lack
 * what a shim forwards) is closed again and refused. */
int vfs_shim_open_real(sqlite3_vfs *vfs, const char *name,
    struct vfs_shim_file *f, size_t size, int flags, int *out_flags);

/* The real VFS under the shim vfs. */
sqlite3_vfs *vfs_shim_real_vfs(const sqlite3_vfs *vfs);

/* Methods forwarded unchanged to the real file. */
int vfs_shim_read(sqlite3_file *file, void *p, int n, sqlite3_int64 off);
int vfs_shim_write(sqlite3_file *file, const void *p, int n,
    sqlite3_int64 off);
int vfs_shim_truncate(sqlite3_file *file, sqlite3_int64 size);
int vfs_shim_sync(sqlite3_file *file, int flags);
int vfs_shim_file_size(sqlite3_file *file, sqlite3_int64 *size);
int vfs_shim_lock(sqlite3_file *file, int lock);
int vfs_shim_unlock(sqlite3_file *file, int lock);
int vfs_shim_check_reserved(sqlite3_file *file, int *out);
int vfs_shim_file_control(sqlite3_file *file, int op, void *arg);
int vfs_shim_sector_size(sqlite3_file *file);
int vfs_shim_device_chars(sqlite3_file *file);
int vfs_shim_shm_map(sqlite3_file *file, int pg, int pgsz, int extend,
    void volatile **pp);
int vfs_shim_shm_lock(sqlite3_file *file, int offset, int n, int flags);
void vfs_shim_shm_barrier(sqlite3_file *file);
int vfs_shim_shm_unmap(sqlite3_file *file, int del);
int vfs_shim_fetch(sqlite3_file *file, sqlite3_int64 off, int n, void **pp);
int vfs_shim_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p);

#endif

/*
 * vfs_shim.c: the parts every SQLite VFS shim of Atrium shares
 * (vfs_shim.h): registering one over the default VFS, opening the real
 * file behind a shim's, and the methods and VFS calls a shim forwards
 * unchanged.  Nothing here keeps state: a shim's files are its own.
 */
#include "vfs_shim.h"

#include <string.h>

#include "log.h"

/* The real file behind a shim's file. */
static sqlite3_file *
vfs_shim_real(sqlite3_file *file)
{
	return ((struct vfs_shim_file *)file)->real;
}

sqlite3_vfs *
vfs_shim_real_vfs(const sqlite3_vfs *vfs)
{
	return vfs->pAppData;
}

int
vfs_shim_open_real(sqlite3_vfs *vfs, const char *name,
    struct vfs_shim_file *f, size_t size, int flags, int *out_flags)
{
	sqlite3_vfs *real = vfs_shim_real_vfs(vfs);
	int rc;

	memset(f, 0, size);
	f->real = (sqlite3_file *)((char *)f + size);
	rc = real->xOpen(real, name, f->real, flags, out_flags);
	if (rc != SQLITE_OK || !f->real->pMethods)
		return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
	/* A real file of an older method version lacks what a shim
	 * forwards (the default unix VFS has version 3). */
	if (f->real->pMethods->iVersion < 3) {
		f->real->pMethods->xClose(f->real);
		return SQLITE_CANTOPEN;
	}
	return SQLITE_OK;
}

/* The VFS calls that name no file, forwarded to the real VFS. */
static int
vfs_shim_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	sqlite3_vfs *real = vfs_shim_real_vfs(vfs);

	return real->xDelete(real, name, sync_dir);
}

static int
vfs_shim_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	sqlite3_vfs *real = vfs_shim_real_vfs(vfs);

	return real->xAccess(real, name, flags, out);
}

/* A path through a directory this process holds open ("/proc/self/fd/N/
 * room.db") is kept as it is: the unix VFS would read the link and give
 * the directory's own path, whose parents a process that gave up root may
 * not be able to walk (atrium-agent: agent/confine.c). */
#define VFS_SHIM_FD_DIR	"/proc/self/fd/"

static int
vfs_shim_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	sqlite3_vfs *real = vfs_shim_real_vfs(vfs);
	size_t len = strlen(name);

	if (strncmp(name, VFS_SHIM_FD_DIR, sizeof(VFS_SHIM_FD_DIR) - 1) == 0) {
		if (len >= (size_t)n)
			return SQLITE_CANTOPEN;
		memcpy(out, name, len + 1);
		return SQLITE_OK;
	}
	return real->xFullPathname(real, name, n, out);
}

int
vfs_shim_register(sqlite3_vfs *vfs, const char *name, size_t file_size,
    int (*xopen)(sqlite3_vfs *, const char *, sqlite3_file *, int, int *))
{
	sqlite3_vfs *real = sqlite3_vfs_find(NULL);

	if (!real || real->iVersion < 2) {
		log_warn("no default SQLite VFS to put %s over", name);
		return -1;
	}
	*vfs = *real;
	vfs->pNext = NULL;
	vfs->pAppData = real;
	vfs->szOsFile = (int)file_size + real->szOsFile;
	vfs->zName = name;
	vfs->xOpen = xopen;
	vfs->xDelete = vfs_shim_delete;
	vfs->xAccess = vfs_shim_access;
	vfs->xFullPathname = vfs_shim_full_pathname;
	if (sqlite3_vfs_register(vfs, 0) != SQLITE_OK) {
		log_warn("registering the %s SQLite VFS failed", name);
		return -1;
	}
	return 0;
}

int
vfs_shim_read(sqlite3_file *file, void *p, int n, sqlite3_int64 off)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xRead(r, p, n, off);
}

int
vfs_shim_write(sqlite3_file *file, const void *p, int n, sqlite3_int64 off)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xWrite(r, p, n, off);
}

int
vfs_shim_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xTruncate(r, size);
}

int
vfs_shim_sync(sqlite3_file *file, int flags)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xSync(r, flags);
}

int
vfs_shim_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xFileSize(r, size);
}

int
vfs_shim_lock(sqlite3_file *file, int lock)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xLock(r, lock);
}

int
vfs_shim_unlock(sqlite3_file *file, int lock)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xUnlock(r, lock);
}

int
vfs_shim_check_reserved(sqlite3_file *file, int *out)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xCheckReservedLock(r, out);
}

int
vfs_shim_file_control(sqlite3_file *file, int op, void *arg)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xFileControl(r, op, arg);
}

int
vfs_shim_sector_size(sqlite3_file *file)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xSectorSize(r);
}

int
vfs_shim_device_chars(sqlite3_file *file)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xDeviceCharacteristics(r);
}

int
vfs_shim_shm_map(sqlite3_file *file, int pg, int pgsz, int extend,
    void volatile **pp)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xShmMap(r, pg, pgsz, extend, pp);
}

int
vfs_shim_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xShmLock(r, offset, n, flags);
}

void
vfs_shim_shm_barrier(sqlite3_file *file)
{
	sqlite3_file *r = vfs_shim_real(file);

	r->pMethods->xShmBarrier(r);
}

int
vfs_shim_shm_unmap(sqlite3_file *file, int del)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xShmUnmap(r, del);
}

int
vfs_shim_fetch(sqlite3_file *file, sqlite3_int64 off, int n, void **pp)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xFetch(r, off, n, pp);
}

int
vfs_shim_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xUnfetch(r, off, p);
}

/* ---- the plain shim: every method forwarded ------------------------------ */

static int
vfs_shim_plain_close(sqlite3_file *file)
{
	sqlite3_file *r = vfs_shim_real(file);

	return r->pMethods->xClose(r);
}

static const sqlite3_io_methods vfs_shim_plain_methods = {
	3, vfs_shim_plain_close, vfs_shim_read, vfs_shim_write,
	vfs_shim_truncate, vfs_shim_sync, vfs_shim_file_size, vfs_shim_lock,
	vfs_shim_unlock, vfs_shim_check_reserved, vfs_shim_file_control,
	vfs_shim_sector_size, vfs_shim_device_chars, vfs_shim_shm_map,
	vfs_shim_shm_lock, vfs_shim_shm_barrier, vfs_shim_shm_unmap,
	vfs_shim_fetch, vfs_shim_unfetch,
};

static int
vfs_shim_plain_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file,
    int flags, int *out_flags)
{
	struct vfs_shim_file *f = (struct vfs_shim_file *)file;
	int rc = vfs_shim_open_real(vfs, name, f, sizeof(*f), flags,
	    out_flags);

	if (rc == SQLITE_OK)
		f->base.pMethods = &vfs_shim_plain_methods;
	return rc;
}

int
vfs_shim_register_plain(sqlite3_vfs *vfs, const char *name)
{
	return vfs_shim_register(vfs, name, sizeof(struct vfs_shim_file),
	    vfs_shim_plain_open);
}

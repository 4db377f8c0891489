/*
 * export.c: `atrium-fs export DB [SNAPSHOT]`, a workspace tree as a pax
 * tar on a file descriptor.  Called by fs/fs_main.c; reads through a tree view
 * (fs/offline/tree.h), so that a snapshot exports like the live tree, and
 * writes through libarchive.
 *
 * What the archive holds (man/atrium-fs.8 says the same):
 *   - "./" for the root, then "./PATH" for every entry, depth first, each
 *     directory before what it holds;
 *   - mode, numeric uid and gid (no user names: the workspace has none),
 *     atime, mtime and ctime with their nanoseconds (pax records), size;
 *   - symlink targets; device numbers; fifos;
 *   - hard links: the first name of an inode carries its data, the others
 *     are links to it (libarchive's link resolver, which forgets an inode
 *     once all its names were seen);
 *   - every extended attribute (SCHILY.xattr records, which GNU tar reads
 *     too).  A workspace keeps no POSIX ACLs (the core refuses system.*
 *     attributes, so the mount answers EOPNOTSUPP): there are none to
 *     write;
 *   - holes as holes: a file that stores less than its size is written as
 *     a pax sparse file (GNU.sparse 1.0), its data ranges found by
 *     SEEK_DATA / SEEK_HOLE, so a 1 GiB file with one byte costs one block.
 *   Names are written in UTF-8 (a name that is no UTF-8 as its bytes, with
 *   hdrcharset=BINARY: fs/fs_main.c runs export in the C.UTF-8 locale).  Sockets
 *   cannot be in a tar: they are skipped, each with a note on stderr.
 *
 * export_into writes the same entries into an archive the caller opened,
 * under another root name (a room's archive puts the tree under
 * "workspace", fs/offline/room_archive.c).
 *
 * Workload: a tree of any size in bounded memory.  The walk keeps one
 * cookie per directory level and the current path; data moves through one
 * buffer of EXPORT_BUF; the link resolver keeps only inodes with names not
 * yet seen; a sparse map holds one file's data ranges at a time.
 */
#include "commands.h"
#include "tree.h"
#include "log.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT_BUF (1u << 20)
/* Directory levels: deeper than any path Linux can open (PATH_MAX 4096
 * over 2-byte names), so only a damaged database reaches it. */
#define EXPORT_DEPTH_MAX 2048

/* One directory being listed. */
struct export_level {
	uint64_t dir;
	int64_t off;             /* cookie of the last entry taken */
	size_t pathlen;          /* its path's length in export.path */
};

struct export {
	struct tree *t;
	struct archive *a;
	struct archive_entry_linkresolver *links;
	char *path;              /* "./a/b" of the entry at hand */
	size_t pathcap;
	struct export_level *stack;
	size_t depth;
	unsigned char *buf;      /* EXPORT_BUF: data, and zeros for holes */
	unsigned char *zeros;    /* EXPORT_BUF of zeros */
	char *names;             /* listxattr's answer */
	size_t namescap;
	unsigned char *value;    /* one xattr value */
	uint64_t entries, skipped;
	const char *root;        /* the root's name: "." or a prefix */
	int borrowed;            /* a is the caller's: not closed here */
};

/* Say what failed on stderr: 1 (the exit status's reason is printed). */
static int
export_fail(struct export *x, const char *what, int err)
{
	fprintf(stderr, "atrium-fs: export: %s%s%s: %s\n", what,
	    x->path && x->path[0] ? " " : "", x->path ? x->path : "",
	    err ? strerror(-err) : archive_error_string(x->a) ?
	    archive_error_string(x->a) : "failed");
	return -1;
}

/* Set the path to its first len bytes plus "/" and name.  0 or -ENOMEM. */
static int
export_path_set(struct export *x, size_t len, const char *name)
{
	size_t need = len + 1 + strlen(name) + 1;
	char *p;

	if (need > x->pathcap) {
		if (!(p = realloc(x->path, need * 2)))
			return -ENOMEM;
		x->path = p;
		x->pathcap = need * 2;
	}
	x->path[len] = '/';
	strcpy(x->path + len + 1, name);
	return 0;
}

/* Add ino's extended attributes to e.  0 or -errno. */
static int
export_xattrs(struct export *x, uint64_t ino, struct archive_entry *e)
{
	ssize_t n, v;
	char *p;

	while ((n = x->t->ops->listxattr(x->t->src, ino, x->names,
	    x->namescap)) == -ERANGE) {
		if ((n = x->t->ops->listxattr(x->t->src, ino, NULL, 0)) < 0)
			return (int)n;
		if (!(p = realloc(x->names, (size_t)n + 1)))
			return -ENOMEM;
		x->names = p;
		x->namescap = (size_t)n + 1;
	}
	if (n < 0)
		return (int)n;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(x->names + i) + 1) {
		v = x->t->ops->getxattr(x->t->src, ino, x->names + i, x->value,
		    FS_XATTR_VALUE_MAX);
		if (v == -ENODATA)
			continue;
		if (v < 0)
			return (int)v;
		archive_entry_xattr_add_entry(e, x->names + i, x->value, (size_t)v);
	}
	return 0;
}

/* A sparse map for a file that stores less than its size: its data
 * ranges, found with SEEK_DATA and SEEK_HOLE.  0 or -errno. */
static int
export_sparse(struct export *x, const struct fs_attr *a,
    struct archive_entry *e)
{
	uint64_t off = 0, data, hole;
	int r;

	if (a->blocks * 512 >= a->size)
		return 0;
	while (off < a->size) {
		r = x->t->ops->seek(x->t->src, a->ino, off, SEEK_DATA, &data);
		if (r == -ENXIO)
			break;
		if (r < 0 || (r = x->t->ops->seek(x->t->src, a->ino, data,
		    SEEK_HOLE, &hole)) < 0)
			return r;
		if (hole <= data)
			return -EIO;
		archive_entry_sparse_add_entry(e, (la_int64_t)data,
		    (la_int64_t)(hole - data));
		off = hole;
	}
	/* All holes: libarchive wants one range to know the file is sparse. */
	if (archive_entry_sparse_count(e) == 0)
		archive_entry_sparse_add_entry(e, (la_int64_t)a->size, 0);
	return 0;
}

/* Pass len bytes of src to the archive.  0 or -EIO. */
static int
export_put(struct export *x, const void *src, size_t len)
{
	return archive_write_data(x->a, src, len) == (la_ssize_t)len ? 0 : -EIO;
}

/* Write the archive's data for a file of size bytes: data read from the
 * view, zeros over holes (libarchive skips those of the sparse map
 * without writing them).  0 or -errno (-EIO for libarchive's errors). */
static int
export_data(struct export *x, uint64_t ino, uint64_t size)
{
	uint64_t off = 0, data_end = 0, data;
	size_t want;
	ssize_t n;
	int r;

	while (off < size) {
		want = size - off < EXPORT_BUF ? (size_t)(size - off) : EXPORT_BUF;
		if (off >= data_end) {
			/* Past the data range at hand: find the next one. */
			r = x->t->ops->seek(x->t->src, ino, off, SEEK_DATA, &data);
			if (r == -ENXIO)
				data = size;
			else if (r < 0)
				return r;
			if (data > off) {
				if (data - off < want)
					want = (size_t)(data - off);
				if ((r = export_put(x, x->zeros, want)) < 0)
					return r;
				off += want;
				continue;
			}
			if ((r = x->t->ops->seek(x->t->src, ino, off, SEEK_HOLE,
			    &data_end)) < 0)
				return r;
			if (data_end <= off)
				return -EIO;     /* a damaged map: never loop */
		}
		if (data_end - off < want)
			want = (size_t)(data_end - off);
		if ((n = x->t->ops->read(x->t->src, ino, off, x->buf, want)) < 0)
			return (int)n;
		if ((size_t)n != want)
			return -EIO;     /* one snapshot: the size cannot change */
		if ((r = export_put(x, x->buf, want)) < 0)
			return r;
		off += want;
	}
	return 0;
}

/* Fill e with a's attributes, target and xattrs.  0 or -errno. */
static int
export_fill(struct export *x, const struct fs_attr *a, struct archive_entry *e)
{
	char target[FS_SYMLINK_MAX + 1];
	int r;

	archive_entry_copy_pathname(e, x->path);
	archive_entry_set_mode(e, a->mode);
	archive_entry_set_uid(e, a->uid);
	archive_entry_set_gid(e, a->gid);
	archive_entry_set_nlink(e, a->nlink);
	archive_entry_set_dev(e, 1);
	archive_entry_set_ino64(e, (la_int64_t)a->ino);
	archive_entry_set_atime(e, a->atime.tv_sec, a->atime.tv_nsec);
	archive_entry_set_mtime(e, a->mtime.tv_sec, a->mtime.tv_nsec);
	archive_entry_set_ctime(e, a->ctime.tv_sec, a->ctime.tv_nsec);
	archive_entry_set_size(e, S_ISREG(a->mode) ? (la_int64_t)a->size : 0);
	if (S_ISCHR(a->mode) || S_ISBLK(a->mode))
		archive_entry_set_rdev(e, (dev_t)a->rdev);
	if (S_ISLNK(a->mode)) {
		if ((r = x->t->ops->readlink(x->t->src, a->ino, target,
		    sizeof(target))) < 0)
			return r;
		archive_entry_copy_symlink(e, target);
	}
	return export_xattrs(x, a->ino, e);
}

/* Write the entry at x->path for inode ino.  0 or -1 (reported). */
static int
export_entry(struct export *x, uint64_t ino, struct fs_attr *a)
{
	struct archive_entry *e, *spare = NULL;
	int data, r;

	if ((r = x->t->ops->getattr(x->t->src, ino, a)) < 0)
		return export_fail(x, "reading", r);
	if (S_ISSOCK(a->mode)) {
		fprintf(stderr, "atrium-fs: export: skipping socket %s (a tar "
		    "cannot hold one)\n", x->path);
		x->skipped++;
		return 0;
	}
	if (!(e = archive_entry_new()))
		return export_fail(x, "preparing", -ENOMEM);
	if ((r = export_fill(x, a, e)) < 0) {
		archive_entry_free(e);
		return export_fail(x, "reading", r);
	}
	archive_entry_linkify(x->links, &e, &spare);
	data = S_ISREG(a->mode) && !archive_entry_hardlink(e) && a->size > 0;
	if (data && (r = export_sparse(x, a, e)) < 0) {
		archive_entry_free(e);
		return export_fail(x, "reading holes of", r);
	}
	r = archive_write_header(x->a, e);
	archive_entry_free(e);
	archive_entry_free(spare);
	if (r == ARCHIVE_WARN)
		fprintf(stderr, "atrium-fs: export: %s: %s\n", x->path,
		    archive_error_string(x->a));
	else if (r != ARCHIVE_OK)
		return export_fail(x, "writing", 0);
	if (data && (r = export_data(x, ino, a->size)) < 0)
		return r == -EIO ? export_fail(x, "writing", 0) :
		    export_fail(x, "reading", r);
	x->entries++;
	return 0;
}

/* Enter directory dir, whose path is x->path.  0 or -1 (reported). */
static int
export_push(struct export *x, uint64_t dir)
{
	struct export_level *s;

	if (x->depth >= EXPORT_DEPTH_MAX)
		return export_fail(x, "directories nested too deep (run atrium-fs "
		    "fsck) at", -ELOOP);
	if ((x->depth & 63) == 0) {
		if (!(s = realloc(x->stack, (x->depth + 64) * sizeof(*s))))
			return export_fail(x, "walking", -ENOMEM);
		x->stack = s;
	}
	x->stack[x->depth++] = (struct export_level){
		.dir = dir, .pathlen = strlen(x->path) };
	return 0;
}

/* Walk the tree depth first from the root, writing each entry.  0 or -1. */
static int
export_walk(struct export *x)
{
	struct tree_entry te;
	struct export_level *top;
	struct fs_attr a;
	int r;

	snprintf(x->path, x->pathcap, "%s", x->root);	/* a short name */
	if (export_entry(x, FS_ROOT_INO, &a) < 0 || export_push(x, FS_ROOT_INO) < 0)
		return -1;
	while (x->depth > 0) {
		top = &x->stack[x->depth - 1];
		if ((r = x->t->ops->next_entry(x->t->src, top->dir, top->off,
		    &te)) < 0) {
			x->path[top->pathlen] = '\0';
			return export_fail(x, "listing", r);
		}
		if (r == 0) {
			x->depth--;
			continue;
		}
		top->off = te.off;
		if (export_path_set(x, top->pathlen, te.name) < 0)
			return export_fail(x, "walking", -ENOMEM);
		if (export_entry(x, te.ino, &a) < 0)
			return -1;
		if (S_ISDIR(a.mode) && export_push(x, te.ino) < 0)
			return -1;
	}
	return 0;
}

/* Start the hard link resolver for x's archive.  0 or -1 (reported). */
static int
export_links(struct export *x)
{
	if (!(x->links = archive_entry_linkresolver_new()))
		return export_fail(x, "starting the archive", -ENOMEM);
	archive_entry_linkresolver_set_strategy(x->links, archive_format(x->a));
	return 0;
}

/* Set up the archive writer on fd: pax, raw names.  0 or -1 (reported). */
static int
export_open_archive(struct export *x, int fd)
{
	if (!(x->a = archive_write_new()))
		return export_fail(x, "starting the archive", -ENOMEM);
	if (archive_write_set_format_pax(x->a) != ARCHIVE_OK)
		return export_fail(x, "starting the archive", 0);
	/* SCHILY.xattr records alone, which GNU tar reads too (a libarchive
	 * that knows no such option writes both kinds). */
	archive_write_set_format_option(x->a, "pax", "xattrheader", "SCHILY");
	if (archive_write_open_fd(x->a, fd) != ARCHIVE_OK)
		return export_fail(x, "starting the archive", 0);
	return export_links(x);
}

/* Free what export_run set up. */
static void
export_free(struct export *x)
{
	if (x->a && !x->borrowed)
		archive_write_free(x->a);
	archive_entry_linkresolver_free(x->links);
	tree_close(x->t);
	free(x->path);
	free(x->stack);
	free(x->buf);
	free(x->zeros);
	free(x->names);
	free(x->value);
}

/* Open the view of db (its snapshot when snapshot is set).  0 or -1
 * (reported). */
static int
export_open_tree(struct export *x, const char *db, const char *snapshot)
{
	int r;

	if (snapshot && fs_snapshot_name_ok(snapshot) < 0) {
		fprintf(stderr, "atrium-fs: export: that is not a snapshot name "
		    "(1-%d bytes of letters, digits and ._:@+-); see atrium-fs "
		    "snapshots %s\n", FS_SNAPSHOT_NAME_MAX, db);
		return -1;
	}
	r = snapshot ? tree_open_snapshot(db, snapshot, &x->t) :
	    tree_open_live(db, &x->t);
	if (r == 0)
		return 0;
	if (r == -ENOTSUP)
		fprintf(stderr, "atrium-fs: %s: this database has no snapshots\n", db);
	else if (r == -ENOENT && snapshot && access(db, F_OK) == 0)
		fprintf(stderr, "atrium-fs: %s has no snapshot \"%s\" (see "
		    "atrium-fs snapshots %s)\n", db, snapshot, db);
	else
		fs_explain_open(db, r, "export");
	return -1;
}

/* Set up x's buffers.  0 or 1 (said). */
static int
export_alloc(struct export *x)
{
	x->pathcap = 4096;
	x->namescap = 4096;
	if (!(x->path = malloc(x->pathcap)) || !(x->buf = malloc(EXPORT_BUF)) ||
	    !(x->zeros = calloc(1, EXPORT_BUF)) ||
	    !(x->names = malloc(x->namescap)) ||
	    !(x->value = malloc(FS_XATTR_VALUE_MAX))) {
		fprintf(stderr, "atrium-fs: export: out of memory\n");
		return 1;
	}
	x->path[0] = '\0';
	return 0;
}

/* Say how many sockets were left out. */
static void
export_report(const struct export *x)
{
	if (x->skipped)
		fprintf(stderr, "atrium-fs: export: %llu sockets skipped\n",
		    (unsigned long long)x->skipped);
}

int
export_run(const char *db, const char *snapshot, int fd)
{
	struct export x = { .root = "." };
	int r = -1;

	if (isatty(fd)) {
		fprintf(stderr, "atrium-fs: export writes a tar archive to "
		    "standard output; redirect it to a file or a pipe\n");
		return 2;
	}
	if (export_alloc(&x) == 0 && export_open_tree(&x, db, snapshot) == 0 &&
	    export_open_archive(&x, fd) == 0 && export_walk(&x) == 0) {
		if (archive_write_close(x.a) != ARCHIVE_OK)
			export_fail(&x, "finishing the archive", 0);
		else
			r = 0;
	}
	if (r == 0)
		export_report(&x);
	export_free(&x);
	return r == 0 ? 0 : 1;
}

int
export_into(struct archive *a, const char *db, const char *root)
{
	struct export x = { .root = root, .a = a, .borrowed = 1 };
	int r = -1;

	if (export_alloc(&x) == 0 && export_open_tree(&x, db, NULL) == 0 &&
	    export_links(&x) == 0 && export_walk(&x) == 0)
		r = 0;
	if (r == 0)
		export_report(&x);
	export_free(&x);
	return r == 0 ? 0 : 1;
}

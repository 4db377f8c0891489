/*
 * exer.h: the random-operation exerciser's engine.  It draws operations on
 * a few files from a seed, applies each to a model in memory and, through
 * a backend, to the filesystem under test, and compares every read with
 * the model.  Two backends use it: tests/exer/fsexer.c (system calls on a
 * real mount: several descriptors, mmap, a second process, page-cache
 * drops, remounts and kill -9 of the daemon) and
 * tests/unit/test_fs_exerciser.c (fs/'s core without FUSE, several
 * threads, under ThreadSanitizer in make check).
 *
 * Each written byte is never 0 and depends on the operation's number and
 * its position, so a byte that comes back from an older write, or from no
 * write at all, differs from the model's.
 *
 * Durability (for crash runs): per file, the state at its last fsync and
 * every change made since.  After a crash each byte must hold what the
 * fsync saw or what a later change put there, and the size must lie
 * between the smallest and the largest the file had since: at least what
 * was fsynced, and never a byte that was never written.
 */
#ifndef ATRIUM_EXER_H
#define ATRIUM_EXER_H

#include <stddef.h>
#include <stdint.h>

#define EXER_FILES 3
/* Files stay under this size: sixteen 64 KiB chunks. */
#define EXER_MAX_SIZE (1u << 20)

enum exer_kind {
	EXER_WRITE,        /* variant: backend's way (pwrite, pwritev, ...) */
	EXER_READ,         /* variant: backend's way (pread, mmap, ...) */
	EXER_MAPWRITE,     /* a write through a shared mapping, within size */
	EXER_TRUNCATE,     /* ftruncate to off */
	EXER_OPEN_TRUNC,   /* open with O_TRUNC: size 0 */
	EXER_FALLOCATE,    /* variant: an EXER_FALLOC_* mode */
	EXER_COPY,         /* len bytes of file2 at off2 to file at off */
	EXER_SEEK,         /* variant: SEEK_DATA or SEEK_HOLE from off */
	EXER_FSYNC,        /* variant: 1 for fdatasync */
	EXER_REOPEN,       /* close the file's descriptors and open again */
	EXER_CHILD_WRITE,  /* a write by another process, its own open */
	EXER_DROP_CACHES,  /* the kernel forgets its clean pages */
	EXER_REMOUNT,      /* unmount and mount again */
	EXER_CRASH,        /* kill -9 of the daemon, then mount again */
	EXER_NKINDS
};

enum exer_falloc {
	EXER_FALLOC_ALLOC,       /* mode 0: may extend */
	EXER_FALLOC_KEEP,        /* KEEP_SIZE */
	EXER_FALLOC_PUNCH,       /* PUNCH_HOLE | KEEP_SIZE */
	EXER_FALLOC_ZERO,        /* ZERO_RANGE: may extend */
	EXER_FALLOC_ZERO_KEEP,   /* ZERO_RANGE | KEEP_SIZE */
	EXER_FALLOC_N
};

struct exer_op {
	unsigned long no;      /* its number in the run, from 1 */
	enum exer_kind kind;
	int variant;
	int file, file2;
	uint64_t off, off2, len;
};

/* What a backend does.  Each returns 0 (or a count) or -errno; read and
 * seek fill what they are given.  size tells the file's size after the
 * op as the model has it (some calls need it: a mapping's length). */
struct exer_backend {
	void *arg;
	int nvariants[EXER_NKINDS];   /* 0: the kind is never drawn */
	int (*write)(void *arg, const struct exer_op *op, const void *buf);
	int (*read)(void *arg, const struct exer_op *op, void *buf,
	    uint64_t size);
	int (*truncate)(void *arg, const struct exer_op *op);
	int (*fallocate)(void *arg, const struct exer_op *op);
	int (*copy)(void *arg, const struct exer_op *op);
	int (*seek)(void *arg, const struct exer_op *op, uint64_t *out);
	int (*fsync)(void *arg, const struct exer_op *op);
	/* reopen, drop caches, remount, crash: the disturbances.  For a
	 * crash it returns after the filesystem is mounted again. */
	int (*disturb)(void *arg, const struct exer_op *op);
	int (*size)(void *arg, int file, uint64_t *out);
};

/* A change since the file's last fsync: len bytes at off became data
 * (a copy of its own) or zeros (data NULL). */
struct exer_change {
	uint64_t off, len;
	unsigned char *data;
};

struct exer_file {
	unsigned char *model;       /* EXER_MAX_SIZE bytes; 0 past size */
	uint64_t size;
	unsigned char *synced;      /* at the last fsync */
	uint64_t synced_size, min_size, max_size;
	struct exer_change *changes;
	size_t nchanges, cap;
};

struct exer {
	uint64_t seed;
	uint64_t rng;
	unsigned long ops, done;
	int weights[EXER_NKINDS];
	const struct exer_backend *be;
	struct exer_file files[EXER_FILES];
	unsigned char *buf, *buf2;
	/* The last operations, for the report of a failure. */
	struct exer_op recent[32];
	const char *name;           /* printed before each report line */
};

int exer_init(struct exer *x, uint64_t seed, unsigned long ops,
    const struct exer_backend *be, const char *name);
/* Run every op: 0, or -1 with the failure, the seed and the last ops
 * printed on stderr. */
int exer_run(struct exer *x);
/* After a crash and a mount: check each file against what it must hold
 * (the durability rule above), then take what it holds as the model.
 * 0 or -1 (reported). */
int exer_after_crash(struct exer *x);
/* Compare each file whole with the model.  0 or -1 (reported). */
int exer_check_all(struct exer *x);
void exer_free(struct exer *x);
/* fallocate(2)'s mode for an EXER_FALLOC_* variant. */
int exer_falloc_mode(int variant);
/* "KIND=W" (a kind's name as the reports print it): draw KIND with
 * weight W.  0, or -1 (said on stderr). */
int exer_set_weight(struct exer *x, const char *arg);

#endif

/*
 * inoset.h: a bounded set of inode numbers (fs/engine/inoset.c).  No locking
 * and no knowledge of the filesystem: its owner (fs/engine/xattr.c) says what
 * the members mean and guards it.
 */
#ifndef ATRIUM_FS_INOSET_H
#define ATRIUM_FS_INOSET_H

#include <stddef.h>
#include <stdint.h>

struct inoset {
	uint64_t *slots;   /* open addressing; 0 marks a free slot */
	size_t cap;        /* number of slots, a power of two (0: none yet) */
	size_t count;      /* members */
	size_t max;        /* most members it may hold */
};

/* An empty set that will hold at most max members. */
void inoset_init(struct inoset *s, size_t max);
/* Add ino (not 0): 0, -ENOSPC past max members, -ENOMEM or -EINVAL. */
int inoset_add(struct inoset *s, uint64_t ino);
/* 1 when ino is a member, else 0. */
int inoset_has(const struct inoset *s, uint64_t ino);
/* Free the slots; the set is empty (and usable) again. */
void inoset_clear(struct inoset *s);

#endif

/*
 * inoset.c: a set of inode numbers in an open-addressing table (linear
 * probing, at most half full, so a miss ends within a few slots).  Members
 * are never removed one by one: the owner only adds, or clears the whole
 * set.  The table holds at most 2 * max slots of 8 bytes.
 */
#include "inoset.h"

#include <errno.h>
#include <stdlib.h>

#define INOSET_MIN_SLOTS 64

/* The slot of ino in a table of cap slots (cap a power of two). */
static size_t
inoset_slot(uint64_t ino, size_t cap)
{
	/* Fibonacci hashing: consecutive numbers land far apart. */
	return (size_t)((ino * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

/* Put ino into slots (which has a free slot), unless it is there. */
static int
inoset_put(uint64_t *slots, size_t cap, uint64_t ino)
{
	size_t i = inoset_slot(ino, cap);

	while (slots[i] != 0) {
		if (slots[i] == ino)
			return 0;
		i = (i + 1) & (cap - 1);
	}
	slots[i] = ino;
	return 1;
}

/* Double the table (or make the first one): 0 or -ENOMEM. */
static int
inoset_grow(struct inoset *s)
{
	size_t cap = s->cap ? s->cap * 2 : INOSET_MIN_SLOTS;
	uint64_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i] != 0)
			inoset_put(slots, cap, s->slots[i]);
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

void
inoset_init(struct inoset *s, size_t max)
{
	s->slots = NULL;
	s->cap = 0;
	s->count = 0;
	s->max = max;
}

int
inoset_add(struct inoset *s, uint64_t ino)
{
	int r;

	if (ino == 0)
		return -EINVAL;
	if (inoset_has(s, ino))
		return 0;
	if (s->count >= s->max)
		return -ENOSPC;
	if ((s->count + 1) * 2 > s->cap && (r = inoset_grow(s)) < 0)
		return r;
	s->count += (size_t)inoset_put(s->slots, s->cap, ino);
	return 0;
}

int
inoset_has(const struct inoset *s, uint64_t ino)
{
	size_t i;

	if (s->cap == 0 || ino == 0)
		return 0;
	for (i = inoset_slot(ino, s->cap); s->slots[i] != 0;
	    i = (i + 1) & (s->cap - 1))
		if (s->slots[i] == ino)
			return 1;
	return 0;
}

void
inoset_clear(struct inoset *s)
{
	free(s->slots);
	inoset_init(s, s->max);
}

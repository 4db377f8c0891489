/*
 * text.h: the head-and-tail cap of a command's output that goes back to the
 * model (text.c), and the UTF-8 helpers every user of it needs (utf8.h).
 * No I/O; unit-tested.
 */
#ifndef ATRIUM_AGENT_TEXT_H
#define ATRIUM_AGENT_TEXT_H

#include <stddef.h>

#include "buf.h"
#include "utf8.h"

/* Output kept for the model: the first `head` bytes and the last `tail`
 * bytes of everything added, and a count of all bytes. */
struct outcap {
	struct buf head;	/* first bytes, up to its max */
	char *tail;		/* ring of the last bytes */
	size_t tail_max;	/* ring size */
	size_t tail_pos;	/* next write position in the ring */
	size_t total;		/* all bytes added */
};

/* 0 or -ENOMEM. */
int outcap_init(struct outcap *o, size_t head, size_t tail);
void outcap_free(struct outcap *o);
void outcap_add(struct outcap *o, const char *p, size_t n);

/* The kept text, valid UTF-8, with a line saying how many bytes were cut
 * from the middle when any were, into out (a fresh malloc'd string).
 * 0 or -ENOMEM. */
int outcap_text(const struct outcap *o, char **out);

#endif

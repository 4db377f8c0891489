/*
 * text.c: output capping (text.h).  Commands print any bytes; events are
 * JSON and must be UTF-8, so the kept output is repaired (common/utf8.c) on
 * its way into an event.
 *
 * outcap keeps a head buffer and a ring for the tail, so a command that
 * prints gigabytes costs a fixed amount of memory: the model gets the start
 * (where errors of a build usually begin) and the end (the summary).
 */
#include "text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
outcap_init(struct outcap *o, size_t head, size_t tail)
{
	memset(o, 0, sizeof(*o));
	buf_init(&o->head, head);
	o->tail_max = tail;
	o->tail = malloc(tail ? tail : 1);
	return o->tail ? 0 : -ENOMEM;
}

void
outcap_free(struct outcap *o)
{
	buf_free(&o->head);
	free(o->tail);
	o->tail = NULL;
}

void
outcap_add(struct outcap *o, const char *p, size_t n)
{
	size_t room = buf_room(&o->head), take = n < room ? n : room;

	if (take && buf_append(&o->head, p, take) == 0) {
		p += take;
		n -= take;
		o->total += take;
	}
	o->total += n;
	if (n > o->tail_max) {
		p += n - o->tail_max;
		n = o->tail_max;
	}
	for (size_t i = 0; i < n; i++) {
		o->tail[o->tail_pos] = p[i];
		o->tail_pos = (o->tail_pos + 1) % o->tail_max;
	}
}

int
outcap_text(const struct outcap *o, char **out)
{
	size_t in_tail = o->total - o->head.len, cut = 0;
	struct buf b;
	char note[128];
	char *lin = NULL;
	int r;

	*out = NULL;
	if (in_tail > o->tail_max) {
		cut = in_tail - o->tail_max;
		in_tail = o->tail_max;
	}
	buf_init(&b, o->head.len * 3 + in_tail * 3 + sizeof(note));
	r = utf8_repair(&b, o->head.data ? o->head.data : "", o->head.len);
	if (r == 0 && cut) {
		snprintf(note, sizeof(note), "\n[... %zu bytes of output cut "
		    "here: the first %zu and last %zu bytes are shown ...]\n",
		    cut, o->head.len, in_tail);
		r = buf_append(&b, note, strlen(note));
	}
	if (r == 0 && in_tail) {
		lin = malloc(in_tail);
		if (!lin) {
			r = -ENOMEM;
		} else {
			/* Oldest byte of the ring first. */
			size_t start = (o->tail_pos + o->tail_max - in_tail) %
			    o->tail_max;

			for (size_t i = 0; i < in_tail; i++)
				lin[i] = o->tail[(start + i) % o->tail_max];
			r = utf8_repair(&b, lin, in_tail);
			free(lin);
		}
	}
	if (r < 0) {
		buf_free(&b);
		return r;
	}
	*out = b.data ? b.data : strdup("");
	return *out ? 0 : -ENOMEM;
}

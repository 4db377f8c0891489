/*
 * jsonl.h: framing of JSON-lines streams (the room protocol) with a cap on
 * line length, and small json-c helpers used by both sides.
 *
 * Bytes arrive at any boundary: feed them, then take whole lines while
 * jsonl_next returns 1.  A line longer than the cap is discarded up to its
 * newline and reported once as -EMSGSIZE, so one bad line never desynchronises
 * the stream.
 */
#ifndef ATRIUM_JSONL_H
#define ATRIUM_JSONL_H

#include <stddef.h>
#include <json-c/json.h>

#include "buf.h"

struct jsonl {
	struct buf in;		/* whole lines, then at most one partial line */
	size_t max_line;	/* longest accepted line, newline excluded */
	size_t partial;		/* bytes of the trailing partial line in `in` */
	size_t taken;		/* head bytes of `in` already returned */
	int discarding;		/* inside an over-long line: drop to its newline */
	int overlong;		/* over-long lines not yet reported */
};

void jsonl_init(struct jsonl *j, size_t max_line);
void jsonl_free(struct jsonl *j);

/* Add received bytes; all are consumed.  -ENOBUFS when more than 8 lines'
 * worth of whole lines are waiting to be taken (the caller must take lines
 * after each feed), -ENOMEM on allocation failure. */
int jsonl_feed(struct jsonl *j, const void *p, size_t n);

/* Give memory back once every whole line was taken and no partial one is
 * held (buf_shrink).  Lines returned before are no longer valid. */
void jsonl_shrink(struct jsonl *j, size_t keep);

/* Take the next line.  Returns 1 with *line (NUL-terminated, no newline, valid
 * until the next feed or next call) and *len set; 0 when no whole line is
 * buffered; -EMSGSIZE once for each over-long line.  Empty lines are skipped. */
int jsonl_next(struct jsonl *j, char **line, size_t *len);

/* Parse one line as a JSON object.  NULL (and *err set to a short reason)
 * when it is not valid JSON or not an object. */
json_object *jsonl_parse_object(const char *line, size_t len, const char **err);

/* Serialise obj as one line, newline included, into out.  -ENOBUFS/-ENOMEM. */
int jsonl_format(struct buf *out, json_object *obj);

/* Field accessors: NULL / def when absent or of another type. */
const char *json_get_string(json_object *obj, const char *key);
long long json_get_int(json_object *obj, const char *key, long long def);
int json_get_bool(json_object *obj, const char *key, int def);

#endif

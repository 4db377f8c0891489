/*
 * jsonl.c: JSON-lines framing with a line cap (jsonl.h), and json-c helpers.
 *
 * The buffer holds whole lines not yet taken and at most one partial line.
 * A partial line that passes max_line is dropped at once and the rest of it
 * skipped up to its newline, so an endless line costs no memory.
 */
#include "jsonl.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

void
jsonl_init(struct jsonl *j, size_t max_line)
{
	buf_init(&j->in, 8 * (max_line + 1));
	j->max_line = max_line;
	j->partial = 0;
	j->taken = 0;
	j->discarding = 0;
	j->overlong = 0;
}

void
jsonl_free(struct jsonl *j)
{
	buf_free(&j->in);
}

/* Forget the bytes of lines already handed out. */
static void
jsonl_compact(struct jsonl *j)
{
	if (j->taken) {
		buf_consume(&j->in, j->taken);
		j->taken = 0;
	}
}

int
jsonl_feed(struct jsonl *j, const void *p, size_t n)
{
	const char *s = p;

	jsonl_compact(j);
	while (n > 0) {
		const char *nl = memchr(s, '\n', n);
		size_t seg = nl ? (size_t)(nl - s) + 1 : n;
		size_t text = nl ? seg - 1 : seg;
		int r;

		if (j->discarding) {
			j->discarding = nl == NULL;
		} else if (j->partial + text > j->max_line) {
			/* Drop the partial line; skip the rest of it. */
			j->in.len -= j->partial;
			if (j->in.data)
				j->in.data[j->in.len] = '\0';
			j->partial = 0;
			j->overlong++;
			j->discarding = nl == NULL;
		} else {
			r = buf_append(&j->in, s, seg);
			if (r < 0)
				return r;
			j->partial = nl ? 0 : j->partial + seg;
		}
		s += seg;
		n -= seg;
	}
	return 0;
}

void
jsonl_shrink(struct jsonl *j, size_t keep)
{
	jsonl_compact(j);
	buf_shrink(&j->in, keep);
}

int
jsonl_next(struct jsonl *j, char **line, size_t *len)
{
	*line = NULL;
	*len = 0;
	jsonl_compact(j);
	if (j->overlong > 0) {
		j->overlong--;
		return -EMSGSIZE;
	}
	while (j->in.len > j->partial) {
		char *start = j->in.data;
		char *nl = memchr(start, '\n', j->in.len - j->partial);
		size_t n = (size_t)(nl - start);

		j->taken = n + 1;
		*nl = '\0';
		if (n > 0 && start[n - 1] == '\r')
			start[--n] = '\0';
		if (n == 0) {
			jsonl_compact(j);
			continue;
		}
		*line = start;
		*len = n;
		return 1;
	}
	return 0;
}

json_object *
jsonl_parse_object(const char *line, size_t len, const char **err)
{
	struct json_tokener *tok;
	json_object *obj;

	*err = NULL;
	if (len > INT32_MAX) {
		*err = "line too long";
		return NULL;
	}
	tok = json_tokener_new();
	if (!tok) {
		*err = "out of memory";
		return NULL;
	}
	obj = json_tokener_parse_ex(tok, line, (int)len);
	if (!obj || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		*err = obj ? "trailing bytes after the JSON object" :
		    json_tokener_error_desc(json_tokener_get_error(tok));
		if (json_tokener_get_error(tok) == json_tokener_continue)
			*err = "unterminated JSON";
		json_object_put(obj);
		json_tokener_free(tok);
		return NULL;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(obj, json_type_object)) {
		*err = "not a JSON object";
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

int
jsonl_format(struct buf *out, json_object *obj)
{
	size_t n;
	const char *s = json_object_to_json_string_length(obj,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	int r;

	if (!s)
		return -ENOMEM;
	if (n + 1 > buf_room(out))
		return -ENOBUFS;
	r = buf_append(out, s, n);
	if (r == 0)
		r = buf_append(out, "\n", 1);
	return r;
}

const char *
json_get_string(json_object *obj, const char *key)
{
	json_object *v;

	if (!obj || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

long long
json_get_int(json_object *obj, const char *key, long long def)
{
	json_object *v;

	if (!obj || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return def;
	return (long long)json_object_get_int64(v);
}

int
json_get_bool(json_object *obj, const char *key, int def)
{
	json_object *v;

	if (!obj || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_boolean))
		return def;
	return json_object_get_boolean(v);
}

/*
 * tui_model.c: recent screen lines (tui_model.h).  Called by tui_draw.c.
 * Invariant: lines.data holds whole lines, each ended by '\n', and never
 * more than TUI_MODEL_MAX bytes; no line holds a '\n' of its own.
 */
#include "tui_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_width.h"

#define TUI_MODEL_RESET		"\x1b[0m"
#define TUI_MODEL_SEP		"\x1e"	/* ends a line's tag */

/* An empty model; memory is taken on the first line. */
void
tui_model_init(struct tui_model *m)
{
	tui_model_init_max(m, TUI_MODEL_MAX);
}

/* An empty model of at most max bytes. */
void
tui_model_init_max(struct tui_model *m, size_t max)
{
	buf_init(&m->lines, max);
	m->dropped = 0;
	m->added = 0;
}

/* See tui_model.h. */
void
tui_model_set_max(struct tui_model *m, size_t max)
{
	if (max > m->lines.max)
		m->lines.max = max;
}

/* See tui_model.h. */
size_t
tui_model_count(const struct tui_model *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->lines.len; i++)
		n += m->lines.data[i] == '\n';
	return n;
}

/* Free the lines. */
void
tui_model_free(struct tui_model *m)
{
	buf_free(&m->lines);
}

/* Drop the oldest whole lines until need more bytes fit. */
static void
tui_model_make_room(struct tui_model *m, size_t need)
{
	while (m->lines.len && buf_room(&m->lines) < need) {
		const char *nl = memchr(m->lines.data, '\n', m->lines.len);

		buf_consume(&m->lines, nl ? (size_t)(nl - m->lines.data) + 1 :
		    m->lines.len);
		m->dropped++;
	}
}

/* See tui_model.h. */
void
tui_model_add(struct tui_model *m, const char *line, size_t len)
{
	const char *nl = memchr(line, '\n', len);
	size_t keep = 0, cut, tail_len, tag_len;
	int w, cut_short;
	char *tail, tag[32];

	if (nl)
		len = (size_t)(nl - line);
	cut = TUI_MODEL_MAX_LINE - sizeof(TUI_MODEL_RESET);
	cut_short = len > cut;
	while (cut_short && keep < len) {
		size_t n = tui_width_next(line + keep, len - keep, &w);

		if (keep + n > cut)
			break;
		keep += n;
	}
	if (cut_short)
		len = keep;
	tag_len = (size_t)snprintf(tag, sizeof(tag), "%lld" TUI_MODEL_SEP,
	    m->tag > 0 ? m->tag : 0);
	tail_len = tag_len + len + (cut_short ? strlen(TUI_MODEL_RESET) : 0)
	    + 1;
	tui_model_make_room(m, tail_len);
	/* All of it or nothing: a line without its '\n' would join the next. */
	if (!(tail = buf_tail(&m->lines, tail_len)))
		return;
	memcpy(tail, tag, tag_len);
	memcpy(tail + tag_len, line, len);
	if (cut_short)
		memcpy(tail + tag_len + len, TUI_MODEL_RESET,
		    strlen(TUI_MODEL_RESET));
	tail[tail_len - 1] = '\n';
	buf_added(&m->lines, tail_len);
	m->added++;
}

/* See tui_model.h. */
int
tui_model_prev(const struct tui_model *m, size_t *pos, const char **line,
    size_t *len)
{
	size_t end = *pos ? *pos : m->lines.len, start;
	const char *sep;

	/* end is the offset just past the '\n' of the line to give. */
	if (end == 0 || !m->lines.data || end == (size_t)-1)
		return 0;
	start = end - 1;
	while (start > 0 && m->lines.data[start - 1] != '\n')
		start--;
	sep = memchr(m->lines.data + start, TUI_MODEL_SEP[0], end - 1 - start);
	if (sep)
		start = (size_t)(sep + 1 - m->lines.data);
	*line = m->lines.data + start;
	*len = end - 1 - start;
	while (start > 0 && m->lines.data[start - 1] != '\n')
		start--;	/* back over the tag */
	*pos = start ? start : (size_t)-1;
	return 1;
}

/* See tui_model.h. */
long long
tui_model_first_tag(const struct tui_model *m)
{
	const char *p = m->lines.data, *end = p + m->lines.len;

	while (p && p < end) {
		long long tag = strtoll(p, NULL, 10);
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (tag > 0)
			return tag;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

/* See tui_model.h. */
int
tui_model_prepend(struct tui_model *m, const struct tui_model *front)
{
	struct buf joined;

	if (!front->lines.len)
		return 0;
	buf_init(&joined, m->lines.max);
	if (buf_append(&joined, front->lines.data, front->lines.len) < 0 ||
	    (m->lines.len && buf_append(&joined, m->lines.data,
	    m->lines.len) < 0)) {
		buf_free(&joined);
		return -ENOBUFS;
	}
	buf_free(&m->lines);
	m->lines = joined;
	return 0;
}

/* See tui_model.h. */
int
tui_model_first(const struct tui_model *m, const char **line, size_t *len)
{
	const char *nl, *sep;

	if (!m->lines.len || !m->lines.data)
		return 0;
	nl = memchr(m->lines.data, '\n', m->lines.len);
	if (!nl)
		return 0;
	sep = memchr(m->lines.data, TUI_MODEL_SEP[0],
	    (size_t)(nl - m->lines.data));
	*line = sep ? sep + 1 : m->lines.data;
	*len = (size_t)(nl - *line);
	return 1;
}

/* See tui_model.h. */
void
tui_model_drop_first(struct tui_model *m)
{
	const char *nl = m->lines.len ? memchr(m->lines.data, '\n',
	    m->lines.len) : NULL;

	if (nl)
		buf_consume(&m->lines, (size_t)(nl - m->lines.data) + 1);
}

/* See tui_model.h.  Walks from the oldest line on, stops at the first
 * that matches, and counts the lines after it. */
int
tui_model_find(const struct tui_model *m, long long tag, const char *needle,
    size_t *at, const char **line, size_t *len, size_t *after)
{
	const char *p = m->lines.data, *end = p + m->lines.len;
	size_t nlen = strlen(needle);
	int found = 0;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *sep, *text;

		if (!nl)
			break;	/* never: each line ends with one */
		sep = memchr(p, TUI_MODEL_SEP[0], (size_t)(nl - p));
		text = sep ? sep + 1 : p;
		if (found)
			(*after)++;
		if (!found && sep && strtoll(p, NULL, 10) == tag && tag > 0 &&
		    memmem(text, (size_t)(nl - text), needle, nlen)) {
			*at = (size_t)(p - m->lines.data);
			*line = text;
			*len = (size_t)(nl - text);
			*after = 0;
			found = 1;
		}
		p = nl + 1;
	}
	return found;
}

/* See tui_model.h. */
int
tui_model_replace(struct tui_model *m, size_t at, const char *line,
    size_t len)
{
	const char *start = m->lines.data + at;
	const char *nl = memchr(start, '\n', m->lines.len - at);
	const char *sep = memchr(start, TUI_MODEL_SEP[0], (size_t)(nl - start));
	size_t head = (size_t)(sep + 1 - m->lines.data);
	size_t tail = m->lines.len - (size_t)(nl - m->lines.data);
	struct buf joined;

	if (memchr(line, '\n', len) || len > TUI_MODEL_MAX_LINE)
		return -ENOBUFS;
	buf_init(&joined, m->lines.max);
	if (buf_append(&joined, m->lines.data, head) < 0 ||
	    buf_append(&joined, line, len) < 0 ||
	    buf_append(&joined, nl, tail) < 0) {
		buf_free(&joined);
		return -ENOBUFS;
	}
	buf_free(&m->lines);
	m->lines = joined;
	return 0;
}

/*
 * tui_model.c: recent screen lines (tui_model.h).  Called by tui_draw.c.
 * Invariant: lines.data holds whole lines, each ended by '\n', and never
 * more than TUI_MODEL_MAX bytes; no line holds a '\n' of its own.
 */
#include "tui_model.h"

#include <string.h>

#include "tui_width.h"

#define TUI_MODEL_RESET		"\x1b[0m"

/* An empty model; memory is taken on the first line. */
void
tui_model_init(struct tui_model *m)
{
	buf_init(&m->lines, TUI_MODEL_MAX);
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
	}
}

/* See tui_model.h. */
void
tui_model_add(struct tui_model *m, const char *line, size_t len)
{
	const char *nl = memchr(line, '\n', len);
	size_t keep = 0, cut, tail_len;
	int w, cut_short;
	char *tail;

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
	tail_len = len + (cut_short ? strlen(TUI_MODEL_RESET) : 0) + 1;
	tui_model_make_room(m, tail_len);
	/* All of it or nothing: a line without its '\n' would join the next. */
	if (!(tail = buf_tail(&m->lines, tail_len)))
		return;
	memcpy(tail, line, len);
	if (cut_short)
		memcpy(tail + len, TUI_MODEL_RESET, strlen(TUI_MODEL_RESET));
	tail[tail_len - 1] = '\n';
	buf_added(&m->lines, tail_len);
}

/* See tui_model.h. */
int
tui_model_prev(const struct tui_model *m, size_t *pos, const char **line,
    size_t *len)
{
	size_t end = *pos ? *pos : m->lines.len, start;

	/* end is the offset just past the '\n' of the line to give. */
	if (end == 0 || !m->lines.data || end == (size_t)-1)
		return 0;
	start = end - 1;
	while (start > 0 && m->lines.data[start - 1] != '\n')
		start--;
	*line = m->lines.data + start;
	*len = end - 1 - start;
	*pos = start ? start : (size_t)-1;
	return 1;
}

/*
 * tui_history.c: the input history of tui_history.h.  Called by chat.c on
 * Up, Down and Enter, and with the lines the room returned for the user.
 * Invariants: 0 <= nloaded <= n <= TUI_HISTORY_MAX; lines[0..n) are
 * non-NULL; 0 <= pos <= n; draft is set only while pos < n.
 */
#include "tui_history.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Empty; cannot fail. */
void
tui_history_init(struct tui_history *h)
{
	memset(h, 0, sizeof(*h));
}

/* Free every line. */
void
tui_history_free(struct tui_history *h)
{
	for (int i = 0; i < h->n; i++)
		free(h->lines[i]);
	free(h->draft);
	memset(h, 0, sizeof(*h));
}

/* See tui_history.h. */
void
tui_history_reset(struct tui_history *h)
{
	free(h->draft);
	h->draft = NULL;
	h->pos = h->n;
}

/* Drop the oldest line. */
static void
tui_history_drop_oldest(struct tui_history *h)
{
	free(h->lines[0]);
	memmove(h->lines, h->lines + 1, (size_t)(h->n - 1) *
	    sizeof(h->lines[0]));
	h->n--;
	if (h->nloaded > 0)
		h->nloaded--;
}

/* See tui_history.h. */
int
tui_history_add(struct tui_history *h, const char *line, int loaded)
{
	int at;
	char *copy;

	tui_history_reset(h);
	if (!line || !line[strspn(line, " \t\n")] ||
	    strlen(line) > TUI_HISTORY_MAX_LINE)
		return 0;
	at = loaded ? h->nloaded : h->n;
	if (at > 0 && strcmp(h->lines[at - 1], line) == 0)
		return 0;
	if (loaded && h->n == TUI_HISTORY_MAX && h->n > h->nloaded)
		return 0;	/* this session's lines are newer: keep them */
	if (h->n == TUI_HISTORY_MAX) {
		tui_history_drop_oldest(h);
		at = loaded ? h->nloaded : h->n;
	}
	if (!(copy = strdup(line)))
		return -ENOMEM;
	memmove(h->lines + at + 1, h->lines + at, (size_t)(h->n - at) *
	    sizeof(h->lines[0]));
	h->lines[at] = copy;
	h->n++;
	if (loaded)
		h->nloaded++;
	h->pos = h->n;
	return 0;
}

/* See tui_history.h. */
const char *
tui_history_up(struct tui_history *h, const char *current)
{
	if (h->pos == 0)
		return NULL;
	if (h->pos == h->n) {
		free(h->draft);
		h->draft = strdup(current ? current : "");
	}
	return h->lines[--h->pos];
}

/* See tui_history.h. */
const char *
tui_history_down(struct tui_history *h)
{
	const char *s;

	if (h->pos >= h->n)
		return NULL;
	if (++h->pos < h->n)
		return h->lines[h->pos];
	s = h->draft ? h->draft : "";
	return s;
}

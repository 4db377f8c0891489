/*
 * tui_markdown.h: Markdown in chat messages, parsed by libcmark-gfm
 * (CommonMark with GitHub's tables, strikethrough and autolinks) into a
 * tree and drawn from the tree as styled lines for tui_draw.c: text with
 * SGR escapes and a tui_wrap.h mark where the wrapped rows of each line
 * hang, markers left out:
 *
 *   **bold** __bold__        bold            *italic* _italic_   italic
 *   ~~struck~~               the terminal's strike attribute
 *   `code`                   cyan (with NO_COLOR: shown with its backquotes)
 *   # heading (1-6 #), setext bold (level 1 also underlined)
 *   - item, * item, + item   "• item", continuation rows under the item
 *   3. item, 3) item         "3. item": a list keeps its first number and
 *                            counts on; a nested list indents under its
 *                            item's text
 *   > quote                  "│ quote", dim bar
 *   ---, ***, ___            a dim rule
 *   ```lang ... ```          each code line indented 4 and dim; the opening
 *                            fence shows the language ("── lang"), the
 *                            closing fence no row at all
 *   [text](url)              "text (url)", the url dim; an autolink or a
 *                            link whose text is its url: the url alone
 *   ![alt](url)              "[image: alt] (url)"
 *   | a | b | tables         columns aligned under a bold header when they
 *                            fit the width given, else each row as
 *                            "header: value" lines, rows apart
 *   <b>html</b>              shown as typed, never interpreted
 *
 * A line break in a paragraph stays a line break (a chat line is not
 * reflowed); a blank line between two blocks in the text is one blank
 * line between them on the screen.  A marker without its partner is
 * shown as typed, so an answer still streaming shows "**bol" raw until
 * its closing "**" arrives: tui_draw.c renders the blocks not yet closed
 * again on each delta (tui_md_settled says which are).
 *
 * The input is text already cleaned of control characters
 * (tui_draw_sanitize), and every text the parser gives back (which may
 * hold characters decoded from entities such as "&#27;") is cleaned again
 * as it is written: the only escapes in the output are the ones this file
 * writes.  Pure: no I/O.
 *
 * Parsed once for all: every member of a room draws the same answer, so
 * on each delta each would parse the same unclosed blocks again.  The
 * functions below given a cache (struct tui_md_cache, one per process:
 * tui_draw_cache's) look a text up by its exact bytes first and draw
 * from the tree kept for it, so a text is parsed once whatever its
 * members and widths.  A tree is only read once made, so equal bytes
 * give equal lines with or without the cache.
 */
#ifndef ATRIUMD_TUI_MARKDOWN_H
#define ATRIUMD_TUI_MARKDOWN_H

#include <stddef.h>

#include "buf.h"

struct cmark_node;

#define TUI_MD_CACHE_SLOTS	8	/* texts kept parsed */
#define TUI_MD_CACHE_TEXT	(16 * 1024)	/* longer ones are parsed
						 * each time */

/* Trees of texts parsed lately, replaced oldest first; zeroed is empty. */
struct tui_md_cache {
	struct {
		unsigned long long hash;	/* of text */
		char *text;			/* a copy; NULL: the slot is
						 * free */
		size_t len;
		struct cmark_node *doc;		/* its tree */
	} slot[TUI_MD_CACHE_SLOTS];
	unsigned next;			/* the slot replaced next */
	unsigned long hits, parses;	/* texts found, texts parsed */
};

/* Drop every tree kept; the cache is empty after it. */
void tui_md_cache_free(struct tui_md_cache *c);

/* A hash of s[0..n) (64 bits), for the caches of the chat's drawing. */
unsigned long long tui_md_hash(const char *s, size_t n);

#define TUI_MD_COLOR	0x01	/* colours allowed, else attributes only */
#define TUI_MD_GAP	0x02	/* a blank line came before the text: one
				 * blank line before its first block */
#define TUI_MD_CONT	0x04	/* the text's first line is a fence carried
				 * over from text already drawn: its code
				 * continues, with no language row */

/* Append the Markdown text s[0..n) as styled lines, each ended by '\n'.
 * cols: the columns the lines have (a table wider than that is drawn as
 * "header: value" lines).  Returns the lines appended. */
int tui_md_render(struct buf *out, const char *s, size_t n, int cols,
    int flags);
/* The same with cache (NULL: parse here). */
int tui_md_render_cached(struct tui_md_cache *cache, struct buf *out,
    const char *s, size_t n, int cols, int flags);

#define TUI_MD_MAX_NUMBER 999999999L	/* a list item's number, at most */

/* Of the complete lines of s[0..n) (those ended by '\n'), the bytes that
 * hold blocks text appended to s cannot change: every block before the
 * last one that starts at the top level, or when that last one is a list,
 * its items before the last.  0 when there are none.  *gap: whether a
 * blank line separates them from the rest; *number: when the rest starts
 * with the last item of an ordered list, the number it has in that list
 * (its marker says another: the caller writes this one), else 0. */
size_t tui_md_settled(const char *s, size_t n, int *gap, long *number);
size_t tui_md_settled_cached(struct tui_md_cache *cache, const char *s,
    size_t n, int *gap, long *number);

/* Whether s[0..n) ends inside a fenced code block; its fence (its indent
 * and a run of its character as long as it) in fence[0..size), a C
 * string.  0 also when that does not fit in size. */
int tui_md_open_fence(const char *s, size_t n, char *fence, size_t size);
int tui_md_open_fence_cached(struct tui_md_cache *cache, const char *s,
    size_t n, char *fence, size_t size);

#endif

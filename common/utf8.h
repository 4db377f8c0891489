/*
 * utf8.h: UTF-8 checks and repair (utf8.c), shared by atriumd and
 * atrium-agent.  Text that reaches a person's terminal or a JSON event must
 * be valid UTF-8 without control characters: command output is repaired on
 * its way into an event (utf8_repair keeps the controls, which belong to the
 * output, and the terminal UI drops them when drawing), and text people send
 * to each other (chat lines, prompts) is cleaned before it is stored
 * (utf8_clean).  No I/O; unit-tested.
 */
#ifndef ATRIUM_UTF8_H
#define ATRIUM_UTF8_H

#include <stddef.h>

#include "buf.h"

#define UTF8_REPLACEMENT	"\xef\xbf\xbd"	/* U+FFFD */

/* Length of the longest prefix of p[0..n) that does not end inside an
 * incomplete UTF-8 sequence (what to send now; the rest waits for more). */
size_t utf8_complete(const char *p, size_t n);

/* 1 when p[0..n) is valid UTF-8 (shortest forms, no surrogates, nothing
 * past U+10FFFF, no NUL), else 0. */
int utf8_valid(const char *p, size_t n);

/* Append p[0..n) to out with every invalid UTF-8 byte and NUL replaced by
 * U+FFFD.  -ENOBUFS / -ENOMEM from buf_append. */
int utf8_repair(struct buf *out, const char *p, size_t n);

/* Append p[0..n) to out as utf8_repair does, and drop the control
 * characters: C0 other than tab and newline, DEL, and C1 (U+0080-U+009F).
 * -ENOBUFS / -ENOMEM from buf_append. */
int utf8_clean(struct buf *out, const char *p, size_t n);

/* utf8_clean of the C string s into a new string (malloc'd), or NULL when
 * memory ran out. */
char *utf8_clean_str(const char *s);

/* Copy p[0..n) into out (size bytes, always NUL-terminated when size > 0)
 * for a log line: valid printable UTF-8 as it is; every other byte as
 * \xHH (lower-case hex), namely C0 controls (tab and newline too), DEL,
 * bytes that are not valid UTF-8 (NUL included), and each byte of a C1
 * control (U+0080-U+009F) or of a character that moves or breaks lines
 * on a reader's screen (U+2028/U+2029, the bidirectional marks and
 * overrides); a backslash as \\, so an escape is never ambiguous.  What
 * does not fit is left out whole (never half an escape or a character).
 * Returns the length written. */
size_t utf8_escape(char *out, size_t size, const char *p, size_t n);

#endif

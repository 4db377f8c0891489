/*
 * utf8.c: UTF-8 checks and repair (utf8.h).
 *
 * One decoder, utf8_seq_check, decides what a valid sequence is (RFC 3629:
 * shortest form, no surrogates, at most U+10FFFF); repair and clean walk the
 * input with it, so they cannot disagree about what is valid.  An invalid
 * byte is replaced on its own (U+FFFD) and the walk goes on at the next
 * byte, so one bad byte never swallows the valid text after it.
 * utf8_escape walks the same way for the log, writing escapes instead.
 */
#include "utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of a UTF-8 sequence starting with byte c, or 0 when c cannot
 * start one. */
static int
utf8_seq_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

/* Valid sequence length at p (n bytes available): >0 valid, 0 invalid,
 * -1 valid so far but incomplete. */
static int
utf8_seq_check(const unsigned char *p, size_t n)
{
	int len = utf8_seq_len(p[0]);

	if (len == 0)
		return 0;
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -1;
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	}
	/* Overlong 3/4-byte forms, surrogates, and beyond U+10FFFF. */
	if (len == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) ||
	    (p[0] == 0xed && p[1] >= 0xa0)))
		return 0;
	if (len == 4 && ((p[0] == 0xf0 && p[1] < 0x90) ||
	    (p[0] == 0xf4 && p[1] >= 0x90)))
		return 0;
	return len;
}

size_t
utf8_complete(const char *p, size_t n)
{
	/* Only the last 3 bytes can start an unfinished sequence. */
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		const unsigned char *s = (const unsigned char *)p + n - back;
		int len = utf8_seq_len(*s);

		if ((*s & 0xc0) == 0x80)
			continue;
		if (len > (int)back && utf8_seq_check(s, back) == -1)
			return n - back;
		break;
	}
	return n;
}

int
utf8_valid(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;

	for (size_t i = 0; i < n;) {
		int len = s[i] ? utf8_seq_check(s + i, n - i) : 0;

		if (len <= 0)
			return 0;
		i += (size_t)len;
	}
	return 1;
}

/* A control character to drop: C0 but tab and newline, DEL, or C1
 * (valid sequence s of len bytes). */
static int
utf8_is_control(const unsigned char *s, int len)
{
	if (len == 1)
		return (s[0] < 0x20 && s[0] != '\t' && s[0] != '\n') ||
		    s[0] == 0x7f;
	return len == 2 && s[0] == 0xc2 && s[1] <= 0x9f;
}

/* The walk of utf8_repair and utf8_clean: valid runs are copied in one
 * append and invalid bytes become U+FFFD; NUL is invalid for repair and a
 * control (left out) for clean, as are the others with drop_controls. */
static int
utf8_walk(struct buf *out, const char *p, size_t n, int drop_controls)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, start = 0;
	int r;

	while (i < n) {
		int len = utf8_seq_check(s + i, n - i);
		int drop = len > 0 && drop_controls &&
		    utf8_is_control(s + i, len);

		if (len > 0 && !drop && s[i] != 0) {
			i += (size_t)len;
			continue;
		}
		if ((r = buf_append(out, p + start, i - start)) < 0)
			return r;
		if (!drop && (r = buf_append(out, UTF8_REPLACEMENT, 3)) < 0)
			return r;
		i += drop ? (size_t)len : 1;
		start = i;
	}
	return buf_append(out, p + start, i - start);
}

int
utf8_repair(struct buf *out, const char *p, size_t n)
{
	return utf8_walk(out, p, n, 0);
}

int
utf8_clean(struct buf *out, const char *p, size_t n)
{
	return utf8_walk(out, p, n, 1);
}

char *
utf8_clean_str(const char *s)
{
	size_t n = strlen(s);
	struct buf b;

	/* Each byte grows to at most 3 (one invalid byte, one U+FFFD). */
	buf_init(&b, n * 3 + 1);
	if (utf8_clean(&b, s, n) < 0) {
		buf_free(&b);
		return NULL;
	}
	return b.data ? b.data : strdup("");
}

/* A character that can make a log line read as something else on a
 * screen though it is printable UTF-8: U+061C, U+200E, U+200F (marks),
 * U+202A-U+202E and U+2066-U+2069 (embeddings, overrides, isolates:
 * they reorder what follows), U+2028 and U+2029 (line and paragraph
 * separators, which some viewers break lines at).  s is a valid sequence
 * of len bytes. */
static int
utf8_is_deceptive(const unsigned char *s, int len)
{
	if (len == 2)
		return s[0] == 0xd8 && s[1] == 0x9c;
	if (len != 3 || s[0] != 0xe2)
		return 0;
	if (s[1] == 0x80)
		return s[2] == 0x8e || s[2] == 0x8f ||
		    (s[2] >= 0xa8 && s[2] <= 0xae);
	return s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9;
}

/* Is the valid sequence s (len bytes) printable as it is in a log line? */
static int
utf8_log_safe(const unsigned char *s, int len)
{
	if (len == 1)
		return s[0] >= 0x20 && s[0] < 0x7f && s[0] != '\\';
	return !utf8_is_control(s, len) && !utf8_is_deceptive(s, len);
}

/* Write the len bytes at s into out (room bytes left, room > 0 kept for
 * the NUL): as they are when safe, else escaped.  Bytes written, or 0
 * when they do not fit. */
static size_t
utf8_escape_unit(char *out, size_t room, const unsigned char *s, int len,
    int safe)
{
	size_t need = safe ? (size_t)len : s[0] == '\\' ? 2 : 4 * (size_t)len;

	if (need >= room)
		return 0;
	if (safe)
		memcpy(out, s, need);
	else if (s[0] == '\\')
		memcpy(out, "\\\\", 2);
	else
		for (int k = 0; k < len; k++)
			snprintf(out + 4 * k, 5, "\\x%02x", s[k]);
	return need;
}

size_t
utf8_escape(char *out, size_t size, const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t o = 0;

	if (size == 0)
		return 0;
	for (size_t i = 0; i < n;) {
		int len = utf8_seq_check(s + i, n - i);
		int safe = len > 0 && utf8_log_safe(s + i, len);
		size_t w;

		if (len <= 0)
			len = 1;	/* one invalid byte at a time */
		if (!(w = utf8_escape_unit(out + o, size - o, s + i, len, safe)))
			break;
		o += w;
		i += (size_t)len;
	}
	out[o] = '\0';
	return o;
}

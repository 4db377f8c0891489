/*
 * tool_read.c: the read tool.  {path, offset?, limit?}: lines offset ..
 * offset+limit-1 of a text file, each prefixed with its number ("%6ld\t",
 * as cat -n), at most TOOL_READ_MAX_LINES lines and TOOL_READ_MAX_BYTES of
 * output per call, a line longer than TOOL_READ_LINE_MAX cut with a note;
 * a closing note says where to go on when more remains.  The file is read
 * in chunks from the start up to what is shown, never whole: a huge file
 * costs only what is asked.  A file with a NUL in its first chunk is
 * reported as binary, not shown.
 */
#include "tool_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jsonl.h"
#include "text.h"
#include "wsio.h"

#define TOOL_READ_CHUNK	(64 * 1024)

/* ---- the formatter (pure) ---------------------------------------------- */

void
tool_read_fmt_init(struct tool_read_fmt *f, struct buf *out, long first,
    long limit, size_t max_bytes)
{
	*f = (struct tool_read_fmt){ .out = out, .first = first > 0 ? first : 1,
	    .limit = limit > 0 ? limit : 1, .max_bytes = max_bytes, .line = 1 };
	buf_init(&f->cur, TOOL_READ_LINE_MAX);
}

void
tool_read_fmt_free(struct tool_read_fmt *f)
{
	buf_free(&f->cur);
}

/* Write the line in cur (it is line f->line) if wanted; count it. */
static void
tool_read_fmt_line(struct tool_read_fmt *f)
{
	struct buf *o = f->out;
	size_t before = o->len;
	int r;

	if (f->line >= f->first && !f->full) {
		r = buf_printf(o, "%6ld\t", f->line);
		if (r == 0)
			r = utf8_repair(o, f->cur.data ? f->cur.data : "",
			    f->cur.len);
		if (r == 0 && f->cur_len > f->cur.len)
			r = buf_printf(o, " [... %zu more bytes on this line]",
			    f->cur_len - f->cur.len);
		if (r == 0)
			r = buf_printf(o, "\n");
		if (r < 0 || (o->len > f->max_bytes && f->shown > 0)) {
			o->len = before;	/* does not fit: stop before it */
			if (o->data)
				o->data[before] = '\0';
			f->full = 2;
			f->dropped = 1;
			return;
		}
		f->shown++;
		if (o->len >= f->max_bytes)
			f->full = 2;
		else if (f->shown >= f->limit)
			f->full = 1;
	}
	f->line++;
	buf_reset(&f->cur);
	f->cur_len = 0;
	f->in_line = 0;
}

size_t
tool_read_fmt_feed(struct tool_read_fmt *f, const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && !f->full) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (p + i)) : n - i;

		if (f->line >= f->first) {
			size_t room = buf_room(&f->cur);

			buf_append(&f->cur, p + i, len < room ? len : room);
		}
		f->cur_len += len;
		f->in_line = 1;
		i += len;
		if (nl) {
			i++;
			tool_read_fmt_line(f);
		}
	}
	return i;
}

void
tool_read_fmt_end(struct tool_read_fmt *f)
{
	if (f->in_line && !f->full)
		tool_read_fmt_line(f);
}

/* ---- the tool ------------------------------------------------------------ */

/* offset and limit from the input.  0 or -1 (message in out). */
static int
tool_read_args(json_object *input, long *offset, long *limit,
    struct buf *out)
{
	long long o = json_get_int(input, "offset", 1);
	long long l = json_get_int(input, "limit", TOOL_READ_MAX_LINES);

	if (o < 0 || l < 0) {
		buf_printf(out, "offset and limit must be positive line "
		    "counts (offset is 1-based)");
		return -1;
	}
	*offset = o == 0 ? 1 : (long)(o > LONG_MAX / 2 ? LONG_MAX / 2 : o);
	*limit = l == 0 || l > TOOL_READ_MAX_LINES ? TOOL_READ_MAX_LINES :
	    (long)l;
	return 0;
}

/* The note after the lines.  -1 when nothing was shown (an error). */
static int
tool_read_note(struct tool_read_fmt *f, const char *rel, int more,
    unsigned long long size, struct buf *out)
{
	if (f->shown == 0 && size == 0) {
		buf_printf(out, "(%s is empty)", rel);
		return 0;
	}
	if (f->shown == 0) {
		buf_printf(out, "%s has %ld lines; offset %ld is past the end",
		    rel, f->line - 1, f->first);
		return -1;
	}
	if (more)
		buf_printf(out, "\n[lines %ld-%ld of %s shown (%llu bytes in "
		    "all); more follow: read on with offset=%ld]", f->first,
		    f->first + f->shown - 1, rel, size, f->first + f->shown);
	return 0;
}

/* Format fd's lines into out.  0, -1 (message in out). */
static int
tool_read_fd(struct wsio *w, int fd, const char *rel, long offset,
    long limit, unsigned long long size, struct buf *out)
{
	struct tool_read_fmt f;
	char *chunk = malloc(TOOL_READ_CHUNK);
	unsigned long long pos = 0;
	ssize_t got = 0;
	size_t used = 0;
	int r;

	if (!chunk) {
		buf_printf(out, "out of memory");
		return -1;
	}
	tool_read_fmt_init(&f, out, offset, limit, TOOL_READ_MAX_BYTES);
	/* Paced per chunk: a read far into a large file is a long scan. */
	while (!f.full && (got = wsio_pace(w)) == 0 && (got = wsio_read(w, fd,
	    chunk, TOOL_READ_CHUNK, (off_t)pos)) > 0) {
		if (pos == 0 && tool_files_binary(chunk, (size_t)got)) {
			buf_printf(out, "%s is a binary file (%llu bytes); read "
			    "shows text only", rel, size);
			got = -EMEDIUMTYPE;
			break;
		}
		used = tool_read_fmt_feed(&f, chunk, (size_t)got);
		pos += used;
		/* All of it taken (else the rest is read again): the end. */
		if (!f.full && used == (size_t)got &&
		    wsio_read_ended(TOOL_READ_CHUNK, got, pos, size)) {
			got = 0;
			break;
		}
	}
	if (got == -ETIMEDOUT) {
		buf_reset(out);
		snprintf(chunk, TOOL_READ_CHUNK, "read of %s", rel);
		tool_files_stopped(out, chunk, (int)got, w->budget_s);
	} else if (got < 0 && got != -EMEDIUMTYPE) {
		buf_reset(out);
		wsio_error(chunk, TOOL_READ_CHUNK, rel, (int)got);
		buf_printf(out, "%s", chunk);
	}
	if (got == 0)
		tool_read_fmt_end(&f);
	r = got < 0 ? (got == -EMEDIUMTYPE ? 0 : -1) : tool_read_note(&f, rel,
	    f.full && (pos < size || f.dropped), pos > size ? pos : size, out);
	tool_read_fmt_free(&f);
	free(chunk);
	return r;
}

int
tool_read_run(struct wsio *w, json_object *input, struct buf *out)
{
	char rel[PATH_MAX], msg[PATH_MAX + 256];
	struct statx st;
	long offset, limit;
	int fd, r;

	if (tool_files_path(w, input, "path", rel, sizeof(rel), out) < 0 ||
	    tool_read_args(input, &offset, &limit, out) < 0)
		return -1;
	if (!json_get_string(input, "path")) {
		buf_printf(out, "read needs {\"path\": \"FILE\"}");
		return -1;
	}
	fd = wsio_open(w, -1, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	r = fd < 0 ? fd : wsio_fstat(w, fd, &st);
	if (r == 0 && S_ISDIR(st.stx_mode))
		r = -EISDIR;
	if (r == 0 && !S_ISREG(st.stx_mode)) {
		buf_printf(out, "%s is not a regular file", rel);
		wsio_close_behind(w, fd);
		return -1;
	}
	if (r < 0) {
		wsio_error(msg, sizeof(msg), rel, r);
		buf_printf(out, "%s", msg);
		wsio_close_behind(w, fd);
		return -1;
	}
	r = tool_read_fd(w, fd, rel, offset, limit, st.stx_size, out);
	wsio_close_behind(w, fd);
	return r;
}

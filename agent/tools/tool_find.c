/*
 * tool_find.c: the ls and grep tools, and the walk they share.
 *
 *   ls {path?, pattern?}: without a pattern, the entries of one directory;
 *     with one, every entry beneath path that matches it (tool_find_match,
 *     a glob compiled by pathglob.c: linear time, whatever the pattern).
 *     Paths are shown relative to /workspace, directories with a '/'.
 *   grep {pattern, path?, glob?, ignore_case?}: lines matching a PCRE2
 *     regex (tool_regex.c: a budget per line) in a file, or in every
 *     regular file beneath a directory (those matching glob), as
 *     "file:line: text".
 *
 * The walk opens each directory beneath the root through the ring with the
 * sandbox uid's rights (so unreadable directories stay unread) and reads
 * it with getdents64 on the directory reader thread (wsio_getdents: the
 * ring has no getdents, and the loop must not wait on the filesystem),
 * suspended meanwhile like any other operation.  It visits
 * at most TOOL_FILES_MAX_VISIT entries per call, in name order, does not
 * follow symlinks and does not descend into .git; results stop at
 * TOOL_FILES_MAX_OUTPUT bytes.  Each cut is said in a closing note.
 *
 * Time.  Every entry visited, entry matched, file and line searched passes
 * through wsio_pace: the loop gets a turn every WSIO_SLICE_MS, and the
 * call stops with an error (status error, what was found so far after
 * the reason) when its time budget is spent.  A line whose match runs out
 * of the regex budget stops grep the same way.
 */
#include "tool_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jsonl.h"
#include "pathglob.h"
#include "text.h"
#include "tool_regex.h"
#include "wsio.h"

#define TOOL_FIND_DENTS		(32 * 1024)	/* getdents buffer */
#define TOOL_FIND_PATTERN_MAX	1024		/* glob and regex length */
#define TOOL_GREP_CHUNK		(64 * 1024)
#define TOOL_GREP_SCAN_MAX	(64 * 1024)	/* of a line matched against */

/* ---- globs ------------------------------------------------------------------ */

int
tool_find_match(struct pathglob *g, const char *rel)
{
	const char *base = strrchr(rel, '/');

	if (pathglob_has_slash(g))
		return pathglob_match(g, rel, NULL);
	return pathglob_match(g, base ? base + 1 : rel, NULL);
}

/* ---- the walk -------------------------------------------------------------- */

struct tool_find_entry {
	char *rel;		/* relative to the workspace root */
	const char *sub;	/* the part below the walk's base */
	int dir;		/* a directory (not a symlink to one) */
	int reg;		/* a regular file */
};

struct tool_find_walk {
	struct wsio *w;
	const char *base;	/* relative to the root: "." or "src" */
	int recursive;
	struct tool_find_entry *ents;	/* found, in visiting order */
	size_t nents, cap;
	long visited;		/* entries seen */
	int cut;		/* the visit budget ran out */
	int unreadable;		/* directories that could not be opened */
	char *dents;		/* getdents buffer */
};

static void
tool_find_walk_free(struct tool_find_walk *wk)
{
	for (size_t i = 0; i < wk->nents; i++)
		free(wk->ents[i].rel);
	free(wk->ents);
	free(wk->dents);
}

/* Append dir/name.  0 or -ENOMEM. */
static int
tool_find_add(struct tool_find_walk *wk, const char *dir, const char *name,
    int isdir, int isreg)
{
	struct tool_find_entry *e;
	size_t skip = strcmp(wk->base, ".") == 0 ? 0 : strlen(wk->base) + 1;
	char *rel;

	if (wk->nents == wk->cap) {
		size_t cap = wk->cap ? wk->cap * 2 : 256;

		e = realloc(wk->ents, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		wk->ents = e;
		wk->cap = cap;
	}
	if (strcmp(dir, ".") == 0)
		rel = strdup(name);
	else if (asprintf(&rel, "%s/%s", dir, name) < 0)
		rel = NULL;
	if (!rel)
		return -ENOMEM;
	e = &wk->ents[wk->nents++];
	e->rel = rel;
	e->sub = rel + (strlen(rel) >= skip ? skip : 0);
	e->dir = isdir;
	e->reg = isreg;
	return 0;
}

/* The type of one dirent: d_type, or statx when the filesystem gave none.
 * Sets *isdir / *isreg. */
static void
tool_find_type(struct tool_find_walk *wk, int fd, struct dirent64 *d,
    int *isdir, int *isreg)
{
	struct statx st;

	*isdir = d->d_type == DT_DIR;
	*isreg = d->d_type == DT_REG;
	if (d->d_type == DT_UNKNOWN && wsio_stat_name(wk->w, fd, d->d_name,
	    &st) == 0) {
		*isdir = S_ISDIR(st.stx_mode);
		*isreg = S_ISREG(st.stx_mode);
	}
}

/* Read one directory's entries into wk.  0, or -errno for the walk
 * (-ETIMEDOUT, -ECANCELED from wsio_pace among them). */
static int
tool_find_dir(struct tool_find_walk *wk, const char *dir)
{
	ssize_t n;
	int fd, r = 0;

	fd = wsio_open(wk->w, -1, dir, O_RDONLY | O_DIRECTORY, 0);
	if (fd == -ECANCELED)
		return fd;
	if (fd < 0) {
		wk->unreadable++;
		return 0;
	}
	while (r == 0 && !wk->cut && (n = wsio_getdents(wk->w, fd, wk->dents,
	    TOOL_FIND_DENTS)) > 0) {
		for (ssize_t off = 0; r == 0 && off < n;) {
			struct dirent64 *d = (struct dirent64 *)(wk->dents + off);
			int isdir, isreg;

			off += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 ||
			    strcmp(d->d_name, "..") == 0)
				continue;
			if (++wk->visited > TOOL_FILES_MAX_VISIT) {
				wk->cut = 1;
				break;
			}
			if ((r = wsio_pace(wk->w)) < 0)
				break;
			tool_find_type(wk, fd, d, &isdir, &isreg);
			r = tool_find_add(wk, dir, d->d_name, isdir, isreg);
		}
	}
	wsio_close_behind(wk->w, fd);
	return r;
}

static int
tool_find_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tool_find_entry *)a)->rel,
	    ((const struct tool_find_entry *)b)->rel);
}

/* Walk wk->base (recursively when asked); entries sorted by path.
 * 0 or -errno. */
static int
tool_find_walk(struct tool_find_walk *wk)
{
	size_t next = 0;
	int r;

	wk->dents = malloc(TOOL_FIND_DENTS);
	if (!wk->dents)
		return -ENOMEM;
	r = tool_find_dir(wk, wk->base);
	/* The entries list doubles as the queue of directories to read. */
	while (r == 0 && wk->recursive && !wk->cut && next < wk->nents) {
		struct tool_find_entry *e = &wk->ents[next++];
		const char *name = strrchr(e->rel, '/');

		name = name ? name + 1 : e->rel;
		if (e->dir && strcmp(name, ".git") != 0) {
			char *dir = strdup(e->rel);

			if (!dir)
				return -ENOMEM;
			r = tool_find_dir(wk, dir);
			free(dir);
		}
	}
	if (wk->nents)	/* qsort's array may not be NULL, even when empty */
		qsort(wk->ents, wk->nents, sizeof(*wk->ents), tool_find_cmp);
	return r;
}

/* The closing notes of a walk. */
static void
tool_find_notes(struct tool_find_walk *wk, int out_cut, struct buf *out)
{
	if (wk->cut)
		buf_printf(out, "\n[stopped after visiting %d entries: give a "
		    "narrower path or pattern]", TOOL_FILES_MAX_VISIT);
	if (out_cut)
		buf_printf(out, "\n[results cut at %d KiB: give a narrower "
		    "path or pattern]", TOOL_FILES_MAX_OUTPUT / 1024);
	if (wk->unreadable)
		buf_printf(out, "\n[%d director%s could not be read (no "
		    "permission)]", wk->unreadable, wk->unreadable == 1 ? "y" :
		    "ies");
}

/* What base is: 1 a directory, 0 something else, or -1 (message in out). */
static int
tool_find_base(struct wsio *w, const char *rel, struct buf *out)
{
	char msg[PATH_MAX + 256];
	struct statx st;
	int fd = wsio_open(w, -1, rel, O_PATH, 0), r;

	r = fd < 0 ? fd : wsio_fstat(w, fd, &st);
	wsio_close_behind(w, fd);
	if (r < 0) {
		wsio_error(msg, sizeof(msg), rel, r);
		buf_printf(out, "%s", msg);
		return -1;
	}
	return S_ISDIR(st.stx_mode) ? 1 : S_ISREG(st.stx_mode) ? 2 : 0;
}

/* A glob argument: NULL when absent, else checked.  -1 on a bad one. */
static int
tool_find_pattern(json_object *input, const char *key, const char **pat,
    struct buf *out)
{
	json_object *v = NULL;

	*pat = NULL;
	if (!json_object_object_get_ex(input, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) > TOOL_FIND_PATTERN_MAX) {
		buf_printf(out, "\"%s\" must be a string of at most %d bytes",
		    key, TOOL_FIND_PATTERN_MAX);
		return -1;
	}
	*pat = json_object_get_string(v);
	if (!**pat)
		*pat = NULL;
	return 0;
}

/* ---- ls ----------------------------------------------------------------------- */

/* Print the walk's entries (those matching g when there is one).  0, or
 * -errno from wsio_pace. */
static int
tool_ls_show(struct tool_find_walk *wk, struct pathglob *g, const char *pat,
    const char *rel, struct buf *out)
{
	size_t shown = 0;
	int cut = 0, r = 0;

	for (size_t i = 0; i < wk->nents; i++) {
		struct tool_find_entry *e = &wk->ents[i];

		if ((r = wsio_pace(wk->w)) < 0)
			return r;
		if (g && !tool_find_match(g, e->sub))
			continue;
		if (out->len + strlen(e->rel) + 2 > TOOL_FILES_MAX_OUTPUT) {
			cut = 1;
			break;
		}
		buf_printf(out, "%s%s\n", e->rel, e->dir ? "/" : "");
		shown++;
	}
	if (!shown && pat)
		buf_printf(out, "no entries under %s match %s", rel, pat);
	else if (!shown)
		buf_printf(out, "(%s is empty)", strcmp(rel, ".") == 0 ?
		    "the workspace" : rel);
	else if (out->len && out->data[out->len - 1] == '\n')
		out->data[--out->len] = '\0';
	tool_find_notes(wk, cut, out);
	return 0;
}

int
tool_ls_run(struct wsio *w, json_object *input, struct buf *out)
{
	struct tool_find_walk wk = { .w = w };
	struct pathglob *g = NULL;
	char rel[PATH_MAX], what[PATH_MAX + 16];
	const char *pat;
	int kind, r;

	if (tool_find_pattern(input, "pattern", &pat, out) < 0 ||
	    tool_files_path(w, input, "path", rel, sizeof(rel), out) < 0 ||
	    (kind = tool_find_base(w, rel, out)) < 0)
		return -1;
	if (kind != 1) {
		buf_printf(out, "%s", rel);
		return 0;
	}
	wk.base = rel;
	wk.recursive = pat != NULL;
	r = pat ? pathglob_new(pat, &g) : 0;
	if (r == 0)
		r = tool_find_walk(&wk);
	if (r == 0)
		r = tool_ls_show(&wk, g, pat, rel, out);
	if (r < 0) {
		buf_reset(out);
		snprintf(what, sizeof(what), "listing %s", rel);
		tool_files_stopped(out, what, r, w->budget_s);
	}
	pathglob_free(g);
	tool_find_walk_free(&wk);
	return r == 0 ? 0 : -1;
}

/* ---- grep ----------------------------------------------------------------------- */

struct tool_grep {
	struct wsio *w;
	struct tool_regex *re;
	struct pathglob *glob;	/* which files beneath a directory, or NULL */
	struct buf *out;
	char *chunk;		/* read buffer */
	struct buf line;	/* the line being assembled */
	size_t line_len;	/* its whole length */
	long matches;
	int out_cut;		/* results reached their cap */
	int binary, skipped, unreadable;	/* files passed over */
	int stop;		/* -errno that ended the search early: from
				 * wsio_pace, or -ERANGE (the regex budget) */
	char stop_at[PATH_MAX + 32];	/* "file:line" of the -ERANGE */
};

/* Test the assembled line (number n of rel) and print it on a match. */
static void
tool_grep_line(struct tool_grep *g, const char *rel, long n)
{
	struct buf *o = g->out;
	size_t before = o->len, show;
	int m = tool_regex_match(g->re, g->line.data, g->line.len);

	if (m < 0) {
		g->stop = m;
		snprintf(g->stop_at, sizeof(g->stop_at), "%s:%ld", rel, n);
	}
	if (m <= 0)
		return;
	show = g->line.len > TOOL_GREP_LINE_MAX ? TOOL_GREP_LINE_MAX :
	    g->line.len;
	show = utf8_complete(g->line.data, show);
	if (buf_printf(o, "%s:%ld: ", rel, n) < 0 ||
	    utf8_repair(o, g->line.data, show) < 0 ||
	    buf_printf(o, "%s\n", show < g->line_len ? " [...]" : "") < 0 ||
	    o->len > TOOL_FILES_MAX_OUTPUT) {
		o->len = before;
		if (o->data)
			o->data[before] = '\0';
		g->out_cut = 1;
		return;
	}
	g->matches++;
}

/* Split p[0..n) into lines of file rel, testing each complete one. */
static void
tool_grep_feed(struct tool_grep *g, const char *rel, const char *p,
    size_t n, long *lineno)
{
	size_t i = 0;

	while (i < n && !g->out_cut && !g->stop) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (p + i)) : n - i;
		size_t room = buf_room(&g->line);

		buf_append(&g->line, p + i, len < room ? len : room);
		g->line_len += len;
		i += len;
		if (nl) {
			i++;
			if ((g->stop = wsio_pace(g->w)) < 0)
				return;
			tool_grep_line(g, rel, ++*lineno);
			buf_reset(&g->line);
			g->line_len = 0;
		}
	}
}

/* Grep one regular file rel. */
static void
tool_grep_file(struct tool_grep *g, const char *rel)
{
	struct statx st;
	unsigned long long pos = 0;
	long lineno = 0;
	ssize_t got;
	int binary = 0;
	int fd = wsio_open(g->w, -1, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);

	if (fd < 0 || wsio_fstat(g->w, fd, &st) < 0 || !S_ISREG(st.stx_mode)) {
		g->unreadable += fd != -ECANCELED;
		wsio_close_behind(g->w, fd);
		return;
	}
	if (st.stx_size > TOOL_GREP_MAX_FILE) {
		g->skipped++;
		wsio_close_behind(g->w, fd);
		return;
	}
	buf_reset(&g->line);
	g->line_len = 0;
	while (!g->out_cut && !g->stop && (got = wsio_read(g->w, fd,
	    g->chunk, TOOL_GREP_CHUNK, (off_t)pos)) > 0) {
		if (pos == 0 && tool_files_binary(g->chunk, (size_t)got)) {
			g->binary++;
			binary = 1;
			break;
		}
		tool_grep_feed(g, rel, g->chunk, (size_t)got, &lineno);
		pos += (unsigned long long)got;
		if (wsio_read_ended(TOOL_GREP_CHUNK, got, pos, st.stx_size))
			break;
	}
	if (g->line_len && !g->out_cut && !binary && !g->stop)
		tool_grep_line(g, rel, ++lineno);
	wsio_close_behind(g->w, fd);
}

/* Compile the pattern and the glob.  0 or -1 (message in out). */
static int
tool_grep_compile(struct tool_grep *g, json_object *input, struct buf *out)
{
	const char *pat, *glob;
	char msg[256];
	int r;

	if (tool_find_pattern(input, "glob", &glob, out) < 0 ||
	    tool_find_pattern(input, "pattern", &pat, out) < 0)
		return -1;
	if (!pat) {
		buf_printf(out, "grep needs {\"pattern\": \"REGEX\"}, a regular "
		    "expression in PCRE2 (Perl) syntax");
		return -1;
	}
	r = tool_regex_new(pat, json_get_bool(input, "ignore_case", 0),
	    &g->re, msg, sizeof(msg));
	if (r == -EINVAL) {
		buf_printf(out, "bad pattern %.200s: %s (PCRE2 syntax, as in "
		    "Perl: put a backslash before any of .[]{}()*+?|^$\\ to "
		    "match it literally)", pat, msg);
		return -1;
	}
	if (r == 0 && glob)
		r = pathglob_new(glob, &g->glob);
	if (r < 0) {
		buf_printf(out, "out of memory");
		return -1;
	}
	return 0;
}

/* The files to search: rel itself or the regular files under it.  0, or
 * -errno of the walk (g->stop when the search was stopped). */
static int
tool_grep_files(struct tool_grep *g, struct tool_find_walk *wk,
    const char *rel, int kind)
{
	int r;

	wk->w = g->w;
	wk->base = rel;
	wk->recursive = 1;
	if (kind == 2) {
		tool_grep_file(g, rel);
		return 0;
	}
	r = tool_find_walk(wk);
	if (r == -ETIMEDOUT || r == -ECANCELED) {
		g->stop = r;
		return 0;
	}
	for (size_t i = 0; r == 0 && i < wk->nents && !g->out_cut &&
	    !g->stop; i++) {
		if (!wk->ents[i].reg || (g->glob && !tool_find_match(g->glob,
		    wk->ents[i].sub)))
			continue;
		if ((g->stop = wsio_pace(g->w)) == 0)
			tool_grep_file(g, wk->ents[i].rel);
	}
	return r;
}

/* The closing notes of grep. */
static void
tool_grep_notes(struct tool_grep *g, struct tool_find_walk *wk,
    const char *rel, struct buf *out)
{
	if (!g->matches)
		buf_printf(out, "no matches in %s", strcmp(rel, ".") == 0 ?
		    "the workspace" : rel);
	else if (out->len && out->data[out->len - 1] == '\n')
		out->data[--out->len] = '\0';
	tool_find_notes(wk, g->out_cut, out);
	if (g->binary)
		buf_printf(out, "\n[%d binary file%s skipped]", g->binary,
		    g->binary == 1 ? "" : "s");
	if (g->skipped)
		buf_printf(out, "\n[%d file%s over %d MiB skipped]", g->skipped,
		    g->skipped == 1 ? "" : "s", TOOL_GREP_MAX_FILE >> 20);
	if (g->unreadable)
		buf_printf(out, "\n[%d file%s could not be read]", g->unreadable,
		    g->unreadable == 1 ? "" : "s");
}

/* grep was stopped early: the reason first, then the matches found. */
static void
tool_grep_stopped(struct tool_grep *g, const char *rel, struct buf *out)
{
	struct buf found;
	char what[PATH_MAX + 16];

	buf_init(&found, TOOL_FILES_MAX_OUTPUT);
	buf_append(&found, out->data ? out->data : "", out->len);
	buf_reset(out);
	snprintf(what, sizeof(what), "grep in %s", strcmp(rel, ".") == 0 ?
	    "the workspace" : rel);
	if (g->stop == -ERANGE)
		buf_printf(out, "%s stopped: the pattern is too costly: "
		    "matching it against the line %s took more than its "
		    "budget of %d backtracking steps; simplify it (no nested "
		    "repetition such as (a+)+ or (.*)(.*), no backreference "
		    "such as \\1 over long lines)", what, g->stop_at,
		    TOOL_REGEX_MATCH_LIMIT);
	else
		tool_files_stopped(out, what, g->stop, g->w->budget_s);
	if (found.len)
		buf_printf(out, "\n[the %ld match%s found before it stopped:]\n"
		    "%.*s", g->matches, g->matches == 1 ? "" : "es",
		    (int)found.len, found.data);
	buf_free(&found);
}

int
tool_grep_run(struct wsio *w, json_object *input, struct buf *out)
{
	struct tool_grep g = { .w = w, .out = out };
	struct tool_find_walk wk = { 0 };
	char rel[PATH_MAX];
	int kind = -1, r = -1;

	if (tool_grep_compile(&g, input, out) < 0 ||
	    tool_files_path(w, input, "path", rel, sizeof(rel), out) < 0 ||
	    (kind = tool_find_base(w, rel, out)) <= 0) {
		if (kind == 0)
			buf_printf(out, "%s is neither a file nor a directory",
			    rel);
		goto done;
	}
	g.chunk = malloc(TOOL_GREP_CHUNK);
	buf_init(&g.line, TOOL_GREP_SCAN_MAX);
	r = g.chunk ? tool_grep_files(&g, &wk, rel, kind) : -ENOMEM;
	if (r == 0 && g.stop)
		tool_grep_stopped(&g, rel, out);
	else if (r == 0)
		tool_grep_notes(&g, &wk, rel, out);
	else
		buf_printf(out, "grep in %s failed: %s", rel, strerror(-r));
	buf_free(&g.line);
	free(g.chunk);
done:
	tool_regex_free(g.re);
	pathglob_free(g.glob);
	tool_find_walk_free(&wk);
	return r == 0 && !g.stop ? 0 : -1;
}

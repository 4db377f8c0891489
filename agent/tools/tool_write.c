/*
 * tool_write.c: the write and edit tools.
 *
 *   write {path, content}: makes the missing parent directories, then
 *     replaces the file atomically: the content goes into a temporary file
 *     beside it (".atrium-tmp-PID-N", O_EXCL), which is renamed over the
 *     path, so a reader never sees half a file and a failure leaves the old
 *     one whole (the temporary file is removed).
 *   edit {path, old_string, new_string, replace_all?}: exact replacement of
 *     a unique occurrence (or of every one when replace_all), written back
 *     the same way with the file's mode kept.
 *
 * Both act with the sandbox uid's rights (wsio.c), so new files and
 * directories belong to it, and an existing file that uid may not write is
 * refused even when its directory would allow the rename.  A symlink at
 * the path is refused rather than replaced: its target is what the model
 * meant, and the tools do not read links.
 */
#include "tool_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonl.h"
#include "util.h"
#include "wsio.h"

#define TOOL_WRITE_MSG	(PATH_MAX + 512)

/* ---- the replacement (pure) ---------------------------------------------- */

/* Occurrences of old in text, non-overlapping, left to right. */
static size_t
tool_edit_count(const char *text, size_t len, const char *old, size_t olen)
{
	size_t n = 0;
	const char *p = text, *end = text + len;

	while ((size_t)(end - p) >= olen) {
		const char *hit = memmem(p, (size_t)(end - p), old, olen);

		if (!hit)
			break;
		n++;
		p = hit + olen;
	}
	return n;
}

int
tool_edit_apply(const char *text, size_t len, const char *old, size_t olen,
    const char *new, size_t nlen, int all, char **out, size_t *outlen,
    size_t *count)
{
	size_t n = olen ? tool_edit_count(text, len, old, olen) : 0, size;
	const char *p = text, *end = text + len;
	char *o, *q;

	*out = NULL;
	*outlen = 0;
	*count = n;
	if (n == 0)
		return -ENOENT;
	if (n > 1 && !all)
		return -EEXIST;
	if (nlen > olen && (nlen - olen) > (TOOL_EDIT_MAX_FILE - len) / n)
		return -EFBIG;
	size = len - n * olen + n * nlen;
	o = q = malloc(size + 1);
	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *hit = memmem(p, (size_t)(end - p), old, olen);

		memcpy(q, p, (size_t)(hit - p));
		q += hit - p;
		memcpy(q, new, nlen);
		q += nlen;
		p = hit + olen;
	}
	memcpy(q, p, (size_t)(end - p));
	q += end - p;
	*q = '\0';
	*out = o;
	*outlen = size;
	return 0;
}

/* ---- the atomic replace ----------------------------------------------------- */

/* Split rel into its directory (into dir) and last name.  NULL when rel
 * names no file (".", ".." at the end). */
static const char *
tool_write_split(const char *rel, char *dir, size_t dirlen)
{
	const char *slash = strrchr(rel, '/');
	const char *base = slash ? slash + 1 : rel;

	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return NULL;
	snprintf(dir, dirlen, "%.*s", slash ? (int)(slash - rel) : 1,
	    slash ? rel : ".");
	return base;
}

/* An O_PATH fd of directory dir (relative), making the missing ones with
 * the sandbox uid's rights.  The fd or -errno. */
static int
tool_write_mkdirs(struct wsio *w, const char *dir)
{
	char prefix[PATH_MAX];
	const char *p = dir;
	int fd = -1, parent, r;

	if (strcmp(dir, ".") == 0)
		return wsio_open(w, -1, ".", O_PATH | O_DIRECTORY, 0);
	while (*p) {
		const char *c = p;

		while (*p && *p != '/')
			p++;
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(p - dir), dir);
		parent = fd;
		fd = wsio_open(w, -1, prefix, O_PATH | O_DIRECTORY, 0);
		if (fd == -ENOENT) {
			char name[NAME_MAX + 1];

			snprintf(name, sizeof(name), "%.*s", (int)(p - c), c);
			r = wsio_mkdir(w, parent >= 0 ? parent : w->root, name,
			    0755);
			fd = r < 0 && r != -EEXIST ? r : wsio_open(w, -1, prefix,
			    O_PATH | O_DIRECTORY, 0);
		}
		wsio_close_behind(w, parent);
		if (fd < 0)
			return fd;
		if (*p)
			p++;
	}
	return fd;
}

/* Check the existing file name in dirfd: 0 with its mode in *mode and
 * *existed set, or 0 with *existed clear when there is none, or -errno
 * (-ELOOP for a symlink, -EISDIR, -EINVAL not regular, -EACCES). */
static int
tool_write_target(struct wsio *w, int dirfd, const char *name, mode_t *mode,
    int *existed)
{
	struct statx st;
	int fd, r;

	*existed = 0;
	fd = wsio_open(w, dirfd, name, O_PATH | O_NOFOLLOW, 0);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	r = wsio_fstat(w, fd, &st);
	wsio_close_behind(w, fd);
	if (r < 0)
		return r;
	if (S_ISLNK(st.stx_mode))
		return -ELOOP;
	if (S_ISDIR(st.stx_mode))
		return -EISDIR;
	if (!S_ISREG(st.stx_mode))
		return -EINVAL;
	*existed = 1;
	*mode = st.stx_mode & 07777;
	fd = wsio_open(w, dirfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	wsio_close(w, fd);
	return 0;
}

/* Write data into a new temporary file in dirfd and rename it to name.
 * 0 or -errno. */
static int
tool_write_swap(struct wsio *w, int dirfd, const char *name, const char *data,
    size_t len, mode_t mode)
{
	char tmp[64];
	int fd = -EEXIST, r;

	for (int i = 0; i < 8 && fd == -EEXIST; i++) {
		snprintf(tmp, sizeof(tmp), ".atrium-tmp-%d-%lld-%d", (int)getpid(),
		    time_mono_ms(), i);
		fd = wsio_open(w, dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW, mode);
	}
	if (fd < 0)
		return fd;
	r = wsio_write_all(w, fd, data, len);
	if (wsio_close(w, fd) < 0 && r == 0)
		r = -EIO;
	if (r == 0)
		r = wsio_rename(w, dirfd, tmp, name);
	if (r < 0)
		wsio_unlink(w, dirfd, tmp);
	return r;
}

/* Replace rel with data.  0 (with *existed), or -1 with the message in
 * out.  keep_mode: the file must exist and keeps its mode. */
static int
tool_write_replace(struct wsio *w, const char *rel, const char *data,
    size_t len, int *existed, struct buf *out)
{
	char dir[PATH_MAX], msg[TOOL_WRITE_MSG];
	const char *name = tool_write_split(rel, dir, sizeof(dir));
	mode_t mode = 0644;
	int dirfd, r;

	if (!name) {
		buf_printf(out, "%s names a directory, not a file", rel);
		return -1;
	}
	dirfd = tool_write_mkdirs(w, dir);
	r = dirfd < 0 ? dirfd : tool_write_target(w, dirfd, name, &mode,
	    existed);
	if (r == 0)
		r = tool_write_swap(w, dirfd, name, data, len, mode);
	wsio_close_behind(w, dirfd);
	if (r == -ELOOP && dirfd >= 0)
		snprintf(msg, sizeof(msg), "%s is a symbolic link: write to "
		    "the file it points to instead", rel);
	else if (r == -EINVAL)
		snprintf(msg, sizeof(msg), "%s is not a regular file", rel);
	else
		wsio_error(msg, sizeof(msg), r == -EISDIR || dirfd >= 0 ? rel :
		    dir, r);
	if (r < 0) {
		buf_printf(out, "%s", msg);
		return -1;
	}
	return 0;
}

/* A string argument with its length (JSON strings may hold NULs).  NULL
 * when absent or not a string. */
static const char *
tool_write_arg(json_object *input, const char *key, size_t *len)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(input, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

int
tool_write_run(struct wsio *w, json_object *input, struct buf *out)
{
	char rel[PATH_MAX];
	const char *content;
	size_t len = 0;
	int existed = 0;

	if (!json_get_string(input, "path") ||
	    !(content = tool_write_arg(input, "content", &len))) {
		buf_printf(out, "write needs {\"path\": \"FILE\", \"content\": "
		    "\"...\"} with both strings");
		return -1;
	}
	if (tool_files_path(w, input, "path", rel, sizeof(rel), out) < 0 ||
	    tool_write_replace(w, rel, content, len, &existed, out) < 0)
		return -1;
	buf_printf(out, "wrote %zu bytes to %s (%s)", len, rel, existed ?
	    "replaced the old content" : "new file");
	return 0;
}

/* The message for a failed tool_edit_apply. */
static void
tool_edit_failed(int r, size_t count, const char *rel, struct buf *out)
{
	if (r == -ENOENT)
		buf_printf(out, "old_string was not found in %s: read the file "
		    "and copy the exact text, including whitespace and "
		    "indentation", rel);
	else if (r == -EEXIST)
		buf_printf(out, "old_string occurs %zu times in %s: include "
		    "more of the surrounding text to make it unique, or set "
		    "replace_all to replace every occurrence", count, rel);
	else if (r == -EFBIG)
		buf_printf(out, "the edited %s would be over %d MiB", rel,
		    TOOL_EDIT_MAX_FILE >> 20);
	else
		buf_printf(out, "out of memory editing %s", rel);
}

int
tool_edit_run(struct wsio *w, json_object *input, struct buf *out)
{
	char rel[PATH_MAX], msg[TOOL_WRITE_MSG], *text = NULL, *res = NULL;
	const char *old, *new;
	size_t olen = 0, nlen = 0, len = 0, rlen = 0, count = 0;
	int r, existed = 0;

	old = tool_write_arg(input, "old_string", &olen);
	new = tool_write_arg(input, "new_string", &nlen);
	if (!json_get_string(input, "path") || !old || !new) {
		buf_printf(out, "edit needs {\"path\": \"FILE\", \"old_string\": "
		    "\"...\", \"new_string\": \"...\"}");
		return -1;
	}
	if (olen == 0 || (olen == nlen && memcmp(old, new, olen) == 0)) {
		buf_printf(out, olen == 0 ? "old_string must not be empty (to "
		    "create a file, use write)" : "old_string and new_string "
		    "are the same: nothing to change");
		return -1;
	}
	if (tool_files_path(w, input, "path", rel, sizeof(rel), out) < 0)
		return -1;
	r = wsio_read_file(w, rel, TOOL_EDIT_MAX_FILE, &text, &len, NULL);
	if (r < 0) {
		if (r == -EFBIG)
			snprintf(msg, sizeof(msg), "%s is over %d MiB: edit it "
			    "with bash", rel, TOOL_EDIT_MAX_FILE >> 20);
		else if (r == -EINVAL)
			snprintf(msg, sizeof(msg), "%s is not a regular file",
			    rel);
		else
			wsio_error(msg, sizeof(msg), rel, r);
		buf_printf(out, "%s", msg);
		return -1;
	}
	r = tool_edit_apply(text, len, old, olen, new, nlen,
	    json_get_bool(input, "replace_all", 0), &res, &rlen, &count);
	free(text);
	if (r < 0) {
		tool_edit_failed(r, count, rel, out);
		return -1;
	}
	r = tool_write_replace(w, rel, res, rlen, &existed, out);
	free(res);
	if (r < 0)
		return -1;
	buf_printf(out, "edited %s: replaced %zu occurrence%s (%zu -> %zu "
	    "bytes)", rel, count, count == 1 ? "" : "s", len, rlen);
	return 0;
}

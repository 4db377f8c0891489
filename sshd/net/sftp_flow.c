/*
 * sftp_flow.c: request counting for the sftp subsystem (sftp_flow.h),
 * and which requests may change the workspace.  Called by stream.c on
 * every byte it moves between the client and sftp-server.  Invariant: a
 * frames struct is either inside a length (hdr_have 1-3), inside a body
 * (body_left > 0), or between packets; head_have <= head_want <=
 * SFTP_FLOW_HEAD, and a request is classified once, when its head is
 * whole.
 */
#include "sftp_flow.h"

#include <limits.h>
#include <string.h>

/* SFTP packet types (draft-ietf-secsh-filexfer-02 3) and OPEN's flags. */
enum {
	FXP_OPEN = 3, FXP_WRITE = 6, FXP_SETSTAT = 9, FXP_FSETSTAT = 10,
	FXP_REMOVE = 13, FXP_MKDIR = 14, FXP_RMDIR = 15, FXP_RENAME = 18,
	FXP_SYMLINK = 20, FXP_EXTENDED = 200,
};
#define FXF_CREAT	0x08
#define FXF_TRUNC	0x10

/* The big-endian uint32 at h + off, if the n bytes of h hold it. */
static int
sftp_u32(const uint8_t *h, uint32_t n, uint32_t off, uint32_t *out)
{
	if (off > n || n - off < 4)
		return 0;
	*out = (uint32_t)h[off] << 24 | (uint32_t)h[off + 1] << 16 |
	    (uint32_t)h[off + 2] << 8 | h[off + 3];
	return 1;
}

/* 1 when the EXTENDED request name (len bytes) is one that reads only. */
static int
sftp_extended_reads(const uint8_t *name, uint32_t len)
{
	static const char *const reads[] = {
		"statvfs@openssh.com", "fstatvfs@openssh.com",
		"limits@openssh.com", "expand-path@openssh.com",
		"home-directory", "fsync@openssh.com",
		"users-groups-by-id@openssh.com",
	};

	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
		if (strlen(reads[i]) == len && memcmp(reads[i], name, len) == 0)
			return 1;
	return 0;
}

/* 1 when the request whose first n body bytes are h (n is all of it, or
 * SFTP_FLOW_HEAD) may change the workspace (sftp_flow.h's head). */
static int
sftp_request_changes(const uint8_t *h, uint32_t n)
{
	uint32_t len, flags;

	if (n == 0)
		return 0;
	switch (h[0]) {
	case FXP_WRITE: case FXP_SETSTAT: case FXP_FSETSTAT: case FXP_REMOVE:
	case FXP_MKDIR: case FXP_RMDIR: case FXP_RENAME: case FXP_SYMLINK:
		return 1;
	case FXP_OPEN:		/* type, id, filename, pflags */
		if (!sftp_u32(h, n, 5, &len) || len > n ||
		    !sftp_u32(h, n, 9 + len, &flags))
			return 1;
		return (flags & (FXF_CREAT | FXF_TRUNC)) != 0;
	case FXP_EXTENDED:	/* type, id, request name */
		if (!sftp_u32(h, n, 5, &len) || len > n - 9)
			return 1;
		return !sftp_extended_reads(h + 9, len);
	default:
		return 0;
	}
}

/* Keep the k body bytes at p in fr's head while it wants them; classify
 * the request once its head is whole. */
static void
sftp_frames_head(struct sftp_frames *fr, const char *p, size_t k)
{
	size_t take = fr->head_want - fr->head_have;

	if (fr->head_have >= fr->head_want)
		return;
	if (take > k)
		take = k;
	memcpy(fr->head + fr->head_have, p, take);
	fr->head_have += (uint32_t)take;
	if (fr->head_have == fr->head_want &&
	    sftp_request_changes(fr->head, fr->head_have)) {
		fr->changes++;
		fr->last_change = fr->started;
	}
}

/* Advance over up to n bytes, starting at most max_starts packets (stop
 * before the first byte of the next one).  Returns the bytes consumed. */
static size_t
sftp_frames_feed(struct sftp_frames *fr, const char *p, size_t n,
    unsigned long max_starts)
{
	size_t i = 0;

	while (i < n) {
		if (fr->body_left > 0) {
			size_t k = n - i < fr->body_left ? n - i : fr->body_left;

			sftp_frames_head(fr, p + i, k);
			fr->body_left -= (uint32_t)k;
			i += k;
			continue;
		}
		if (fr->hdr_have == 0) {
			if (max_starts == 0)
				break;
			max_starts--;
			fr->started++;
		}
		fr->hdr[fr->hdr_have++] = (uint8_t)p[i++];
		if (fr->hdr_have == 4) {
			fr->body_left = (uint32_t)fr->hdr[0] << 24 |
			    (uint32_t)fr->hdr[1] << 16 |
			    (uint32_t)fr->hdr[2] << 8 | fr->hdr[3];
			fr->hdr_have = 0;
			fr->head_have = 0;
			fr->head_want = fr->body_left < SFTP_FLOW_HEAD ?
			    fr->body_left : SFTP_FLOW_HEAD;
		}
	}
	return i;
}

/* See sftp_flow.h. */
unsigned long
sftp_flow_pending(const struct sftp_flow *f)
{
	/* A server that answers more than it was asked counts as caught up. */
	return f->req.started > f->resp.started ?
	    f->req.started - f->resp.started : 0;
}

/* See sftp_flow.h. */
size_t
sftp_flow_allowed(const struct sftp_flow *f, const char *p, size_t n)
{
	struct sftp_frames probe = f->req;
	unsigned long pending = sftp_flow_pending(f);

	return sftp_frames_feed(&probe, p, n, pending < SFTP_FLOW_MAX_PENDING ?
	    SFTP_FLOW_MAX_PENDING - pending : 0);
}

/* See sftp_flow.h. */
void
sftp_flow_sent(struct sftp_flow *f, const char *p, size_t n)
{
	sftp_frames_feed(&f->req, p, n, ULONG_MAX);
}

/* See sftp_flow.h. */
void
sftp_flow_answered(struct sftp_flow *f, const char *p, size_t n)
{
	sftp_frames_feed(&f->resp, p, n, ULONG_MAX);
}

/* See sftp_flow.h. */
unsigned long
sftp_flow_changes(const struct sftp_flow *f)
{
	return f->req.changes;
}

/* See sftp_flow.h. */
int
sftp_flow_changes_done(const struct sftp_flow *f)
{
	return f->resp.started >= f->req.last_change;
}

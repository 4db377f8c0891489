/*
 * sftp_flow.c: request counting for the sftp subsystem (sftp_flow.h).
 * Called by stream.c on every byte it moves between the client and
 * sftp-server.  Invariant: a frames struct is either inside a length
 * (hdr_have 1-3), inside a body (body_left > 0), or between packets.
 */
#include "sftp_flow.h"

#include <limits.h>

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

/*
 * walrec.c: the replication record's header and its replay (walrec.h
 * has the format).  Every record read back is hostile (a segment from
 * the object store): each field is checked before it sizes anything.
 */
#include "walrec.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static void
walrec_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t
walrec_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

void
walrec_hdr_put(const struct walrec_hdr *h, unsigned char *out)
{
	memset(out, 0, WALREC_HDR);
	memcpy(out, WALREC_MAGIC, 4);
	out[4] = h->db;
	walrec_put32(out + 8, h->page_size);
	walrec_put32(out + 12, h->db_pages);
	walrec_put32(out + 16, h->frames);
	walrec_put32(out + 24, (uint32_t)h->seq);
	walrec_put32(out + 28, (uint32_t)(h->seq >> 32));
}

int
walrec_hdr_get(const unsigned char *in, struct walrec_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->db = in[4];
	h->page_size = walrec_get32(in + 8);
	h->db_pages = walrec_get32(in + 12);
	h->frames = walrec_get32(in + 16);
	h->seq = walrec_get32(in + 24) | (uint64_t)walrec_get32(in + 28) << 32;
	if (memcmp(in, WALREC_MAGIC, 4) != 0 ||
	    (h->db != WALREC_DB_ROOM && h->db != WALREC_DB_WORKSPACE) ||
	    in[5] | in[6] | in[7] || walrec_get32(in + 20) ||
	    h->page_size < 512 || h->page_size > 65536 ||
	    (h->page_size & (h->page_size - 1)) || h->db_pages == 0 ||
	    h->frames == 0 || h->frames > WALREC_FRAMES_MAX || h->seq == 0) {
		memset(h, 0, sizeof(*h));
		return -EPROTO;
	}
	return 0;
}

uint32_t
walrec_frame_page(const unsigned char *frame)
{
	return (uint32_t)frame[0] << 24 | (uint32_t)frame[1] << 16 |
	    (uint32_t)frame[2] << 8 | (uint32_t)frame[3];
}

/* pwrite all n bytes at off: 0 or -errno. */
static int
walrec_pwrite_all(int fd, const unsigned char *p, size_t n, off_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w, n -= (size_t)w, off += w;
	}
	return 0;
}

int
walrec_apply_frames(int fd, const struct walrec_hdr *h,
    const unsigned char *frames, size_t n)
{
	size_t fb = walrec_frame_bytes(h->page_size);
	int r;

	if (n % fb)
		return -EPROTO;
	for (size_t at = 0; at < n; at += fb) {
		uint32_t pg = walrec_frame_page(frames + at);

		/* A page past the commit's size is one a later frame of
		 * the same transaction truncated away: the cut drops it. */
		if (pg == 0)
			return -EPROTO;
		if ((r = walrec_pwrite_all(fd, frames + at + WALREC_FRAME_HDR,
		    h->page_size, (off_t)(pg - 1) * h->page_size)) < 0)
			return r;
	}
	return 0;
}

int
walrec_apply_size(int fd, const struct walrec_hdr *h)
{
	off_t size = (off_t)h->db_pages * h->page_size;

	while (ftruncate(fd, size) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

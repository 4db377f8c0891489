/*
 * walrec.h: the replication record of one SQLite commit (walrec.c), as
 * walbuf.c writes it to a room's replication fd, atrium-replicate packs
 * it into segments in the object store, and a restore replays it.
 *
 * One record per commit, in commit order:
 *
 *   offset size  field (integers little-endian)
 *   0      4     magic "AWR1"
 *   4      1     db id: 1 room.db, 2 workspace.db (WALREC_DB_*)
 *   5      3     zero
 *   8      4     page size (512 .. 65536, a power of two)
 *   12     4     the database's size in pages after the commit (> 0)
 *   16     4     frames that follow (1 .. WALREC_FRAMES_MAX)
 *   20     4     zero
 *   24     8     sequence number: 1 for the first record a writer
 *                process sends, +1 for each after (a gap is a loss)
 *   32     ...   the frames, each as it is in the WAL at the commit: a
 *                24-byte frame header (page number big-endian at 0, the
 *                commit's size in pages at 4 on the last frame, salts
 *                and checksums, not checked here) and the page
 *
 * A transaction that wrote a page twice has one frame for it (SQLite
 * rewrites a frame in place within a transaction): the frames are read
 * back from the WAL at the commit, never taken from earlier writes.  A
 * page may still appear more than once across a record (an older frame
 * of the same transaction that was not rewritten): the last one wins, as
 * in the WAL.
 *
 * Replaying records in order onto a copy of the database taken at or
 * before the first record's state (write each page at (page - 1) x page
 * size, then cut the file to the last record's size) gives the database
 * as a checkpoint of those commits would: each page ends at its last
 * image.
 */
#ifndef ATRIUM_WALREC_H
#define ATRIUM_WALREC_H

#include <stddef.h>
#include <stdint.h>

#define WALREC_MAGIC		"AWR1"
#define WALREC_HDR		32
#define WALREC_FRAME_HDR	24
#define WALREC_DB_ROOM		1
#define WALREC_DB_WORKSPACE	2
#define WALREC_FRAMES_MAX	(1u << 22)	/* 16 GiB of 4 KiB pages */

struct walrec_hdr {
	uint8_t db;		/* WALREC_DB_* */
	uint32_t page_size;
	uint32_t db_pages;	/* after the commit */
	uint32_t frames;
	uint64_t seq;
};

/* h into out (WALREC_HDR bytes). */
void walrec_hdr_put(const struct walrec_hdr *h, unsigned char *out);

/* WALREC_HDR bytes of in into h: 0, or -EPROTO for a bad magic, db id,
 * page size, size or frame count (h cleared). */
int walrec_hdr_get(const unsigned char *in, struct walrec_hdr *h);

/* Bytes of a frame of page size ps. */
static inline size_t
walrec_frame_bytes(uint32_t ps)
{
	return WALREC_FRAME_HDR + (size_t)ps;
}

/* Bytes of the whole record h heads, header included. */
static inline uint64_t
walrec_bytes(const struct walrec_hdr *h)
{
	return WALREC_HDR + (uint64_t)h->frames * walrec_frame_bytes(h->page_size);
}

/* The page number of a frame (its header's first 4 bytes, big-endian). */
uint32_t walrec_frame_page(const unsigned char *frame);

/* Write the frames of one record (n bytes of whole frames of h's page
 * size) into the database file fd: 0, -EPROTO for a page number of 0 or
 * past h->db_pages, or -errno. */
int walrec_apply_frames(int fd, const struct walrec_hdr *h,
    const unsigned char *frames, size_t n);

/* Cut or grow fd to the record's database size: 0 or -errno. */
int walrec_apply_size(int fd, const struct walrec_hdr *h);

#endif

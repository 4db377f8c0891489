/*
 * sftp_flow.h: flow control for the sftp subsystem by counting requests.
 *
 * OpenSSH's sftp-server reads its stdin whenever it can and answers one
 * request per turn of its loop, so a client that keeps many small writes in
 * flight (PuTTY's pscp and psftp send 4 KiB writes with no cap but the
 * window) piles megabytes into its input buffer, which it then copies on
 * every request: an upload slows down the longer it runs.  Counting the
 * packets in each direction (every SFTP request has exactly one response)
 * lets atriumd hold the client's bytes once SFTP_FLOW_MAX_PENDING requests
 * are unanswered; they stay in libssh, so the client's window closes.
 *
 * It also counts the client's requests that may change the workspace
 * (sftp_flow_changes), so that a session is known to have written, and
 * when (stream.c tells the agent: undo's attribution), while one that
 * only read names nobody.  Such a request: WRITE, SETSTAT, FSETSTAT,
 * REMOVE, MKDIR, RMDIR, RENAME, SYMLINK; OPEN with CREAT or TRUNC; an
 * EXTENDED request other than the read-only ones OpenSSH's clients send
 * (statvfs, fstatvfs, limits, expand-path, home-directory, fsync,
 * users-groups-by-id).  A request whose head does not fit
 * SFTP_FLOW_HEAD bytes counts as one: when in doubt, it wrote.
 *
 * Pure: no I/O.  The framing is SFTP's (draft-ietf-secsh-filexfer-02 3):
 * uint32 length, then that many bytes: the type byte, the request id,
 * then the request's fields.
 */
#ifndef ATRIUMD_SFTP_FLOW_H
#define ATRIUMD_SFTP_FLOW_H

#include <stddef.h>
#include <stdint.h>

#define SFTP_FLOW_MAX_PENDING	64	/* requests the server may hold */
#define SFTP_FLOW_HEAD		320	/* a request's first bytes kept to
					 * classify it (type, id, a name of
					 * up to 255 bytes, OPEN's flags) */

/* One direction's framing state. */
struct sftp_frames {
	uint8_t hdr[4];		/* length bytes seen of the current packet */
	int hdr_have;		/* how many of them (0-4) */
	uint32_t body_left;	/* bytes of the current body still to come */
	unsigned long started;	/* packets whose first byte was seen */
	uint8_t head[SFTP_FLOW_HEAD];	/* the current body's first bytes */
	uint32_t head_have;	/* of them, seen */
	uint32_t head_want;	/* to see: min(length, SFTP_FLOW_HEAD) */
	unsigned long changes;	/* packets classified as changes */
	unsigned long last_change;	/* the ordinal (started) of the last */
};

struct sftp_flow {
	struct sftp_frames req;		/* client to server */
	struct sftp_frames resp;	/* server to client */
};

/* Requests sent and not yet answered. */
unsigned long sftp_flow_pending(const struct sftp_flow *f);

/* How many of the n client bytes at p may go to the server now: all of
 * them, or up to the start of the request that would pass the limit. */
size_t sftp_flow_allowed(const struct sftp_flow *f, const char *p, size_t n);

/* Count n client bytes that went to the server (n no more than allowed). */
void sftp_flow_sent(struct sftp_flow *f, const char *p, size_t n);

/* Count n bytes the server wrote (responses). */
void sftp_flow_answered(struct sftp_flow *f, const char *p, size_t n);

/* The client's requests sent so far that may change the workspace (see
 * the head). */
unsigned long sftp_flow_changes(const struct sftp_flow *f);

/* 1 when the last of them has been answered (sftp-server answers in
 * order), so every change they made is done. */
int sftp_flow_changes_done(const struct sftp_flow *f);

#endif

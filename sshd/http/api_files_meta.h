/*
 * api_files_meta.h: what a file's answer says about it besides its bytes
 * (api_files_meta.c, used by api_files.c): its type as the browser is
 * told it, and whether a conditional GET may answer 304.  Pure, unit
 * tested.
 *
 * A workspace file is written by anyone in the room, the agent included,
 * and it is served on the same origin as the room's page: it must never
 * be able to run script there.  So only a short list of inert types is
 * named (text files as text/plain); everything else is
 * application/octet-stream, and the types a browser would render as a
 * document (HTML, SVG, XML) are also sent as an attachment, never
 * inline.
 */
#ifndef ATRIUMD_API_FILES_META_H
#define ATRIUMD_API_FILES_META_H

#include <time.h>

struct api_files_type {
	const char *content_type;	/* Content-Type */
	int attachment;			/* Content-Disposition: attachment */
};

/* The type to serve the file at path (its last name's extension, case
 * ignored) as. */
struct api_files_type api_files_type_of(const char *path);

/* 1 when a GET with these headers (each NULL when absent) may answer 304
 * Not Modified for a file of etag (quoted) last modified at mtime, else
 * 0.  If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2); an
 * If-Modified-Since this cannot read is ignored. */
int api_files_not_modified(const char *if_none_match,
    const char *if_modified_since, const char *etag, time_t mtime);

#endif

/*
 * http_web.h: the room in the browser, as atriumd-http serves it
 * (http_web.c): the page at /r/ROOM and its files at /assets/NAME.
 *
 * The files are read once, at start and before the process gives up
 * root (it can open no file after), from the directory the setting
 * http-web-dir names (make install's share/atrium/web; build/web in a
 * build tree); only the names in http_web.c's list are read, and only
 * those are served.  A file missing at start is logged and its route
 * answers 503 until a restart.  Each is kept with its gzip copy
 * (NAME.gz, made by the build) when there is one, its media type and an
 * ETag (a hash of its bytes).
 *
 * Every answer carries the page's Content-Security-Policy (HTTP_WEB_CSP:
 * this origin's scripts and styles only, no inline ones, no framing) and
 * the headers every atriumd-http answer has (http_reply.c); caches must
 * ask again (no-cache) and get 304 while the ETag holds.  The page needs
 * no token: it asks for one itself, and every request it makes is
 * authenticated as any other.
 */
#ifndef ATRIUMD_HTTP_WEB_H
#define ATRIUMD_HTTP_WEB_H

#include <stddef.h>

struct http_req;

#define HTTP_WEB_CSP	"default-src 'self'; script-src 'self'; " \
	"style-src 'self'; connect-src 'self'; img-src 'self' data:; " \
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
#define HTTP_WEB_MAX_FILE	(4 << 20)	/* bytes of one file */
#define HTTP_WEB_NFILES		6

struct http_web_file {
	const char *name;		/* "app.js": a static string */
	const char *type;		/* its Content-Type */
	char *data, *gz;		/* its bytes, its gzip copy or NULL */
	size_t len, gz_len;
	char etag[24];			/* "\"HEX\"" */
};

struct http_web {
	struct http_web_file f[HTTP_WEB_NFILES];
};

/* Read the page's files from dir into w.  0 when all were read; a
 * missing or unreadable file is logged and left out (-ENOENT when any
 * was), and what was read is served. */
int http_web_load(struct http_web *w, const char *dir);

/* Free what http_web_load read. */
void http_web_free(struct http_web *w);

/* Route handlers (http_routes.c): GET /r/{room} and GET /assets/{path...}.
 * MHD's result. */
int http_web_page(struct http_req *r);
int http_web_asset(struct http_req *r);

#endif

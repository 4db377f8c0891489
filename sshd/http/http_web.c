/*
 * http_web.c: the page and its files (http_web.h).  Loaded by http_main.c
 * before the privilege drop; answered from memory by the two routes.
 *
 * Reading: each name of http_web_names is opened beneath the directory
 * (openat, no symlink followed, a regular file of at most
 * HTTP_WEB_MAX_FILE bytes) and read whole; so is NAME.gz beside it.
 * Nothing else in the directory is ever read or served: a request for
 * another name is a 404 whatever the directory holds.
 */
#include "http_web.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http_req.h"
#include "http_server.h"
#include "log.h"

/* What is served, and as what. */
static const struct {
	const char *name, *type;
} http_web_names[HTTP_WEB_NFILES] = {
	{ "index.html", "text/html; charset=utf-8" },
	{ "app.js", "text/javascript; charset=utf-8" },
	{ "app.css", "text/css; charset=utf-8" },
	{ "xterm.js", "text/javascript; charset=utf-8" },
	{ "xterm.css", "text/css; charset=utf-8" },
	{ "addon-fit.js", "text/javascript; charset=utf-8" },
};

/* Read the regular file name beneath dirfd whole into *data (*len
 * bytes).  0, -ENOENT when it is not there, or -errno. */
static int
http_web_read(int dirfd, const char *name, char **data, size_t *len)
{
	struct stat sb;
	size_t got = 0;
	ssize_t n;
	char *p;
	int fd, r = 0;

	*data = NULL;
	*len = 0;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0)
		r = -errno;
	else if (!S_ISREG(sb.st_mode))
		r = -EINVAL;
	else if (sb.st_size > HTTP_WEB_MAX_FILE)
		r = -EFBIG;
	if (r < 0) {
		close(fd);
		return r;
	}
	if (!(p = malloc((size_t)sb.st_size + 1))) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)sb.st_size &&
	    (n = read(fd, p + got, (size_t)sb.st_size - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	if (r < 0) {
		free(p);
		return r;
	}
	*data = p;
	*len = got;
	return 0;
}

/* The ETag of len bytes at p: 64-bit FNV-1a, quoted. */
static void
http_web_etag(const char *p, size_t len, char *out, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ULL;
	}
	snprintf(out, size, "\"%016llx\"", (unsigned long long)h);
}

/* Read file f (and its gzip copy) beneath dirfd.  0 or -errno (logged). */
static int
http_web_load_one(int dirfd, const char *dir, struct http_web_file *f)
{
	char gzname[64];
	int r = http_web_read(dirfd, f->name, &f->data, &f->len);

	if (r < 0) {
		log_error("http: the page's file %s/%s cannot be read (%s): "
		    "the page is not served; install it (make install) or "
		    "point http-web-dir at it", dir, f->name,
		    r == -EINVAL ? "not a regular file" : r == -EFBIG ?
		    "larger than 4 MiB" : strerror(-r));
		return r;
	}
	http_web_etag(f->data, f->len, f->etag, sizeof(f->etag));
	snprintf(gzname, sizeof(gzname), "%s.gz", f->name);
	if (http_web_read(dirfd, gzname, &f->gz, &f->gz_len) < 0) {
		f->gz = NULL;	/* served as it is */
		f->gz_len = 0;
	}
	return 0;
}

/* See http_web.h. */
int
http_web_load(struct http_web *w, const char *dir)
{
	int dirfd, r = 0;

	memset(w, 0, sizeof(*w));
	for (int i = 0; i < HTTP_WEB_NFILES; i++) {
		w->f[i].name = http_web_names[i].name;
		w->f[i].type = http_web_names[i].type;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		r = -errno;
		log_error("http: the page's directory %s cannot be opened "
		    "(%s): the page is not served; set http-web-dir", dir,
		    strerror(-r));
		return r;
	}
	for (int i = 0; i < HTTP_WEB_NFILES; i++)
		if (http_web_load_one(dirfd, dir, &w->f[i]) < 0)
			r = -ENOENT;
	close(dirfd);
	return r;
}

/* See http_web.h. */
void
http_web_free(struct http_web *w)
{
	for (int i = 0; i < HTTP_WEB_NFILES; i++) {
		free(w->f[i].data);
		free(w->f[i].gz);
		w->f[i].data = w->f[i].gz = NULL;
	}
}

/* The file named name, or NULL. */
static const struct http_web_file *
http_web_find(const struct http_web *w, const char *name)
{
	for (int i = 0; i < HTTP_WEB_NFILES; i++)
		if (strcmp(w->f[i].name, name) == 0)
			return &w->f[i];
	return NULL;
}

/* 1 when the request's Accept-Encoding takes gzip: a "gzip" item
 * whose q, if it says one, is not 0. */
static int
http_web_takes_gzip(struct http_req *r)
{
	const char *ae = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_ACCEPT_ENCODING);

	for (const char *p = ae; p && *p; p += strcspn(p, ",")) {
		const char *q;

		p += strspn(p, ", \t");
		if (strncasecmp(p, "gzip", 4) != 0 ||
		    (p[4] && !strchr(",; \t", p[4])))
			continue;
		q = strstr(p, "q=");
		if (!q || q > p + strcspn(p, ","))
			return 1;
		return strtod(q + 2, NULL) > 0;
	}
	return 0;
}

/* 1 when the request's If-None-Match names etag. */
static int
http_web_fresh(struct http_req *r, const char *etag)
{
	const char *inm = MHD_lookup_connection_value(r->conn,
	    MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);

	return inm && (strstr(inm, etag) || strcmp(inm, "*") == 0);
}

/* Answer r with file f: 304 when the client has it, else its bytes
 * (gzipped when the client takes it and a copy was built). */
static int
http_web_send(struct http_req *r, const struct http_web_file *f)
{
	struct MHD_Response *resp;
	int gz = f->gz && http_web_takes_gzip(r), fresh;

	if (!f->data)
		return http_reply_error(r, 503, "the page's files are not "
		    "installed on this server: its operator should install "
		    "them (make install) or set http-web-dir");
	fresh = http_web_fresh(r, f->etag);
	if (fresh)
		resp = MHD_create_response_from_buffer(0, NULL,
		    MHD_RESPMEM_PERSISTENT);
	else
		resp = MHD_create_response_from_buffer(gz ? f->gz_len : f->len,
		    gz ? f->gz : f->data, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return http_reply_error(r, 500, "out of memory; try again");
	MHD_add_response_header(resp, "Content-Security-Policy", HTTP_WEB_CSP);
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	MHD_add_response_header(resp, "ETag", f->etag);
	MHD_add_response_header(resp, "Vary", "Accept-Encoding");
	if (!fresh) {
		MHD_add_response_header(resp, "Content-Type", f->type);
		if (gz)
			MHD_add_response_header(resp, "Content-Encoding",
			    "gzip");
	}
	return http_reply_queue(r, fresh ? 304 : 200, resp);
}

/* See http_web.h.  The room's name was checked by the route; the page
 * reads it from its own address. */
int
http_web_page(struct http_req *r)
{
	return http_web_send(r, http_web_find(&r->srv->web, "index.html"));
}

/* See http_web.h. */
int
http_web_asset(struct http_req *r)
{
	const struct http_web_file *f = NULL;

	if (strcmp(r->rest, "index.html") != 0)
		f = http_web_find(&r->srv->web, r->rest);
	if (!f)
		return http_reply_error(r, 404, "no such file of the page");
	return http_web_send(r, f);
}

/*
 * api_files_meta.c: a served file's type and the conditional GET
 * (api_files_meta.h).  Pure: strings in, answers out; nothing here reads
 * a file or a header itself.
 */
#include "api_files_meta.h"

#include <string.h>
#include <strings.h>
#include <time.h>

#define TEXT_PLAIN	"text/plain; charset=utf-8"
#define OCTET		"application/octet-stream"

/* Extensions served as named.  Text of any kind is text/plain, so code
 * (.js included) is shown, never run. */
static const struct { const char *ext; const char *type; } safe_types[] = {
	{ "txt", TEXT_PLAIN }, { "md", TEXT_PLAIN }, { "log", TEXT_PLAIN },
	{ "c", TEXT_PLAIN }, { "h", TEXT_PLAIN }, { "cc", TEXT_PLAIN },
	{ "cpp", TEXT_PLAIN }, { "hpp", TEXT_PLAIN }, { "py", TEXT_PLAIN },
	{ "sh", TEXT_PLAIN }, { "go", TEXT_PLAIN }, { "rs", TEXT_PLAIN },
	{ "js", TEXT_PLAIN }, { "ts", TEXT_PLAIN }, { "css", TEXT_PLAIN },
	{ "java", TEXT_PLAIN }, { "rb", TEXT_PLAIN }, { "toml", TEXT_PLAIN },
	{ "yaml", TEXT_PLAIN }, { "yml", TEXT_PLAIN }, { "ini", TEXT_PLAIN },
	{ "conf", TEXT_PLAIN }, { "csv", TEXT_PLAIN }, { "diff", TEXT_PLAIN },
	{ "patch", TEXT_PLAIN }, { "mk", TEXT_PLAIN },
	{ "json", "application/json" },
	{ "png", "image/png" }, { "jpg", "image/jpeg" },
	{ "jpeg", "image/jpeg" }, { "gif", "image/gif" },
	{ "webp", "image/webp" },
};

/* Extensions a browser renders as a document that may run script. */
static const char *const document_types[] = {
	"html", "htm", "xhtml", "shtml", "svg", "svgz", "xml", "xsl", "xslt",
	"mht", "mhtml",
};

/* The extension of path's last name, or NULL (none, or a dot file). */
static const char *
api_files_ext(const char *path)
{
	const char *name = strrchr(path, '/');
	const char *dot;

	name = name ? name + 1 : path;
	dot = strrchr(name, '.');
	if (!dot || dot == name || !dot[1])
		return NULL;
	return dot + 1;
}

struct api_files_type
api_files_type_of(const char *path)
{
	struct api_files_type t = { OCTET, 0 };
	const char *ext = api_files_ext(path ? path : "");

	if (!ext)
		return t;
	for (size_t i = 0; i < sizeof(document_types) /
	    sizeof(document_types[0]); i++)
		if (strcasecmp(ext, document_types[i]) == 0) {
			t.attachment = 1;
			return t;
		}
	for (size_t i = 0; i < sizeof(safe_types) / sizeof(safe_types[0]);
	    i++)
		if (strcasecmp(ext, safe_types[i].ext) == 0) {
			t.content_type = safe_types[i].type;
			return t;
		}
	return t;
}

/* 1 when the If-None-Match list names etag (weakly: W/ ignored) or is
 * "*". */
static int
api_files_etag_listed(const char *list, const char *etag)
{
	size_t elen = strlen(etag);
	const char *p = list;

	while (*p) {
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '*')
			return 1;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		n = strcspn(p, ",");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == elen && strncmp(p, etag, n) == 0)
			return 1;
		p += strcspn(p, ",");
	}
	return 0;
}

/* An HTTP date (IMF-fixdate, the only form sent today) as time, or -1. */
static time_t
api_files_http_date(const char *s)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end || *end)
		return (time_t)-1;
	return timegm(&tm);
}

int
api_files_not_modified(const char *if_none_match,
    const char *if_modified_since, const char *etag, time_t mtime)
{
	time_t since;

	if (if_none_match)
		return api_files_etag_listed(if_none_match, etag);
	if (!if_modified_since)
		return 0;
	since = api_files_http_date(if_modified_since);
	return since != (time_t)-1 && mtime <= since;
}

/*
 * test_http_web.c: the page's files as atriumd-http reads them at start
 * (sshd/http/http_web.c): only the listed names, each a regular file
 * beneath the folder (a symlink is not followed, a folder or an
 * oversized file is left out), with its gzip copy when there is one and
 * an ETag that follows its bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "../../sshd/http/http_web.h"

static char dir[64];

/* Write text into dir/name. */
static void
put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static const struct http_web_file *
file(const struct http_web *w, const char *name)
{
	for (int i = 0; i < HTTP_WEB_NFILES; i++)
		if (strcmp(w->f[i].name, name) == 0)
			return &w->f[i];
	return NULL;
}

static void
test_every_listed_file_is_read(void)
{
	static const char *const names[] = { "index.html", "app.js", "app.css",
	    "xterm.js", "xterm.css", "addon-fit.js" };
	struct http_web w;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		put(names[i], names[i]);
	put("app.js.gz", "gzipped");
	put("secret.txt", "not served");
	CHECK_INT(http_web_load(&w, dir), 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct http_web_file *f = file(&w, names[i]);

		CHECK(f && f->data && f->len == strlen(names[i]) &&
		    memcmp(f->data, names[i], f->len) == 0);
		CHECK(f && f->etag[0] == '"');
	}
	CHECK(file(&w, "secret.txt") == NULL);
	CHECK(file(&w, "app.js")->gz_len == 7);
	CHECK(file(&w, "app.css")->gz == NULL);
	CHECK(strstr(file(&w, "index.html")->type, "text/html") != NULL);
	CHECK(strcmp(file(&w, "app.js")->etag, file(&w, "app.css")->etag));
	http_web_free(&w);
}

static void
test_a_symlink_or_folder_is_left_out(void)
{
	char path[256];
	struct http_web w;

	snprintf(path, sizeof(path), "%s/app.css", dir);
	unlink(path);
	CHECK_INT(symlink("/etc/passwd", path), 0);
	snprintf(path, sizeof(path), "%s/xterm.css", dir);
	unlink(path);
	CHECK_INT(mkdir(path, 0700), 0);
	CHECK_INT(http_web_load(&w, dir), -ENOENT);
	CHECK(file(&w, "app.css")->data == NULL);
	CHECK(file(&w, "xterm.css")->data == NULL);
	CHECK(file(&w, "app.js")->data != NULL);	/* the rest is served */
	http_web_free(&w);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/app.css", dir);
	unlink(path);
}

static void
test_a_missing_folder(void)
{
	struct http_web w;

	CHECK(http_web_load(&w, "/nonexistent/atrium-web") < 0);
	CHECK(file(&w, "index.html") && file(&w, "index.html")->data == NULL);
	http_web_free(&w);
}

int
main(void)
{
	char cmd[96];

	snprintf(dir, sizeof(dir), "/tmp/atrium-web-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	TEST(test_every_listed_file_is_read);
	TEST(test_a_symlink_or_folder_is_left_out);
	TEST(test_a_missing_folder);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return unit_done("test_http_web");
}

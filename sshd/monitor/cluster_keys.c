/*
 * cluster_keys.c: one authorized_keys for every host of a cluster
 * (cluster_keys.h): `atriumd cluster keys push FILE` and `atriumd cluster
 * keys show`, the operator's commands, and the check of a file's text
 * that both the push and each monitor (cluster/keys_sync.c, before it
 * writes DATA/authorized_keys) make.
 *
 * The check is stricter than a host's own reading of its file (which
 * skips a bad line and goes on): a text that would lock someone out by
 * mistake is refused whole, with the number of its first bad line, and
 * nothing changes.  A line is bad when authkeys_parse_line refuses it
 * (an option atriumd does not honour among them), when its key does not
 * decode, when it names the agent, or when it is too long; a text with no
 * key at all is refused too (it would let nobody in anywhere).
 *
 * `show` prints what etcd holds, which any node could have written: its
 * control characters are replaced before they reach the terminal.
 */
#include "cluster_keys.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "authkeys.h"
#include "cluster_status.h"
#include "etcd.h"
#include "keys_sync.h"
#include "util.h"

#define CK_PUSH_USAGE	"atriumd cluster keys push FILE [--cluster " \
    "etcd=URL[,URL...]] [--data DIR]"
#define CK_SHOW_USAGE	"atriumd cluster keys show [--cluster " \
    "etcd=URL[,URL...]] [--data DIR]"

/* Line (NUL-terminated, modified) checked: 1 a key, 0 blank or comment,
 * -EINVAL with why. */
static int
ck_line(char *line, char *why, size_t whylen)
{
	struct authkeys_line l;
	ssh_key key = NULL;
	int r;

	if (strlen(line) > AUTHKEYS_MAX_LINE) {
		snprintf(why, whylen, "longer than %d bytes", AUTHKEYS_MAX_LINE);
		return -EINVAL;
	}
	if ((r = authkeys_parse_line(line, &l)) <= 0) {
		if (r < 0)
			snprintf(why, whylen, "%s", l.why);
		return r;
	}
	if (strcasecmp(l.user, AUTHKEYS_AGENT_NAME) == 0) {
		snprintf(why, whylen, "the name 'agent' is the room's agent's; "
		    "give this key another name");
		return -EINVAL;
	}
	if (ssh_pki_import_pubkey_base64(l.base64,
	    ssh_key_type_from_name(l.type), &key) != SSH_OK) {
		snprintf(why, whylen, "its %s key does not decode", l.type);
		return -EINVAL;
	}
	ssh_key_free(key);
	return 1;
}

/* See cluster_keys.h. */
int
cluster_keys_valid(const char *text, size_t len, char *why, size_t whylen)
{
	const char *p = text, *end = text + len;
	int lineno = 0, keys = 0;

	if (len > ETCD_VALUE_MAX) {
		snprintf(why, whylen, "larger than %u bytes", ETCD_VALUE_MAX);
		return -EINVAL;
	}
	if (memchr(text, '\0', len)) {
		snprintf(why, whylen, "it holds a NUL byte: not a text file");
		return -EINVAL;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *line = strndup(p, n), lwhy[240];
		int r;

		lineno++;
		if (!line) {
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		r = ck_line(line, lwhy, sizeof(lwhy));
		free(line);
		if (r < 0) {
			snprintf(why, whylen, "line %d: %s", lineno, lwhy);
			return -EINVAL;
		}
		keys += r;
		p += n + (nl ? 1 : 0);
	}
	if (keys == 0) {
		snprintf(why, whylen, "it holds no key, so it would let nobody "
		    "in on any host");
		return -EINVAL;
	}
	return 0;
}

/* The endpoints for a keys command, from argv[first] on: an open client,
 * or NULL (told; *rc the exit status). */
static struct etcd *
ck_open(int argc, char **argv, int first, const char *what,
    const char *usage, int *rc)
{
	char urls[1024], err[256];
	struct etcd *e;

	if ((*rc = cluster_cli_endpoints(argc, argv, first, what, usage, urls,
	    sizeof(urls))) != 0)
		return NULL;
	if (!(e = etcd_open(urls, err, sizeof(err)))) {
		fprintf(stderr, "%s: %s\n", what, err);
		*rc = 2;
	}
	return e;
}

/* push FILE: check it, then set /atrium/authorized_keys to it. */
static int
ck_push(int argc, char **argv)
{
	static const char what[] = "atriumd cluster keys push";
	char *text = NULL, why[300];
	size_t len = 0;
	struct etcd *e;
	int r, rc;

	if (argc < 4 || argv[3][0] == '-') {
		fprintf(stderr, "usage: %s\n", CK_PUSH_USAGE);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "%s: must run as root: it sets who may enter "
		    "every host of the cluster\n", what);
		return 1;
	}
	if ((r = read_small_file(argv[3], ETCD_VALUE_MAX, &text, &len)) < 0) {
		fprintf(stderr, "%s: %s: %s%s; nothing pushed\n", what, argv[3],
		    strerror(-r), r == -EFBIG ? " (the cluster's file may hold "
		    "1 MiB at most)" : "");
		return 1;
	}
	if (cluster_keys_valid(text, len, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: %s: %s; nothing pushed\n", what, argv[3],
		    why);
		free(text);
		return 1;
	}
	if (!(e = ck_open(argc, argv, 4, what, CK_PUSH_USAGE, &rc))) {
		free(text);
		return rc;
	}
	r = etcd_put(e, KEYS_SYNC_AUTHKEYS, text, len, 0);
	free(text);
	etcd_close(e);
	if (r < 0) {
		fprintf(stderr, "%s: etcd: %s; nothing pushed\n", what,
		    strerror(-r));
		return 1;
	}
	printf("pushed %s to the cluster: every host uses it within a few "
	    "seconds\n", argv[3]);
	return 0;
}

/* Print text with every control character but newline and tab made '?'. */
static void
ck_print_clean(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		putchar(c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f) ?
		    c : '?');
	}
	if (len && text[len - 1] != '\n')
		putchar('\n');
}

/* show: what /atrium/authorized_keys holds. */
static int
ck_show(int argc, char **argv)
{
	static const char what[] = "atriumd cluster keys show";
	struct etcd *e = ck_open(argc, argv, 3, what, CK_SHOW_USAGE, &(int){0});
	char *text = NULL;
	size_t len = 0;
	int64_t rev = 0;
	int r;

	if (!e)
		return 2;
	r = etcd_get(e, KEYS_SYNC_AUTHKEYS, &text, &len, NULL, &rev);
	etcd_close(e);
	if (r < 0) {
		fprintf(stderr, "%s: etcd: %s\n", what, strerror(-r));
		return 1;
	}
	if (r == 0) {
		fprintf(stderr, "%s: none pushed yet: each host uses its own "
		    "DATA/authorized_keys (atriumd cluster keys push FILE)\n",
		    what);
		return 1;
	}
	fprintf(stderr, "# the cluster's authorized_keys, etcd revision %"
	    PRId64 ", %zu bytes\n", rev, len);
	ck_print_clean(text, len);
	free(text);
	return 0;
}

/* See cluster_keys.h. */
int
cluster_keys_main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[2], "push") == 0)
		return ck_push(argc, argv);
	if (argc > 2 && strcmp(argv[2], "show") == 0)
		return ck_show(argc, argv);
	fprintf(stderr, "usage: %s\n       %s\n", CK_PUSH_USAGE, CK_SHOW_USAGE);
	return 2;
}

/*
 * replicate_main.c: atrium-replicate's commands and options.
 *
 *   atrium-replicate run --room R --node N --epoch E --etcd URLS
 *       --s3 URL --s3-bucket B [--s3-region R] --creds-fd N
 *       --room-fd N --workspace-fd N --room-db PATH --workspace-db PATH
 *       --state-dir DIR [--snapshot-every S] [--ready-fd N]
 *       [--run-as UID:GID]
 *   atrium-replicate restore --room R --etcd URLS --s3 URL --s3-bucket B
 *       [--s3-region R] [--creds-fd N] (--dir-fd N | --dir DIR)
 *       [--epoch E] [--run-as UID:GID] [--max-bytes N]
 *   atrium-replicate apply (room|workspace) DB      (records on stdin)
 *   atrium-replicate store (put|get|list|delete) KEY --s3 URL
 *       --s3-bucket B [--s3-region R] [--creds-fd N]
 *
 * run and restore are started by atriumd's monitor (replicate_ship.c,
 * replicate_restore.c); apply replays a record stream onto a database
 * file (a copy taken before the stream began); store is the object store
 * client by hand (put reads stdin, get writes stdout, list prints "SIZE
 * KEY" lines).  The credentials come on --creds-fd (s3_creds.h), or,
 * without it, from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which are
 * then wiped from the environment.  --run-as (atriumd, as root, starts
 * both commands so) becomes the room's uid and gid for good, with no
 * capability (replicate_confine.c): run as soon as the databases are
 * copied, the only step that needs their paths, which that uid may not
 * walk (DATA is 0700); restore before it asks etcd or the store
 * anything, reaching its staging directory through the descriptor
 * atriumd opened (--dir-fd, replicate_restore.c).  Exit status: 0 done,
 * 1 failed, 2 bad usage, 3 (run) the room's epoch is over.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "log.h"
#include "replicate.h"
#include "util.h"

static const char usage[] =
    "usage: atrium-replicate run --room R --node N --epoch E --etcd URLS\n"
    "           --s3 URL --s3-bucket B [--s3-region R] --creds-fd N\n"
    "           --room-fd N --workspace-fd N --room-db PATH "
    "--workspace-db PATH\n"
    "           --state-dir DIR [--snapshot-every S] [--ready-fd N]\n"
    "           [--run-as UID:GID]\n"
    "       atrium-replicate restore --room R --etcd URLS --s3 URL "
    "--s3-bucket B\n"
    "           [--s3-region R] [--creds-fd N] (--dir-fd N | --dir DIR)\n"
    "           [--epoch E] [--run-as UID:GID] [--max-bytes N]\n"
    "       atrium-replicate apply (room|workspace) DB < RECORDS\n"
    "       atrium-replicate store (put|get|list|delete) KEY --s3 URL "
    "--s3-bucket B\n"
    "           [--s3-region R] [--creds-fd N]\n";

/* A number in [lo, hi] for option name, or -1 (said). */
static long long
main_number(const char *name, const char *v, long long lo, long long hi)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || *end || end == v || n < lo || n > hi) {
		fprintf(stderr, "atrium-replicate: --%s %s: want a number from "
		    "%lld to %lld\n", name, v, lo, hi);
		return -1;
	}
	return n;
}

/* Copy v into out (size), or -1 (said) when it does not fit. */
static int
main_copy(const char *name, const char *v, char *out, size_t size)
{
	if (strlen(v) >= size) {
		fprintf(stderr, "atrium-replicate: --%s is too long\n", name);
		return -1;
	}
	snprintf(out, size, "%s", v);
	return 0;
}

/* --run-as UID:GID, neither 0: 0 or -1 (said). */
static int
main_run_as(struct repl_opts *o, const char *v)
{
	if (repl_parse_ids(v, &o->run_uid, &o->run_gid) == 0)
		return 0;
	fprintf(stderr, "atrium-replicate: --run-as wants UID:GID, neither "
	    "0\n");
	return -1;
}

/* One option into o: 0 or -1 (said). */
static int
main_option(struct repl_opts *o, const char *name, const char *v)
{
	static const char *const fds[] = { "creds-fd", "room-fd",
		"workspace-fd", "ready-fd", "dir-fd" };
	int *fdp[] = { &o->creds_fd, &o->in_fd[0], &o->in_fd[1], &o->ready_fd,
		&o->dir_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (strcmp(name, fds[i]) == 0)
			return (*fdp[i] = (int)main_number(name, v, 0,
			    INT_MAX)) < 0 ? -1 : 0;
	if (strcmp(name, "room") == 0)
		return main_copy(name, v, o->room, sizeof(o->room));
	if (strcmp(name, "node") == 0)
		return main_copy(name, v, o->node, sizeof(o->node));
	if (strcmp(name, "epoch") == 0)
		return (o->epoch = main_number(name, v, 1, INT64_MAX)) < 0 ?
		    -1 : 0;
	if (strcmp(name, "snapshot-every") == 0)
		return (o->snapshot_every = (int)main_number(name, v, 0,
		    86400 * 7)) < 0 ? -1 : 0;
	if (strcmp(name, "etcd") == 0)
		return o->etcd = v, 0;
	if (strcmp(name, "run-as") == 0)
		return main_run_as(o, v);
	if (strcmp(name, "s3") == 0)
		return main_copy(name, v, o->s3.url, sizeof(o->s3.url));
	if (strcmp(name, "s3-bucket") == 0)
		return main_copy(name, v, o->s3.bucket, sizeof(o->s3.bucket));
	if (strcmp(name, "s3-region") == 0)
		return main_copy(name, v, o->s3.region, sizeof(o->s3.region));
	if (strcmp(name, "room-db") == 0)
		return o->db_path[0] = v, 0;
	if (strcmp(name, "workspace-db") == 0)
		return o->db_path[1] = v, 0;
	if (strcmp(name, "state-dir") == 0)
		return o->state_dir = v, 0;
	if (strcmp(name, "dir") == 0)
		return o->dir = v, 0;
	if (strcmp(name, "max-bytes") == 0)
		return (o->max_bytes = main_number(name, v, 0, INT64_MAX)) < 0 ?
		    -1 : 0;
	fprintf(stderr, "atrium-replicate: unknown option --%s\n%s", name,
	    usage);
	return -1;
}

/* Every --NAME VALUE from argv[first] on into o; positional arguments
 * (at most max) into pos.  0 or -1 (said). */
static int
main_options(struct repl_opts *o, int argc, char **argv, int first,
    const char **pos, int max)
{
	int npos = 0;

	for (int i = first; i < argc; i++) {
		if (strncmp(argv[i], "--", 2) != 0) {
			if (npos == max) {
				fprintf(stderr, "%s", usage);
				return -1;
			}
			pos[npos++] = argv[i];
			continue;
		}
		if (i + 1 == argc) {
			fprintf(stderr, "atrium-replicate: %s wants a value\n",
			    argv[i]);
			return -1;
		}
		if (main_option(o, argv[i] + 2, argv[i + 1]) < 0)
			return -1;
		i++;
	}
	return npos == max ? 0 : (fprintf(stderr, "%s", usage), -1);
}

/* The store's client with its credentials, or NULL (said). */
static struct s3 *
main_s3(const struct repl_opts *o)
{
	struct s3_creds c;
	struct s3 *s;
	char err[256];
	int r = o->creds_fd >= 0 ? s3_creds_read_fd(&c, o->creds_fd, err,
	    sizeof(err)) : s3_creds_load(&c, NULL, err, sizeof(err));

	s3_creds_scrub_env();
	if (r < 0) {
		fprintf(stderr, "atrium-replicate: %s\n", err);
		return NULL;
	}
	s = s3_new(&o->s3, &c, err, sizeof(err));
	s3_creds_clear(&c);
	if (!s)
		fprintf(stderr, "atrium-replicate: %s\n", err);
	return s;
}

/* apply: records on stdin onto db: the exit status. */
static int
main_apply(const char *which, const char *db)
{
	struct repl_stream st;
	unsigned char buf[1u << 16];
	ssize_t got;
	int fd, r = 0, id = strcmp(which, "room") == 0 ? WALREC_DB_ROOM :
	    strcmp(which, "workspace") == 0 ? WALREC_DB_WORKSPACE : 0;

	if (!id) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if ((fd = open(db, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		fprintf(stderr, "atrium-replicate: %s: %s\n", db,
		    strerror(errno));
		return 1;
	}
	repl_stream_init(&st, fd, id);
	while (r == 0 && (got = read(0, buf, sizeof(buf))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		r = got < 0 ? -errno : repl_stream_feed(&st, buf, (size_t)got);
	}
	if (r == 0 && !repl_stream_at_record(&st))
		r = -EPROTO;
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	printf("%" PRIu64 " records, %" PRIu64 " bytes\n", st.records, st.off);
	repl_stream_free(&st);
	if (r < 0)
		fprintf(stderr, "atrium-replicate: applying to %s: %s\n", db,
		    strerror(-r));
	return r < 0 ? 1 : 0;
}

/* store list's callback. */
static int
main_print_key(void *arg, const char *key, uint64_t size)
{
	printf("%" PRIu64 " %s\n", size, key);
	return 0;
}

/* store VERB KEY: the exit status. */
static int
main_store(struct s3 *s, const char *verb, const char *key)
{
	unsigned char *data = NULL;
	size_t len = 0, cap = 0;
	ssize_t got;
	void *out;
	int r;

	if (strcmp(verb, "list") == 0)
		r = s3_list(s, key, main_print_key, NULL);
	else if (strcmp(verb, "delete") == 0)
		r = s3_delete(s, key);
	else if (strcmp(verb, "get") == 0) {
		if ((r = s3_get(s, key, 0, 64u << 20, &out, &len)) == 0)
			r = write_all(1, out, len);
		free(out);
	} else if (strcmp(verb, "put") == 0) {
		for (r = 0; r == 0 && len < (64u << 20);) {
			if (len == cap && !(data = realloc(data, cap = cap ?
			    cap * 2 : 65536))) {
				r = -ENOMEM;
				break;
			}
			if ((got = read(0, data + len, cap - len)) == 0)
				break;
			if (got < 0)
				r = errno == EINTR ? 0 : -errno;
			else
				len += (size_t)got;
		}
		if (r == 0)
			r = s3_put(s, key, data, len);
		free(data);
	} else {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (r < 0)
		fprintf(stderr, "atrium-replicate: %s %s: %s\n", verb, key,
		    strerror(-r));
	return r < 0 ? 1 : 0;
}

/* 1 when o has what `run` (ship 1) or `restore` (ship 0) needs. */
static int
main_complete(const struct repl_opts *o, int ship)
{
	if (!repl_room_ok(o->room) || !o->etcd || !o->s3.url[0] ||
	    !o->s3.bucket[0])
		return 0;
	if (!ship)
		return (o->dir_fd >= 0) != (o->dir != NULL);
	return o->db_path[0] && o->db_path[1] && o->node[0] && o->epoch > 0 &&
	    o->creds_fd >= 0 && o->in_fd[0] >= 0 && o->in_fd[1] >= 0 &&
	    o->state_dir;
}

int
main(int argc, char **argv)
{
	struct repl_opts o = { .creds_fd = -1, .in_fd = { -1, -1 },
	    .ready_fd = -1, .snapshot_every = 600, .dir_fd = -1 };
	const char *pos[2];
	struct s3 *s;
	int status, ship;

	log_init("atrium-replicate", NULL);
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 4 && strcmp(argv[1], "apply") == 0 && argc == 4)
		return main_apply(argv[2], argv[3]);
	if (argc < 2 || (strcmp(argv[1], "run") && strcmp(argv[1], "restore")
	    && strcmp(argv[1], "store"))) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	ship = strcmp(argv[1], "run") == 0;
	if (strcmp(argv[1], "store") == 0) {
		if (main_options(&o, argc, argv, 2, pos, 2) < 0)
			return 2;
	} else if (main_options(&o, argc, argv, 2, pos, 0) < 0 ||
	    !main_complete(&o, ship)) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (o.room[0])
		log_init("atrium-replicate", o.room);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!(s = main_s3(&o)))
		return 1;
	status = strcmp(argv[1], "store") == 0 ? main_store(s, pos[0], pos[1]) :
	    ship ? repl_ship(&o, s) : repl_restore(&o, s);
	s3_free(s);
	curl_global_cleanup();
	return status;
}

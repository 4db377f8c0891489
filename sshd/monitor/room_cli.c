/*
 * room_cli.c: `atriumd room list|delete` (room_cli.h).  Called by
 * monitor_main.c before any server set-up; a short-lived process of its own, so
 * it may block (on the operator socket, for at most ROOM_CLI_WAIT_MS).
 *
 * Whether atriumd runs on DATA is told by its operator socket: a connect
 * that succeeds reaches it.  When none answers (ENOENT, or ECONNREFUSED: a
 * socket left by an atriumd that died), DATA's lock (datalock.h) has the
 * last word: held, an atriumd runs that cannot be reached (its socket
 * removed by hand, say), and the command is refused, naming its pid;
 * free, none runs (a room's processes die with atriumd) and the command
 * acts on DATA itself.  A deletion then holds the lock while it removes,
 * so that no atriumd starts on DATA meanwhile; a listing only asks.
 */
#include "room_cli.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"
#include "datalock.h"
#include "jsonl.h"
#include "names.h"
#include "room.h"
#include "room_list.h"
#include "util.h"

#define ROOM_CLI_WAIT_MS	(CTL_DELETE_WAIT_MS + 5000)

static const char room_cli_usage[] =
	"usage: atriumd room list DATA\n"
	"       atriumd room delete DATA ROOM\n";

/* See room_cli.h. */
int
room_cli_connect(const char *data)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, e;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/run/%s",
	    data, CTL_SOCKET_NAME) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	e = -errno;
	close(fd);
	return e;
}

/* See room_cli.h. */
json_object *
room_cli_request(int fd, const char *req, const char *who)
{
	static char line[1 << 20];
	size_t len = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	json_object *ans;
	const char *err;

	if (write_all(fd, req, strlen(req)) < 0) {
		fprintf(stderr, "%s: cannot talk to atriumd: %s\n", who,
		    strerror(errno));
		return NULL;
	}
	while (len < sizeof(line) - 1 && !memchr(line, '\n', len)) {
		ssize_t n;

		if (poll(&p, 1, ROOM_CLI_WAIT_MS) <= 0 ||
		    (n = read(fd, line + len, sizeof(line) - 1 - len)) <= 0) {
			fprintf(stderr, "%s: no answer from atriumd; see its "
			    "log\n", who);
			return NULL;
		}
		len += (size_t)n;
	}
	line[len] = '\0';
	ans = jsonl_parse_object(line, strcspn(line, "\n"), &err);
	if (!ans) {
		fprintf(stderr, "%s: atriumd's answer is not JSON: %s\n", who,
		    err);
		return NULL;
	}
	if (json_get_string(ans, "type") &&
	    strcmp(json_get_string(ans, "type"), "error") == 0) {
		fprintf(stderr, "%s: %s\n", who,
		    json_get_string(ans, "message") ?: "failed");
		json_object_put(ans);
		return NULL;
	}
	return ans;
}

/* Send req to atriumd on fd and print its one-line answer.  0 when it is
 * not an error, else 1 (told on stderr). */
static int
room_cli_ask(int fd, const char *req)
{
	json_object *ans = room_cli_request(fd, req, "atriumd room");

	if (!ans)
		return 1;
	printf("%s\n", json_object_to_json_string_ext(ans,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(ans);
	return 0;
}

/* Say that atriumd holder runs on data but its operator socket did not
 * answer (err, -errno). */
static void
room_cli_unreachable(const char *data, pid_t holder, int err)
{
	char advice[PATH_MAX + 200];

	snprintf(advice, sizeof(advice), "it does not answer on %s/run/%s "
	    "(%s); restart it (SIGTERM, then start it again) to get its "
	    "operator socket back", data, CTL_SOCKET_NAME, strerror(-err));
	datalock_explain("atriumd room", data, holder, advice);
}

/* delete with no atriumd reachable (err: why): with DATA's lock taken
 * (none runs, and none starts meanwhile), remove the room's
 * directories. */
static int
room_cli_delete_here(const char *data, const char *room, int err)
{
	struct datalock lock;
	char dir[PATH_MAX + 80];
	struct stat sb;
	pid_t holder;
	int r;

	snprintf(dir, sizeof(dir), "%s/rooms/%s", data, room);
	if (stat(dir, &sb) < 0) {
		fprintf(stderr, "atriumd room: there is no room '%s' in %s\n",
		    room, data);
		return 1;
	}
	if ((r = datalock_take(&lock, data, &holder)) == -EBUSY)
		room_cli_unreachable(data, holder, err);
	if (r < 0)
		return 1;
	/* The lock goes with this process, when it exits. */
	if (rooms_remove_dirs(data, room) < 0) {
		fprintf(stderr, "atriumd room: could not remove all of room "
		    "'%s' (is its workspace still mounted under %s/run?)\n",
		    room, data);
		return 1;
	}
	printf("{\"type\":\"deleted\",\"room\":\"%s\"}\n", room);
	return 0;
}

/* list with no atriumd reachable (err: why): every room, stopped, unless
 * an atriumd holds DATA (then the states would be wrong). */
static int
room_cli_list_here(const char *data, int err)
{
	json_object *ev;
	pid_t holder;

	if (datalock_probe(data, &holder) == 1) {
		room_cli_unreachable(data, holder, err);
		return 1;
	}
	if (!(ev = room_list(data, NULL, "", 1)))
		return 1;
	printf("%s\n", json_object_to_json_string_ext(ev,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(ev);
	return 0;
}

/* See room_cli.h. */
int
room_cli_main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "", *data = argc > 2 ?
	    argv[2] : NULL, *room = argc > 3 ? argv[3] : NULL;
	char req[256];
	int fd, del = strcmp(cmd, "delete") == 0;

	if (!data || (!del && strcmp(cmd, "list") != 0) ||
	    argc != (del ? 4 : 3) || (del && !room_name_valid(room))) {
		fputs(room_cli_usage, stderr);
		return 2;
	}
	if (del)
		snprintf(req, sizeof(req), "{\"type\":\"delete\",\"room\":"
		    "\"%s\"}\n", room);
	else
		snprintf(req, sizeof(req), "{\"type\":\"rooms\"}\n");
	if ((fd = room_cli_connect(data)) >= 0) {
		int r = room_cli_ask(fd, req);

		close(fd);
		return r;
	}
	if (fd != -ENOENT && fd != -ECONNREFUSED) {
		fprintf(stderr, "atriumd room: cannot reach atriumd on %s/run/%s: "
		    "%s\n", data, CTL_SOCKET_NAME, strerror(-fd));
		return 1;
	}
	return del ? room_cli_delete_here(data, room, fd) :
	    room_cli_list_here(data, fd);
}

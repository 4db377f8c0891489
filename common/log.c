/*
 * log.c: the line logger of log.h.  Each line is formatted into one buffer and
 * written with a single write(2), so lines from several threads or processes
 * sharing stderr never interleave mid-line.  The message is escaped on its
 * way in (utf8_escape): a line is one line of printable UTF-8 whatever
 * bytes a peer put into it.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "utf8.h"

/* A line's bytes, newline included: PIPE_BUF, so that one write(2) to a
 * pipe stays whole; a message longer than what is left (after escaping)
 * is cut. */
#define LOG_LINE_MAX	4096

static const char *log_prog = "atrium";
static char log_room[80];
static enum log_level log_threshold = LOG_INFO;

static const char *const level_names[] = { "DEBUG", "INFO", "WARN", "ERROR" };

void
log_init(const char *prog, const char *room)
{
	enum log_level level;
	const char *env = getenv("ATRIUM_LOG");

	log_prog = prog;
	snprintf(log_room, sizeof(log_room), "%s", room ? room : "");
	if (env && log_level_parse(env, &level) == 0)
		log_threshold = level;
}

void
log_set_level(enum log_level level)
{
	log_threshold = level;
}

int
log_level_parse(const char *name, enum log_level *out)
{
	static const char *const lower[] = { "debug", "info", "warn", "error" };

	for (int i = 0; i < 4; i++) {
		if (strcmp(name, lower[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void
log_msg(enum log_level level, const char *func, const char *fmt, ...)
{
	char line[LOG_LINE_MAX], msg[LOG_LINE_MAX];
	size_t n;
	int saved = errno, r;
	struct tm tm;
	time_t now;
	va_list ap;

	if (level < log_threshold)
		return;
	now = time(NULL);
	gmtime_r(&now, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%SZ ", &tm);
	r = snprintf(line + n, sizeof(line) - n, "%s%s%s%s %s %s: ", log_prog,
	    log_room[0] ? "[" : "", log_room, log_room[0] ? "]" : "",
	    level_names[level], func);
	if (r > 0)
		n += (size_t)r < sizeof(line) - n ? (size_t)r : sizeof(line) - n - 1;
	va_start(ap, fmt);
	r = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Bytes from peers (a client's version banner, a room's output)
	 * must not forge log lines nor hide or reorder text on the reader's
	 * terminal: the message keeps printable UTF-8, the rest is escaped.
	 * One byte is kept for the newline. */
	if (r > 0)
		n += utf8_escape(line + n, sizeof(line) - n - 1, msg,
		    (size_t)r < sizeof(msg) ? (size_t)r : sizeof(msg) - 1);
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0) {
		/* Nowhere left to report it. */
	}
	errno = saved;
}

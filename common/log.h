/*
 * log.h: one line per event on stderr: time, program, room, level, function,
 * message.  Used by every Atrium program.  Never pass a secret to these.
 *
 *   2026-11-30T03:44:26Z atrium-agent[demo] WARN provider_retry: 429, retry in 2 s
 *
 * The program name, room and threshold are configuration, set once at start.
 */
#ifndef ATRIUM_LOG_H
#define ATRIUM_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Set the program name and room (room may be NULL) that prefix each line. */
void log_init(const char *prog, const char *room);

/* Lines below this level are dropped.  ATRIUM_LOG=debug|info|warn|error sets it. */
void log_set_level(enum log_level level);

/* Parse "debug", "info", "warn" or "error"; -EINVAL for anything else. */
int log_level_parse(const char *name, enum log_level *out);

void log_msg(enum log_level level, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_debug(...) log_msg(LOG_DEBUG, __func__, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __func__, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __func__, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __func__, __VA_ARGS__)

#endif

/*
 * cli.h: the options every Atrium program takes, whatever else its command
 * line holds: --version, and --log-level debug|info|warn|error (log.h).
 * Each main() calls cli_common() first, before reading its own options.
 */
#ifndef ATRIUM_CLI_H
#define ATRIUM_CLI_H

#ifndef ATRIUM_VERSION
#define ATRIUM_VERSION "unknown"	/* the Makefile defines it */
#endif

/* --version anywhere prints "PROG VERSION" to stdout and returns 1 (the
 * caller exits 0).  --log-level LEVEL (or --log-level=LEVEL) sets log.h's
 * threshold, exports it as ATRIUM_LOG for the programs this one starts,
 * and is taken out of argv (argc lowered).  0 to go on; -EINVAL after
 * printing why to stderr (the caller exits 2). */
int cli_common(const char *prog, int *argc, char **argv);

#endif

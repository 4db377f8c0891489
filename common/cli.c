/*
 * cli.c: --version and --log-level for every Atrium program (cli.h).  A
 * program's own parser never sees --log-level, so the option means the
 * same everywhere and atriumd's children inherit it through ATRIUM_LOG.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Remove argv[i] .. argv[i + n - 1], keeping argv NULL-terminated. */
static void
cli_drop(int *argc, char **argv, int i, int n)
{
	memmove(&argv[i], &argv[i + n], (size_t)(*argc - i - n + 1) *
	    sizeof(*argv));
	*argc -= n;
}

/* Apply one level name; 0, or -EINVAL after saying why. */
static int
cli_level(const char *prog, const char *name)
{
	enum log_level level;

	if (!name || log_level_parse(name, &level) < 0) {
		fprintf(stderr, "%s: --log-level needs one of debug, info, "
		    "warn, error (got '%s')\n", prog, name ? name : "");
		return -EINVAL;
	}
	log_set_level(level);
	setenv("ATRIUM_LOG", name, 1);
	return 0;
}

int
cli_common(const char *prog, int *argc, char **argv)
{
	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--version") == 0) {
			printf("%s %s\n", prog, ATRIUM_VERSION);
			return 1;
		}
		if (strncmp(argv[i], "--log-level=", 12) == 0) {
			if (cli_level(prog, argv[i] + 12) < 0)
				return -EINVAL;
			cli_drop(argc, argv, i--, 1);
		} else if (strcmp(argv[i], "--log-level") == 0) {
			if (cli_level(prog, i + 1 < *argc ? argv[i + 1] :
			    NULL) < 0)
				return -EINVAL;
			cli_drop(argc, argv, i--, 2);
		}
	}
	return 0;
}

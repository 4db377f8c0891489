/*
 * helpers.h: where atriumd finds the programs it starts for a room.
 *
 *   --bin-dir DIR set        DIR/atrium-fs, DIR/atrium-agent
 *   run from the build tree  beside atriumd (build/atrium-fs, ...)
 *   installed                SBIN/../bin/atrium-fs and
 *                            SBIN/../libexec/atrium/atrium-agent
 *
 * The installed layout follows atriumd's own place, so any PREFIX works
 * without a path compiled in.  atrium-agent finds atrium-sandbox-init
 * beside itself in every layout.
 */
#ifndef ATRIUM_HELPERS_H
#define ATRIUM_HELPERS_H

#include <limits.h>

struct helpers {
	char fs[PATH_MAX];	/* atrium-fs */
	char agent[PATH_MAX];	/* atrium-agent */
};

/* Fill out from bin_dir (may be empty) and atriumd's own place; warns in
 * the log for each program that is not there (rooms cannot start then).
 * 0, or -ENAMETOOLONG. */
int helpers_find(const char *bin_dir, struct helpers *out);

#endif

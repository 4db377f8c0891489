/*
 * helpers.h: where atriumd finds the programs it starts: atriumd-net, its
 * network process, and atrium-fs and atrium-agent for each room.
 *
 *   --bin-dir DIR set        DIR/atrium-fs, DIR/atrium-agent
 *   run from the build tree  beside atriumd (build/atrium-fs, ...)
 *   installed                SBIN/../bin/atrium-fs and
 *                            SBIN/../libexec/atrium/atrium-agent
 *
 * The installed layout follows atriumd's own place, so any PREFIX works
 * without a path compiled in.  atriumd-net is always found from atriumd's
 * own place (beside it, else SBIN/../libexec/atrium/atriumd-net), never
 * from --bin-dir: it speaks the monitor's private wire (privsep.h) and
 * must be the build atriumd came from; atriumd-http likewise (it is
 * needed only with --http-listen).  atrium-agent finds atrium-sandbox-init
 * beside itself in every layout.
 */
#ifndef ATRIUM_HELPERS_H
#define ATRIUM_HELPERS_H

#include <limits.h>

struct helpers {
	char net[PATH_MAX];	/* atriumd-net, the network process */
	char http[PATH_MAX];	/* atriumd-http, the HTTP process (found
				 * as atriumd-net is); "" when absent */
	char fs[PATH_MAX];	/* atrium-fs */
	char agent[PATH_MAX];	/* atrium-agent */
};

/* Fill out from bin_dir (may be empty) and atriumd's own place; warns in
 * the log for each room program that is not there (rooms cannot start
 * then).  0; -ENAMETOOLONG; or -ENOENT, logged, when atriumd-net is not
 * there (atriumd cannot serve without it). */
int helpers_find(const char *bin_dir, struct helpers *out);

#endif

/*
 * datalock.h: one atriumd per data directory.  The monitor write-locks
 * DATA/atriumd.lock (a POSIX record lock, fcntl F_SETLK) right after DATA
 * itself exists and before it makes or removes anything in it, and holds
 * it until its process ends; a second atriumd on the same DATA is refused
 * at start, naming the holder's pid.  The kernel drops the lock when the
 * monitor's process ends, however it ends (kill -9 included), so a dead
 * atriumd never blocks the next start.  The file itself is never removed
 * by anyone: its text (the holder's pid) is for people, the lock is what
 * counts.
 *
 * The operator's commands that only ask (`atriumd status`, `atriumd room
 * list`) probe the lock and take nothing; `atriumd room delete` with no
 * atriumd running takes it for the deletion, so that no atriumd starts
 * on DATA meanwhile.
 */
#ifndef ATRIUMD_DATALOCK_H
#define ATRIUMD_DATALOCK_H

#include <sys/types.h>

#define DATALOCK_NAME	"atriumd.lock"	/* in DATA */

struct datalock {
	int fd;		/* DATA/atriumd.lock, locked by this process; -1: none */
};

/* Take DATA's lock for the rest of this process's life (DATA exists).
 * 0; -EBUSY when another process holds it, with its pid in *holder (0
 * when that process is not visible from here: another pid namespace); or
 * -errno (logged).  Nothing is made but the lock file, nothing removed. */
int datalock_take(struct datalock *l, const char *data, pid_t *holder);

/* The same lock on the file at path (made 0600 when missing, never a
 * symlink): for another thing one atriumd at a time may hold
 * (cgroup_claim.h).  Same answers. */
int datalock_take_file(struct datalock *l, const char *path,
    pid_t *holder);

/* Whether a process holds DATA's lock: 1 (its pid in *holder, 0 when not
 * visible), 0 (none, or no lock file) or -errno.  Takes and makes
 * nothing.  Never call it in the process that holds the lock: closing
 * the probe's descriptor would drop that process's own lock. */
int datalock_probe(const char *data, pid_t *holder);

/* Say on stderr, as who ("atriumd"), that DATA is held by holder (its
 * pid, 0 when unknown), then advice: what to do. */
void datalock_explain(const char *who, const char *data, pid_t holder,
    const char *advice);

#endif

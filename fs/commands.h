/*
 * commands.h: the atrium-fs commands that move a whole tree or mend one,
 * each in a file of its own (fs/export.c, fs/import.c, fs/repair.c,
 * fs/compact.c), and
 * the wording they share for a database that cannot be opened.  Called by
 * fs/main.c.  Each returns the process's exit status and has said on
 * stderr what went wrong.
 */
#ifndef ATRIUM_FS_COMMANDS_H
#define ATRIUM_FS_COMMANDS_H

/* Write the tree of db (of its snapshot when snapshot is not NULL) as a
 * pax tar to fd.  0, 1 on failure, 2 on a usage error. */
int export_run(const char *db, const char *snapshot, int fd);

/* Read a tar from fd into db, a new or empty workspace.  0 or 1. */
int import_run(const char *db, int fd);

/* Repair what fsck finds in db that can be repaired safely, saying each
 * change on stdout, then check it again.  0 when clean afterwards, 1 when
 * problems remain, 2 when it could not run. */
int repair_run(const char *db);

/* Give the disk back the free pages inside the unmounted db, saying its
 * size on stdout.  0, 1 when it failed, 2 when it could not run. */
int compact_run(const char *db);

/* Say on stderr why db could not be opened for verb (r from fs_open). */
void fs_explain_open(const char *db, int r, const char *verb);

#endif

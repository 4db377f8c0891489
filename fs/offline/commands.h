/*
 * commands.h: the atrium-fs commands that move a whole tree or mend one,
 * each in a file of its own (fs/offline/export.c, fs/offline/import.c,
 * fs/offline/repair.c, fs/offline/compact.c), and
 * the wording they share for a database that cannot be opened.  Called by
 * fs/fs_main.c.  Each returns the process's exit status and has said on
 * stderr what went wrong.
 */
#ifndef ATRIUM_FS_COMMANDS_H
#define ATRIUM_FS_COMMANDS_H

#include <stdint.h>

/* Write the tree of db (of its snapshot when snapshot is not NULL) as a
 * pax tar to fd.  0, 1 on failure, 2 on a usage error. */
int export_run(const char *db, const char *snapshot, int fd);

struct archive;

/* Write the live tree of db into a, a pax archive the caller opened and
 * closes, with root as the name of the tree's root ("." in export_run) and
 * every entry under it.  0, or 1 (said on stderr). */
int export_into(struct archive *a, const char *db, const char *root);

/* Read a tar from fd into db, a new or empty workspace.  0 or 1. */
int import_run(const char *db, int fd);

/* How import_into fills a workspace. */
struct import_opts {
	const char *prefix;	/* every member is under it, which is cut
				 * off ("workspace"); NULL: any */
	int owner;		/* every inode is uid:gid's, whatever the
				 * archive says */
	uint32_t uid, gid;
	uint64_t quota_bytes;	/* the workspace's quota, 0: none */
	uint64_t quota_inodes;
	uint64_t *members;	/* once done, how many members it took;
				 * NULL: not asked */
};

/* libarchive's reader on fd, for any tar (compressed or not), or NULL
 * (said). */
struct archive *import_archive_open(int fd);

/* Read the rest of a (the caller's) into db, a new or empty workspace, as
 * o says.  0, or 1 (said; a database this call made is removed). */
int import_into(const char *db, struct archive *a,
    const struct import_opts *o);

/* A whole room (fs/offline/room_archive.c): write room_dir's archive (header,
 * room.db, workspace) to fd, its copy of room.db saying it came from room
 * (NULL: room_dir's last component, when that is a room name); 0, 1 on
 * failure, 2 on a usage error. */
int room_export_run(const char *room_dir, const char *room, int fd);

/* Wait for the answer of the workspace's daemon (fs/daemon/control_socket.c) to
 * the "commit" atriumd sent on fd, then close fd: 0 once committed, so that
 * the export has every change answered before it was asked for; else 1
 * (said). */
int room_export_await_commit(int fd);

/* Read a room's archive from fd into room_dir, which holds no room yet:
 * the workspace as o says (its prefix is set here), room.db to
 * room_dir/room.db.import for atrium-agent import-db.  0, 1, or 2. */
int room_import_run(const char *room_dir, int fd,
    const struct import_opts *o);

/* Repair what fsck finds in db that can be repaired safely, saying each
 * change on stdout, then check it again.  0 when clean afterwards, 1 when
 * problems remain, 2 when it could not run. */
int repair_run(const char *db);

/* Give the disk back the free pages inside the unmounted db, saying its
 * size on stdout.  0, 1 when it failed, 2 when it could not run. */
int compact_run(const char *db);

/* Give what uid:gid FROM owns in the unmounted db (live tree and
 * snapshots) to TO ("UID:GID" each), in one transaction.  0, 1 when it
 * failed (nothing changed), 2 when it could not run. */
int reown_run(const char *db, const char *from, const char *to);

/* Say on stderr why db could not be opened for verb (r from fs_open). */
void fs_explain_open(const char *db, int r, const char *verb);

#endif

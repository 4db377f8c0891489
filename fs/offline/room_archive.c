/*
 * room_archive.c: a whole room as one tar (commands.h): `atrium-fs
 * export-room ROOM_DIR` and `atrium-fs import-room ROOM_DIR`.  atriumd runs
 * them for `ssh ROOM@host atrium-export` and `ssh NEW@host atrium-import`
 * (sshd/monitor/room_transfer.c); people may run them by hand on a stopped or
 * running room.
 *
 * The archive is a pax tar with its members in this order (man/atriumd.8,
 * ROOM ARCHIVES, says the same):
 *
 *   atrium-room     a regular file, "atrium-room 1\n": the format and its
 *                   version, so that anything else is refused at once
 *   room.db         a regular file: the room's history, a copy made by
 *                   SQLite's VACUUM INTO from one read transaction, so it
 *                   is whole and consistent while the agent writes on;
 *                   its meta table says where it came from (export_room,
 *                   the room's name, and export_time), which the import
 *                   shows in the mark it leaves (agent/room_import.c)
 *   workspace       the workspace's live tree, as `atrium-fs export`
 *   workspace/...   writes it (one read transaction: the last commit),
 *                   with "workspace" in place of "."
 *
 * Why a SQLite file and not JSON lines for the history: the copy is the
 * room's own record, every table and its schema version, so an import
 * runs the agent's own migrations and checks on it (atrium-agent
 * import-db) and nothing is lost in a translation that would have to be
 * kept in step with every schema change.  room.db holds no secret: API
 * keys never enter it (ARCHITECTURE.md, Trust boundaries), the copy's MCP
 * servers lose their environment (where an owner puts access tokens)
 * before it is written, and its access grants are replaced on import.
 *
 * import-room reads such an archive as hostile input into ROOM_DIR, which
 * must hold neither a workspace.db nor a room.db: the header must be
 * exactly the one above; room.db is written to ROOM_DIR/room.db.import
 * (atriumd has atrium-agent check and adopt it next), never larger than
 * the byte quota; every other member must be under "workspace" and goes
 * through import.c's checks, with the room's owner and quota.  Whatever it
 * made is removed again when it fails.
 *
 * Workload: memory stays bounded whatever the sizes: the history is
 * copied through one buffer of ROOM_ARCHIVE_BUF, the tree as export.c
 * and import.c move it.
 */
#include "commands.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fdfiles.h"
#include "fsctl_client.h"
#include "names.h"
#include "protocol.h"
#include "util.h"

#define ROOM_ARCHIVE_BUF	(1u << 20)
#define ROOM_ARCHIVE_HEADER	"atrium-room 1\n"
#define ROOM_ARCHIVE_HEADER_NAME "atrium-room"
#define ROOM_ARCHIVE_WORKSPACE	"workspace"
/* Longest wait for the workspace daemon's commit (one group, at most
 * 16 MiB of changes, behind whatever holds its lock). */
#define ROOM_ARCHIVE_COMMIT_WAIT_S 60
#define ROOM_ARCHIVE_BUSY_MS	10000	/* room.db locked by a checkpoint */

/* ROOM_DIR/NAME into out (PATH_MAX).  0, or 1 (said) when too long. */
static int
room_archive_path(const char *dir, const char *name, char *out, size_t len)
{
	if ((size_t)snprintf(out, len, "%s/%s", dir, name) < len)
		return 0;
	fprintf(stderr, "atrium-fs: the room's directory name is too long\n");
	return 1;
}

/* --------------------------------------------------------------- export -- */

/* Copy room_dir's room.db to tmp with VACUUM INTO, read-only: one read
 * transaction, so a consistent copy while the agent writes.  0 or 1. */
static int
room_archive_copy_db(const char *db, const char *tmp)
{
	sqlite3 *h = NULL;
	char *sql = NULL;
	int rc;

	unlink(tmp);
	rc = sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(h, ROOM_ARCHIVE_BUSY_MS);
		sql = sqlite3_mprintf("VACUUM INTO %Q", tmp);
		rc = sql ? sqlite3_exec(h, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
	}
	if (rc != SQLITE_OK)
		fprintf(stderr, "atrium-fs: export-room: cannot copy the room's "
		    "history %s: %s\n", db, h ? sqlite3_errmsg(h) :
		    sqlite3_errstr(rc));
	sqlite3_free(sql);
	sqlite3_close(h);
	if (rc != SQLITE_OK)
		unlink(tmp);
	return rc == SQLITE_OK ? 0 : 1;
}

/* What room.db holds that is not the room's to give away: the values of
 * its MCP servers' environment (an owner's access tokens, typically), in
 * the stored setting and in every stored config event.  The servers stay,
 * with no env: the new owner sets it again. */
static const char room_archive_scrub_sql[] =
    "UPDATE config SET value = (SELECT json_group_array(json_remove("
    " s.value, '$.env')) FROM json_each(config.value) s)"
    " WHERE key = 'mcp' AND json_valid(value)"
    " AND json_type(value) = 'array';"
    "UPDATE events SET json = json_set(json, '$.mcp', (SELECT"
    " json_group_array(json_remove(s.value, '$.env')) FROM"
    " json_each(events.json, '$.mcp') s)) WHERE type = 'config'"
    " AND json_valid(json) AND json_type(json, '$.mcp') = 'array';";

/* The room an export is of: room, else room_dir's last component when
 * that is a room name (an export by hand of DATA/rooms/ROOM), else NULL
 * (atriumd's helper sees its room as "." and names it with --room). */
static const char *
room_archive_origin(const char *room_dir, const char *room)
{
	const char *base = strrchr(room_dir, '/');

	if (room)
		return room;
	base = base ? base + 1 : room_dir;
	return room_name_valid(base) ? base : NULL;
}

/* Take the secrets out of the copy at tmp (ours alone) and say in its
 * meta where and when it was made (room: NULL when unknown), for the
 * import's mark.  0 or 1. */
static int
room_archive_scrub(const char *tmp, const char *room)
{
	char now[40], *sql;
	sqlite3 *h = NULL;
	int rc = sqlite3_open_v2(tmp, &h, SQLITE_OPEN_READWRITE, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_exec(h, room_archive_scrub_sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		fprintf(stderr, "atrium-fs: export-room: cannot clear the MCP "
		    "servers' environment from the copy: %s\n",
		    h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
	time_now_iso(now, sizeof(now));
	/* An unknown room is said by its absence (no row). */
	sql = sqlite3_mprintf("DELETE FROM meta WHERE key IN ('export_room',"
	    " 'export_time'); INSERT INTO meta (key, value) SELECT key, value"
	    " FROM (SELECT 'export_time' AS key, %Q AS value UNION ALL SELECT"
	    " 'export_room', %Q) WHERE value IS NOT NULL", now, room);
	if (rc == SQLITE_OK && (!sql ||
	    (rc = sqlite3_exec(h, sql, NULL, NULL, NULL)) != SQLITE_OK))
		fprintf(stderr, "atrium-fs: export-room: cannot say in the copy "
		    "where it came from: %s\n", sql ? sqlite3_errmsg(h) :
		    "out of memory");
	sqlite3_free(sql);
	sqlite3_close(h);
	return rc == SQLITE_OK && sql ? 0 : 1;
}

/* One regular member's header: name, mode 0600, size, now.  0 or 1. */
static int
room_archive_header(struct archive *a, const char *name, int64_t size)
{
	struct archive_entry *e = archive_entry_new();
	int r;

	if (!e) {
		fprintf(stderr, "atrium-fs: export-room: out of memory\n");
		return 1;
	}
	archive_entry_copy_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0600);
	archive_entry_set_size(e, size);
	archive_entry_set_mtime(e, time(NULL), 0);
	r = archive_write_header(a, e);
	archive_entry_free(e);
	if (r == ARCHIVE_OK)
		return 0;
	fprintf(stderr, "atrium-fs: export-room: writing %s: %s\n", name,
	    archive_error_string(a));
	return 1;
}

/* The room.db member: the copy at fd, size bytes.  0 or 1. */
static int
room_archive_put_db(struct archive *a, int fd, int64_t size)
{
	char *buf = malloc(ROOM_ARCHIVE_BUF);
	int64_t left = size;
	ssize_t n = 0;

	if (!buf || room_archive_header(a, ROOM_DB_NAME, size)) {
		free(buf);
		return 1;
	}
	while (left > 0 && (n = read(fd, buf, left < ROOM_ARCHIVE_BUF ?
	    (size_t)left : ROOM_ARCHIVE_BUF)) > 0) {
		if (archive_write_data(a, buf, (size_t)n) != n)
			break;
		left -= n;
	}
	free(buf);
	if (left == 0)
		return 0;
	fprintf(stderr, "atrium-fs: export-room: writing the room's history: "
	    "%s\n", n < 0 ? strerror(errno) : archive_error_string(a) ?
	    archive_error_string(a) : "its copy ended early");
	return 1;
}

/* The header member, then room.db's copy (made at tmp, unlinked once
 * open).  0 or 1. */
static int
room_archive_put_history(struct archive *a, const char *room_dir,
    const char *room)
{
	char db[PATH_MAX], tmp[PATH_MAX], name[64];
	struct stat sb;
	int fd, r;

	snprintf(name, sizeof(name), ".room.db.export-%ld", (long)getpid());
	if (room_archive_path(room_dir, ROOM_DB_NAME, db, sizeof(db)) ||
	    room_archive_path(room_dir, name, tmp, sizeof(tmp)))
		return 1;
	if (fdfiles_access(db, F_OK) < 0) {
		fprintf(stderr, "atrium-fs: export-room: %s: %s (a room that was "
		    "never entered has no history to export)\n", db,
		    strerror(errno));
		return 1;
	}
	if (room_archive_copy_db(db, tmp))
		return 1;
	if (room_archive_scrub(tmp, room_archive_origin(room_dir, room))) {
		unlink(tmp);
		return 1;
	}
	fd = open(tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	unlink(tmp);
	if (fd < 0 || fstat(fd, &sb) < 0) {
		fprintf(stderr, "atrium-fs: export-room: reading the copy of the "
		    "room's history: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	r = room_archive_header(a, ROOM_ARCHIVE_HEADER_NAME,
	    (int64_t)strlen(ROOM_ARCHIVE_HEADER));
	if (r == 0 && archive_write_data(a, ROOM_ARCHIVE_HEADER,
	    strlen(ROOM_ARCHIVE_HEADER)) != (la_ssize_t)strlen(ROOM_ARCHIVE_HEADER))
		r = 1;
	if (r == 0)
		r = room_archive_put_db(a, fd, (int64_t)sb.st_size);
	close(fd);
	return r;
}

int
room_export_await_commit(int fd)
{
	int r = fsctl_commit_wait(fd, ROOM_ARCHIVE_COMMIT_WAIT_S);

	if (r == 0)
		return 0;
	if (r == -ECONNRESET)
		fprintf(stderr, "atrium-fs: export-room: the workspace's daemon "
		    "stopped before it committed its last changes; nothing was "
		    "exported: try again\n");
	else if (r == -EAGAIN)
		fprintf(stderr, "atrium-fs: export-room: the workspace's daemon "
		    "did not commit its last changes within %d s; nothing was "
		    "exported: try again\n", ROOM_ARCHIVE_COMMIT_WAIT_S);
	else
		fprintf(stderr, "atrium-fs: export-room: the workspace could not "
		    "commit its last changes (%s); nothing was exported: try "
		    "again\n", strerror(-r));
	return 1;
}

int
room_export_run(const char *room_dir, const char *room, int fd)
{
	char ws[PATH_MAX];
	struct archive *a;
	int r = 1;

	if (isatty(fd)) {
		fprintf(stderr, "atrium-fs: export-room writes a tar archive to "
		    "standard output; redirect it to a file or a pipe\n");
		return 2;
	}
	if (room_archive_path(room_dir, WORKSPACE_DB_NAME, ws, sizeof(ws)))
		return 1;
	if ((a = archive_write_new()) &&
	    archive_write_set_format_pax(a) == ARCHIVE_OK)
		archive_write_set_format_option(a, "pax", "xattrheader",
		    "SCHILY");	/* as export.c */
	if (!a || archive_write_open_fd(a, fd) != ARCHIVE_OK) {
		fprintf(stderr, "atrium-fs: export-room: cannot start the "
		    "archive: %s\n", a ? archive_error_string(a) : "out of memory");
	} else {
		if (room_archive_put_history(a, room_dir, room) == 0 &&
		    export_into(a, ws, ROOM_ARCHIVE_WORKSPACE) == 0)
			r = 0;
		if (r == 0 && archive_write_close(a) != ARCHIVE_OK) {
			fprintf(stderr, "atrium-fs: export-room: finishing the "
			    "archive: %s\n", archive_error_string(a));
			r = 1;
		}
	}
	if (a)
		archive_write_free(a);
	return r;
}

/* --------------------------------------------------------------- import -- */

/* The next member, which must be a regular file called name of at most
 * max bytes.  Its size into *size.  0 or 1 (said). */
static int
room_archive_expect(struct archive *a, const char *name, int64_t max,
    int64_t *size)
{
	struct archive_entry *e;
	const char *path;
	int r = archive_read_next_header(a, &e);

	if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
		fprintf(stderr, "atrium-fs: import-room: this is no room archive "
		    "(make one with ssh ROOM@HOST atrium-export): %s\n",
		    r == ARCHIVE_EOF ? "it is empty" : archive_error_string(a));
		return 1;
	}
	path = archive_entry_pathname(e);
	if (!path || strcmp(path, name) != 0 ||
	    archive_entry_filetype(e) != AE_IFREG) {
		fprintf(stderr, "atrium-fs: import-room: this is no room archive "
		    "(make one with ssh ROOM@HOST atrium-export): member \"%s\" "
		    "where \"%s\" should be\n", path ? path : "?", name);
		return 1;
	}
	*size = archive_entry_size(e);
	if (*size < 0 || (max > 0 && *size > max)) {
		fprintf(stderr, "atrium-fs: import-room: %s is %lld bytes, more "
		    "than the %lld this room may hold (the server's --quota)\n",
		    name, (long long)*size, (long long)max);
		return 1;
	}
	return 0;
}

/* The header member: exactly ROOM_ARCHIVE_HEADER.  0 or 1. */
static int
room_archive_check_header(struct archive *a)
{
	char text[64];
	int64_t size;
	la_ssize_t n;

	if (room_archive_expect(a, ROOM_ARCHIVE_HEADER_NAME, sizeof(text) - 1,
	    &size))
		return 1;
	n = archive_read_data(a, text, sizeof(text) - 1);
	if (n >= 0)
		text[n] = '\0';
	if (n == (la_ssize_t)strlen(ROOM_ARCHIVE_HEADER) &&
	    strcmp(text, ROOM_ARCHIVE_HEADER) == 0)
		return 0;
	fprintf(stderr, "atrium-fs: import-room: this archive is of a format "
	    "or version this server does not know (it reads \"atrium-room "
	    "1\" archives)\n");
	return 1;
}

/* Copy the room.db member, size bytes, to fd.  0 or 1. */
static int
room_archive_take_db(struct archive *a, int fd, int64_t size)
{
	char *buf = malloc(ROOM_ARCHIVE_BUF);
	int64_t got = 0;
	la_ssize_t n = 0;

	while (buf && (n = archive_read_data(a, buf, ROOM_ARCHIVE_BUF)) > 0) {
		int w = write_all(fd, buf, (size_t)n);

		if (w < 0) {
			fprintf(stderr, "atrium-fs: import-room: writing the room's "
			    "history: %s\n", strerror(-w));
			free(buf);
			return 1;
		}
		got += n;
	}
	free(buf);
	if (n == 0 && got == size && fsync(fd) == 0)
		return 0;
	fprintf(stderr, "atrium-fs: import-room: the archive is damaged or cut "
	    "short in room.db: %s\n", !buf ? "out of memory" : n < 0 ?
	    archive_error_string(a) : "it ends early");
	return 1;
}

/* The room.db member into path (made here, never there before).  0 or 1. */
static int
room_archive_import_db(struct archive *a, const char *path, int64_t max)
{
	int64_t size;
	int fd, r;

	if (room_archive_expect(a, ROOM_DB_NAME, max, &size))
		return 1;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd < 0) {
		fprintf(stderr, "atrium-fs: import-room: %s: %s\n", path,
		    strerror(errno));
		return 1;
	}
	r = room_archive_take_db(a, fd, size);
	if (close(fd) < 0 && r == 0) {
		fprintf(stderr, "atrium-fs: import-room: %s: %s\n", path,
		    strerror(errno));
		r = 1;
	}
	return r;
}

/* Refuse a room_dir that holds a room already.  0 or 1. */
static int
room_archive_fresh(const char *room_dir, const char *ws, const char *db)
{
	if (access(ws, F_OK) == 0 || access(db, F_OK) == 0) {
		fprintf(stderr, "atrium-fs: import-room: %s holds a room already; "
		    "a room is imported only under a new name\n", room_dir);
		return 1;
	}
	return 0;
}

int
room_import_run(const char *room_dir, int fd, const struct import_opts *o)
{
	char ws[PATH_MAX], db[PATH_MAX], staged[PATH_MAX];
	struct import_opts io = *o;
	struct archive *a;
	uint64_t members = 0;
	int r = 1;

	if (isatty(fd)) {
		fprintf(stderr, "atrium-fs: import-room reads a tar archive from "
		    "standard input; redirect it from a file or a pipe\n");
		return 2;
	}
	if (room_archive_path(room_dir, WORKSPACE_DB_NAME, ws, sizeof(ws)) ||
	    room_archive_path(room_dir, ROOM_DB_NAME, db, sizeof(db)) ||
	    room_archive_path(room_dir, ROOM_DB_NAME ".import", staged,
	    sizeof(staged)) || room_archive_fresh(room_dir, ws, db))
		return 1;
	if (!(a = import_archive_open(fd)))
		return 1;
	io.prefix = ROOM_ARCHIVE_WORKSPACE;
	io.members = &members;
	if (room_archive_check_header(a) == 0 &&
	    room_archive_import_db(a, staged, (int64_t)o->quota_bytes) == 0 &&
	    import_into(ws, a, &io) == 0)
		r = 0;
	/* For the importer (the client's stderr, through atriumd). */
	if (r == 0)
		fprintf(stderr, "atrium: imported the workspace: %llu files, "
		    "directories and links\n", (unsigned long long)members);
	archive_read_free(a);
	if (r != 0)
		unlink(staged);
	return r;
}

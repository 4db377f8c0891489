/*
 * fuzz_room_archive.c: libFuzzer entry point for what `atrium-import`
 * reads from a stranger: the room archive (fs/offline/room_archive.c: the
 * "atrium-room 1" header member, the tar framing through libarchive, the
 * room.db member, the workspace through fs/offline/import.c) and then the
 * history it unpacked (agent/room_import.c: room_import_db), in the order
 * atriumd runs them (sshd/monitor/room_transfer.c, steps 3 and 4).
 *
 * Each input is the archive, read from a memfd into a new, empty room
 * directory on a tmpfs, with a small quota so that a compressed bomb ends
 * quickly.  The invariants are what atriumd relies on:
 *   - import-room says 0 or 1 (2 is for a terminal, never here);
 *   - when it fails, the room's directory holds nothing at all: no
 *     workspace.db, no room.db.import, no -wal, -shm or -mount beside
 *     them (atriumd would otherwise adopt or trip over leftovers);
 *   - when it succeeds, both files are there, and when import-db then
 *     accepts the history, the result opens as a room.db whose only
 *     grant is the importer's ownership;
 *   - nothing leaks, overflows or trips UBSan on the way.
 * The split plans of fuzz.h do not apply: libarchive reads the descriptor
 * in its own blocks, whatever arrives.
 *
 * Output: the parsers say why they refuse on stderr, one line each;
 * run.sh passes -close_fd_mask=2 (tests/fuzz/room_archive.options) so
 * that the log holds libFuzzer's lines and the sanitizers' reports only.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../agent/room_db.h"
#include "../../agent/room_import.h"
#include "../../fs/offline/commands.h"
#include "fuzz.h"
#include "log.h"

#define FUZZ_QUOTA_BYTES	(4u << 20)
#define FUZZ_QUOTA_INODES	256
#define FUZZ_OWNER		"importer"

/* The scratch directory for this process's rooms. */
static char scratch[PATH_MAX];

/* Remove the (empty) scratch directory at exit. */
static void
scratch_remove(void)
{
	rmdir(scratch);
}

/* Make the scratch directory once, on a tmpfs where there is one (the
 * imports fsync). */
static void
scratch_init(void)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	if (scratch[0])
		return;
	snprintf(scratch, sizeof(scratch), "%s/fuzz-room-archive-XXXXXX", base);
	FUZZ_CHECK(mkdtemp(scratch) != NULL);
	atexit(scratch_remove);
	log_set_level(LOG_ERROR);
}

/* The number of entries in dir besides . and .. (-1 when unreadable);
 * with remove set, each is unlinked on the way. */
static int
dir_entries(const char *dir, int remove)
{
	char path[PATH_MAX + 256];
	struct dirent *d;
	DIR *dp = opendir(dir);
	int n = 0;

	if (!dp)
		return -1;
	while ((d = readdir(dp))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		n++;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		if (remove)
			unlink(path);
	}
	closedir(dp);
	return n;
}

/* The history was adopted: it opens as a room.db owned by the importer
 * alone. */
static void
check_adopted(const char *path)
{
	struct room_db *db = NULL;
	struct access_list l;

	FUZZ_CHECK(room_db_open(path, &db) == 0);
	FUZZ_CHECK(room_db_access_load(db, &l) == 0);
	FUZZ_CHECK(strcmp(l.owner, FUZZ_OWNER) == 0);
	FUZZ_CHECK(l.nmembers == 0);
	room_db_close(db);
}

/* The archive in a memfd, at offset 0. */
static int
archive_fd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("room-archive", MFD_CLOEXEC);
	size_t off = 0;

	FUZZ_CHECK(fd >= 0);
	while (off < size) {
		ssize_t n = write(fd, data + off, size - off);

		FUZZ_CHECK(n > 0);
		off += (size_t)n;
	}
	FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	return fd;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct import_opts o = {
		.owner = 1, .uid = getuid(), .gid = getgid(),
		.quota_bytes = FUZZ_QUOTA_BYTES,
		.quota_inodes = FUZZ_QUOTA_INODES,
	};
	char room[PATH_MAX + 16], ws[PATH_MAX + 64], staged[PATH_MAX + 64];
	int fd, r;

	scratch_init();
	snprintf(room, sizeof(room), "%s/room", scratch);
	FUZZ_CHECK(mkdir(room, 0700) == 0);
	snprintf(ws, sizeof(ws), "%s/workspace.db", room);
	snprintf(staged, sizeof(staged), "%s/room.db.import", room);
	fd = archive_fd(data, size);
	r = room_import_run(room, fd, &o);
	close(fd);
	FUZZ_CHECK(r == 0 || r == 1);
	if (r != 0) {
		FUZZ_CHECK(dir_entries(room, 0) == 0);
	} else {
		FUZZ_CHECK(access(ws, F_OK) == 0 && access(staged, F_OK) == 0);
		if (room_import_db(staged, FUZZ_OWNER) == 0)
			check_adopted(staged);
	}
	FUZZ_CHECK(dir_entries(room, 1) >= 0);
	FUZZ_CHECK(rmdir(room) == 0);
	return 0;
}

/*
 * room_import.h: a room's history from an archive, checked and made the
 * importer's (room_import.c says how): `atrium-agent import-db --owner
 * USER FILE`, run by atriumd while it imports a room.
 */
#ifndef ATRIUM_AGENT_ROOM_IMPORT_H
#define ATRIUM_AGENT_ROOM_IMPORT_H

/* Check the database at path as room_import.c's head says, migrate it and
 * make owner its only owner.  0, or -1 with the reason on stderr. */
int room_import_db(const char *path, const char *owner);

/* The import-db command line (argv[0] is "import-db"): the process's exit
 * status, 0, 1 (refused) or 2 (usage). */
int room_import_main(int argc, char **argv);

#endif

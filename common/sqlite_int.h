/*
 * sqlite_int.h: one integer read from an SQLite connection, for the
 * programs that ask a PRAGMA (user_version and the like) outside a
 * statement cache of their own.
 */
#ifndef ATRIUM_SQLITE_INT_H
#define ATRIUM_SQLITE_INT_H

#include <sqlite3.h>

/* The first column of the first row of sql (one statement) on db, or -1
 * when it cannot be prepared or gives no row. */
sqlite3_int64 sqlite_int(sqlite3 *db, const char *sql);

#endif

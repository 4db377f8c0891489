/*
 * sqlite_int.c: one integer read from an SQLite connection (sqlite_int.h).
 */
#include "sqlite_int.h"

#include <stddef.h>

sqlite3_int64
sqlite_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	sqlite3_int64 v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/*
 * names.h: checks on names that come from users: room names, user names and
 * workspace-relative paths.  Pure functions; unit-tested.
 */
#ifndef ATRIUM_NAMES_H
#define ATRIUM_NAMES_H

#include <stddef.h>

/* Room names are [a-z0-9][a-z0-9-]{0,62}.  1 if valid, 0 if not. */
int room_name_valid(const char *name);

/* User names shown in chat: 1-32 of [A-Za-z0-9._-], not starting with '-'. */
int user_name_valid(const char *name);

/* Make a user name from arbitrary text (an authorized_keys comment such as
 * "alice@laptop" gives "alice"): keep the part before '@', replace other
 * characters with '_', truncate.  Writes "user" when nothing is left. */
void user_name_from(const char *text, char *out, size_t outlen);

/* Normalise a path inside the workspace: "a/./b/../c" gives "a/c", "/x" gives
 * "x", "" and "." give ".".  -EPERM when ".." would climb above the root,
 * -ENAMETOOLONG when out is too small or a component passes 255 bytes,
 * -EINVAL for an embedded control character. */
int workspace_path_normalize(const char *path, char *out, size_t outlen);

#endif

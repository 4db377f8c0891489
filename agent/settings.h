/*
 * settings.h: the room's own settings (provider, model, approval policy,
 * allow_list), kept in room.db's config table and changed by `config`
 * lines; they override the command line's defaults for this room.
 */
#ifndef ATRIUM_AGENT_SETTINGS_H
#define ATRIUM_AGENT_SETTINGS_H

#include <json-c/json.h>

struct agent;
struct conn;

/* Fill a->provider, model, approval, allow_list from the command line and
 * then room.db.  0 or -errno. */
int settings_load(struct agent *a);

/* Apply a `config` line from c: validate, store, announce with a stored
 * `config` event.  Errors go to c. */
void settings_request(struct agent *a, struct conn *c, json_object *req);

#endif

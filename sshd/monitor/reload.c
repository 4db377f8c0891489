/*
 * reload.c: atriumd's SIGHUP (reload.h).  Runs in the monitor's event
 * loop, between two events, so nothing reads the settings while they
 * change.  Settings are compared as config_each() writes them (flag name
 * and text value, in a fixed order), so no field is compared by hand.
 */
#include "reload.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "banner.h"
#include "http_front.h"
#include "log.h"
#include "room.h"

#define RELOAD_MAX_KEYS	96		/* settings config_each lists */
#define RELOAD_LIST	1024		/* bytes of one logged key list */

/* Settings read when a room starts (passed to its agent, or used by the
 * monitor as it starts the room): safe to change under a running server. */
static const char *const reload_live[] = {
	"provider", "model", "model-url", "anthropic-url", "openai-url",
	"api-key-file", "idle-timeout", "agent-timeout", "approval",
	"approval-timeout",
	"max-tokens", "context-window", "max-steps", "max-tokens-per-day",
	"prices", "command-timeout", "file-tool-timeout", "sandbox-memory-mb",
	"sandbox-pids", "sandbox-cpu-percent", "room-memory", "room-pids",
	"room-cpus", "quota", "quota-inodes", "seed-dir",
};

/* One configuration as config_each lists it. */
struct reload_list {
	size_t n;
	const char *key[RELOAD_MAX_KEYS];	/* config.c's static names */
	char *value[RELOAD_MAX_KEYS];		/* malloc'd copies */
	int failed;				/* out of memory or room */
};

/* config_each's callback: append one setting. */
static void
reload_collect(const char *key, const char *value, void *arg)
{
	struct reload_list *l = arg;

	if (l->n >= RELOAD_MAX_KEYS || !(l->value[l->n] = strdup(value))) {
		l->failed = 1;
		return;
	}
	l->key[l->n++] = key;
}

static void
reload_list_free(struct reload_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->value[i]);
	l->n = 0;
}

/* 1 when key may change under a running server. */
static int
reload_is_live(const char *key)
{
	for (size_t i = 0; i < sizeof(reload_live) / sizeof(*reload_live); i++)
		if (strcmp(reload_live[i], key) == 0)
			return 1;
	return 0;
}

/* Append ", key" (or "key") to list. */
static void
reload_append(char *list, size_t len, const char *key)
{
	size_t used = strlen(list);

	snprintf(list + used, len - used, "%s%s", used ? ", " : "", key);
}

/* The settings the file and the flags give now, finished; 0, or -1 after
 * logging why (nothing is changed then). */
static int
reload_read(const struct reload *rl, struct config *fresh)
{
	char path[PATH_MAX + 16], err[512];

	config_defaults(fresh);
	snprintf(path, sizeof(path), "%s/atrium.conf", rl->cfg->data_dir);
	if (config_load_file(fresh, path, err, sizeof(err)) < 0) {
		log_error("reload: %s; nothing changed", err);
		return -1;
	}
	if (rl->flags(fresh, rl->argc, rl->argv) != 0) {
		log_error("reload: the command line's flags no longer apply; "
		    "nothing changed");
		return -1;
	}
	/* The data directory is where this file was read from. */
	memcpy(fresh->data_dir, rl->cfg->data_dir, sizeof(fresh->data_dir));
	/* Host totals left unset were measured at start (host_limits.h). */
	if (!fresh->total_memory)
		fresh->total_memory = rl->cfg->total_memory;
	if (!fresh->total_pids)
		fresh->total_pids = rl->cfg->total_pids;
	if (!fresh->total_cpus)
		fresh->total_cpus = rl->cfg->total_cpus;
	if (config_finish(fresh, err, sizeof(err)) < 0) {
		log_error("reload: %s; nothing changed", err);
		return -1;
	}
	return 0;
}

/* Read the provider's key file again into rl->keys; 1 when the key
 * changed, 0 when not, -1 when it cannot be read (the old key stays). */
static int
reload_key(const struct reload *rl)
{
	const struct config *c = rl->cfg;
	int idx = keys_index(c->provider), changed;
	struct keys *fresh;
	char err[512];

	if (!c->api_key_file[0] || idx < 0)
		return 0;
	if (!(fresh = calloc(1, sizeof(*fresh))))
		return -1;
	/* The environment was wiped at start: only the file gives a key. */
	if (keys_load(fresh, c, err, sizeof(err)) < 0) {
		log_error("reload: %s; the API key in use is kept", err);
		free(fresh);
		return -1;
	}
	changed = strcmp(fresh->key[idx], rl->keys->key[idx]) != 0;
	if (changed)
		memcpy(rl->keys->key[idx], fresh->key[idx], KEYS_MAX);
	keys_clear(fresh);
	free(fresh);
	return changed;
}

/* Apply the live changes from fresh to rl->cfg; name them in applied
 * (atriumd-http's in http) and the others in restart.  0, or -1 when the
 * lists could not be made. */
static int
reload_apply(const struct reload *rl, const struct config *fresh,
    char *applied, char *http, char *restart, size_t len)
{
	struct reload_list *now = calloc(2, sizeof(*now)), *next = now + 1;
	char err[256];
	int r = -1;

	if (!now)
		return -1;
	config_each(rl->cfg, reload_collect, now);
	config_each(fresh, reload_collect, next);
	if (now->failed || next->failed || now->n != next->n)
		goto out;
	for (size_t i = 0; i < now->n; i++) {
		if (strcmp(now->value[i], next->value[i]) == 0)
			continue;
		if (!reload_is_live(now->key[i]) &&
		    !http_front_takes(now->key[i])) {
			reload_append(restart, len, now->key[i]);
			continue;
		}
		if (config_set(rl->cfg, now->key[i], next->value[i], err,
		    sizeof(err)) < 0)
			log_error("reload: %s: %s; kept", now->key[i], err);
		else
			reload_append(http_front_takes(now->key[i]) ? http :
			    applied, len, now->key[i]);
	}
	r = 0;
out:
	reload_list_free(now);
	reload_list_free(next);
	free(now);
	return r;
}

void
reload_run(const struct reload *rl)
{
	char applied[RELOAD_LIST] = "", restart[RELOAD_LIST] = "";
	char http[RELOAD_LIST] = "";
	struct config *fresh = calloc(1, sizeof(*fresh));
	int key_changed;

	log_info("SIGHUP: reading atrium.conf again");
	if (!fresh || reload_read(rl, fresh) < 0 ||
	    reload_apply(rl, fresh, applied, http, restart,
	    sizeof(applied)) < 0) {
		if (!fresh)
			log_error("reload: out of memory; nothing changed");
		free(fresh);
		return;
	}
	free(fresh);
	key_changed = reload_key(rl) > 0;
	if (applied[0])
		log_info("reload applied, for rooms started from now on "
		    "(running rooms keep theirs until they stop): %s", applied);
	if (key_changed) {
		/* Unlike the settings above, a key reaches running agents:
		 * a revoked key must stop being used now. */
		log_info("reload applied: a new API key, for every room from "
		    "its next model request");
		if (rl->rooms)
			rooms_send_keys(rl->rooms);
	}
	if (http[0]) {
		log_info("reload applied by restarting atriumd-http (its "
		    "running requests may finish first, 10 s at most; event "
		    "streams and WebSockets are told to reconnect): %s", http);
		if (rl->srv)
			http_front_restart(rl->srv);
	}
	if (!applied[0] && !key_changed && !http[0])
		log_info("reload: nothing to apply");
	if (restart[0])
		log_warn("reload: changed but needs a restart of atriumd, so "
		    "not applied: %s", restart);
	banner_model(rl->cfg, rl->keys);
}

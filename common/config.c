/*
 * config.c: Atrium's settings (config.h).  One table lists every key with
 * its type and place in struct config, so the file parser, the flag parser
 * and config_each (settings handed to a child) cannot disagree.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prices.h"
#include "util.h"

enum config_type {
	CT_STRING, CT_INT, CT_LONG, CT_BOOL, CT_UID, CT_GID,
	CT_SIZE,	/* long long bytes, "512M" or "2G" accepted */
	CT_CPUS,	/* int thousandths of a CPU, "1.5" accepted */
};

/* Bounds of sizes (1 PiB) and CPU counts (1024 CPUs, in thousandths). */
#define CONFIG_MAX_SIZE	(1LL << 50)
#define CONFIG_MAX_CPUS	(1024 * 1000)

struct config_key {
	const char *name;	/* flag name, '-' separated */
	enum config_type type;
	size_t offset;		/* into struct config */
	size_t size;		/* of a CT_STRING field */
	long long min, max;	/* bounds of numbers */
};

#define STR(name, field) \
	{ name, CT_STRING, offsetof(struct config, field), \
	  sizeof(((struct config *)0)->field), 0, 0 }
#define NUM(name, type, field, lo, hi) \
	{ name, type, offsetof(struct config, field), 0, lo, hi }

static const struct config_key config_keys[] = {
	STR("data", data_dir),
	STR("listen", listen),
	STR("provider", provider),
	STR("model", model),
	STR("model-url", model_url),
	STR("anthropic-url", anthropic_url),
	STR("openai-url", openai_url),
	STR("api-key-file", api_key_file),
	NUM("open", CT_BOOL, open, 0, 1),
	NUM("exec-creates-rooms", CT_BOOL, exec_creates_rooms, 0, 1),
	NUM("idle-timeout", CT_INT, idle_timeout, 1, 86400 * 365),
	NUM("agent-timeout", CT_INT, agent_timeout, 0, 86400),
	STR("approval", approval),
	NUM("approval-timeout", CT_INT, approval_timeout, 1, 86400),
	NUM("max-tokens", CT_INT, max_tokens, 1, 1000000),
	NUM("context-window", CT_INT, context_window, 0, 100000000),
	NUM("max-steps", CT_INT, max_steps, 1, 100000),
	NUM("max-tokens-per-day", CT_SIZE, max_tokens_per_day, 0,
	    CONFIG_MAX_SIZE),
	STR("prices", prices),
	NUM("command-timeout", CT_INT, command_timeout, 0, 86400 * 7),
	NUM("file-tool-timeout", CT_INT, file_tool_timeout, 1, 86400),
	NUM("undo-keep", CT_INT, undo_keep, 1, 100000),
	NUM("undo-max-age", CT_INT, undo_max_age, 60, 86400 * 3650),
	NUM("exec-timeout", CT_INT, exec_timeout, 0, 86400 * 365),
	NUM("sandbox-uid-base", CT_UID, sandbox_uid_base, 1, 0x7fffffff),
	NUM("sandbox-uid-count", CT_INT, sandbox_uid_count, 1, 1 << 24),
	NUM("sandbox-uid", CT_UID, sandbox_uid, 1, 0x7fffffff),
	NUM("sandbox-gid", CT_GID, sandbox_gid, 1, 0x7fffffff),
	NUM("sandbox-memory-mb", CT_LONG, sandbox_memory_mb, 0, 1L << 30),
	NUM("sandbox-pids", CT_INT, sandbox_pids, 0, 1 << 22),
	NUM("sandbox-cpu-percent", CT_INT, sandbox_cpu_percent, 0, 100 * 1024),
	NUM("room-memory", CT_SIZE, room_memory, 0, CONFIG_MAX_SIZE),
	NUM("room-pids", CT_INT, room_pids, 0, 1 << 22),
	NUM("room-cpus", CT_CPUS, room_cpus, 0, CONFIG_MAX_CPUS),
	NUM("total-memory", CT_SIZE, total_memory, 0, CONFIG_MAX_SIZE),
	NUM("total-pids", CT_INT, total_pids, 0, 1 << 22),
	NUM("total-cpus", CT_CPUS, total_cpus, 0, CONFIG_MAX_CPUS),
	NUM("quota", CT_SIZE, quota, 0, CONFIG_MAX_SIZE),
	NUM("quota-inodes", CT_SIZE, quota_inodes, 0, CONFIG_MAX_SIZE),
	NUM("room-db-quota", CT_SIZE, room_db_quota, 0, CONFIG_MAX_SIZE),
	NUM("input-rate", CT_INT, input_rate, 0, 1000000),
	NUM("no-limits", CT_BOOL, no_limits, 0, 1),
	STR("cgroup-root", cgroup_root),
	STR("cgroup-parent", cgroup_parent),
	NUM("max-commands-per-user", CT_INT, max_commands_per_user, 0, 1000000),
	NUM("max-rooms-per-user", CT_INT, max_rooms_per_user, 0, 1000000),
	STR("bin-dir", bin_dir),
	STR("seed-dir", seed_dir),
	STR("privsep-user", privsep_user),
	STR("max-startups", max_startups),
	NUM("per-source-rate", CT_INT, per_source_rate, 0, 1000000),
	NUM("per-source-startups", CT_INT, per_source_startups, 0, 1000000),
	STR("cluster", cluster),
	STR("node", node),
	STR("advertise", advertise),
	NUM("cluster-lease", CT_INT, cluster_lease, 2, 3600),
	STR("s3", s3),
	STR("s3-bucket", s3_bucket),
	STR("s3-region", s3_region),
	STR("s3-credentials", s3_credentials),
	NUM("s3-restore-timeout", CT_INT, s3_restore_timeout, 1, 86400),
	STR("http-listen", http_listen),
	STR("http-trusted-proxy", http_trusted_proxy),
	NUM("http-insecure-cookie", CT_BOOL, http_insecure_cookie, 0, 1),
	NUM("http-max-body", CT_SIZE, http_max_body, 1024, CONFIG_MAX_SIZE),
	NUM("http-max-json", CT_SIZE, http_max_json, 1024, 1LL << 30),
	NUM("http-max-line", CT_SIZE, http_max_line, 256, 1 << 20),
	NUM("http-max-headers", CT_SIZE, http_max_headers, 1024, 1 << 22),
	NUM("http-request-timeout", CT_INT, http_request_timeout, 1, 3600),
	NUM("http-idle-timeout", CT_INT, http_idle_timeout, 1, 86400),
	NUM("http-auth-failures", CT_INT, http_auth_failures, 0, 1000000),
	NUM("http-per-source", CT_INT, http_per_source, 1, 1000000),
	NUM("http-max-connections", CT_INT, http_max_connections, 1, 1000000),
	STR("http-web-dir", http_web_dir),
};

#define NKEYS (sizeof(config_keys) / sizeof(config_keys[0]))

void
config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->data_dir, sizeof(c->data_dir), "./data");
	snprintf(c->listen, sizeof(c->listen), ":2222");
	snprintf(c->provider, sizeof(c->provider), "anthropic");
	snprintf(c->approval, sizeof(c->approval), "ask");
	c->approval_timeout = 120;
	c->idle_timeout = 900;
	c->agent_timeout = 10;
	c->max_tokens = 8192;
	c->max_steps = 50;
	c->command_timeout = 120;
	c->file_tool_timeout = 60;
	c->undo_keep = 50;
	c->undo_max_age = 7 * 86400;
	/* Above any account, subordinate uid range (useradd gives them up
	 * to 600100000) or systemd-nspawn's container range (up to
	 * 1879048191), and below systemd's foreign range: atriumd(8). */
	c->sandbox_uid_base = 2000000000;
	c->sandbox_uid_count = 65536;
	c->sandbox_uid = 64222;
	c->sandbox_gid = 64222;
	c->sandbox_memory_mb = 2048;
	c->sandbox_pids = 512;
	c->sandbox_cpu_percent = 100;
	/* Why these numbers: atriumd(8), LIMITS. */
	c->room_memory = 4LL << 30;
	c->room_pids = 1024;
	c->room_cpus = 1000;
	c->quota = 10LL << 30;
	c->quota_inodes = 1000000;
	snprintf(c->cgroup_root, sizeof(c->cgroup_root), "/sys/fs/cgroup");
	snprintf(c->cgroup_parent, sizeof(c->cgroup_parent), "atrium");
	c->max_commands_per_user = 16;
	c->input_rate = 30;
	c->max_rooms_per_user = 20;
	snprintf(c->max_startups, sizeof(c->max_startups), "20:30:100");
	c->per_source_rate = 10;
	c->per_source_startups = 10;
	c->cluster_lease = 5;
	snprintf(c->s3_region, sizeof(c->s3_region), "us-east-1");
	/* Why this number: atriumd(8), CLUSTER, Streaming to object
	 * storage. */
	c->s3_restore_timeout = 300;
	c->http_max_body = 64LL << 20;
	c->http_max_json = 1LL << 20;
	c->http_max_line = 8 << 10;
	c->http_max_headers = 32 << 10;
	c->http_request_timeout = 10;
	c->http_idle_timeout = 60;
	c->http_auth_failures = 30;
	c->http_per_source = 64;
	c->http_max_connections = 1024;
}

/* Find a key, treating '_' and '-' alike. */
static const struct config_key *
config_find(const char *key)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const char *a = config_keys[i].name, *b = key;

		while (*a && (*a == *b || (*a == '-' && *b == '_')))
			a++, b++;
		if (*a == '\0' && *b == '\0')
			return &config_keys[i];
	}
	return NULL;
}

int
config_parse_size(const char *text, long long *out)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	long long v;
	int shift = 0;

	errno = 0;
	if (!isdigit((unsigned char)*text))
		return -EINVAL;
	v = strtoll(text, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end && (u = strchr(units, toupper((unsigned char)*end)))) {
		shift = 10 * (int)(u - units + 1);
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B' || *end == 'b')
			end++;
	}
	if (*end || v > (CONFIG_MAX_SIZE >> shift))
		return -EINVAL;
	*out = v << shift;
	return 0;
}

int
config_parse_cpus(const char *text, int *out)
{
	long whole = 0, frac = 0;
	int digits = 0;
	const char *p = text;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++)
		if ((whole = whole * 10 + (*p - '0')) > CONFIG_MAX_CPUS / 1000)
			return -EINVAL;
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, digits++) {
			if (digits < 3)
				frac = frac * 10 + (*p - '0');
			else if (*p != '0')
				return -EINVAL;	/* finer than a thousandth */
		}
	}
	if (*p || (p[-1] == '.'))
		return -EINVAL;
	while (digits < 3)
		frac *= 10, digits++;
	if (whole * 1000 + frac > CONFIG_MAX_CPUS)
		return -EINVAL;
	*out = (int)(whole * 1000 + frac);
	return 0;
}

/* Parse a boolean into *out.  0 or -EINVAL. */
static int
config_bool(const char *value, long long *out)
{
	if (!strcmp(value, "1") || !strcmp(value, "true") ||
	    !strcmp(value, "yes") || !strcmp(value, "on") || !*value)
		*out = 1;
	else if (!strcmp(value, "0") || !strcmp(value, "false") ||
	    !strcmp(value, "no") || !strcmp(value, "off"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

/* Parse a bounded number, size, CPU count or boolean into *out.  0 or
 * -EINVAL. */
static int
config_number(const struct config_key *k, const char *value, long long *out)
{
	char *end;
	long long v;
	int cpus;

	if (k->type == CT_BOOL)
		return config_bool(value, out);
	if (k->type == CT_SIZE) {
		if (config_parse_size(value, &v) < 0)
			return -EINVAL;
	} else if (k->type == CT_CPUS) {
		if (config_parse_cpus(value, &cpus) < 0)
			return -EINVAL;
		v = cpus;
	} else {
		errno = 0;
		v = strtoll(value, &end, 10);
		if (errno || end == value || *end)
			return -EINVAL;
	}
	if (v < k->min || v > k->max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The message for a number that config_number refused. */
static void
config_number_error(const struct config_key *k, const char *value, char *err,
    size_t errlen)
{
	if (k->type == CT_BOOL)
		snprintf(err, errlen, "%s must be true or false, not '%s'",
		    k->name, value);
	else if (k->type == CT_SIZE)
		snprintf(err, errlen, "%s must be a size in bytes, with K, M "
		    "or G for KiB, MiB or GiB (e.g. 512M or 4G), not '%s'",
		    k->name, value);
	else if (k->type == CT_CPUS)
		snprintf(err, errlen, "%s must be a number of CPUs such as 2 "
		    "or 1.5 (at most %d), not '%s'", k->name,
		    CONFIG_MAX_CPUS / 1000, value);
	else
		snprintf(err, errlen, "%s must be a whole number from %lld "
		    "to %lld, not '%s'", k->name, k->min, k->max, value);
}

/* A cgroup parent is one or more names of [A-Za-z0-9._-] joined by '/',
 * none of them "." or "..": it must stay below cgroup-root. */
static int
config_cgroup_parent_valid(const char *v)
{
	size_t n;

	for (; *v; v += n + (v[n] == '/')) {
		n = strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuv"
		    "wxyz0123456789._-");
		if (n == 0 || (v[n] && v[n] != '/') || (v[n] == '/' && !v[n + 1]) ||
		    (n == 1 && v[0] == '.') || (n == 2 && !strncmp(v, "..", 2)))
			return 0;
	}
	return 1;
}

/* Check values that only some strings may take. */
static int
config_check_string(const char *key, const char *value, char *err,
    size_t errlen)
{
	static const char *const policies[] =
	    { "deny_all", "allow_list", "allow_all", "ask" };

	if (!strcmp(key, "provider") && strcmp(value, "anthropic") &&
	    strcmp(value, "openai")) {
		snprintf(err, errlen,
		    "provider must be anthropic or openai, not '%s'", value);
		return -EINVAL;
	}
	if (!strcmp(key, "cgroup-root") && value[0] != '/') {
		snprintf(err, errlen, "cgroup-root must be an absolute path, "
		    "not '%s'", value);
		return -EINVAL;
	}
	if (!strcmp(key, "cgroup-parent") && (!*value ||
	    !config_cgroup_parent_valid(value))) {
		snprintf(err, errlen, "cgroup-parent must be names of A-Z, a-z, "
		    "0-9, '.', '_' and '-' joined by '/', not '%s'", value);
		return -EINVAL;
	}
	if (!strcmp(key, "approval")) {
		for (size_t i = 0; i < 4; i++)
			if (!strcmp(value, policies[i]))
				return 0;
		snprintf(err, errlen, "approval must be deny_all, allow_list,"
		    " allow_all or ask, not '%s'", value);
		return -EINVAL;
	}
	return 0;
}

int
config_set(struct config *c, const char *key, const char *value,
    char *err, size_t errlen)
{
	const struct config_key *k = config_find(key);
	char *field;
	long long v;
	int r;

	if (!k) {
		snprintf(err, errlen, "unknown setting '%s'", key);
		return -ENOENT;
	}
	field = (char *)c + k->offset;
	if (k->type == CT_STRING) {
		r = config_check_string(k->name, value, err, errlen);
		if (r < 0)
			return r;
		if (strlen(value) >= k->size) {
			snprintf(err, errlen, "%s is too long (at most %zu bytes)",
			    k->name, k->size - 1);
			return -EINVAL;
		}
		memcpy(field, value, strlen(value) + 1);
		return 0;
	}
	if (config_number(k, value, &v) < 0) {
		config_number_error(k, value, err, errlen);
		return -EINVAL;
	}
	switch (k->type) {
	case CT_INT: case CT_BOOL: case CT_CPUS: *(int *)field = (int)v; break;
	case CT_LONG: *(long *)field = (long)v; break;
	case CT_SIZE: *(long long *)field = v; break;
	case CT_UID: *(uid_t *)field = (uid_t)v; break;
	case CT_GID: *(gid_t *)field = (gid_t)v; break;
	case CT_STRING: break;
	}
	return 0;
}

/* Trim spaces at both ends of s, in place. */
static char *
config_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Apply one line of a settings file (NUL-terminated, no newline).  0, or
 * -EINVAL with "PATH:LINE: reason" in err. */
static int
config_load_line(struct config *c, char *line, const char *path, int lineno,
    char *err, size_t errlen)
{
	char *eq, msg[256], *hash = strchr(line, '#');

	if (hash)
		*hash = '\0';
	line = config_trim(line);
	if (!*line)
		return 0;
	eq = strchr(line, '=');
	if (!eq) {
		snprintf(err, errlen, "%s:%d: expected 'key = value'", path,
		    lineno);
		return -EINVAL;
	}
	*eq = '\0';
	if (config_set(c, config_trim(line), config_trim(eq + 1), msg,
	    sizeof(msg)) < 0) {
		snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
		return -EINVAL;
	}
	return 0;
}

/* Lines are cut by hand, not with strtok: blank lines must count in the
 * line numbers errors give, and a NUL byte must not hide the rest. */
int
config_load_file(struct config *c, const char *path, char *err, size_t errlen)
{
	char *text, *end, *next;
	size_t len;
	int r, lineno = 0;

	r = read_small_file(path, 1 << 20, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	end = text + len;
	for (char *line = text; line < end && r == 0; line = next) {
		char *nl = memchr(line, '\n', (size_t)(end - line));

		next = nl ? nl + 1 : end;
		if (nl)
			*nl = '\0';
		lineno++;
		if (memchr(line, '\0', (size_t)((nl ? nl : end) - line))) {
			snprintf(err, errlen, "%s:%d: a NUL byte; settings "
			    "must be plain text 'key = value' lines", path,
			    lineno);
			r = -EINVAL;
		} else {
			r = config_load_line(c, line, path, lineno, err,
			    errlen);
		}
	}
	free(text);
	return r;
}

int
config_finish(struct config *c, char *err, size_t errlen)
{
	const char *own = !strcmp(c->provider, "openai") ? c->openai_url :
	    c->anthropic_url;

	if (!c->model[0] && !strcmp(c->provider, "openai")) {
		snprintf(err, errlen, "provider openai needs a model name: "
		    "give --model NAME (model = NAME in atrium.conf), the name "
		    "the server knows, e.g. gpt-4o or llama3.1");
		return -EINVAL;
	}
	if ((long long)c->sandbox_uid_base + c->sandbox_uid_count - 1 >
	    0x7fffffffLL) {
		snprintf(err, errlen, "sandbox-uid-base (%u) plus "
		    "sandbox-uid-count (%d) goes past the largest uid, %lld",
		    (unsigned)c->sandbox_uid_base, c->sandbox_uid_count,
		    0x7fffffffLL);
		return -EINVAL;
	}
	if (prices_check(c->prices, err, errlen) < 0)
		return -EINVAL;
	if (!c->model[0])
		snprintf(c->model, sizeof(c->model), "%s",
		    CONFIG_ANTHROPIC_MODEL);
	if (c->model_url[0] && own[0] && strcmp(c->model_url, own) != 0) {
		snprintf(err, errlen, "model-url (%s) and %s-url (%s) both "
		    "name %s's server: keep one", c->model_url, c->provider,
		    own, c->provider);
		return -EINVAL;
	}
	return 0;
}

const char *
config_provider_url(const struct config *c, const char *provider)
{
	int openai = !strcmp(provider, "openai");

	if (!strcmp(provider, c->provider) && c->model_url[0])
		return c->model_url;
	return openai ? c->openai_url : c->anthropic_url;
}

const char *
config_public_url(const char *provider)
{
	if (!strcmp(provider, "openai"))
		return "https://api.openai.com/v1";
	return "https://api.anthropic.com";
}

/* Format one setting's value as text. */
static void
config_value(const struct config *c, const struct config_key *k, char *out,
    size_t outlen)
{
	const char *field = (const char *)c + k->offset;

	switch (k->type) {
	case CT_STRING: snprintf(out, outlen, "%s", field); break;
	case CT_INT: case CT_BOOL: snprintf(out, outlen, "%d", *(const int *)field); break;
	case CT_LONG: snprintf(out, outlen, "%ld", *(const long *)field); break;
	case CT_SIZE: snprintf(out, outlen, "%lld", *(const long long *)field); break;
	case CT_CPUS: snprintf(out, outlen, "%d.%03d", *(const int *)field / 1000,
	    *(const int *)field % 1000); break;
	case CT_UID: snprintf(out, outlen, "%u", (unsigned)*(const uid_t *)field); break;
	case CT_GID: snprintf(out, outlen, "%u", (unsigned)*(const gid_t *)field); break;
	}
}

void
config_each(const struct config *c,
    void (*fn)(const char *key, const char *value, void *arg), void *arg)
{
	char value[PATH_MAX];

	for (size_t i = 0; i < NKEYS; i++) {
		config_value(c, &config_keys[i], value, sizeof(value));
		fn(config_keys[i].name, value, arg);
	}
}

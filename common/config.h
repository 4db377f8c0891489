/*
 * config.h: Atrium's settings.  One struct, filled from defaults, then from
 * DATA/atrium.conf, then from command-line flags, in that order.
 *
 * atrium.conf is "key = value" lines; '#' starts a comment; keys are the
 * long flag names with '-' or '_' alike (model-url = model_url).  Every key
 * is also a flag "--key VALUE" of atriumd and atrium-agent; atriumd hands
 * its effective settings to each atrium-agent as such flags.
 *
 * The API keys are never settings (keys.h).  The model URLs are the
 * operator's alone, per provider: model-url is the configured provider's,
 * anthropic-url and openai-url name either one's; a room may switch
 * provider, never its URL.
 */
#ifndef ATRIUM_CONFIG_H
#define ATRIUM_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

struct config {
	char data_dir[PATH_MAX];	/* --data: the root of rooms/ and run/ */
	char listen[128];		/* --listen [ADDR]:PORT, default ":2222" */
	char provider[16];		/* anthropic | openai */
	char model[128];		/* model name sent to the provider; ""
					 * until config_finish: anthropic's
					 * default, required for openai */
	char model_url[512];		/* base URL of provider's server; "" =
					 * anthropic_url / openai_url */
	char anthropic_url[512];	/* anthropic's base URL, or "" */
	char openai_url[512];		/* openai's base URL, or "" */
	char api_key_file[PATH_MAX];	/* the key of provider, or "" */
	int open;			/* accept any public key (trusted demos) */
	int exec_creates_rooms;		/* a command, sftp or the atrium
					 * subsystem naming a room that does not
					 * exist creates it (else only the chat
					 * and atrium-import do) */
	int idle_timeout;		/* seconds before an idle room stops */
	int agent_timeout;		/* seconds an agent may leave atriumd's
					 * ping unanswered before it is killed
					 * and restarted (0: never) */
	char approval[16];		/* default policy of a new room */
	int approval_timeout;		/* s an approval request waits for an
					 * answer before it is denied */
	int max_tokens;			/* output tokens per model request */
	int context_window;		/* tokens the model takes in (0: the
					 * provider's usual); older turns are
					 * summarised as the transcript nears it */
	int max_steps;			/* model requests in one turn */
	long long max_tokens_per_day;	/* a room's tokens (in + out) in a UTC
					 * day; 0: no cap */
	char prices[1024];		/* "MODEL=IN/OUT,...": US dollars per
					 * million input and output tokens;
					 * "": no cost is shown */
	int command_timeout;		/* seconds an agent's command may run */
	int file_tool_timeout;		/* seconds of work for one read, ls or
					 * grep call (they yield to the loop
					 * meanwhile) */
	int undo_keep;			/* turns whose automatic undo snapshots
					 * a room keeps (named ones: all) */
	int undo_max_age;		/* seconds an automatic undo snapshot is
					 * kept */
	int exec_timeout;		/* seconds a person's command may run
					 * (exec, sftp; 0: no limit) */
	uid_t sandbox_uid_base;		/* first uid (and gid) of the range a
					 * new room's own is taken from
					 * (room_ids.h) */
	int sandbox_uid_count;		/* how many uids the range holds */
	uid_t sandbox_uid;		/* the one uid all rooms shared before
					 * rooms had their own: rooms made then
					 * keep it (room_ids.h) */
	gid_t sandbox_gid;		/* and their gid */
	long sandbox_memory_mb;		/* memory limit per command */
	int sandbox_pids;		/* process limit per command */
	int sandbox_cpu_percent;	/* CPU share per command, 100 = a core */
	long long room_memory;		/* bytes for all of a room's commands */
	int room_pids;			/* processes of all of a room's commands */
	int room_cpus;			/* CPU of a room, in thousandths */
	long long total_memory;		/* bytes for every room together; 0:
					 * from the host (limits.h) */
	int total_pids;			/* processes of every room; 0: auto */
	int total_cpus;			/* CPU of every room, thousandths; 0:
					 * auto */
	long long quota;		/* bytes a room's workspace may store
					 * (atrium-fs -o quota=); 0: none */
	long long quota_inodes;		/* files a workspace may hold; 0: none */
	int input_rate;			/* chat lines, prompts and commands a
					 * person may send at once, and in
					 * each 15 s after (0: no limit) */
	long long room_db_quota;	/* bytes a room's room.db may hold (chat,
					 * transcript, exec outputs); 0: a
					 * quarter of quota (none without one) */
	int no_limits;			/* run commands even where cgroup limits
					 * cannot be applied */
	char cgroup_root[256];		/* where cgroupfs is mounted */
	char cgroup_parent[64];		/* atrium's group below it */
	int max_commands_per_user;	/* a person's exec and sftp at once,
					 * across rooms; 0: no limit */
	int max_rooms_per_user;		/* rooms a user may create; 0: none */
	char bin_dir[PATH_MAX];		/* where atrium-fs, atrium-agent live */
	char seed_dir[PATH_MAX];	/* a room's seed_git may clone a local
					 * repository from beneath it; "":
					 * none (agent/seed.c) */
	char privsep_user[64];		/* atriumd's network process runs as
					 * this user; "": atrium, else nobody */
	char max_startups[32];		/* START:RATE:FULL, random early drop of
					 * unauthenticated connections */
	int per_source_rate;		/* connections a second per address */
	int per_source_startups;	/* unauthenticated ones per address */
	/* Cluster (atriumd(8), CLUSTER; cluster/): off unless cluster. */
	char cluster[1024];		/* "etcd=URL[,URL...]"; "": one host */
	char node[64];			/* this node's name; "": the hostname */
	char advertise[128];		/* HOST:PORT the other hosts reach
					 * this one at; "": --listen's */
	int cluster_lease;		/* s of the node's lease in etcd */
	/* Streaming each room's writes (atriumd(8), CLUSTER; only with
	 * cluster): the object store; its credentials are never here. */
	char s3[256];			/* "http://host:port"; "": none */
	char s3_bucket[64];
	char s3_region[64];		/* "us-east-1" by default */
	char s3_credentials[PATH_MAX];	/* file of two lines; "": AWS_* */
	int s3_restore_timeout;		/* s a room's restore may take
					 * before it is killed and the room
					 * refused (sshd/monitor/room.c) */
	/* HTTP (atriumd(8), HTTP; sshd/http/): off unless http_listen. */
	char http_listen[128];		/* [ADDR]:PORT of atriumd-http; "": off */
	char http_trusted_proxy[128];	/* the one address whose
					 * X-Forwarded-For is believed; "":
					 * none */
	int http_insecure_cookie;	/* the session cookie without Secure
					 * (plain HTTP on loopback) */
	long long http_max_body;	/* bytes of an upload's body */
	long long http_max_json;	/* bytes of a JSON request body */
	long long http_max_line;	/* bytes of the request line */
	long long http_max_headers;	/* bytes of every header together */
	int http_request_timeout;	/* s a client may be silent while it
					 * sends a request */
	int http_idle_timeout;		/* s a kept-alive connection may wait
					 * for its next request */
	int http_auth_failures;		/* refused tokens a minute from one
					 * address before 429s; 0: no limit */
	int http_per_source;		/* connections from one address */
	int http_max_connections;	/* connections in all */
	char http_web_dir[256];		/* the page's files (http_web.h); "":
					 * the folder beside atriumd-http */
};

/* Fill in the defaults. */
void config_defaults(struct config *c);

/* Set one key from text.  0, or -EINVAL / -ENOENT with a message for the
 * user in err ("unknown setting", "idle-timeout must be a number"...). */
int config_set(struct config *c, const char *key, const char *value,
    char *err, size_t errlen);

/* Read a settings file.  A missing file is not an error (returns 0); a bad
 * line is (-EINVAL, with "FILE:LINE: reason" in err). */
int config_load_file(struct config *c, const char *path, char *err,
    size_t errlen);

#define CONFIG_ANTHROPIC_MODEL	"claude-sonnet-4-5"	/* anthropic's default */

/* Check the settings that depend on each other, once all are in: an empty
 * model becomes CONFIG_ANTHROPIC_MODEL for anthropic and is an error for
 * openai (its servers serve models of any name); model-url may not
 * disagree with the provider's own anthropic-url / openai-url; the
 * sandbox uid range must end below 2^31.  0, or
 * -EINVAL with what to fix in err. */
int config_finish(struct config *c, char *err, size_t errlen);

/* The operator's base URL for provider: model_url when provider is the
 * configured one and it is set, else anthropic_url or openai_url; "" when
 * the operator set none. */
const char *config_provider_url(const struct config *c, const char *provider);

/* The provider's public base URL (for a provider with a key and no URL). */
const char *config_public_url(const char *provider);

/* Parse a size: plain bytes or a K, M, G or T suffix (powers of 1024,
 * optionally followed by "B" or "iB").  0 with *out set, or -EINVAL. */
int config_parse_size(const char *text, long long *out);

/* Parse a CPU count such as "2", "1.5" or "0.25" into thousandths of a
 * CPU (at most three decimals).  0 with *out set, or -EINVAL. */
int config_parse_cpus(const char *text, int *out);

/* Call fn for every setting that is not secret, as flag name and value, so a
 * parent can pass its settings on to a child's argv. */
void config_each(const struct config *c,
    void (*fn)(const char *key, const char *value, void *arg), void *arg);

#endif

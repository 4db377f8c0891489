/*
 * setup.c: first start (setup.h).  Called once by monitor_main.c before the
 * server starts: setup_data_top makes DATA itself, then monitor_main.c takes
 * DATA's lock (datalock.h), then setup_data_dir makes what goes inside, so that
 * a second atriumd on DATA makes nothing there.  Writes only files that are
 * missing: it never replaces a host key or an authorized_keys file
 * someone made.
 */
#include "setup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libssh/libssh.h>

#include "authkeys.h"
#include "buf.h"
#include "log.h"
#include "util.h"

#define SETUP_MAX_SEED	(1024 * 1024)	/* bytes of keys taken from ~/.ssh */

/* Port of "[ADDR]:PORT". */
const char *
setup_listen_port(const char *listen)
{
	const char *colon = strrchr(listen, ':');

	return colon && colon[1] ? colon + 1 : "2222";
}

/* Make DATA/hostkey if missing.  0 or -errno. */
static int
setup_hostkey(const char *data)
{
	char path[PATH_MAX + 16];
	ssh_key key = NULL;
	int r;

	snprintf(path, sizeof(path), "%s/hostkey", data);
	if (access(path, F_OK) == 0)
		return 0;
	if (ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &key) != SSH_OK) {
		log_error("cannot generate an ed25519 host key");
		return -EIO;
	}
	r = ssh_pki_export_privkey_file(key, NULL, NULL, NULL, path);
	ssh_key_free(key);
	if (r != SSH_OK || chmod(path, 0600) < 0) {
		log_error("%s: cannot write the host key", path);
		return -EIO;
	}
	printf("atriumd: made a new host key in %s\n", path);
	return 0;
}

/* Append the valid key lines of text to out, naming users in names.
 * Keys with options (from=, command=, ...) are counted in *skipped, not
 * taken: root's file was written for sshd, and letting them in under
 * another server's rules is the operator's call, not the seed's. */
static void
setup_take_keys(const char *text, struct buf *out, struct buf *names,
    int *skipped)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[AUTHKEYS_MAX_LINE + 1], copy[AUTHKEYS_MAX_LINE + 1];
		struct authkeys_line l;

		if (n <= AUTHKEYS_MAX_LINE) {
			memcpy(line, p, n);
			line[n] = '\0';
			memcpy(copy, line, n + 1);
			int r = authkeys_parse_line(copy, &l);

			if (r != 0 && l.has_opts)
				(*skipped)++;
			else if (r == 1 &&
			    (!out->data || !strstr(out->data, l.base64)) &&
			    buf_printf(out, "%s\n", line) == 0)
				buf_printf(names, "%s%s", names->len ? ", " : "",
				    l.user);
		}
		p += n + (nl ? 1 : 0);
	}
}

/* Read one file of ~/.ssh into the seed. */
static void
setup_seed_file(const char *path, struct buf *out, struct buf *names,
    int *skipped)
{
	char *text = NULL;
	size_t len;

	if (read_small_file(path, SETUP_MAX_SEED, &text, &len) < 0)
		return;
	setup_take_keys(text, out, names, skipped);
	free(text);
}

/* Collect ~/.ssh/authorized_keys and every ~/.ssh/NAME.pub. */
static void
setup_collect(const char *home, struct buf *out, struct buf *names,
    int *skipped)
{
	char dir[PATH_MAX], path[PATH_MAX + 300];
	DIR *d;
	struct dirent *e;

	snprintf(dir, sizeof(dir), "%s/.ssh", home);
	snprintf(path, sizeof(path), "%s/authorized_keys", dir);
	setup_seed_file(path, out, names, skipped);
	if (!(d = opendir(dir)))
		return;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (n > 4 && strcmp(e->d_name + n - 4, ".pub") == 0) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			setup_seed_file(path, out, names, skipped);
		}
	}
	closedir(d);
}

/* The running user's home directory. */
static const char *
setup_home(void)
{
	const char *home = getenv("HOME");
	struct passwd *pw;

	if (home && *home)
		return home;
	pw = getpwuid(getuid());
	return pw ? pw->pw_dir : "/";
}

/* Seed DATA/authorized_keys when missing, and tell the operator. */
static int
setup_authorized_keys(const struct config *cfg)
{
	char path[PATH_MAX + 32];
	struct buf keys, names;
	const char *home = setup_home();
	int fd, r = 0, skipped = 0;

	snprintf(path, sizeof(path), "%s/authorized_keys", cfg->data_dir);
	if (access(path, F_OK) == 0)
		return 0;
	buf_init(&keys, SETUP_MAX_SEED);
	buf_init(&names, 64 * 1024);
	buf_printf(&keys, "# Who may enter: one OpenSSH public key a line; the "
	    "key's comment (or user=\"NAME\" before it) names the user.\n");
	setup_collect(home, &keys, &names, &skipped);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, keys.data, keys.len) < 0) {
		r = -errno;
		log_error("%s: cannot write: %s", path, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	if (r == 0 && names.len)
		printf("atriumd: made %s with the keys of %s/.ssh (users: %s)\n"
		    "atriumd: connect with: ssh -p %s ROOM@HOST, e.g. "
		    "ssh -p %s demo@localhost\n", path, home, names.data,
		    setup_listen_port(cfg->listen),
		    setup_listen_port(cfg->listen));
	else if (r == 0)
		printf("atriumd: made an empty %s: no public key found in "
		    "%s/.ssh.\natriumd: to let someone in, add their public "
		    "key, e.g. cat ~/.ssh/id_ed25519.pub >> %s (its comment "
		    "names the user),\natriumd: then connect with: ssh -p %s "
		    "demo@localhost\n", path, home, path,
		    setup_listen_port(cfg->listen));
	if (r == 0 && skipped)
		printf("atriumd: skipped %d key line(s) of %s/.ssh that carry "
		    "options (from=, command=, restrict, ...): atriumd honours "
		    "them as sshd does; add such a line to %s yourself if you "
		    "mean it\n", skipped, home, path);
	fflush(stdout);
	buf_free(&keys);
	buf_free(&names);
	return r;
}

/* See setup.h. */
int
setup_run_dir(const char *path, gid_t gid, mode_t mode)
{
	int fd, r = 0;

	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -errno;
	/* Through an fd: a symlink put in its place is not followed. */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchown(fd, 0, gid) < 0 || fchmod(fd, mode) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* See setup.h. */
int
setup_data_top(const struct config *cfg)
{
	int r;

	if ((r = mkdir_p(cfg->data_dir, 0700)) < 0)
		log_error("%s: cannot make the data directory: %s",
		    cfg->data_dir, strerror(-r));
	return r;
}

/* Make DATA's run and rooms directories, its host key and its
 * authorized_keys. */
int
setup_data_dir(const struct config *cfg)
{
	char sub[PATH_MAX + 16];
	int r;

	snprintf(sub, sizeof(sub), "%s/rooms", cfg->data_dir);
	if ((r = mkdir_p(sub, 0700)) < 0)
		return r;
	snprintf(sub, sizeof(sub), "%s/run", cfg->data_dir);
	if ((r = setup_run_dir(sub, 0, SETUP_RUN_TOP_MODE)) < 0) {
		log_error("%s: cannot make it root's, mode %o: %s", sub,
		    SETUP_RUN_TOP_MODE, strerror(-r));
		return r;
	}
	if ((r = setup_hostkey(cfg->data_dir)) < 0)
		return r;
	if (cfg->open)
		printf("atriumd: --open: ANY public key is accepted; a key not "
		    "in authorized_keys enters as a guest (guest-XXXXXXXX, from "
		    "its fingerprint) with no options: it may enter every open "
		    "room and create rooms (owning them), and private rooms "
		    "only when invited; use this only on a trusted network\n");
	r = setup_authorized_keys(cfg);
	fflush(stdout);
	return r;
}

/*
 * net_main.c: atriumd-net, atriumd's network process.  Only the monitor
 * starts it (sshd/monitor/monitor_main.c: fork, then execve of this program
 * from helpers.h's place), as root, with what it needs already open:
 *
 *   fd  what
 *   3   the listening socket, bound and listening, non-blocking
 *   4   DATA/hostkey, open for reading (the network process cannot open
 *       anything in DATA itself)
 *   5   the request socket (privsep.h), the network process's end
 *   6   the event socket, the network process's end
 *
 *   argv: atriumd-net MONITOR-PID UID GID USER [--KEY VALUE ...]
 *
 * MONITOR-PID is its parent's pid, UID, GID and USER the privsep user the
 * monitor looked up (privdrop_resolve: NSS is the monitor's business).
 * The settings that follow are only those the network side reads (the
 * monitor's main_net_settings); the API keys are never among them, and
 * its environment holds nothing but ATRIUM_LOG.
 *
 * Order, and why (front_start.h reads the command line, as atriumd-http's
 * net_main.c does): the four numbers, which the drop needs, are read first;
 * then it gives up root (privdrop_apply: uid, capabilities, no_new_privs,
 * Landlock, seccomp) before it parses anything else: the settings, the
 * host key, then every byte of every client.  libssh and OpenSSL have run
 * their own initialisation before main, as root, as they did in the
 * forked child before this program existed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "cli.h"
#include "config.h"
#include "front_start.h"
#include "libssh_compat.h"
#include "log.h"
#include "privdrop.h"
#include "server.h"
#include "util.h"

#define NET_FD_LISTEN	3	/* see the head of this file */
#define NET_FD_HOSTKEY	4
#define NET_FD_REQUEST	5
#define NET_FD_EVENT	6
#define NET_HOSTKEY_MAX	(64 * 1024)	/* an ed25519 key is under 1 KiB */

static const char net_usage[] =
	"usage: atriumd-net MONITOR-PID UID GID USER [--KEY VALUE ...]\n"
	"atriumd's network process: atriumd starts it, with its sockets as "
	"fds 3 to 6.\nRun atriumd instead; see atriumd(8).\n";

/* 0 when fds 3 to 6 are open and 3, 5 and 6 are sockets; else -EBADF,
 * logged (atriumd-net run by hand, or a monitor out of step). */
static int
net_check_fds(void)
{
	static const int socks[] = { NET_FD_LISTEN, NET_FD_REQUEST,
	    NET_FD_EVENT };

	if (front_start_sockets("atriumd-net", socks, 3) < 0)
		return -EBADF;
	if (fcntl(NET_FD_HOSTKEY, F_GETFD) < 0) {
		log_error("fd %d (the host key) is not open: atriumd-net is "
		    "started by atriumd only", NET_FD_HOSTKEY);
		return -EBADF;
	}
	return 0;
}

/* Read the host key from its fd, closed after.  0 with *key set (for
 * the listener) and *relay_key (a second copy, for the relays this host
 * makes as a cluster's front: relay.h), or -errno (logged). */
static int
net_host_key(ssh_key *key, ssh_key *relay_key)
{
	char *text = calloc(1, NET_HOSTKEY_MAX + 1);
	size_t have = 0;
	ssize_t n;
	int r = 0;

	*key = *relay_key = NULL;
	if (!text) {
		close(NET_FD_HOSTKEY);
		return -ENOMEM;
	}
	while (have < NET_HOSTKEY_MAX && (n = read(NET_FD_HOSTKEY, text + have,
	    NET_HOSTKEY_MAX - have)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		have += (size_t)n;
	}
	close(NET_FD_HOSTKEY);
	if (r == 0 && have == NET_HOSTKEY_MAX)
		r = -EFBIG;
	if (r == 0 && (ssh_pki_import_privkey_base64(text, NULL, NULL, NULL,
	    key) != SSH_OK || ssh_pki_import_privkey_base64(text, NULL, NULL,
	    NULL, relay_key) != SSH_OK))
		r = -EINVAL;
	explicit_bzero(text, have);
	free(text);
	if (r < 0) {
		ssh_key_free(*key);
		ssh_key_free(*relay_key);
		*key = *relay_key = NULL;
	}
	if (r < 0)
		log_error("host key: %s", r == -EINVAL ? "not a private key "
		    "libssh can read" : strerror(-r));
	return r;
}

/* Give up root, then serve the network until SIGTERM or the monitor's
 * end.  The exit status: 0, 1, or 2 for a command line out of step. */
int
main(int argc, char **argv)
{
	static struct config cfg;
	static struct server srv;
	struct privdrop_id id;
	pid_t monitor;
	ssh_key key, relay_key;
	int r;

	log_init("atriumd", NULL);
	if ((r = cli_common("atriumd-net", &argc, argv)) != 0)
		return r > 0 ? 0 : 2;
	if (front_start_identity(argc, argv, net_usage, &id, &monitor) < 0)
		return 2;
	if (net_check_fds() < 0 || compat_init() < 0)
		return 1;
	front_start_malloc();
	if (privdrop_apply(&id, monitor) < 0)
		return 1;
	log_info("network process (pid %d) runs as %s (uid %u), without "
	    "capabilities, under seccomp", (int)getpid(), id.name,
	    (unsigned)id.uid);
	if (front_start_settings(argc, argv, &cfg, NULL, "--KEY VALUE") < 0)
		return 2;
	if (net_host_key(&key, &relay_key) < 0)
		return 1;
	r = server_adopt(&srv, &cfg, NET_FD_LISTEN, key);
	srv.relay_key = relay_key;
	if (r == 0)
		r = server_init_network(&srv, NET_FD_REQUEST, NET_FD_EVENT);
	if (r == 0)
		r = server_run(&srv);
	server_destroy(&srv);
	return r ? 1 : 0;
}

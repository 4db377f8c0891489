/*
 * banner.c: the start-up lines of banner.h.  Also called after a reload
 * (reload.h), so the log always ends with the settings in force.
 */
#include "banner.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libssh/libssh.h>

#include "log.h"

/* "ssh-ed25519" -> "ED25519", as ssh-keygen names a key's type. */
static void
banner_key_type(ssh_key key, char *out, size_t len)
{
	const char *name = ssh_key_type_to_char(ssh_key_type(key));
	size_t i = 0;

	if (!name)
		name = "unknown";
	if (strncmp(name, "ssh-", 4) == 0)
		name += 4;
	for (; name[i] && i + 1 < len; i++)
		out[i] = (char)toupper((unsigned char)name[i]);
	out[i] = '\0';
}

/* The key's size in bits as ssh-keygen prints it; 0 when libssh 0.10
 * cannot tell (RSA: atriumd makes only ed25519 host keys). */
static int
banner_key_bits(ssh_key key)
{
	const char *ec;

	switch (ssh_key_type(key)) {
	case SSH_KEYTYPE_ED25519:
	case SSH_KEYTYPE_SK_ED25519:
		return 256;
	case SSH_KEYTYPE_ECDSA_P256:
	case SSH_KEYTYPE_ECDSA_P384:
	case SSH_KEYTYPE_ECDSA_P521:
		ec = ssh_pki_key_ecdsa_name(key);
		return ec && strncmp(ec, "nistp", 5) == 0 ? atoi(ec + 5) : 0;
	default:
		return 0;
	}
}

void
banner_host_key(const struct config *c)
{
	char path[PATH_MAX + 16], type[32];
	unsigned char *hash = NULL;
	ssh_key key = NULL;
	char *fp = NULL;
	size_t hlen = 0;

	snprintf(path, sizeof(path), "%s/hostkey", c->data_dir);
	if (ssh_pki_import_privkey_file(path, NULL, NULL, NULL, &key) !=
	    SSH_OK) {
		log_error("host key %s: cannot be read", path);
		return;
	}
	if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash,
	    &hlen) == 0)
		fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash,
		    hlen);
	banner_key_type(key, type, sizeof(type));
	if (fp)
		log_info("host key %s: %d %s (%s)", path, banner_key_bits(key),
		    fp, type);
	else
		log_error("host key %s: cannot compute its fingerprint", path);
	ssh_string_free_char(fp);
	ssh_clean_pubkey_hash(&hash);
	ssh_key_free(key);
}

void
banner_model(const struct config *c, const struct keys *k)
{
	const char *url = config_provider_url(c, c->provider);
	int has_key = keys_get(k, c->provider) != NULL;

	if (!url[0])
		url = config_public_url(c->provider);
	if (has_key) {
		log_info("model %s (%s) at %s; API key configured", c->model,
		    c->provider, url);
		return;
	}
	log_warn("model %s (%s) at %s; NO API key configured: the agent "
	    "answers only servers that need none (set %s in the environment "
	    "or api-key-file in atrium.conf)", c->model, c->provider, url,
	    keys_env_name(keys_index(c->provider)));
}

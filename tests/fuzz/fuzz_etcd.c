/*
 * fuzz_etcd.c: libFuzzer entry point for cluster/etcd.c's parsers of the
 * etcd gateway's answers (bytes from any endpoint named by --cluster, or
 * from whatever answers at its address).
 *
 * The input is one answer body, given to every parser.  Invariants: each
 * returns 0, 1 or a negative errno and nothing else; outputs are cleared
 * when it fails; every kv returned has a non-empty key without a NUL, a
 * NUL-terminated value no longer than ETCD_VALUE_MAX and a positive
 * creation revision; no more than ETCD_RANGE_MAX kvs; and base64 decodes
 * what it encodes.
 */
#include <string.h>

#include "etcd.h"
#include "fuzz.h"

static void
check_kvs(int r, struct etcd_kv *kvs, size_t n)
{
	FUZZ_CHECK(r <= 0);
	if (r < 0) {
		FUZZ_CHECK(kvs == NULL && n == 0);
		return;
	}
	FUZZ_CHECK(n <= ETCD_RANGE_MAX);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(kvs[i].key && kvs[i].key[0]);
		FUZZ_CHECK(strlen(kvs[i].key) <= ETCD_KEY_MAX);
		FUZZ_CHECK(kvs[i].val && kvs[i].len <= ETCD_VALUE_MAX);
		FUZZ_CHECK(kvs[i].val[kvs[i].len] == '\0');
		FUZZ_CHECK(kvs[i].create_rev > 0);
	}
	etcd_kvs_free(kvs, n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct etcd_kv *kvs;
	int64_t a, b;
	size_t n;
	int r, ok;

	r = etcd_parse_grant(body, size, &a, &b);
	FUZZ_CHECK(r <= 0 && (r == 0 ? a != 0 && b > 0 : a == 0 || r < 0));
	r = etcd_parse_keepalive(body, size, &a);
	FUZZ_CHECK(r <= 1 && (r != 1 || a > 0));
	r = etcd_parse_ttl(body, size, &a);
	FUZZ_CHECK(r <= 1 && (r != 1 || a > 0));
	r = etcd_parse_range(body, size, &kvs, &n);
	check_kvs(r, kvs, n);
	r = etcd_parse_txn(body, size, &ok, &kvs, &n);
	FUZZ_CHECK(ok == 0 || ok == 1);
	check_kvs(r, kvs, n);

	char *enc = etcd_b64_encode(data, size), *dec;
	size_t declen;
	FUZZ_CHECK(enc != NULL);
	FUZZ_CHECK(etcd_b64_decode(enc, strlen(enc), size, &dec, &declen) == 0);
	FUZZ_CHECK(declen == size && memcmp(dec, data, size) == 0);
	free(dec);
	free(enc);
	r = etcd_b64_decode(body, size, 64, &dec, &declen);
	FUZZ_CHECK(r == 0 ? declen <= 64 : dec == NULL);
	free(dec);
	return 0;
}

/*
 * test_sshd_admission.c: who may start an SSH handshake (sshd/net/admission.c):
 * the per-source token bucket, the per-source cap, and max-startups' fair
 * early drop, with the time and the coin given by the test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "unit.h"
#include "../../sshd/net/admission.h"

static struct admission_key
v4(const char *text)
{
	struct sockaddr_storage ss = { .ss_family = AF_INET };
	struct admission_key k;

	inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr);
	admission_key_of(&ss, &k);
	return k;
}

static struct admission_key
v6(const char *text)
{
	struct sockaddr_storage ss = { .ss_family = AF_INET6 };
	struct admission_key k;

	inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr);
	admission_key_of(&ss, &k);
	return k;
}

static void
test_parse_startups(void)
{
	struct admission_cfg c = { 0 };

	CHECK_INT(admission_parse_startups("20:30:100", &c), 0);
	CHECK(c.start == 20 && c.drop == 30 && c.full == 100);
	CHECK_INT(admission_parse_startups("10", &c), -EINVAL);
	CHECK_INT(admission_parse_startups("10:30:5", &c), -EINVAL);
	CHECK_INT(admission_parse_startups("0:30:5", &c), -EINVAL);
	CHECK_INT(admission_parse_startups("1:101:5", &c), -EINVAL);
	CHECK_INT(admission_parse_startups("1:1:5x", &c), -EINVAL);
}

/* Ten a second go through for ever; a burst beyond twice that does not,
 * and the bucket refills with time. */
static void
test_rate_per_source(void)
{
	struct admission_cfg cfg = { .rate = 10, .per_source = 0, .start = 20,
	    .drop = 30, .full = 100 };
	struct admission a;
	struct admission_key k = v4("127.0.1.1"), other = v4("127.0.1.2");
	int refused = 0;

	CHECK_INT(admission_init(&a, &cfg), 0);
	for (long long t = 0; t < 60000; t += 100)
		refused += admission_check(&a, &k, t, 0, 0, 0) != ADMIT;
	CHECK_INT(refused, 0);
	for (int i = 0; i < 40; i++)
		refused += admission_check(&a, &k, 60000, 0, 0, 0) == REFUSE_RATE;
	CHECK(refused >= 19 && refused <= 21);
	CHECK_INT(admission_check(&a, &other, 60000, 0, 0, 0), ADMIT);
	CHECK_INT(admission_check(&a, &k, 61000, 0, 0, 0), ADMIT);
	admission_free(&a);
}

/* Past START a source that already holds a handshake may be dropped; a new
 * source never is, and at FULL it pushes the busiest source's out. */
static void
test_early_drop_is_fair(void)
{
	struct admission_cfg cfg = { .rate = 0, .per_source = 10, .start = 20,
	    .drop = 30, .full = 100 };
	struct admission a;
	struct admission_key k = v4("10.1.1.1");
	int dropped = 0;

	CHECK_INT(admission_init(&a, &cfg), 0);
	CHECK_INT(admission_check(&a, &k, 0, 19, 5, 0), ADMIT);
	CHECK_INT(admission_check(&a, &k, 0, 20, 5, 29), REFUSE_EARLY);
	CHECK_INT(admission_check(&a, &k, 0, 20, 5, 30), ADMIT);
	for (int coin = 0; coin < 100; coin++)
		dropped += admission_check(&a, &k, 0, 60, 5, coin) ==
		    REFUSE_EARLY;
	CHECK_INT(dropped, 30 + 70 * 40 / 80);
	CHECK_INT(admission_check(&a, &k, 0, 100, 1, 99), REFUSE_EARLY);
	CHECK_INT(admission_check(&a, &k, 0, 99, 0, 0), ADMIT);
	CHECK_INT(admission_check(&a, &k, 0, 100, 0, 0), ADMIT_EVICT);
	CHECK_INT(admission_check(&a, &k, 0, 5, 10, 0), REFUSE_SOURCE);
	admission_free(&a);
}

/* IPv6 sources are /64s; a v4-mapped address is its IPv4 source. */
static void
test_sources(void)
{
	struct admission_key a = v6("2001:db8:1:2::1"), b = v6("2001:db8:1:2::ff"),
	    c = v6("2001:db8:1:3::1"), m = v6("::ffff:192.0.2.7"),
	    p = v4("192.0.2.7");

	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	CHECK(memcmp(&a, &c, sizeof(a)) != 0);
	CHECK(memcmp(&m, &p, sizeof(m)) == 0);
}

/* The table stays bounded: more sources than slots replace the oldest. */
static void
test_table_is_bounded(void)
{
	struct admission_cfg cfg = { .rate = 1, .per_source = 0, .start = 20,
	    .drop = 30, .full = 100 };
	struct admission a;

	CHECK_INT(admission_init(&a, &cfg), 0);
	for (int i = 0; i < ADMISSION_SOURCES + 100; i++) {
		struct admission_key k = { .b = { (uint8_t)i, (uint8_t)(i >> 8) } };

		CHECK_INT(admission_check(&a, &k, i, 0, 0, 0), ADMIT);
	}
	CHECK_INT(a.used, ADMISSION_SOURCES);
	admission_free(&a);
}

int
main(void)
{
	TEST(test_parse_startups);
	TEST(test_rate_per_source);
	TEST(test_early_drop_is_fair);
	TEST(test_sources);
	TEST(test_table_is_bounded);
	return unit_done("sshd_admission");
}

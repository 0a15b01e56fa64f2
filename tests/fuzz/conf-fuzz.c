/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness of the configuration parser (make fuzz), also linked
 * with conf-replay.c into a TAP program that make check runs on the corpus.
 *
 * Invariants checked on every input, beyond memory safety:
 *  - a refused value leaves the configuration byte for byte unchanged;
 *  - every key of the result formats, and the text parses back to the
 *    same bytes (what tp_ctl_get prints, a file can say);
 *  - every message is one line of printable text, however hostile the
 *    input, and every refusal logs at least one error;
 *  - a suggested key exists.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctl/conf.h"
#include "ctl/stats.h"
#include "tests/fuzz/conf-fuzz.h"

static unsigned errors_logged;

static void check(bool cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "conf-fuzz: invariant broken: %s\n", what);
		abort();
	}
}

static void on_log(enum tp_log_level level, const char *msg, void *priv)
{
	size_t n = strlen(msg);

	check(n < 1024, "message shorter than the log buffer");
	for (size_t i = 0; i < n; i++)
		check((unsigned char)msg[i] >= 0x20 && msg[i] != 0x7f,
		      "message free of control bytes");
	if (level == TP_LOG_ERROR)
		errors_logged++;
}

/* Every key formats and reads back as the same bytes. */
static void check_round_trip(const struct tp_conf *c)
{
	for (size_t i = 0; i < tp_conf_nkeys; i++) {
		const struct tp_conf_key *k = &tp_conf_keys[i];
		struct tp_conf again = *c;
		char text[400];

		check(tp_conf_format(c, k, text, sizeof(text)) == 0,
		      "every key formats");
		check(tp_conf_set(&again, k->key, text, "fuzz", 0) == 0,
		      "a formatted value parses");
		check(!memcmp(&again, c, sizeof(again)),
		      "a formatted value reads back as the same bytes");
	}
}

static int one_value(struct tp_conf *c, char *s)
{
	struct tp_conf before = *c;
	char *eq = strchr(s, '=');
	int rc;

	if (!eq)
		return 0;
	*eq = 0;
	rc = tp_conf_set(c, s, eq + 1, "fuzz", 1);
	if (rc)
		check(!memcmp(&before, c, sizeof(before)),
		      "a refused value changes nothing");
	return rc == 0;
}

int conf_fuzz_one(const uint8_t *data, size_t size)
{
	struct tp_conf c;
	const char *near;
	char *s;
	int accepted = 0, rc;

	tp_set_log(on_log, NULL);
	errors_logged = 0;
	tp_conf_defaults(&c);
	check(errors_logged == 0, "defaults parse");

	/* The string forms stop at a NUL, as a C caller's string would. */
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;

	switch (size ? data[0] : 0) {
	case 'O':
		rc = tp_conf_apply_opts(&c, s + 1, "fuzz");
		accepted = rc == 0;
		break;
	case 'V':
		accepted = one_value(&c, s + 1);
		break;
	case 'S':
		near = tp_conf_suggest(s + 1);
		check(!near || tp_conf_find(near) || tp_stat_find(near),
		      "a suggestion is a known key");
		accepted = near != NULL;
		break;
	default: {
		unsigned nerr = 0;

		rc = tp_conf_parse_text(&c, (const char *)data, size, "fuzz",
					&nerr);
		check((rc == 0) == (nerr == 0), "errors counted");
		check(nerr <= errors_logged, "every error logged");
		accepted = rc == 0 && tp_conf_check(&c, "fuzz") == 0;
		break;
	}
	}
	if (!accepted && data[0] != 'S')
		check(errors_logged > 0 || (size && data[0] == 'V' && !strchr(s + 1, '=')),
		      "a refusal says why");
	check_round_trip(&c);
	free(s);
	return accepted;
}

#ifdef TP_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	conf_fuzz_one(data, size);
	return 0;
}
#endif

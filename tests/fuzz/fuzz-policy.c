/*
 * libFuzzer target for policy/: the first byte picks what the rest of the input is.
 *   0: a policy file for hezo_policy_parse (and, when it parses, its JSON dump parsed again);
 *   1: a config.json put in the default box by hezo_policy_apply_spec;
 *   2: an exec process JSON, then an update resources JSON (same bytes), clamped.
 * Whatever apply accepts must leave no key that runc's Go decoder would fold onto a spec field
 * without its exact spelling, and no two keys of one object that fold together.
 * Build and run from the source root:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec -Ipolicy \
 *     tests/fuzz/fuzz-policy.c policy/parse.c policy/apply.c policy/seccomp.c policy/util.c \
 *     spec/json.c spec/keys.c base/error.c base/file.c base/log.c \
 *     $(pkg-config --cflags --libs yajl libcap libseccomp) -o fuzz-policy
 *   mkdir -p corpus && ./fuzz-policy -max_total_time=60 corpus
 * Seeds: etc/policy.json behind a 0x00 byte, tests/data/config-*.json behind 0x01.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-policy.h"
#include "hezo-spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hezo_policy *default_policy(void)
{
	static struct hezo_policy *p;
	struct hezo_error *err = NULL;

	if (!p && hezo_policy_parse("{}", 2, "(fuzz)", &p, &err) < 0)
		abort();
	return p;
}

static void fuzz_policy(const char *buf, size_t len)
{
	struct hezo_policy *p = NULL, *q = NULL;
	struct hezo_error *err = NULL;
	struct hezo_json *j;
	char *text = NULL;
	size_t tlen = 0;

	if (hezo_policy_parse(buf, len, "(fuzz)", &p, &err) < 0) {
		if (!err || !err->msg)
			abort(); /* every refusal must say why */
		hezo_error_free(err);
		return;
	}
	/* What `policy show` prints must be a policy that parses to the same thing. */
	j = hezo_policy_to_json(p);
	if (!j || hezo_json_dump(j, false, &text, &tlen, &err) < 0)
		abort();
	if (hezo_policy_parse(text, tlen, "(fuzz)", &q, &err) < 0)
		abort();
	hezo_json_free(j);
	hezo_json_free(hezo_policy_egress_json(p));
	free(text);
	hezo_policy_free(q);
	hezo_policy_free(p);
}

/* What apply let through (and what it added) reads to runc as it reads to the shim. */
static void keys_spelled_exactly(const struct hezo_json *v, enum hezo_spec_doc kind)
{
	struct hezo_error *err = NULL;

	if (hezo_spec_check_keys(v, kind, "(fuzz)", &err) < 0)
		abort();
}

static void fuzz_spec(const char *buf, size_t len, int mode)
{
	struct hezo_json *v = NULL;
	struct hezo_error *err = NULL;

	if (hezo_json_parse(buf, len, &v, &err) < 0) {
		hezo_error_free(err);
		return;
	}
	if (mode == 1) {
		if (hezo_policy_apply_spec(default_policy(), v, NULL, &err) == 0)
			keys_spelled_exactly(v, HEZO_SPEC_DOC_CONFIG);
	} else {
		if (hezo_policy_apply_process(default_policy(), v, &err) == 0)
			keys_spelled_exactly(v, HEZO_SPEC_DOC_PROCESS);
		hezo_error_free(err);
		err = NULL;
		if (hezo_policy_apply_resources(default_policy(), v, &err) == 0)
			keys_spelled_exactly(v, HEZO_SPEC_DOC_RESOURCES);
	}
	hezo_error_free(err);
	hezo_json_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_policy((const char *)data + 1, size - 1);
		break;
	default:
		fuzz_spec((const char *)data + 1, size - 1, data[0] % 3);
		break;
	}
	return 0;
}

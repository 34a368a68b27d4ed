/*
 * libFuzzer target for exec's --process JSON through the policy (hezo_policy_apply_process), as
 * shim/exec.c reads it: the first byte picks one of a few policies, the rest is the document.
 * Whatever the policy accepts must hold only allowed capabilities and survive a dump/parse trip.
 *
 * Build and run from the source root:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec -Iegress \
 *     -Ipolicy tests/fuzz/fuzz-process.c policy/[a-z]*.c egress/[a-z]*.c \
 *     spec/json.c spec/keys.c base/[a-z]*.c \
 *     $(pkg-config --cflags --libs yajl libcap libseccomp) -o /tmp/fuzz-process
 *   /tmp/fuzz-process -runs=1000000 /tmp/process-corpus tests/fuzz/corpus/process
 * Seeds: tests/data/process-*.json behind a byte 0x00..0x02.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
	const char *text;
	bool nnp;
} policies[] = {
	{"{}", true},
	{"{\"capabilities\":[\"CAP_NET_BIND_SERVICE\",\"CAP_CHOWN\",\"CAP_KILL\"]}", true},
	{"{\"version\":1,\"mode\":\"dev\",\"backend\":\"runc\",\"allowBackends\":[\"runc\"],"
	 "\"capabilities\":[\"CAP_SYS_ADMIN\",\"CAP_NET_RAW\"],\"noNewPrivileges\":false,"
	 "\"egress\":{\"mode\":\"off\"}}",
	 false},
};

#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

static const struct hezo_policy *policy(size_t i)
{
	static struct hezo_policy *p[NPOLICIES];
	struct hezo_error *err = NULL;

	if (!p[i] && hezo_policy_parse(policies[i].text, strlen(policies[i].text), "(fuzz)", &p[i],
				       &err) < 0)
		abort(); /* the harness's own policies must parse */
	return p[i];
}

static void check_caps(const struct hezo_policy *p, const struct hezo_json *proc)
{
	static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted",
					   "ambient"};
	const struct hezo_json *caps = hezo_json_get(proc, "capabilities");

	/* runc keeps everything when capabilities is missing: it must always be written. */
	if (!caps || caps->type != HEZO_JSON_OBJECT)
		abort();
	for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
		const struct hezo_json *set = hezo_json_get(caps, sets[s]);

		if (!set || set->type != HEZO_JSON_ARRAY)
			abort();
		HEZO_JSON_FOREACH (i, set) {
			const char *name = hezo_json_string(set->items[i]);

			if (!name || !hezo_policy_cap_allowed(p, name))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_json_ struct hezo_json *proc = NULL, *again = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *out = NULL;
	const struct hezo_policy *p;
	size_t which, len = 0;

	if (size < 1)
		return 0;
	which = data[0] % NPOLICIES;
	p = policy(which);
	if (hezo_json_parse((const char *)data + 1, size - 1, &proc, &err) < 0)
		return 0;
	if (hezo_policy_apply_process(p, proc, &err) < 0) {
		/* A refusal is fine; a refusal that does not say why is not. */
		if (!err || !err->msg || !*err->msg || strchr(err->msg, '\n'))
			abort();
		return 0;
	}
	check_caps(p, proc);
	if (policies[which].nnp && !hezo_json_is_true(hezo_json_get(proc, "noNewPrivileges")))
		abort();
	/* The clamped process goes to the backend as text: it must dump and parse back. */
	if (hezo_json_dump(proc, false, &out, &len, &err) < 0)
		abort();
	if (hezo_json_parse(out, len, &again, &err) < 0 || !hezo_json_equal(proc, again))
		abort();
	/* Clamping is idempotent: a second pass changes nothing. */
	if (hezo_policy_apply_process(p, again, &err) < 0 || !hezo_json_equal(proc, again))
		abort();
	return 0;
}

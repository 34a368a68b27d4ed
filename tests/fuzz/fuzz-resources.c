/*
 * libFuzzer target for update's --resources JSON through the policy
 * (hezo_policy_apply_resources), as shim/update.c reads it: the first byte picks one of a few
 * policies, the rest is the document. Whatever the policy accepts must lie inside its ceilings.
 *
 * Build and run from the source root:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec -Iegress \
 *     -Ipolicy tests/fuzz/fuzz-resources.c policy/[a-z]*.c egress/[a-z]*.c \
 *     spec/json.c spec/keys.c base/[a-z]*.c \
 *     $(pkg-config --cflags --libs yajl libcap libseccomp) -o /tmp/fuzz-resources
 *   /tmp/fuzz-resources -runs=1000000 /tmp/resources-corpus tests/fuzz/corpus/resources
 * Seeds: tests/data/resources-*.json behind a byte 0x00..0x02.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define GIB (1024LL * 1024 * 1024)

/* Each policy with the ceilings the clamped document must respect. */
static const struct {
	const char *text;
	int64_t memory, swap, pids; /* pids: the ceiling including runsc's headroom */
	int64_t cpus_milli;
	bool idempotent; /* runsc adds its headroom on every pass, so only others are */
} policies[] = {
	{"{}", 2 * GIB, 0, 256 + 128, 2000, false},
	{"{\"version\":1,\"mode\":\"dev\",\"backend\":\"runc\",\"allowBackends\":[\"runc\"],"
	 "\"resources\":{\"pids\":64,\"memory\":\"512m\",\"swap\":\"1g\",\"cpus\":0.5},"
	 "\"egress\":{\"mode\":\"off\"}}",
	 512LL * 1024 * 1024, GIB, 64, 500, true},
	{"{\"resources\":{\"pids\":100000,\"memory\":\"1048576g\",\"swap\":\"1048576g\","
	 "\"cpus\":64},\"backends\":{\"runsc\":{\"pidsHeadroom\":0}}}",
	 1048576 * GIB, 1048576 * GIB, 100000, 64000, false},
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

/* A whole number at obj.key, or false when absent or not a number. */
static bool num(const struct hezo_json *obj, const char *key, int64_t *out)
{
	const struct hezo_json *v = hezo_json_get(obj, key);

	return v && v->type == HEZO_JSON_NUMBER && hezo_json_get_int64(v, out) == 0;
}

static void check(size_t which, const struct hezo_json *in, const struct hezo_json *res)
{
	const struct hezo_json *mem = hezo_json_get(res, "memory");
	const struct hezo_json *pids = hezo_json_get(res, "pids");
	const struct hezo_json *cpu = hezo_json_get(res, "cpu");
	int64_t limit, swap, n, quota, period;
	bool has_limit;

	/* update: what the engine did not mention stays unmentioned (unchanged). */
	if ((!hezo_json_get(in, "memory") && mem) || (!hezo_json_get(in, "pids") && pids) ||
	    (!hezo_json_get(in, "cpu") && cpu))
		abort();

	/* 0 is "unchanged" (runc skips it): it may stay, anything else is within the box. */
	has_limit = num(mem, "limit", &limit) && limit != 0;
	if (has_limit && (limit < 0 || limit > policies[which].memory))
		abort();
	if (num(mem, "swap", &swap) && swap != 0) {
		/* swap is memory+swap: never below the limit, never above limit + policy swap. */
		if (has_limit && (swap < limit || swap - limit > policies[which].swap))
			abort();
		if (swap < 0 || swap > policies[which].memory + policies[which].swap)
			abort();
	}
	if (num(pids, "limit", &n) && n != 0 && (n < 0 || n > policies[which].pids))
		abort();
	if (num(cpu, "quota", &quota) && quota != 0) {
		if (!num(cpu, "period", &period) || period <= 0 || period > 1000000)
			abort();
		/* quota/period <= cpus, with the kernel's 1 ms minimum quota met by a longer
		 * period. */
		if (quota < 1000 ||
		    (__int128)quota * 1000 > (__int128)policies[which].cpus_milli * period)
			abort();
	} else if (num(cpu, "period", &period) && period != 0) {
		abort(); /* a period alone would change the ratio */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_json_ struct hezo_json *in = NULL, *res = NULL, *again = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *out = NULL;
	size_t which, len = 0;

	if (size < 1)
		return 0;
	which = data[0] % NPOLICIES;
	if (hezo_json_parse((const char *)data + 1, size - 1, &res, &err) < 0)
		return 0;
	if (res->type != HEZO_JSON_OBJECT)
		return 0; /* shim/update.c refuses these before the policy sees them */
	in = hezo_json_clone(res);
	if (!in)
		abort();
	if (hezo_policy_apply_resources(policy(which), res, NULL, &err) < 0) {
		if (!err || !err->msg || !*err->msg || strchr(err->msg, '\n'))
			abort();
		return 0;
	}
	check(which, in, res);
	/* The clamped object reaches the backend as text: it must dump and parse back. */
	if (hezo_json_dump(res, false, &out, &len, &err) < 0)
		abort();
	if (hezo_json_parse(out, len, &again, &err) < 0 || !hezo_json_equal(res, again))
		abort();
	if (policies[which].idempotent &&
	    (hezo_policy_apply_resources(policy(which), again, NULL, &err) < 0 ||
	     !hezo_json_equal(res, again)))
		abort();
	return 0;
}

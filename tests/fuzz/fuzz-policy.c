/*
 * libFuzzer target for policy/: the first byte picks what the rest of the input is.
 *   0: a policy file for hezo_policy_parse (and, when it parses, its JSON dump parsed again);
 *   1: a config.json put in the default box by hezo_policy_apply_spec;
 *   2: an exec process JSON, then an update resources JSON (same bytes), clamped.
 * Whatever apply accepts must leave no key that runc's Go decoder would fold onto a spec field
 * without its exact spelling, and no two keys of one object that fold together. And the box must
 * hold: no mount outside the allowed shapes (kernel filesystems once at their place, no loosening
 * option, no bind in the default policy, which allows no source and trusts no engine file without
 * an env), RTPRIO and NICE at 0, oomScoreAdj not below 0.
 * Build and run from the source root:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec -Iegress \
 *     -Ipolicy tests/fuzz/fuzz-policy.c policy/[a-z]*.c egress/[a-z]*.c \
 *     spec/json.c spec/keys.c base/[a-z]*.c \
 *     $(pkg-config --cflags --libs yajl libcap libseccomp) -o fuzz-policy
 *   mkdir -p corpus && ./fuzz-policy -max_total_time=60 corpus
 * Seeds: etc/policy.json behind a 0x00 byte, tests/data/config-*.json behind 0x01.
 */
#include <stdbool.h>
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

static bool is(const char *s, const char *t)
{
	return s && strcmp(s, t) == 0;
}

/* The process the box lets run: RTPRIO and NICE present and at 0, oomScoreAdj not below 0. */
static void check_process(const struct hezo_json *process)
{
	const struct hezo_json *rls = hezo_json_get(process, "rlimits");
	const struct hezo_json *oom = hezo_json_get(process, "oomScoreAdj");
	unsigned found = 0;
	int64_t n;

	if (!rls || rls->type != HEZO_JSON_ARRAY)
		abort();
	HEZO_JSON_FOREACH (i, rls) {
		const char *type = hezo_json_string(hezo_json_get(rls->items[i], "type"));
		bool rt = is(type, "RLIMIT_RTPRIO");

		if (!rt && !is(type, "RLIMIT_NICE"))
			continue;
		found |= rt ? 1 : 2;
		for (int k = 0; k < 2; k++) {
			const struct hezo_json *v =
				hezo_json_get(rls->items[i], k ? "soft" : "hard");
			uint64_t u;
			if (v && (hezo_json_get_uint64(v, &u) < 0 || u != 0))
				abort();
		}
	}
	if (found != 3)
		abort();
	if (oom && oom->type != HEZO_JSON_NULL && (hezo_json_get_int64(oom, &n) < 0 || n < 0))
		abort();
}

/* dest with "//", "/./" and a trailing "/" taken out: as runc resolves it, so they hide no place.
 */
static char *clean_dest(const char *dest)
{
	char *out = malloc(strlen(dest) + 2), *w = out;

	if (!out)
		abort();
	for (const char *r = dest; *r;) {
		if (r[0] == '/' && r[1] == '/')
			r++;
		else if (r[0] == '/' && r[1] == '.' && (r[2] == '/' || r[2] == '\0'))
			r += 2;
		else
			*w++ = *r++;
	}
	if (w > out + 1 && w[-1] == '/')
		w--;
	*w = '\0';
	return out;
}

/* Every mount that survived apply with the default policy is one of the allowed shapes. */
static void check_mounts(const struct hezo_json *spec)
{
	static const char *const places[][2] = {
		{"proc", "/proc"},
		{"sysfs", "/sys"},
		{"cgroup", "/sys/fs/cgroup"},
		{"cgroup2", "/sys/fs/cgroup"},
		{"mqueue", "/dev/mqueue"},
		{"devpts", "/dev/pts"},
	};
	static const char *const loosening[] = {"remount",    "rrw",	"rsuid",   "rdev", "rexec",
						"rsymfollow", "shared", "rshared", "bind", "rbind"};
	static const char *const tmpfs_data[] = {
		"size=", "mode=", "uid=", "gid=", "nr_inodes=", "nr_blocks="};
	const struct hezo_json *mounts = hezo_json_get(spec, "mounts");
	unsigned seen[6] = {0};

	if (!mounts || mounts->type != HEZO_JSON_ARRAY)
		abort();
	HEZO_JSON_FOREACH (i, mounts) {
		const struct hezo_json *m = mounts->items[i];
		const struct hezo_json *opts = hezo_json_get(m, "options");
		const char *type = hezo_json_string(hezo_json_get(m, "type"));
		const char *dest = hezo_json_string(hezo_json_get(m, "destination"));
		char *clean;

		if (!type || !dest)
			abort();
		clean = clean_dest(dest);
		for (size_t k = 0; k < sizeof(places) / sizeof(places[0]); k++) {
			if (!is(type, places[k][0]))
				continue;
			/* cgroup and cgroup2 share one place (index 2 and 3). */
			if (!is(clean, places[k][1]) || seen[k == 3 ? 2 : k]++)
				abort();
		}
		if (is(type, "bind"))
			abort();
		HEZO_JSON_FOREACH (o, opts) {
			const char *opt = hezo_json_string(opts->items[o]);
			bool ok = !is(type, "tmpfs") || !strchr(opt, '=');

			if (!opt || strchr(opt, ','))
				abort();
			for (size_t k = 0; k < sizeof(loosening) / sizeof(loosening[0]); k++)
				if (is(opt, loosening[k]))
					abort();
			for (size_t k = 0; !ok && k < sizeof(tmpfs_data) / sizeof(tmpfs_data[0]);
			     k++)
				ok = strncmp(opt, tmpfs_data[k], strlen(tmpfs_data[k])) == 0;
			if (!ok)
				abort();
		}
		free(clean);
	}
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
		if (hezo_policy_apply_spec(default_policy(), v, NULL, &err) == 0) {
			keys_spelled_exactly(v, HEZO_SPEC_DOC_CONFIG);
			check_mounts(v);
			check_process(hezo_json_get(v, "process"));
		}
	} else {
		if (hezo_policy_apply_process(default_policy(), v, &err) == 0) {
			keys_spelled_exactly(v, HEZO_SPEC_DOC_PROCESS);
			check_process(v);
		}
		hezo_error_free(err);
		err = NULL;
		if (hezo_policy_apply_resources(default_policy(), v, NULL, &err) == 0)
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

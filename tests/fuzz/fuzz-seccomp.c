/*
 * libFuzzer target for the seccomp floor (policy/seccomp-floor.c): the input is an engine's
 * linux.seccomp, combined with hezo's built-in profile. Whatever is accepted must be a profile the
 * admin's checker takes, refuse by default, and let through only syscalls the box's profile lets
 * through (tests/unit/shim/test_seccomp_floor.c checks the verdicts call by call).
 *
 * Build and run from the source root (meson -Dfuzz=true with clang builds it too):
 *   /tmp/fuzz-seccomp -runs=1000000 /tmp/seccomp-corpus tests/fuzz/corpus/seccomp
 * Seeds: Docker's default profile, an allow-all one, stricter ones, argument rules.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool allowing(const struct hezo_json *rule)
{
	const char *a = hezo_json_string(hezo_json_get(rule, "action"));
	return a && (strcmp(a, "SCMP_ACT_ALLOW") == 0 || strcmp(a, "SCMP_ACT_LOG") == 0);
}

/* Does some allowing rule of prof name syscall? */
static bool names_allowed(const struct hezo_json *prof, const char *name)
{
	const struct hezo_json *sys = hezo_json_get(prof, "syscalls");

	HEZO_JSON_FOREACH (i, sys) {
		const struct hezo_json *names = hezo_json_get(sys->items[i], "names");
		if (!allowing(sys->items[i]))
			continue;
		HEZO_JSON_FOREACH (j, names)
			if (strcmp(hezo_json_string(names->items[j]) ?: "", name) == 0)
				return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hezo_json *box;
	struct hezo_json *eng = NULL, *out = NULL, *checked = NULL;
	struct hezo_error *err = NULL;
	const struct hezo_json *sys;
	const char *def;

	if (!box && !(box = hezo_policy_seccomp_default()))
		abort();
	if (hezo_json_parse((const char *)data, size, &eng, &err) < 0) {
		hezo_error_free(err);
		return 0;
	}
	if (hezo_policy_seccomp_floor(box, eng, &out, &err) < 0) {
		if (!err || !err->msg[0] || strchr(err->msg, '\n'))
			abort(); /* a refusal is one line */
		hezo_error_free(err);
		hezo_json_free(eng);
		return 0;
	}
	if (hezo_policy_seccomp_check(out, &checked, &err) < 0)
		abort();
	def = hezo_json_string(hezo_json_get(out, "defaultAction"));
	if (!def || strcmp(def, "SCMP_ACT_ALLOW") == 0 || strcmp(def, "SCMP_ACT_LOG") == 0)
		abort();
	sys = hezo_json_get(out, "syscalls");
	HEZO_JSON_FOREACH (i, sys) {
		const struct hezo_json *names = hezo_json_get(sys->items[i], "names");
		if (!allowing(sys->items[i]))
			continue;
		HEZO_JSON_FOREACH (j, names)
			if (!names_allowed(box, hezo_json_string(names->items[j]) ?: ""))
				abort();
	}
	hezo_json_free(checked);
	hezo_json_free(out);
	hezo_json_free(eng);
	return 0;
}

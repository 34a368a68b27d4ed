/*
 * linux.seccomp rewritten for runsc's OCI converter, which answers every SCMP_ACT_ERRNO with EPERM
 * whatever errnoRet says, so that the ENOSYS answers libc falls back on (clone3) stay ENOSYS.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "shim.h"

static bool names_ptrace(const struct hezo_json *rule)
{
	const struct hezo_json *names = hezo_json_get_type(rule, "names", HEZO_JSON_ARRAY);

	HEZO_JSON_FOREACH (i, names)
		if (strcmp(hezo_json_string(names->items[i]) ?: "", "ptrace") == 0)
			return true;
	return false;
}

/*
 * Could a process in the container become a tracer? Only then can SCMP_ACT_TRACE let a call run;
 * without one the Sentry (as Linux) answers it with ENOSYS and never runs it.
 */
static bool ptrace_reachable(const struct hezo_json *prof)
{
	const struct hezo_json *rules = hezo_json_get_type(prof, "syscalls", HEZO_JSON_ARRAY);

	if (!hezo_policy_seccomp_refuses(hezo_json_string(hezo_json_get(prof, "defaultAction"))))
		return true;
	HEZO_JSON_FOREACH (i, rules)
		if (names_ptrace(rules->items[i]) &&
		    !hezo_policy_seccomp_refuses(
			    hezo_json_string(hezo_json_get(rules->items[i], "action"))))
			return true;
	return false;
}

static bool errno_is(const struct hezo_json *obj, const char *action_key, const char *errno_key,
		     uint64_t want)
{
	uint64_t n;

	return strcmp(hezo_json_string(hezo_json_get(obj, action_key)) ?: "", "SCMP_ACT_ERRNO") ==
		       0 &&
	       hezo_json_get_uint64(hezo_json_get(obj, errno_key), &n) == 0 && n == want;
}

static int to_trace(struct hezo_json *obj, const char *action_key, const char *errno_key)
{
	int r = hezo_json_set(obj, action_key, hezo_json_new_string("SCMP_ACT_TRACE"));

	return r ?: hezo_json_remove(obj, errno_key);
}

int shim_runsc_seccomp_enosys(struct hezo_json *spec, unsigned *rewritten, struct hezo_error **err)
{
	struct hezo_json *prof = hezo_json_get_path(spec, "linux.seccomp");
	struct hezo_json *rules;
	unsigned n = 0;
	int r;

	*rewritten = 0;
	if (!prof || prof->type != HEZO_JSON_OBJECT || ptrace_reachable(prof))
		return 0;
	if (errno_is(prof, "defaultAction", "defaultErrnoRet", ENOSYS)) {
		r = to_trace(prof, "defaultAction", "defaultErrnoRet");
		if (r < 0)
			return hezo_error_set(err, -r, "runsc: linux.seccomp: out of memory");
		n++;
	}
	rules = hezo_json_get_type(prof, "syscalls", HEZO_JSON_ARRAY);
	HEZO_JSON_FOREACH (i, rules) {
		if (!errno_is(rules->items[i], "action", "errnoRet", ENOSYS))
			continue;
		r = to_trace(rules->items[i], "action", "errnoRet");
		if (r < 0)
			return hezo_error_set(err, -r, "runsc: linux.seccomp: out of memory");
		n++;
	}
	*rewritten = n;
	return 0;
}

/* The box's last word on seccomp: whatever profile it ends with, no call of the box may give a file
 * a set-user-id or set-group-id bit (docs/hardening.md, "What a box can leave on the host"). */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "policy-internal.h"

#define SETID_BITS 06000u
/* O_TMPFILE without O_DIRECTORY: the bit that makes open take a mode besides O_CREAT. */
#define OPEN_MODE_FLAGS ((uint64_t)O_CREAT | 020000000u)

/*
 * The calls that set a mode, and where it stands. flags: the index of open's flags (the mode is
 * read only with O_CREAT or O_TMPFILE), -1 when the mode is always read.
 */
static const struct {
	const char *name;
	int mode, flags;
} mode_calls[] = {
	{"chmod", 1, -1},   {"fchmod", 1, -1}, {"fchmodat", 2, -1}, {"fchmodat2", 2, -1},
	{"creat", 1, -1},   {"open", 2, 1},    {"openat", 3, 2},    {"mknod", 1, -1},
	{"mknodat", 2, -1}, {"mkdir", 1, -1},  {"mkdirat", 2, -1},
};

/*
 * Calls that take their mode in memory a filter cannot read: ENOSYS, which libc and io_uring's
 * users answer by falling back to the calls above.
 */
static const char *const opaque_calls[] = {"openat2", "io_uring_setup"};

bool hezo_policy_seccomp_refuses(const char *action)
{
	static const char *const deny[] = {"SCMP_ACT_ERRNO", "SCMP_ACT_KILL",
					   "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
					   "SCMP_ACT_TRAP"};

	for (size_t i = 0; action && i < HEZO_ARRAY_SIZE(deny); i++)
		if (strcmp(action, deny[i]) == 0)
			return true;
	return false;
}

static const char *action_of(const struct hezo_json *rule)
{
	return hezo_json_string(hezo_json_get(rule, "action")) ?: "";
}

/* A rule's errnoRet, -1 when it has none. */
static int64_t errno_of(const struct hezo_json *rule)
{
	uint64_t n;

	return hezo_json_get_uint64(hezo_json_get(rule, "errnoRet"), &n) == 0 ? (int64_t)n : -1;
}

static size_t rule_nargs(const struct hezo_json *rule)
{
	const struct hezo_json *a = hezo_json_get_type(rule, "args", HEZO_JSON_ARRAY);
	return a ? a->len : 0;
}

static ssize_t name_at(const struct hezo_json *rule, const char *name)
{
	const struct hezo_json *names = hezo_json_get_type(rule, "names", HEZO_JSON_ARRAY);

	HEZO_JSON_FOREACH (i, names)
		if (strcmp(hezo_json_string(names->items[i]) ?: "", name) == 0)
			return (ssize_t)i;
	return -1;
}

static struct hezo_json *masked_eq(int index, uint64_t mask, uint64_t value)
{
	_cleanup_json_ struct hezo_json *a = hezo_json_new_object();

	if (!a || hezo_json_set(a, "index", hezo_json_new_uint((uint64_t)index)) < 0 ||
	    hezo_json_set(a, "value", hezo_json_new_uint(mask)) < 0 ||
	    hezo_json_set(a, "valueTwo", hezo_json_new_uint(value)) < 0 ||
	    hezo_json_set(a, "op", hezo_json_new_string("SCMP_CMP_MASKED_EQ")) < 0)
		return NULL;
	return TAKE_PTR(a);
}

/* A rule for name alone: action (errnoRet when >= 0), the comparisons base holds (may be NULL). */
static struct hezo_json *one_rule(const char *name, const char *action, int64_t errno_ret,
				  const struct hezo_json *base_args)
{
	_cleanup_json_ struct hezo_json *r = hezo_json_new_object();
	struct hezo_json *names = r ? hezo_json_ensure_array(r, "names") : NULL;
	struct hezo_json *args;

	if (!names || hezo_json_append(names, hezo_json_new_string(name)) < 0 ||
	    hezo_json_set(r, "action", hezo_json_new_string(action)) < 0)
		return NULL;
	if (errno_ret >= 0 && hezo_json_set(r, "errnoRet", hezo_json_new_int(errno_ret)) < 0)
		return NULL;
	args = hezo_json_ensure_array(r, "args");
	if (!args)
		return NULL;
	HEZO_JSON_FOREACH (i, base_args)
		if (hezo_json_append(args, hezo_json_clone(base_args->items[i])) < 0)
			return NULL;
	return TAKE_PTR(r);
}

/*
 * Add cmp to rule r's comparisons: 1 when r then holds it. A different comparison of the same
 * argument cannot be ANDed the same way by every backend (runc ORs them): 0, r is not used.
 */
static int add_cmp(struct hezo_json *r, struct hezo_json *cmp)
{
	_cleanup_json_ struct hezo_json *c = cmp;
	struct hezo_json *args = hezo_json_ensure_array(r, "args");
	uint64_t idx, want;

	if (!c || !args || hezo_json_get_uint64(hezo_json_get(c, "index"), &want) < 0)
		return -ENOMEM;
	HEZO_JSON_FOREACH (i, args)
		if (hezo_json_get_uint64(hezo_json_get(args->items[i], "index"), &idx) < 0 ||
		    idx == want)
			return hezo_json_equal(args->items[i], c) ? 1 : 0;
	if (hezo_json_append(args, TAKE_PTR(c)) < 0)
		return -ENOMEM;
	return 1;
}

/* Append r unless an equal rule is there already (a profile guarded twice stays the same). */
static int append_rule(struct hezo_json *syscalls, struct hezo_json *rule)
{
	_cleanup_json_ struct hezo_json *r = rule;

	if (!r)
		return -ENOMEM;
	HEZO_JSON_FOREACH (i, syscalls)
		if (hezo_json_equal(syscalls->items[i], r))
			return 0;
	return hezo_json_append(syscalls, TAKE_PTR(r));
}

/* Does a comparison of args already keep set-id bits out (a rule of an earlier guard)? */
static bool already_safe(const struct hezo_json *args, size_t k)
{
	_cleanup_json_ struct hezo_json *m = masked_eq(mode_calls[k].mode, SETID_BITS, 0);
	_cleanup_json_ struct hezo_json *f =
		mode_calls[k].flags >= 0 ? masked_eq(mode_calls[k].flags, OPEN_MODE_FLAGS, 0)
					 : NULL;

	HEZO_JSON_FOREACH (i, args)
		if ((m && hezo_json_equal(args->items[i], m)) ||
		    (f && hezo_json_equal(args->items[i], f)))
			return true;
	return false;
}

/* Do two comparisons of args name one argument? runc installs each as a rule of its own. */
static bool repeats_index(const struct hezo_json *args)
{
	uint64_t a, b;

	HEZO_JSON_FOREACH (i, args)
		for (size_t j = i + 1; args && j < args->len; j++)
			if (hezo_json_get_uint64(hezo_json_get(args->items[i], "index"), &a) == 0 &&
			    hezo_json_get_uint64(hezo_json_get(args->items[j], "index"), &b) == 0 &&
			    a == b)
				return true;
	return false;
}

/*
 * The calls of name that cannot give a set-id bit, under action (with errno_ret) and the
 * comparisons of base_args: the mode has neither bit, or (open) the flags make it unread. A rule
 * comparing one argument twice is ORed comparison by comparison (runc, runsc), so no comparison
 * added to it holds: it is dropped, and its calls meet the refusing default (rt ws3, F1).
 */
static int add_safe(struct hezo_json *syscalls, size_t k, const char *action, int64_t errno_ret,
		    const struct hezo_json *base_args)
{
	if (repeats_index(base_args))
		return 0;
	if (already_safe(base_args, k))
		return append_rule(syscalls,
				   one_rule(mode_calls[k].name, action, errno_ret, base_args));
	for (int variant = 0; variant < (mode_calls[k].flags >= 0 ? 2 : 1); variant++) {
		_cleanup_json_ struct hezo_json *r =
			one_rule(mode_calls[k].name, action, errno_ret, base_args);
		int r2;

		if (!r)
			return -ENOMEM;
		r2 = variant ? add_cmp(r, masked_eq(mode_calls[k].flags, OPEN_MODE_FLAGS, 0))
			     : add_cmp(r, masked_eq(mode_calls[k].mode, SETID_BITS, 0));
		if (r2 < 0)
			return r2;
		if (r2 > 0 && append_rule(syscalls, TAKE_PTR(r)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* EPERM for every call of name that would set a set-id bit, beside a default that lets it run. */
static int add_refusals(struct hezo_json *syscalls, size_t k)
{
	static const uint64_t bits[] = {04000, 02000};
	static const uint64_t open_flags[] = {O_CREAT, 020000000u};

	for (size_t b = 0; b < HEZO_ARRAY_SIZE(bits); b++) {
		for (size_t f = 0; f < (mode_calls[k].flags >= 0 ? 2 : 1); f++) {
			_cleanup_json_ struct hezo_json *r =
				one_rule(mode_calls[k].name, "SCMP_ACT_ERRNO", EPERM, NULL);

			if (!r || add_cmp(r, masked_eq(mode_calls[k].mode, bits[b], bits[b])) < 0)
				return -ENOMEM;
			if (mode_calls[k].flags >= 0 &&
			    add_cmp(r, masked_eq(mode_calls[k].flags, open_flags[f],
						 open_flags[f])) < 0)
				return -ENOMEM;
			if (append_rule(syscalls, TAKE_PTR(r)) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* Take name out of every rule (a rule left with no name goes); its old rules go to *taken. */
static int take_name(struct hezo_json *syscalls, const char *name, struct hezo_json *taken)
{
	for (size_t i = 0; i < syscalls->len;) {
		struct hezo_json *rule = syscalls->items[i];
		ssize_t at = name_at(rule, name);
		struct hezo_json *names = hezo_json_get_type(rule, "names", HEZO_JSON_ARRAY);

		if (at < 0) {
			i++;
			continue;
		}
		if (hezo_json_append(taken, hezo_json_clone(rule)) < 0)
			return -ENOMEM;
		/* Every copy: a name twice in one rule kept it unguarded (rt ws3, F1). */
		for (; at >= 0; at = name_at(rule, name))
			if (hezo_json_remove_at(names, (size_t)at) < 0)
				return -ENOMEM;
		if (names->len == 0) {
			if (hezo_json_remove_at(syscalls, i) < 0)
				return -ENOMEM;
			continue;
		}
		i++;
	}
	return 0;
}

/*
 * Does an unconditional rule refuse name? Else *runs: a rule lets some call of it run (or hands it
 * on); *cond_runs: one that depends on arguments does.
 */
static bool always_refused(const struct hezo_json *syscalls, const char *name, bool *runs,
			   bool *cond_runs)
{
	HEZO_JSON_FOREACH (i, syscalls) {
		const struct hezo_json *rule = syscalls->items[i];
		bool refuses = hezo_policy_seccomp_refuses(action_of(rule));

		if (name_at(rule, name) < 0)
			continue;
		if (rule_nargs(rule) == 0 && refuses)
			return true;
		*runs = *runs || !refuses;
		*cond_runs = *cond_runs || (rule_nargs(rule) > 0 && !refuses);
	}
	return false;
}

static int guard_mode_call(struct hezo_json *syscalls, size_t k, const char *def_action)
{
	_cleanup_json_ struct hezo_json *taken = hezo_json_new_array();
	const char *name = mode_calls[k].name;
	bool cond_runs = false, runs = false;
	int r;

	if (!taken)
		return -ENOMEM;
	/* Refused whatever its arguments: nothing to guard. */
	if (always_refused(syscalls, name, &runs, &cond_runs))
		return 0;
	/* An unknown name cannot be ruled on; the default then answers it. */
	if (seccomp_syscall_resolve_name(name) == __NR_SCMP_ERROR)
		return 0;
	r = take_name(syscalls, name, taken);
	if (r < 0)
		return r;
	if (!hezo_policy_seccomp_refuses(def_action)) {
		/*
		 * Beside a default that lets calls run, rules that let some calls run by other
		 * arguments cannot be told apart from ours by every backend: the call is refused.
		 */
		if (cond_runs) {
			_cleanup_json_ struct hezo_json *deny =
				one_rule(name, "SCMP_ACT_ERRNO", EPERM, NULL);
			if (!deny || hezo_json_remove(deny, "args") < 0 ||
			    hezo_json_append(syscalls, TAKE_PTR(deny)) < 0)
				return -ENOMEM;
			return 0;
		}
		/*
		 * The old rules: refusals by argument stay, and one that lets every call run (or
		 * hands it on) other than the default way keeps doing so for the safe calls.
		 */
		HEZO_JSON_FOREACH (i, taken) {
			const struct hezo_json *t = taken->items[i];
			int64_t ret = errno_of(t);

			if (hezo_policy_seccomp_refuses(action_of(t)))
				r = append_rule(syscalls, one_rule(name, action_of(t), ret,
								   hezo_json_get(t, "args")));
			else if (strcmp(action_of(t), def_action) == 0)
				r = 0;
			else
				r = add_safe(syscalls, k, action_of(t), ret, NULL);
			if (r < 0)
				return r;
		}
		return add_refusals(syscalls, k);
	}
	/* A refusing default: only the safe calls of each rule that let the call run stay. */
	HEZO_JSON_FOREACH (i, taken) {
		const struct hezo_json *t = taken->items[i];
		int64_t ret = errno_of(t);

		if (hezo_policy_seccomp_refuses(action_of(t))) {
			r = append_rule(syscalls, one_rule(name, action_of(t), ret,
							   hezo_json_get(t, "args")));
			if (r < 0)
				return r;
			continue;
		}
		r = add_safe(syscalls, k, action_of(t), ret,
			     hezo_json_get_type(t, "args", HEZO_JSON_ARRAY));
		if (r < 0)
			return r;
	}
	return 0;
}

static int guard_opaque_call(struct hezo_json *syscalls, const char *name, const char *def_action)
{
	_cleanup_json_ struct hezo_json *taken = hezo_json_new_array(), *deny = NULL;
	bool runs = !hezo_policy_seccomp_refuses(def_action);

	if (!taken)
		return -ENOMEM;
	if (seccomp_syscall_resolve_name(name) == __NR_SCMP_ERROR)
		return 0;
	bool cond_runs = false;

	/* Refused whatever its arguments: left as it is. */
	if (always_refused(syscalls, name, &runs, &cond_runs))
		return 0;
	/* Refused already (by the default or every rule naming it): left as the profile says. */
	if (!runs)
		return 0;
	if (take_name(syscalls, name, taken) < 0)
		return -ENOMEM;
	/* Beside the other ENOSYS calls (clone3), as the floor would put it. */
	HEZO_JSON_FOREACH (i, syscalls) {
		struct hezo_json *rule = syscalls->items[i];
		struct hezo_json *names = hezo_json_get_type(rule, "names", HEZO_JSON_ARRAY);
		uint64_t n;
		if (names && rule_nargs(rule) == 0 &&
		    strcmp(action_of(rule), "SCMP_ACT_ERRNO") == 0 &&
		    hezo_json_get_uint64(hezo_json_get(rule, "errnoRet"), &n) == 0 && n == ENOSYS)
			return hezo_json_append(names, hezo_json_new_string(name));
	}
	deny = one_rule(name, "SCMP_ACT_ERRNO", ENOSYS, NULL);
	if (!deny || hezo_json_remove(deny, "args") < 0 ||
	    hezo_json_append(syscalls, TAKE_PTR(deny)) < 0)
		return -ENOMEM;
	return 0;
}

int hezo_policy_seccomp_no_setid(struct hezo_json *prof, struct hezo_error **err)
{
	struct hezo_json *syscalls = hezo_json_ensure_array(prof, "syscalls");
	const char *def = hezo_json_string(hezo_json_get(prof, "defaultAction"));
	int r;

	if (!syscalls)
		return hezo_policy_nomem(err);
	if (!def)
		return hezo_policy_ferr(err, "linux.seccomp.defaultAction: missing");
	/*
	 * The opaque calls first: their rule, once made, stays where it is, and the mode calls'
	 * rules go after it in one order, so a profile rewritten twice is the same.
	 */
	for (size_t k = 0; k < HEZO_ARRAY_SIZE(opaque_calls); k++) {
		r = guard_opaque_call(syscalls, opaque_calls[k], def);
		if (r < 0)
			return hezo_policy_nomem(err);
	}
	for (size_t k = 0; k < HEZO_ARRAY_SIZE(mode_calls); k++) {
		r = guard_mode_call(syscalls, k, def);
		if (r < 0)
			return hezo_policy_nomem(err);
	}
	return 0;
}

/* The box's seccomp profile as a floor: the engine's profile and the box's combined into the one
 * linux.seccomp that allows a call only when both would (docs/policy.md, "Seccomp"). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"

/*
 * Strictness of an action: 0 and 1 let the call run, 2 hands it to someone else (a tracer, a
 * notify listener) who may let it run, 3 and up refuse it.
 */
enum { RANK_ALLOW, RANK_LOG, RANK_HANDOFF, RANK_ERRNO, RANK_TRAP, RANK_KILL, RANK_KILL_PROCESS };

struct act {
	const char *name; /* canonical OCI name */
	int rank;
	int64_t ret; /* errnoRet (ERRNO: EPERM when absent; TRACE: -1 when absent) */
};

static const struct {
	const char *name, *canon;
	int rank;
} action_table[] = {
	{"SCMP_ACT_ALLOW", "SCMP_ACT_ALLOW", RANK_ALLOW},
	{"SCMP_ACT_LOG", "SCMP_ACT_LOG", RANK_LOG},
	{"SCMP_ACT_TRACE", "SCMP_ACT_TRACE", RANK_HANDOFF},
	{"SCMP_ACT_NOTIFY", "SCMP_ACT_NOTIFY", RANK_HANDOFF},
	{"SCMP_ACT_ERRNO", "SCMP_ACT_ERRNO", RANK_ERRNO},
	{"SCMP_ACT_TRAP", "SCMP_ACT_TRAP", RANK_TRAP},
	{"SCMP_ACT_KILL", "SCMP_ACT_KILL", RANK_KILL},
	{"SCMP_ACT_KILL_THREAD", "SCMP_ACT_KILL", RANK_KILL},
	{"SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_PROCESS", RANK_KILL_PROCESS},
};

/* The flags that only log or synchronise; SPEC_ALLOW turns off a speculation mitigation. */
static const char *const harmless_flags[] = {
	"SECCOMP_FILTER_FLAG_TSYNC",
	"SECCOMP_FILTER_FLAG_LOG",
	"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
};

#define MAX_ARGS 6 /* a rule compares each of the six arguments at most once */

static int get_act(const char *name, const struct hezo_json *ret, struct act *out)
{
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(action_table); i++) {
		if (!name || strcmp(name, action_table[i].name) != 0)
			continue;
		out->name = action_table[i].canon;
		out->rank = action_table[i].rank;
		out->ret = -1;
		if (ret) {
			uint64_t n;
			if (hezo_json_get_uint64(ret, &n) < 0 || n > 4095)
				return -EINVAL;
			out->ret = (int64_t)n;
		}
		if (out->rank == RANK_ERRNO && out->ret < 0)
			out->ret = EPERM; /* runc's and runsc's reading of an absent errnoRet */
		if (out->rank != RANK_ERRNO && strcmp(out->name, "SCMP_ACT_TRACE") != 0)
			out->ret = -1;
		return 0;
	}
	return -EINVAL;
}

static bool act_equal(const struct act *a, const struct act *b)
{
	return strcmp(a->name, b->name) == 0 && a->ret == b->ret;
}

/* The stricter of two actions; on a tie the first (the box's). */
static const struct act *stricter(const struct act *a, const struct act *b)
{
	return b->rank > a->rank ? b : a;
}

static int rule_act(const struct hezo_json *rule, struct act *out)
{
	return get_act(hezo_json_string(hezo_json_get(rule, "action")),
		       hezo_json_get(rule, "errnoRet"), out);
}

static size_t nargs(const struct hezo_json *rule)
{
	const struct hezo_json *a = hezo_json_get_type(rule, "args", HEZO_JSON_ARRAY);
	return a ? a->len : 0;
}

static bool arg_index(const struct hezo_json *arg, uint64_t *idx)
{
	return hezo_json_get_uint64(hezo_json_get(arg, "index"), idx) == 0 && *idx < MAX_ARGS;
}

/* Two comparisons on one argument: runc installs them as separate rules (an OR), others AND. */
static bool args_repeat_index(const struct hezo_json *args)
{
	bool seen[MAX_ARGS] = {false};

	HEZO_JSON_FOREACH (i, args) {
		uint64_t idx;
		if (!arg_index(args->items[i], &idx) || seen[idx])
			return true;
		seen[idx] = true;
	}
	return false;
}

/* What one profile does with one syscall. */
enum view_kind {
	VIEW_ACTION,  /* every call gets act */
	VIEW_COND,    /* calls matching one of conds are let through (act of that rule), the rest
			 refused by the default */
	VIEW_COMPLEX, /* anything else (refusals that depend on arguments, hand-offs by argument) */
};

struct view {
	enum view_kind kind;
	struct act act;
	const struct hezo_json *conds[64];
	size_t nconds;
};

/*
 * One name in one rule of one profile. A rule's action and its number of argument comparisons
 * are read once, when the rule is indexed, not once for each of the names it holds.
 */
struct name_ref {
	const char *name;
	const struct hezo_json *rule;
	size_t prof;
	size_t next; /* the next entry of the same call, or SIZE_MAX */
	struct act act;
	bool act_ok;
	size_t nargs;
};

/* rules: those of the profile that name the call, in the profile's order. */
static void view_of(const struct name_ref *const *rules, size_t nrules, const struct act *def,
		    struct view *v)
{
	bool have_uncond = false, cond_allow_only = true, cond_refuse_only = true, any_cond = false;
	bool uncond_allow_only = true;
	struct act strictest_uncond = {0}, strictest_cond = {0};

	v->kind = VIEW_ACTION;
	v->act = *def;
	v->nconds = 0;
	for (size_t i = 0; i < nrules; i++) {
		const struct hezo_json *r = rules[i]->rule;
		struct act a = rules[i]->act;

		if (!rules[i]->act_ok) {
			v->kind = VIEW_COMPLEX;
			return;
		}
		if (rules[i]->nargs == 0) {
			if (!have_uncond || a.rank > strictest_uncond.rank)
				strictest_uncond = a;
			have_uncond = true;
			if (a.rank > RANK_LOG)
				uncond_allow_only = false;
			continue;
		}
		if (!any_cond || a.rank > strictest_cond.rank)
			strictest_cond = a;
		any_cond = true;
		if (a.rank > RANK_LOG)
			cond_allow_only = false;
		if (a.rank < RANK_ERRNO)
			cond_refuse_only = false;
		if (a.rank <= RANK_LOG && !args_repeat_index(hezo_json_get(r, "args"))) {
			/* More alternatives than we keep: the rest are dropped (refused). */
			if (v->nconds < HEZO_ARRAY_SIZE(v->conds))
				v->conds[v->nconds++] = r;
		}
	}
	if (!have_uncond && !any_cond)
		return; /* the default */
	if (have_uncond && !any_cond) {
		v->act = strictest_uncond;
		return;
	}
	if (have_uncond) {
		/* An unconditional allow beside conditional allows is an allow; any other mix
		 * depends on how the backend orders the rules. */
		if (uncond_allow_only && cond_allow_only) {
			v->act = *stricter(&strictest_uncond, &strictest_cond);
			return;
		}
		v->kind = VIEW_COMPLEX;
		return;
	}
	if (cond_allow_only && def->rank <= RANK_LOG)
		return; /* allowed either way: the default */
	if (cond_allow_only) {
		v->kind = VIEW_COND;
		return;
	}
	if (cond_refuse_only && def->rank >= RANK_ERRNO)
		return; /* refused either way (with one errno or another): the default */
	v->kind = VIEW_COMPLEX;
}

/* ---- building the result ---- */

struct out {
	struct hezo_json *syscalls;
	const struct act *def;
	/*
	 * The names of the last unconditional rule added to, and its action: there is one such
	 * rule per action, and most calls in a row get the same one.
	 */
	struct hezo_json *last_names;
	struct act last;
};

static struct hezo_json *new_rule(const char *name, const struct act *a)
{
	_cleanup_json_ struct hezo_json *r = hezo_json_new_object();
	struct hezo_json *names = r ? hezo_json_ensure_array(r, "names") : NULL;

	if (!names || hezo_json_append(names, hezo_json_new_string(name)) < 0 ||
	    hezo_json_set(r, "action", hezo_json_new_string(a->name)) < 0)
		return NULL;
	if (a->ret >= 0 && hezo_json_set(r, "errnoRet", hezo_json_new_int(a->ret)) < 0)
		return NULL;
	return TAKE_PTR(r);
}

/* Every call of name gets a: added to the rule with that action (one rule per action). */
static int emit_action(struct out *o, const char *name, const struct act *a)
{
	struct hezo_json *r = NULL;

	if (act_equal(a, o->def))
		return 0;
	if (o->last_names && act_equal(a, &o->last))
		return hezo_json_append(o->last_names, hezo_json_new_string(name));
	HEZO_JSON_FOREACH (i, o->syscalls) {
		struct act ra;
		if (nargs(o->syscalls->items[i]) > 0 || rule_act(o->syscalls->items[i], &ra) < 0 ||
		    !act_equal(&ra, a))
			continue;
		r = o->syscalls->items[i];
		break;
	}
	if (!r) {
		r = new_rule(name, a);
		if (!r || hezo_json_append(o->syscalls, r) < 0)
			return -ENOMEM;
	} else if (hezo_json_append(hezo_json_get(r, "names"), hezo_json_new_string(name)) < 0) {
		return -ENOMEM;
	}
	o->last_names = hezo_json_get(r, "names");
	o->last = *a;
	return 0;
}

static bool same_arg(const struct hezo_json *x, const struct hezo_json *y)
{
	static const char *const keys[] = {"index", "value", "valueTwo", "op"};

	for (size_t k = 0; k < HEZO_ARRAY_SIZE(keys); k++) {
		const struct hezo_json *a = hezo_json_get(x, keys[k]);
		const struct hezo_json *b = hezo_json_get(y, keys[k]);
		uint64_t na = 0, nb = 0;

		if (k == 3) {
			if (!a || !b ||
			    strcmp(hezo_json_string(a) ?: "", hezo_json_string(b) ?: ""))
				return false;
			continue;
		}
		/* An absent value or valueTwo is 0. */
		if ((a && hezo_json_get_uint64(a, &na) < 0) ||
		    (b && hezo_json_get_uint64(b, &nb) < 0) || na != nb)
			return false;
	}
	return true;
}

/*
 * Calls of name that match every comparison of x and of y get a. Two different comparisons on
 * the same argument cannot be written as one rule every backend ANDs: nothing is added, so those
 * calls are refused.
 */
static int emit_cond(struct out *o, const char *name, const struct act *a,
		     const struct hezo_json *x, const struct hezo_json *y)
{
	const struct hezo_json *xa = hezo_json_get(x, "args"),
			       *ya = y ? hezo_json_get(y, "args") : NULL;
	_cleanup_json_ struct hezo_json *args = hezo_json_new_array();
	const struct hezo_json *by_index[MAX_ARGS] = {NULL};
	struct hezo_json *r;

	if (!args)
		return -ENOMEM;
	for (int side = 0; side < 2; side++) {
		const struct hezo_json *list = side ? ya : xa;
		HEZO_JSON_FOREACH (i, list) {
			uint64_t idx;
			if (!arg_index(list->items[i], &idx))
				return 0;
			if (by_index[idx]) {
				if (!same_arg(by_index[idx], list->items[i]))
					return 0;
				continue;
			}
			by_index[idx] = list->items[i];
			if (hezo_json_append(args, hezo_json_clone(list->items[i])) < 0)
				return -ENOMEM;
		}
	}
	r = new_rule(name, a);
	if (!r)
		return -ENOMEM;
	if (hezo_json_set(r, "args", TAKE_PTR(args)) < 0) {
		hezo_json_free(r);
		return -ENOMEM;
	}
	return hezo_json_append(o->syscalls, r);
}

static int combine_one(struct out *o, const char *name, const struct view *box,
		       const struct view *eng)
{
	static const struct act eperm = {"SCMP_ACT_ERRNO", RANK_ERRNO, EPERM};
	const struct view *u, *c;
	struct act a;
	int r;

	if (box->kind == VIEW_COMPLEX || eng->kind == VIEW_COMPLEX) {
		const struct view *other = box->kind == VIEW_COMPLEX ? eng : box;
		if (other->kind == VIEW_ACTION && other->act.rank >= RANK_ERRNO)
			return emit_action(o, name, &other->act);
		return emit_action(o, name, o->def->rank >= RANK_ERRNO ? o->def : &eperm);
	}
	if (box->kind == VIEW_ACTION && eng->kind == VIEW_ACTION)
		return emit_action(o, name, stricter(&box->act, &eng->act));
	if (box->kind == VIEW_COND && eng->kind == VIEW_COND) {
		for (size_t i = 0; i < box->nconds; i++)
			for (size_t j = 0; j < eng->nconds; j++) {
				struct act x, y;
				if (rule_act(box->conds[i], &x) < 0 ||
				    rule_act(eng->conds[j], &y) < 0)
					return -EINVAL;
				r = emit_cond(o, name, stricter(&x, &y), box->conds[i],
					      eng->conds[j]);
				if (r < 0)
					return r;
			}
		return 0;
	}
	/* One side acts on every call, the other lets through calls that match. */
	u = box->kind == VIEW_ACTION ? box : eng;
	c = box->kind == VIEW_ACTION ? eng : box;
	if (u->act.rank >= RANK_ERRNO)
		return emit_action(o, name, &u->act);
	for (size_t i = 0; i < c->nconds; i++) {
		if (rule_act(c->conds[i], &a) < 0)
			return -EINVAL;
		r = emit_cond(o, name, u == box ? stricter(&u->act, &a) : stricter(&a, &u->act),
			      c->conds[i], NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- the parts of a profile besides its rules ---- */

static bool list_has(const struct hezo_json *list, const char *s)
{
	HEZO_JSON_FOREACH (i, list) {
		const char *t = hezo_json_string(list->items[i]);
		if (t && strcmp(t, s) == 0)
			return true;
	}
	return false;
}

/*
 * Architectures a call may come from: those both list. An empty list is the native one alone,
 * which the backend always adds, so an empty side or an empty intersection gives an empty list.
 */
static int combine_arches(const struct hezo_json *box, const struct hezo_json *eng,
			  struct hezo_json *res)
{
	const struct hezo_json *a = hezo_json_get_type(box, "architectures", HEZO_JSON_ARRAY);
	const struct hezo_json *b = hezo_json_get_type(eng, "architectures", HEZO_JSON_ARRAY);
	struct hezo_json *out = hezo_json_ensure_array(res, "architectures");

	if (!out)
		return -ENOMEM;
	HEZO_JSON_FOREACH (i, a) {
		const char *s = hezo_json_string(a->items[i]);
		if (s && list_has(b, s) && !list_has(out, s) &&
		    hezo_json_append(out, hezo_json_new_string(s)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int combine_flags(const struct hezo_json *box, const struct hezo_json *eng,
			 struct hezo_json *res, struct hezo_error **err)
{
	const struct hezo_json *a = hezo_json_get_type(box, "flags", HEZO_JSON_ARRAY);
	const struct hezo_json *b = hezo_json_get_type(eng, "flags", HEZO_JSON_ARRAY);
	struct hezo_json *out;

	HEZO_JSON_FOREACH (i, b) {
		const char *s = hezo_json_string(b->items[i]);
		bool ok = false;
		for (size_t k = 0; s && k < HEZO_ARRAY_SIZE(harmless_flags); k++)
			ok = ok || strcmp(s, harmless_flags[k]) == 0;
		if (!ok)
			return hezo_policy_ferr(
				err,
				"linux.seccomp.flags[%zu]: %s would loosen the box's "
				"filter",
				i, s ? s : "(not a string)");
	}
	if ((!a || a->len == 0) && (!b || b->len == 0))
		return 0;
	out = hezo_json_ensure_array(res, "flags");
	if (!out)
		return hezo_policy_nomem(err);
	for (int side = 0; side < 2; side++) {
		const struct hezo_json *list = side ? b : a;
		HEZO_JSON_FOREACH (i, list) {
			const char *s = hezo_json_string(list->items[i]);
			if (s && !list_has(out, s) &&
			    hezo_json_append(out, hezo_json_new_string(s)) < 0)
				return hezo_policy_nomem(err);
		}
	}
	return 0;
}

/* What the engine may not ask for: a hand-off of calls to a tracer or a listener of its own. */
static int check_engine(const struct hezo_json *eng, struct hezo_error **err)
{
	const struct hezo_json *sys = hezo_json_get_type(eng, "syscalls", HEZO_JSON_ARRAY);
	struct act a;

	if (hezo_json_get(eng, "listenerPath") || hezo_json_get(eng, "listenerMetadata"))
		return hezo_policy_ferr(err, "linux.seccomp.listenerPath: a seccomp notify "
					     "listener is not allowed");
	if (get_act(hezo_json_string(hezo_json_get(eng, "defaultAction")),
		    hezo_json_get(eng, "defaultErrnoRet"), &a) < 0 ||
	    a.rank == RANK_HANDOFF)
		return hezo_policy_ferr(err, "linux.seccomp.defaultAction: %s is not allowed",
					hezo_json_string(hezo_json_get(eng, "defaultAction")));
	HEZO_JSON_FOREACH (i, sys) {
		if (rule_act(sys->items[i], &a) < 0 || a.rank == RANK_HANDOFF)
			return hezo_policy_ferr(
				err, "linux.seccomp.syscalls[%zu].action: %s is not allowed", i,
				hezo_json_string(hezo_json_get(sys->items[i], "action")) ?: "?");
	}
	return 0;
}

/*
 * Which rules name which calls, for both profiles at once: the names are hashed into groups, one
 * per call, in the order the calls first appear (the box's first), and each group chains its
 * entries in the order they stand, so the rules of one call come out in their profile's order.
 * A hash table rather than a sort: a profile of a few hundred names is read once, in order.
 */
struct name_group {
	size_t first, last;
	uint32_t hash;
};

struct name_index {
	struct name_ref *refs;
	struct name_group *groups;
	size_t *table; /* group index + 1, 0 for an empty slot */
	size_t nrefs, ngroups, mask;
};

static void name_index_done(struct name_index *ix)
{
	free(ix->refs);
	free(ix->groups);
	free(ix->table);
}

/* FNV-1a: the names are short and the table is rebuilt per create. */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void name_index_add(struct name_index *ix, const char *s, const struct name_ref *like)
{
	uint32_t h = name_hash(s);
	size_t slot = h & ix->mask, n = ix->nrefs++;

	ix->refs[n] = *like;
	ix->refs[n].name = s;
	ix->refs[n].next = SIZE_MAX;
	for (;; slot = (slot + 1) & ix->mask) {
		struct name_group *g;

		if (!ix->table[slot]) {
			ix->groups[ix->ngroups] = (struct name_group){n, n, h};
			ix->table[slot] = ++ix->ngroups;
			return;
		}
		g = &ix->groups[ix->table[slot] - 1];
		if (g->hash == h && strcmp(ix->refs[g->first].name, s) == 0) {
			ix->refs[g->last].next = n;
			g->last = n;
			return;
		}
	}
}

static int name_index_build(const struct hezo_json *const prof[2], struct name_index *ix)
{
	size_t n = 0, size = 16;

	/* Counted first, then filled in. */
	for (int fill = 0; fill < 2; fill++) {
		if (fill) {
			/* At most half full, so a probe ends soon. */
			while (size < 2 * n)
				size *= 2;
			ix->refs = calloc(n ?: 1, sizeof(*ix->refs));
			ix->groups = calloc(n ?: 1, sizeof(*ix->groups));
			ix->table = calloc(size, sizeof(*ix->table));
			if (!ix->refs || !ix->groups || !ix->table)
				return -ENOMEM;
			ix->mask = size - 1;
		}
		for (size_t p = 0; p < 2; p++) {
			const struct hezo_json *sys =
				hezo_json_get_type(prof[p], "syscalls", HEZO_JSON_ARRAY);
			HEZO_JSON_FOREACH (i, sys) {
				const struct hezo_json *names =
					hezo_json_get_type(sys->items[i], "names", HEZO_JSON_ARRAY);
				struct name_ref like = {.rule = sys->items[i], .prof = p};

				if (fill) {
					like.act_ok = rule_act(like.rule, &like.act) == 0;
					like.nargs = nargs(like.rule);
				}
				HEZO_JSON_FOREACH (j, names) {
					const char *s = hezo_json_string(names->items[j]);
					if (!s)
						continue;
					if (fill)
						name_index_add(ix, s, &like);
					n++;
				}
			}
		}
	}
	return 0;
}

/* The rules of profile prof that name the call of group g, each once, in order. */
static size_t group_rules(const struct name_index *ix, const struct name_group *g, size_t prof,
			  const struct name_ref **rules)
{
	size_t n = 0;

	for (size_t i = g->first; i != SIZE_MAX; i = ix->refs[i].next) {
		const struct name_ref *ref = &ix->refs[i];
		if (ref->prof == prof && (n == 0 || rules[n - 1]->rule != ref->rule))
			rules[n++] = ref;
	}
	return n;
}

static int floor_compute(const struct hezo_json *box, const struct hezo_json *engine,
			 struct hezo_json **out, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *pruned = NULL, *res = hezo_json_new_object();
	const struct hezo_json *eng;
	_cleanup_(name_index_done) struct name_index ix = {0};
	_cleanup_free_ const struct name_ref **rules = NULL;
	struct act bdef, edef;
	const struct act *def;
	struct out o;
	int r;

	/* Read, never changed: a copy only when names no architecture knows must go. */
	r = hezo_policy_seccomp_check_view(engine, &eng, &pruned, err);
	if (r < 0)
		return hezo_error_prefix(err, "linux.seccomp");
	r = check_engine(eng, err);
	if (r < 0)
		return r;
	if (get_act(hezo_json_string(hezo_json_get(box, "defaultAction")),
		    hezo_json_get(box, "defaultErrnoRet"), &bdef) < 0 ||
	    get_act(hezo_json_string(hezo_json_get(eng, "defaultAction")),
		    hezo_json_get(eng, "defaultErrnoRet"), &edef) < 0)
		return hezo_policy_ferr(err, "linux.seccomp.defaultAction: not understood");
	if (!res)
		return hezo_policy_nomem(err);
	def = stricter(&bdef, &edef);
	if (hezo_json_set(res, "defaultAction", hezo_json_new_string(def->name)) < 0 ||
	    (def->ret >= 0 &&
	     hezo_json_set(res, "defaultErrnoRet", hezo_json_new_int(def->ret)) < 0))
		return hezo_policy_nomem(err);
	if (combine_arches(box, eng, res) < 0)
		return hezo_policy_nomem(err);
	r = combine_flags(box, eng, res, err);
	if (r < 0)
		return r;
	/* The listener is the admin's: it stays with the box's NOTIFY rules. */
	for (size_t k = 0; k < 2; k++) {
		const char *key = k ? "listenerMetadata" : "listenerPath";
		const struct hezo_json *v = hezo_json_get(box, key);
		if (v && hezo_json_set(res, key, hezo_json_clone(v)) < 0)
			return hezo_policy_nomem(err);
	}
	o.syscalls = hezo_json_ensure_array(res, "syscalls");
	o.def = def;
	o.last_names = NULL;
	if (!o.syscalls || name_index_build((const struct hezo_json *const[2]){box, eng}, &ix) < 0)
		return hezo_policy_nomem(err);
	/* Room for one side's rules of any call. */
	rules = calloc(ix.nrefs ?: 1, sizeof(*rules));
	if (!rules)
		return hezo_policy_nomem(err);
	for (size_t i = 0; i < ix.ngroups; i++) {
		const struct name_group *g = &ix.groups[i];
		const char *name = ix.refs[g->first].name;
		struct view bv, ev;
		size_t nb, ne;

		nb = group_rules(&ix, g, 0, rules);
		view_of(rules, nb, &bdef, &bv);
		ne = group_rules(&ix, g, 1, rules);
		view_of(rules, ne, &edef, &ev);
		r = combine_one(&o, name, &bv, &ev);
		if (r == -ENOMEM)
			return hezo_policy_nomem(err);
		if (r < 0)
			return hezo_policy_ferr(err, "linux.seccomp: %s: cannot combine the rules",
						name);
	}
	*out = TAKE_PTR(res);
	return 0;
}

int hezo_policy_seccomp_floor(const struct hezo_json *box, const struct hezo_json *engine,
			      struct hezo_json **out, struct hezo_error **err)
{
	return floor_compute(box, engine, out, err);
}

/*
 * The floor is a function of the two profiles alone, and create judges twice (the second time
 * under the records lock) with the same ones: the first result is kept, with the profiles it
 * came from, and handed over at the next call whose profiles are equal to those, value for
 * value. Taking the caller's profiles (which it would free) keeps copying to the one result.
 */
static struct {
	struct hezo_json *box, *engine, *out;
	bool builtin; /* box: the built-in default profile (then NULL) */
} last;

static void last_drop(void)
{
	hezo_json_free(last.box);
	hezo_json_free(last.engine);
	hezo_json_free(last.out);
	last.box = last.engine = last.out = NULL;
	last.builtin = false;
}

int hezo_policy_seccomp_floor_take(struct hezo_json **box, struct hezo_json **engine,
				   struct hezo_json **out, struct hezo_error **err)
{
	bool builtin = !*box;
	int r;

	if (last.out && last.builtin == builtin && (builtin || hezo_json_equal(*box, last.box)) &&
	    hezo_json_equal(*engine, last.engine)) {
		*out = TAKE_PTR(last.out);
		last_drop();
		return 0;
	}
	/* Built only when it is not the kept one's: building it costs as much as a copy. */
	if (builtin && !(*box = hezo_policy_seccomp_default()))
		return hezo_policy_nomem(err);
	r = floor_compute(*box, *engine, out, err);
	if (r < 0)
		return r;
	/* Kept only if the copy can be made: otherwise the next call computes it again. */
	last_drop();
	last.out = hezo_json_clone(*out);
	if (last.out) {
		last.builtin = builtin;
		last.box = builtin ? NULL : TAKE_PTR(*box);
		last.engine = TAKE_PTR(*engine);
	}
	return 0;
}

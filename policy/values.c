/* Value grammars of the policy file (sizes, CPU counts, sysctl and project names) and the readers
 * of one value of a field: numbers, booleans, paths, and lists of checked strings. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-egress.h"
#include "policy-parse.h"

/* ---- value syntax ---- */

/* Sizes: digits with an optional k/m/g suffix (powers of 1024). */
int hezo_policy_parse_size_text(const char *s, uint64_t *out)
{
	uint64_t n = 0, mult = 1;
	size_t i = 0;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	for (; isdigit((unsigned char)s[i]); i++) {
		if (n > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		n = n * 10 + (uint64_t)(s[i] - '0');
	}
	switch (s[i]) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mult = 1ULL << 10;
		i++;
		break;
	case 'm':
	case 'M':
		mult = 1ULL << 20;
		i++;
		break;
	case 'g':
	case 'G':
		mult = 1ULL << 30;
		i++;
		break;
	default:
		return -EINVAL;
	}
	if (s[i] != '\0')
		return -EINVAL;
	if (n > UINT64_MAX / mult)
		return -ERANGE;
	*out = n * mult;
	return 0;
}

int hezo_policy_get_size(struct pctx *c, const char *field, const struct hezo_json *v,
			 bool allow_zero, uint64_t *out)
{
	char desc[128];
	uint64_t n;
	int r = -EINVAL;

	if (v->type == HEZO_JSON_NUMBER)
		r = hezo_json_get_uint64(v, &n);
	else if (v->type == HEZO_JSON_STRING)
		r = hezo_policy_parse_size_text(v->str, &n);
	hezo_policy_describe(desc, sizeof(desc), v);
	if (r < 0)
		return hezo_policy_perr(c, field, "%s is not a size", desc);
	if (n == 0 && !allow_zero)
		return hezo_policy_perr(c, field, "%s: must be more than 0", desc);
	*out = n;
	return 0;
}

int hezo_policy_get_count(struct pctx *c, const char *field, const struct hezo_json *v,
			  uint64_t *out, bool allow_zero)
{
	char desc[128];
	uint64_t n;

	hezo_policy_describe(desc, sizeof(desc), v);
	if (v->type != HEZO_JSON_NUMBER || hezo_json_get_uint64(v, &n) < 0)
		return hezo_policy_perr(c, field, "%s is not a whole number", desc);
	if (n == 0 && !allow_zero)
		return hezo_policy_perr(c, field, "%s: must be more than 0", desc);
	*out = n;
	return 0;
}

/* CPU counts: "2", "0.5", "1.25"; at most three decimals, at least 0.01 (a 1 ms quota). */
int hezo_policy_parse_cpus_text(const char *s, uint64_t *milli)
{
	uint64_t whole = 0, frac = 0;
	size_t i = 0, digits = 0;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	for (; isdigit((unsigned char)s[i]); i++) {
		whole = whole * 10 + (uint64_t)(s[i] - '0');
		if (whole > 100000)
			return -ERANGE;
	}
	if (s[i] == '.') {
		i++;
		for (; isdigit((unsigned char)s[i]); i++, digits++) {
			if (digits >= 3)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(s[i] - '0');
		}
		if (digits == 0)
			return -EINVAL;
		for (; digits < 3; digits++)
			frac *= 10;
	}
	if (s[i] != '\0')
		return -EINVAL;
	*milli = whole * 1000 + frac;
	if (*milli < 10)
		return -ERANGE;
	return 0;
}

void hezo_policy_lowercase(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

/* A list of strings, each checked (and normalised) by fn, replacing *dst. */
int hezo_policy_get_strv(struct pctx *c, const char *field, const struct hezo_json *v, elem_fn fn,
			 struct hezo_strv *dst)
{
	struct hezo_strv s = {0};
	int r;

	r = hezo_policy_expect_type(c, field, v, HEZO_JSON_ARRAY);
	if (r < 0)
		return r;
	if (hezo_strv_init(&s) < 0)
		return hezo_policy_oom(c);
	HEZO_JSON_FOREACH (i, v) {
		_cleanup_free_ char *norm = NULL;
		char f[160];

		snprintf(f, sizeof(f), "%s[%zu]", field, i);
		r = hezo_policy_expect_type(c, f, v->items[i], HEZO_JSON_STRING);
		if (r == 0)
			r = fn(c, f, v->items[i]->str, &norm);
		if (r == 0 && !hezo_strv_contains(&s, norm ? norm : v->items[i]->str))
			r = hezo_strv_push(&s, norm ? norm : v->items[i]->str) < 0
				    ? hezo_policy_oom(c)
				    : 0;
		if (r < 0) {
			hezo_strv_done(&s);
			return r;
		}
	}
	hezo_strv_done(dst);
	*dst = s;
	return 0;
}

/* s in the spelling normalise gives it; a string normalise refuses is not what says. */
static int elem_normalised(struct pctx *c, const char *field, const char *s, char **norm,
			   int (*normalise)(const char *s, char **out), const char *what)
{
	char q[256];
	int r = normalise(s, norm);

	if (r == -ENOMEM)
		return hezo_policy_oom(c);
	hezo_policy_quote(q, sizeof(q), s);
	if (r < 0)
		return hezo_policy_perr(c, field, "%s is not %s", q, what);
	return 0;
}

int hezo_policy_elem_abs_path(struct pctx *c, const char *field, const char *s, char **norm)
{
	return elem_normalised(c, field, s, norm, hezo_policy_clean_path,
			       "an absolute path without \"..\"");
}

int hezo_policy_elem_cap(struct pctx *c, const char *field, const char *s, char **norm)
{
	int r = elem_normalised(c, field, s, norm, hezo_policy_cap_normalise, "a capability");

	/*
	 * A file a box writes into its workspace or a bind is a host file, owned by host root under
	 * runsc and through an idmapped bind: with these it could leave one that makes any local
	 * user root (file capabilities, red team ws3 F2) or a device node that opens a disk.
	 */
	if (r == 0 && (strcmp(*norm, "CAP_SETFCAP") == 0 || strcmp(*norm, "CAP_MKNOD") == 0)) {
		r = hezo_policy_perr(
			c, field,
			"%s is never granted: a box would write file capabilities or "
			"device nodes that hold on the host through its workspace or binds",
			*norm);
		free(*norm);
		*norm = NULL;
	}
	return r;
}

int hezo_policy_elem_backend(struct pctx *c, const char *field, const char *s, char **norm)
{
	enum hezo_backend b;
	char q[256];

	hezo_policy_quote(q, sizeof(q), s);
	if (hezo_backend_from_name(s, &b) < 0)
		return hezo_policy_perr(c, field, "%s is not a backend (runsc, runc, crun)", q);
	return 0;
}

int hezo_policy_elem_any(struct pctx *c, const char *field, const char *s, char **norm)
{
	return 0;
}

/* The grammar is egress/'s (the hook and proxyd parse the same entries with it). */
int hezo_policy_elem_egress_allow(struct pctx *c, const char *field, const char *s, char **norm)
{
	char q[256], canon[HEZO_EGRESS_ENTRY_MAX];
	const char *why = NULL;

	hezo_policy_quote(q, sizeof(q), s);
	if (hezo_allow_normalize(s, canon, &why) < 0)
		return hezo_policy_perr(
			c, field, "%s is not a host, *.domain or CIDR (with an optional :port): %s",
			q, why);
	*norm = strdup(canon);
	if (!*norm)
		return hezo_policy_oom(c);
	return 0;
}

int hezo_policy_elem_resolver(struct pctx *c, const char *field, const char *s, char **norm)
{
	struct hezo_resolver r;
	const char *why = NULL;
	char q[256];

	hezo_policy_quote(q, sizeof(q), s);
	if (hezo_resolver_parse(s, &r, &why) < 0)
		return hezo_policy_perr(c, field, "%s is not an IP address or IP:port: %s", q, why);
	return 0;
}

int hezo_policy_elem_cidr(struct pctx *c, const char *field, const char *s, char **norm)
{
	struct hezo_cidr r;
	const char *why = NULL;
	char q[256];

	hezo_policy_quote(q, sizeof(q), s);
	if (hezo_range_parse(s, &r, &why) < 0)
		return hezo_policy_perr(c, field,
					"%s is not a CIDR (ADDRESS/PREFIX, no host bits set)", q);
	return 0;
}

int hezo_policy_elem_host_ns(struct pctx *c, const char *field, const char *s, char **norm)
{
	char q[256];

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(hezo_policy_host_ns_names); i++)
		if (strcmp(s, hezo_policy_host_ns_names[i].name) == 0)
			return 0;
	hezo_policy_quote(q, sizeof(q), s);
	return hezo_policy_perr(
		c, field, "%s cannot be shared with the host (pid, ipc, uts, network, cgroup)", q);
}

int hezo_policy_get_abs_path(struct pctx *c, const char *field, const struct hezo_json *v,
			     char **dst)
{
	_cleanup_free_ char *norm = NULL;
	int r = hezo_policy_expect_type(c, field, v, HEZO_JSON_STRING);

	if (r < 0)
		return r;
	r = hezo_policy_elem_abs_path(c, field, v->str, &norm);
	if (r < 0)
		return r;
	free(*dst);
	*dst = TAKE_PTR(norm);
	return 0;
}

int hezo_policy_get_bool(struct pctx *c, const char *field, const struct hezo_json *v, bool *dst)
{
	int r = hezo_policy_expect_type(c, field, v, HEZO_JSON_TRUE);

	if (r < 0)
		return r;
	*dst = v->type == HEZO_JSON_TRUE;
	return 0;
}

int hezo_policy_get_word(struct pctx *c, const char *field, const struct hezo_json *v,
			 const char *const *words, size_t n, const char *choices, size_t *out)
{
	char q[256];
	int r = hezo_policy_expect_type(c, field, v, HEZO_JSON_STRING);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(v->str, words[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	hezo_policy_quote(q, sizeof(q), v->str);
	return hezo_policy_perr(c, field, "%s is not %s", q, choices);
}

/* Dotted lower-case words: what runc turns into a path below /proc/sys. */
bool hezo_policy_sysctl_name_ok(const char *n)
{
	size_t len = strlen(n);

	return len > 0 && len < 128 &&
	       strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789_-.") == len && n[0] != '.' &&
	       n[len - 1] != '.' && !strstr(n, "..");
}

bool hezo_policy_project_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64 || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

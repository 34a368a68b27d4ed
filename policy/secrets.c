/*
 * The policy's "secrets" section (docs/policy.md): parsed by egress/'s contract, kept as its
 * canonical JSON (so projects layer over it as over any other key), judged against the egress
 * allow list, and narrowed by the org.hezo.secrets annotation. Values are never read here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-cleanup.h"
#include "hezo-egress.h"
#include "policy-internal.h"

/* The canonical form: hosts as the grammar spells them, otherHosts written out. */
static struct hezo_json *canonical(const struct hezo_secret *v, size_t n)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();

	for (size_t i = 0; o && i < n; i++) {
		struct hezo_json *s = hezo_json_ensure_object(o, v[i].name);
		struct hezo_json *hosts = s ? hezo_json_ensure_array(s, "hosts") : NULL;
		int r = hosts ? 0 : -ENOMEM;

		for (size_t k = 0; r == 0 && k < v[i].nhosts; k++) {
			char buf[HEZO_EGRESS_ENTRY_MAX];

			if (v[i].hosts[k].port)
				snprintf(buf, sizeof(buf), "%s%s:%u",
					 v[i].hosts[k].wildcard ? "*." : "", v[i].hosts[k].name,
					 v[i].hosts[k].port);
			else
				snprintf(buf, sizeof(buf), "%s%s",
					 v[i].hosts[k].wildcard ? "*." : "", v[i].hosts[k].name);
			r = hezo_json_append(hosts, hezo_json_new_string(buf));
		}
		r = r ?: hezo_json_set(s, "file", hezo_json_new_string(v[i].file));
		r = r
			    ?: hezo_json_set(s, "otherHosts",
					     hezo_json_new_string(v[i].pass_elsewhere ? "pass"
										      : "refuse"));
		/* headers and in only when set: a policy that names neither shows as before. */
		if (r == 0 && v[i].headers) {
			struct hezo_json *h = hezo_json_ensure_array(s, "headers");

			for (size_t k = 0; r == 0 && k < v[i].nheaders; k++)
				r = h ? hezo_json_append(h, hezo_json_new_string(v[i].headers[k]))
				      : -ENOMEM;
		}
		if (r == 0 && (v[i].in_query || !v[i].in_header)) {
			struct hezo_json *in = hezo_json_ensure_array(s, "in");

			r = in ? 0 : -ENOMEM;
			if (r == 0 && v[i].in_header)
				r = hezo_json_append(in, hezo_json_new_string("header"));
			if (r == 0 && v[i].in_query)
				r = hezo_json_append(in, hezo_json_new_string("query"));
		}
		if (r < 0)
			return NULL;
	}
	return TAKE_PTR(o);
}

int hezo_policy_parse_secrets(struct hezo_policy *p, const struct hezo_json *v, const char *name,
			      struct hezo_error **err)
{
	struct hezo_secret *s = NULL;
	struct hezo_json *canon;
	size_t n = 0;
	int r;

	if (v->type == HEZO_JSON_NULL) {
		hezo_json_free(p->secrets);
		p->secrets = NULL;
		return 0;
	}
	r = hezo_secrets_parse(v, false, &s, &n, err);
	if (r < 0)
		return hezo_error_prefix(err, "policy %s", name);
	canon = canonical(s, n);
	hezo_secrets_free(s, n);
	if (!canon)
		return hezo_error_set(err, ENOMEM, "policy %s: out of memory", name);
	hezo_json_free(p->secrets);
	p->secrets = canon;
	return 0;
}

int hezo_policy_secrets_json(const struct hezo_policy *p, struct hezo_json *o)
{
	struct hezo_json *c;

	/* Absent when there are none: the file format of a policy without secrets is unchanged. */
	if (!p->secrets || p->secrets->len == 0)
		return 0;
	c = hezo_json_clone(p->secrets);
	return c ? hezo_json_set(o, "secrets", c) : -ENOMEM;
}

int hezo_policy_egress_parsed(const struct hezo_policy *p, const char *name, struct hezo_egress *e,
			      struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *eg = hezo_policy_egress_json(p);

	if (!eg)
		return hezo_error_set(err, ENOMEM, "policy %s: out of memory", name);
	if (hezo_egress_parse_section(eg, e, err) < 0)
		return hezo_error_prefix(err, "policy %s", name);
	return 0;
}

int hezo_policy_check_secrets(const struct hezo_policy *p, const char *name,
			      struct hezo_error **err)
{
	struct hezo_egress e;
	struct hezo_secret *s = NULL;
	size_t n = 0;
	int r;

	if (!p->secrets || p->secrets->len == 0)
		return 0;
	r = hezo_policy_egress_parsed(p, name, &e, err);
	if (r < 0)
		return r;
	r = hezo_secrets_parse(p->secrets, false, &s, &n, err);
	r = r ?: hezo_secrets_check_egress(s, n, &e, err);
	hezo_secrets_free(s, n);
	hezo_egress_clear(&e);
	if (r < 0)
		return hezo_error_prefix(err, "policy %s", name);
	return 0;
}

int hezo_policy_secrets_annotation(struct hezo_policy *p, const char *key, const char *val,
				   struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *keep = hezo_json_new_object();
	_cleanup_free_ char *copy = strdup(val);
	char *cursor = copy, *tok;

	if (!keep || !copy)
		return hezo_error_set(err, ENOMEM, "out of memory");
	while ((tok = hezo_policy_list_next(&cursor))) {
		struct hezo_json *s;

		s = hezo_json_get(p->secrets, tok);
		if (!s) {
			char qk[256], qv[256], qt[256];

			hezo_policy_quote(qk, sizeof(qk), key);
			hezo_policy_quote(qv, sizeof(qv), val);
			hezo_policy_quote(qt, sizeof(qt), tok);
			/* A workload may drop secrets, never name one into being. */
			hezo_error_set(err, EINVAL,
				       "annotation %s=%s: %s is not one of the policy's secrets",
				       qk, qv, qt);
			return hezo_error_key(err, "secrets");
		}
		if (!hezo_json_get(keep, tok) && hezo_json_set(keep, tok, hezo_json_clone(s)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	hezo_json_free(p->secrets);
	p->secrets = TAKE_PTR(keep);
	return 0;
}

int hezo_policy_secrets_narrower(const struct hezo_policy *base, const struct hezo_policy *p,
				 const char *name, struct hezo_error **err)
{
	struct hezo_secret *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	int r = 0;

	if (!base->secrets || !base->secrets->len || !p->secrets || !p->secrets->len)
		return 0;
	r = hezo_secrets_parse(base->secrets, false, &a, &na, err);
	r = r ?: hezo_secrets_parse(p->secrets, false, &b, &nb, err);
	/* A project may add secrets of its own, but one of the main file's only narrowed. */
	for (size_t i = 0; r == 0 && i < nb; i++)
		for (size_t j = 0; r == 0 && j < na; j++) {
			const char *why = NULL;

			if (strcmp(a[j].name, b[i].name) == 0 &&
			    hezo_secret_narrower(&a[j], &b[i], &why) < 0)
				r = hezo_error_set(err, EPERM,
						   "policy %s: secrets.%s.%s of the main file's "
						   "secret",
						   name, b[i].name, why);
		}
	hezo_secrets_free(a, na);
	hezo_secrets_free(b, nb);
	return r;
}

const struct hezo_json *hezo_policy_secrets(const struct hezo_policy *p)
{
	return p->secrets && p->secrets->len ? p->secrets : NULL;
}

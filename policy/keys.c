/*
 * The policy's "keys" section (docs/policy.md, "Keys"): parsed by egress/'s contract, kept as
 * given (so a project file layers over it as over any other key), and judged against the egress
 * allow list. The key files are never read here: the shim checks them at create.
 */
#include <errno.h>

#include "hezo-egress.h"
#include "policy-internal.h"

int hezo_policy_parse_keys(struct hezo_policy *p, const struct hezo_json *v, const char *name,
			   struct hezo_error **err)
{
	struct hezo_key *k = NULL;
	struct hezo_json *copy;
	size_t n = 0;
	int r;

	if (v->type == HEZO_JSON_NULL) {
		hezo_json_free(p->keys);
		p->keys = NULL;
		return 0;
	}
	r = hezo_keys_parse(v, false, &k, &n, err);
	if (r < 0)
		return hezo_error_prefix(err, "policy %s", name);
	hezo_keys_free(k, n);
	copy = hezo_json_clone(v);
	if (!copy)
		return hezo_error_set(err, ENOMEM, "policy %s: out of memory", name);
	hezo_json_free(p->keys);
	p->keys = copy;
	return 0;
}

int hezo_policy_keys_json(const struct hezo_policy *p, struct hezo_json *o)
{
	struct hezo_json *c;

	/* Absent when there are none: the file format of a policy without keys is unchanged. */
	if (!p->keys || p->keys->len == 0)
		return 0;
	c = hezo_json_clone(p->keys);
	return c ? hezo_json_set(o, "keys", c) : -ENOMEM;
}

const struct hezo_json *hezo_policy_keys(const struct hezo_policy *p)
{
	return p->keys && p->keys->len ? p->keys : NULL;
}

int hezo_policy_check_keys(const struct hezo_policy *p, const char *name, struct hezo_error **err)
{
	struct hezo_egress e;
	struct hezo_key *k = NULL;
	size_t n = 0;
	int r;

	if (!hezo_policy_keys(p))
		return 0;
	r = hezo_policy_egress_parsed(p, name, &e, err);
	if (r < 0)
		return r;
	r = hezo_keys_parse(p->keys, false, &k, &n, err);
	r = r ?: hezo_keys_check_egress(k, n, &e, err);
	hezo_keys_free(k, n);
	hezo_egress_clear(&e);
	if (r < 0)
		return hezo_error_prefix(err, "policy %s", name);
	return 0;
}

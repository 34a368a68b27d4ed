/*
 * The egress section as JSON: what the shim writes into the hook's --egress, what the hook sends
 * proxyd in a registration and what proxyd keeps in its state file. Every entry goes through
 * grammar.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-cleanup.h"
#include "hezo-egress.h"
#include "hezo-log.h"

#define PROJECT_MAX 64

/* Input quoted in a message: escaped, so the message stays one printable line, and cut short. */
struct shown {
	char s[200];
};

static struct shown show(const char *in)
{
	struct shown o;

	hezo_json_escape(o.s, sizeof(o.s), in);
	return o;
}

static const char *const mode_names[] = {
	[HEZO_EGRESS_PROXY] = "proxy",
	[HEZO_EGRESS_DENY] = "deny",
	[HEZO_EGRESS_OFF] = "off",
};

int hezo_egress_mode_parse(const char *s, enum hezo_egress_mode *out)
{
	for (size_t i = 0; s && i < HEZO_ARRAY_SIZE(mode_names); i++)
		if (strcmp(s, mode_names[i]) == 0) {
			*out = (enum hezo_egress_mode)i;
			return 0;
		}
	return -EINVAL;
}

const char *hezo_egress_mode_name(enum hezo_egress_mode m)
{
	return (unsigned)m < HEZO_ARRAY_SIZE(mode_names) ? mode_names[m] : "?";
}

void hezo_egress_clear(struct hezo_egress *e)
{
	free(e->names);
	free(e->cidrs);
	free(e->ranges);
	free(e->resolvers);
	hezo_secrets_free(e->secrets, e->nsecrets);
	hezo_keys_free(e->keys, e->nkeys);
	memset(e, 0, sizeof(*e));
}

static int string_array(const struct hezo_json *egress, const char *key,
			const struct hezo_json **arr, struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(egress, key);

	*arr = NULL;
	if (!v)
		return 0;
	if (v->type != HEZO_JSON_ARRAY)
		return hezo_error_set(err, EINVAL, "egress.%s: not an array", key);
	HEZO_JSON_FOREACH (i, v) {
		if (v->items[i]->type != HEZO_JSON_STRING)
			return hezo_error_set(err, EINVAL, "egress.%s[%zu]: not a string", key, i);
	}
	/* An empty list parses to nothing (and no calloc(0)). */
	*arr = v->len ? v : NULL;
	return 0;
}

static int parse_lists(const struct hezo_json *allow, const struct hezo_json *resolvers,
		       const struct hezo_json *ranges, struct hezo_egress *e,
		       struct hezo_error **err)
{
	const char *why = NULL;

	if (allow) {
		e->names = calloc(allow->len, sizeof(*e->names));
		e->cidrs = calloc(allow->len, sizeof(*e->cidrs));
		if (!e->names || !e->cidrs)
			return hezo_error_set(err, ENOMEM, "egress.allow: out of memory");
		HEZO_JSON_FOREACH (i, allow) {
			struct hezo_allow_name n;
			struct hezo_cidr c;
			bool is_cidr;

			if (hezo_allow_parse(allow->items[i]->str, &n, &c, &is_cidr, &why) < 0)
				return hezo_error_set(err, EINVAL, "egress.allow[%zu]: \"%s\": %s",
						      i, show(allow->items[i]->str).s, why);
			if (is_cidr)
				e->cidrs[e->ncidrs++] = c;
			else
				e->names[e->nnames++] = n;
		}
	}
	if (resolvers) {
		e->resolvers = calloc(resolvers->len, sizeof(*e->resolvers));
		if (!e->resolvers)
			return hezo_error_set(err, ENOMEM, "egress.resolvers: out of memory");
		HEZO_JSON_FOREACH (i, resolvers) {
			if (hezo_resolver_parse(resolvers->items[i]->str, &e->resolvers[i], &why) <
			    0)
				return hezo_error_set(err, EINVAL,
						      "egress.resolvers[%zu]: \"%s\": %s "
						      "(expected IP or IP:PORT)",
						      i, show(resolvers->items[i]->str).s, why);
			e->nresolvers++;
		}
	}
	if (ranges) {
		e->ranges = calloc(ranges->len, sizeof(*e->ranges));
		if (!e->ranges)
			return hezo_error_set(err, ENOMEM, "egress.allowRanges: out of memory");
		HEZO_JSON_FOREACH (i, ranges) {
			if (hezo_range_parse(ranges->items[i]->str, &e->ranges[i], &why) < 0)
				return hezo_error_set(err, EINVAL,
						      "egress.allowRanges[%zu]: \"%s\": %s", i,
						      show(ranges->items[i]->str).s, why);
			e->nranges++;
		}
	}
	return 0;
}

static int parse_section(const struct hezo_json *egress, bool proxy_only, struct hezo_egress *out,
			 struct hezo_error **err)
{
	static const char *const known[] = {"mode",    "allow",	  "resolvers", "allowRanges",
					    "project", "secrets", "keys"};
	const struct hezo_json *allow, *resolvers, *ranges, *mode, *project, *secrets, *keys;
	struct hezo_egress e = {.mode = HEZO_EGRESS_PROXY};
	int r;

	memset(out, 0, sizeof(*out));
	if (!egress || egress->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "egress: not an object");
	HEZO_JSON_FOREACH (i, egress) {
		bool ok = false;

		for (size_t k = 0; k < HEZO_ARRAY_SIZE(known); k++)
			ok = ok || strcmp(egress->keys[i], known[k]) == 0;
		if (!ok)
			return hezo_error_set(err, EINVAL, "egress.%s: unknown key",
					      show(egress->keys[i]).s);
	}
	mode = hezo_json_get(egress, "mode");
	if (mode && hezo_egress_mode_parse(hezo_json_string(mode), &e.mode) < 0)
		return hezo_error_set(err, EINVAL, "egress.mode: not proxy, deny or off");
	if (proxy_only && e.mode != HEZO_EGRESS_PROXY)
		return hezo_error_set(err, EINVAL, "egress.mode: proxyd serves only \"proxy\"");
	project = hezo_json_get(egress, "project");
	if (project && project->type != HEZO_JSON_NULL &&
	    (project->type != HEZO_JSON_STRING || !project->str[0] ||
	     strlen(project->str) > PROJECT_MAX))
		return hezo_error_set(err, EINVAL,
				      "egress.project: not a string of 1 to 64 bytes or null");
	if ((r = string_array(egress, "allow", &allow, err)) < 0 ||
	    (r = string_array(egress, "resolvers", &resolvers, err)) < 0 ||
	    (r = string_array(egress, "allowRanges", &ranges, err)) < 0)
		return r;
	r = parse_lists(allow, resolvers, ranges, &e, err);
	/* Secrets travel with their placeholders and file references, never their values. */
	secrets = hezo_json_get(egress, "secrets");
	if (r == 0 && secrets) {
		r = hezo_secrets_parse(secrets, true, &e.secrets, &e.nsecrets, err);
		r = r ?: hezo_secrets_check_egress(e.secrets, e.nsecrets, &e, err);
		if (r < 0)
			hezo_error_prefix(err, "egress");
	}
	/* Keys travel with their public halves and file references, never their private ones. */
	keys = hezo_json_get(egress, "keys");
	if (r == 0 && keys) {
		r = hezo_keys_parse(keys, true, &e.keys, &e.nkeys, err);
		r = r ?: hezo_keys_check_egress(e.keys, e.nkeys, &e, err);
		if (r < 0)
			hezo_error_prefix(err, "egress");
	}
	if (r < 0) {
		hezo_egress_clear(&e);
		return r;
	}
	*out = e;
	return 0;
}

int hezo_egress_parse_section(const struct hezo_json *egress, struct hezo_egress *out,
			      struct hezo_error **err)
{
	return parse_section(egress, false, out, err);
}

int hezo_egress_parse(const struct hezo_json *egress, struct hezo_egress *out,
		      struct hezo_error **err)
{
	return parse_section(egress, true, out, err);
}

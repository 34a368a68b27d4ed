/* The parse context of a policy file: how a field error is worded, and where it goes (the first one
 * stops the parse; `policy check` collects every one). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-parse.h"

int hezo_policy_perr(struct pctx *c, const char *field, const char *fmt, ...)
{
	_cleanup_free_ char *where = NULL, *line = NULL;
	va_list ap;
	int r;

	if (field ? asprintf(&where, "policy %s: %s", c->name, field) < 0
		  : asprintf(&where, "policy %s", c->name) < 0)
		return hezo_policy_nomem(c->err);
	va_start(ap, fmt);
	r = hezo_policy_vmsg(&line, where, fmt, ap);
	va_end(ap);
	if (r < 0)
		return hezo_policy_nomem(c->err);
	if (c->collect) {
		char **n = realloc(c->all, (c->nall + 1) * sizeof(*n));

		if (!n)
			return hezo_policy_nomem(c->err);
		c->all = n;
		c->all[c->nall] = strdup(line);
		if (!c->all[c->nall])
			return hezo_policy_nomem(c->err);
		c->nall++;
	}
	return hezo_error_set(c->err, EINVAL, "%s", line);
}

int hezo_policy_oom(struct pctx *c)
{
	return hezo_error_set(c->err, ENOMEM, "policy %s: out of memory", c->name);
}

/* Describe a JSON value for a message: strings quoted, numbers literal, else the type. */
void hezo_policy_describe(char *buf, size_t size, const struct hezo_json *v)
{
	if (v->type == HEZO_JSON_STRING)
		hezo_policy_quote(buf, size, v->str);
	else if (v->type == HEZO_JSON_NUMBER)
		snprintf(buf, size, "%.80s", v->str);
	else
		snprintf(buf, size, "%s", hezo_json_type_name(v->type));
}

int hezo_policy_expect_type(struct pctx *c, const char *field, const struct hezo_json *v,
			    enum hezo_json_type t)
{
	bool ok = v->type == t;

	if (t == HEZO_JSON_TRUE || t == HEZO_JSON_FALSE)
		ok = v->type == HEZO_JSON_TRUE || v->type == HEZO_JSON_FALSE;
	if (ok)
		return 0;
	return hezo_policy_perr(c, field, "expected %s, got %s",
				t == HEZO_JSON_OBJECT  ? "an object"
				: t == HEZO_JSON_ARRAY ? "a list"
				: t == HEZO_JSON_TRUE
					? "true or false"
					: (t == HEZO_JSON_STRING ? "a string" : "a number"),
				hezo_json_type_name(v->type));
}

int hezo_policy_unknown_key(struct pctx *c, const char *prefix, const char *key)
{
	char q[256];

	hezo_policy_quote(q, sizeof(q), key);
	if (prefix)
		return hezo_policy_perr(c, prefix, "unknown key %s", q);
	return hezo_policy_perr(c, NULL, "unknown key %s", q);
}

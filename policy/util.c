/* Small helpers shared by the policy parser and the spec rewriter: path
 * normalisation and comparison, capability names, quoting values for messages, and the one set
 * of "format a message and set the error" helpers every policy/ file uses. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

#include "hezo-log.h"
#include "policy-internal.h"

int hezo_policy_clean_path(const char *path, char **out)
{
	_cleanup_free_ char *buf = NULL;
	size_t o = 0;
	const char *p = path;

	if (!path || path[0] != '/')
		return -EINVAL;
	buf = malloc(strlen(path) + 2);
	if (!buf)
		return -ENOMEM;
	while (*p) {
		const char *start;
		size_t n;

		while (*p == '/')
			p++;
		start = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - start);
		if (n == 0 || (n == 1 && start[0] == '.'))
			continue;
		/* A ".." means the writer either tried to escape or did not clean; refuse both. */
		if (n == 2 && start[0] == '.' && start[1] == '.')
			return -EINVAL;
		buf[o++] = '/';
		memcpy(buf + o, start, n);
		o += n;
	}
	if (o == 0)
		buf[o++] = '/';
	buf[o] = '\0';
	*out = TAKE_PTR(buf);
	return 0;
}

bool hezo_policy_path_under(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (strcmp(root, "/") == 0)
		return path[0] == '/';
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int hezo_policy_cap_normalise(const char *name, char **out)
{
	char lower[64], upper[64];
	const char *rest = name;
	cap_value_t val;
	size_t n;

	if (!name)
		return -EINVAL;
	if (strncasecmp(rest, "CAP_", 4) == 0)
		rest += 4;
	n = strlen(rest);
	/* libcap also takes numbers; only names are meaningful in a policy or a spec. */
	if (n == 0 || n + 5 > sizeof(lower))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isalpha((unsigned char)rest[i]) && rest[i] != '_')
			return -EINVAL;
	memcpy(lower, "cap_", 4);
	memcpy(upper, "CAP_", 4);
	for (size_t i = 0; i <= n; i++) {
		lower[4 + i] = (char)tolower((unsigned char)rest[i]);
		upper[4 + i] = (char)toupper((unsigned char)rest[i]);
	}
	if (cap_from_name(lower, &val) < 0)
		return -EINVAL;
	*out = strdup(upper);
	return *out ? 0 : -ENOMEM;
}

void hezo_policy_quote(char *buf, size_t size, const char *s)
{
	char head[81], inner[6 * sizeof(head)];
	size_t n = strlen(s ? s : "");

	snprintf(head, sizeof(head), "%s", s ? s : "");
	hezo_json_escape(inner, sizeof(inner), head);
	snprintf(buf, size, "\"%s\"%s", inner, n >= sizeof(head) ? "..." : "");
}

char *hezo_policy_list_next(char **cursor)
{
	char *tok, *end;

	while ((tok = strsep(cursor, ","))) {
		while (*tok == ' ' || *tok == '\t')
			tok++;
		end = tok + strlen(tok);
		while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (*tok != '\0')
			return tok;
	}
	return NULL;
}

int hezo_policy_vmsg(char **msg, const char *prefix, const char *fmt, va_list ap)
{
	_cleanup_free_ char *text = NULL;

	if (vasprintf(&text, fmt, ap) < 0)
		return -ENOMEM;
	if (!prefix) {
		*msg = TAKE_PTR(text);
		return 0;
	}
	return asprintf(msg, "%s: %s", prefix, text) < 0 ? -ENOMEM : 0;
}

int hezo_policy_verr(struct hezo_error **err, const char *prefix, const char *fmt, va_list ap)
{
	_cleanup_free_ char *msg = NULL;

	if (hezo_policy_vmsg(&msg, prefix, fmt, ap) < 0)
		return hezo_policy_nomem(err);
	return hezo_error_set(err, EINVAL, "%s", msg);
}

int hezo_policy_field_err(struct hezo_error **err, const char *field, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = hezo_policy_verr(err, field, fmt, ap);
	va_end(ap);
	return r;
}

int hezo_policy_nomem(struct hezo_error **err)
{
	return hezo_error_set(err, ENOMEM, "out of memory");
}

/* The child of type (a list or an object) at key, created when absent or null. */
static struct hezo_json *want(struct hezo_json *parent, const char *key, enum hezo_json_type type,
			      const char *field, struct hezo_error **err)
{
	struct hezo_json *v = hezo_json_get(parent, key);

	if (v && v->type == HEZO_JSON_NULL) {
		hezo_json_remove(parent, key);
		v = NULL;
	}
	if (v && v->type != type) {
		hezo_policy_ferr(err, "%s: expected %s, got %s", field,
				 type == HEZO_JSON_ARRAY ? "a list" : "an object",
				 hezo_json_type_name(v->type));
		return NULL;
	}
	v = type == HEZO_JSON_ARRAY ? hezo_json_ensure_array(parent, key)
				    : hezo_json_ensure_object(parent, key);
	if (!v)
		hezo_policy_nomem(err);
	return v;
}

struct hezo_json *hezo_policy_want_array(struct hezo_json *parent, const char *key,
					 const char *field, struct hezo_error **err)
{
	return want(parent, key, HEZO_JSON_ARRAY, field, err);
}

struct hezo_json *hezo_policy_want_object(struct hezo_json *parent, const char *key,
					  const char *field, struct hezo_error **err)
{
	return want(parent, key, HEZO_JSON_OBJECT, field, err);
}

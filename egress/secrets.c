/*
 * The secrets contract policy/, the shim, the hook and proxyd share: the JSON form of a secret
 * (names, hosts, file reference, placeholder), its checks against the egress allow list, and the
 * placeholder's shape. Pure: no I/O; a secret's value never passes through here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hezo-cleanup.h"
#include "hezo-egress.h"
#include "hezo-log.h"

#define SECRET_FILE_MAX 4096

static const char ph_alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";

struct shown {
	char s[160];
};

static struct shown show(const char *in)
{
	struct shown o;

	hezo_json_escape(o.s, sizeof(o.s), in);
	return o;
}

bool hezo_egress_file_ok(const char *f)
{
	size_t n = f ? strlen(f) : 0;

	return n > 0 && f[0] == '/' && n < SECRET_FILE_MAX && !strstr(f, "/../") &&
	       !strstr(f, "/./") && !(n >= 3 && strcmp(f + n - 3, "/..") == 0);
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= HEZO_SECRET_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

bool hezo_placeholder_valid(const char *s)
{
	size_t pl = strlen(HEZO_PLACEHOLDER_PREFIX);

	if (!s || strlen(s) != HEZO_PLACEHOLDER_LEN || strncmp(s, HEZO_PLACEHOLDER_PREFIX, pl) != 0)
		return false;
	for (size_t i = pl; i < HEZO_PLACEHOLDER_LEN; i++)
		if (!strchr(ph_alphabet, s[i]) || s[i] == '\0')
			return false;
	return true;
}

int hezo_placeholder_from(const uint8_t *rnd, size_t len, char out[HEZO_PLACEHOLDER_LEN + 1])
{
	size_t pl = strlen(HEZO_PLACEHOLDER_PREFIX), k = pl;

	memcpy(out, HEZO_PLACEHOLDER_PREFIX, pl);
	/* 252 = 7 * 36: bytes below it map onto the alphabet without bias. */
	for (size_t i = 0; i < len && k < HEZO_PLACEHOLDER_LEN; i++)
		if (rnd[i] < 252)
			out[k++] = ph_alphabet[rnd[i] % 36];
	out[k] = '\0';
	return k == HEZO_PLACEHOLDER_LEN ? 0 : -EAGAIN;
}

void hezo_secrets_free(struct hezo_secret *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].hosts);
		free(v[i].file);
		for (size_t k = 0; k < v[i].nheaders; k++)
			free(v[i].headers[k]);
		free(v[i].headers);
	}
	free(v);
}

/* A header field name as RFC 9110 spells a token; kept lowercase. */
static bool field_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= HEZO_SECRET_HEADER_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("!#$%&'*+-.^_`|~", s[i])))
			return false;
	return true;
}

static int parse_headers(const char *name, const struct hezo_json *h, struct hezo_secret *s,
			 struct hezo_error **err)
{
	if (!h || h->type != HEZO_JSON_ARRAY || h->len == 0)
		return hezo_error_set(err, EINVAL, "secrets.%s.headers: not a non-empty array",
				      name);
	s->headers = calloc(h->len, sizeof(*s->headers));
	if (!s->headers)
		return hezo_error_set(err, ENOMEM, "secrets.%s: out of memory", name);
	HEZO_JSON_FOREACH (i, h) {
		const char *f = hezo_json_string(h->items[i]);
		char *l;

		if (!f || !field_name_ok(f))
			return hezo_error_set(err, EINVAL,
					      "secrets.%s.headers[%zu]: not a header field name",
					      name, i);
		/* Host was matched with the TLS name; a value there would change where it goes. */
		if (strcasecmp(f, "host") == 0)
			return hezo_error_set(err, EINVAL,
					      "secrets.%s.headers[%zu]: Host never takes a value",
					      name, i);
		if (hezo_secret_header_allowed(s, f, strlen(f)))
			return hezo_error_set(err, EINVAL, "secrets.%s.headers[%zu]: listed twice",
					      name, i);
		l = strdup(f);
		if (!l)
			return hezo_error_set(err, ENOMEM, "secrets.%s: out of memory", name);
		for (char *c = l; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		s->headers[s->nheaders++] = l;
	}
	return 0;
}

static int parse_in(const char *name, const struct hezo_json *in, struct hezo_secret *s,
		    struct hezo_error **err)
{
	s->in_header = s->in_query = false;
	if (!in || in->type != HEZO_JSON_ARRAY || in->len == 0)
		return hezo_error_set(err, EINVAL, "secrets.%s.in: not a non-empty array", name);
	HEZO_JSON_FOREACH (i, in) {
		const char *v = hezo_json_string(in->items[i]);
		bool *b = !v			     ? NULL
			  : strcmp(v, "header") == 0 ? &s->in_header
			  : strcmp(v, "query") == 0  ? &s->in_query
						     : NULL;

		if (!b || *b)
			return hezo_error_set(err, EINVAL,
					      "secrets.%s.in[%zu]: not \"header\" or \"query\" "
					      "(each once)",
					      name, i);
		*b = true;
	}
	return 0;
}

static int parse_one(const char *name, const struct hezo_json *o, bool with_placeholders,
		     struct hezo_secret *s, struct hezo_error **err)
{
	static const char *const known[] = {"hosts",   "file", "otherHosts",
					    "headers", "in",   "placeholder"};
	const struct hezo_json *hosts, *file, *other, *ph;
	int r;
	const char *why = NULL;

	if (!name_ok(name))
		return hezo_error_set(err, EINVAL,
				      "secrets.%s: not an environment variable name "
				      "([A-Za-z_][A-Za-z0-9_]*, at most 63 bytes)",
				      show(name).s);
	snprintf(s->name, sizeof(s->name), "%s", name);
	if (!o || o->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "secrets.%s: not an object", name);
	HEZO_JSON_FOREACH (i, o) {
		bool ok = false;

		for (size_t k = 0; k < HEZO_ARRAY_SIZE(known); k++)
			ok = ok || strcmp(o->keys[i], known[k]) == 0;
		if (!ok || (!with_placeholders && strcmp(o->keys[i], "placeholder") == 0))
			return hezo_error_set(err, EINVAL, "secrets.%s.%s: unknown key", name,
					      show(o->keys[i]).s);
	}
	hosts = hezo_json_get(o, "hosts");
	if (!hosts || hosts->type != HEZO_JSON_ARRAY || hosts->len == 0)
		return hezo_error_set(err, EINVAL, "secrets.%s.hosts: not a non-empty array", name);
	s->hosts = calloc(hosts->len, sizeof(*s->hosts));
	if (!s->hosts)
		return hezo_error_set(err, ENOMEM, "secrets.%s: out of memory", name);
	HEZO_JSON_FOREACH (i, hosts) {
		const char *h = hezo_json_string(hosts->items[i]);
		struct hezo_cidr c;
		bool is_cidr = false;

		if (!h)
			return hezo_error_set(err, EINVAL, "secrets.%s.hosts[%zu]: not a string",
					      name, i);
		if (hezo_allow_parse(h, &s->hosts[i], &c, &is_cidr, &why) < 0)
			return hezo_error_set(err, EINVAL, "secrets.%s.hosts[%zu]: \"%s\": %s",
					      name, i, show(h).s, why);
		if (is_cidr)
			return hezo_error_set(
				err, EINVAL,
				"secrets.%s.hosts[%zu]: \"%s\": an address; a secret "
				"names hosts (TLS names them, addresses it cannot check)",
				name, i, show(h).s);
		s->nhosts++;
	}
	file = hezo_json_get(o, "file");
	if (!hezo_egress_file_ok(hezo_json_string(file)))
		return hezo_error_set(err, EINVAL,
				      "secrets.%s.file: not an absolute path without . or .. "
				      "components",
				      name);
	s->file = strdup(file->str);
	if (!s->file)
		return hezo_error_set(err, ENOMEM, "secrets.%s: out of memory", name);
	other = hezo_json_get(o, "otherHosts");
	if (other) {
		const char *v = hezo_json_string(other);

		if (!v || (strcmp(v, "refuse") != 0 && strcmp(v, "pass") != 0))
			return hezo_error_set(err, EINVAL,
					      "secrets.%s.otherHosts: not \"refuse\" or \"pass\"",
					      name);
		s->pass_elsewhere = strcmp(v, "pass") == 0;
	}
	s->in_header = true;
	if (hezo_json_get(o, "headers") &&
	    (r = parse_headers(name, hezo_json_get(o, "headers"), s, err)) < 0)
		return r;
	if (hezo_json_get(o, "in") && (r = parse_in(name, hezo_json_get(o, "in"), s, err)) < 0)
		return r;
	if (s->headers && !s->in_header)
		return hezo_error_set(err, EINVAL,
				      "secrets.%s.headers: names headers, but \"in\" leaves out "
				      "\"header\"",
				      name);
	ph = hezo_json_get(o, "placeholder");
	if (with_placeholders) {
		if (!hezo_placeholder_valid(hezo_json_string(ph)))
			return hezo_error_set(
				err, EINVAL, "secrets.%s.placeholder: missing or not a placeholder",
				name);
		snprintf(s->placeholder, sizeof(s->placeholder), "%s", ph->str);
	}
	return 0;
}

int hezo_secrets_parse(const struct hezo_json *obj, bool with_placeholders,
		       struct hezo_secret **out, size_t *n, struct hezo_error **err)
{
	struct hezo_secret *v = NULL;
	size_t k = 0;
	int r = 0;

	*out = NULL;
	*n = 0;
	if (!obj || obj->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "secrets: not an object");
	if (obj->len == 0)
		return 0;
	v = calloc(obj->len, sizeof(*v));
	if (!v)
		return hezo_error_set(err, ENOMEM, "secrets: out of memory");
	HEZO_JSON_FOREACH (i, obj) {
		r = parse_one(obj->keys[i], obj->items[i], with_placeholders, &v[i], err);
		k = i + 1;
		if (r < 0)
			break;
		for (size_t j = 0; j < i && with_placeholders; j++)
			if (strcmp(v[j].placeholder, v[i].placeholder) == 0) {
				r = hezo_error_set(err, EINVAL,
						   "secrets.%s.placeholder: the same as %s's",
						   v[i].name, v[j].name);
				break;
			}
		if (r < 0)
			break;
	}
	if (r < 0) {
		hezo_secrets_free(v, k);
		return r;
	}
	*out = v;
	*n = obj->len;
	return 0;
}

static bool port_matches(uint16_t entry, uint16_t port)
{
	return port == 0 || (entry ? entry : 443) == port;
}

bool hezo_secret_names_host(const struct hezo_secret *s, const char *host, uint16_t port)
{
	size_t n = strlen(host);

	for (size_t i = 0; i < s->nhosts; i++) {
		const struct hezo_allow_name *h = &s->hosts[i];
		size_t l = strlen(h->name);

		if (!port_matches(h->port, port))
			continue;
		if (!h->wildcard && strcmp(h->name, host) == 0)
			return true;
		if (h->wildcard && n > l + 1 && host[n - l - 1] == '.' &&
		    strcmp(host + n - l, h->name) == 0)
			return true;
	}
	return false;
}

bool hezo_secret_header_allowed(const struct hezo_secret *s, const char *name, size_t nlen)
{
	if (!s->in_header)
		return false;
	if (!s->headers)
		return true;
	for (size_t i = 0; i < s->nheaders; i++)
		if (strlen(s->headers[i]) == nlen && strncasecmp(s->headers[i], name, nlen) == 0)
			return true;
	return false;
}

int hezo_secret_narrower(const struct hezo_secret *a, const struct hezo_secret *b, const char **why)
{
	if ((b->in_header && !a->in_header) || (b->in_query && !a->in_query)) {
		*why = "in: a place the main policy does not give it";
		return -EPERM;
	}
	if (b->in_header && a->headers) {
		if (!b->headers) {
			*why = "headers: any header, where the main policy names some";
			return -EPERM;
		}
		for (size_t i = 0; i < b->nheaders; i++)
			if (!hezo_secret_header_allowed(a, b->headers[i], strlen(b->headers[i]))) {
				*why = "headers: a header the main policy does not name";
				return -EPERM;
			}
	}
	return 0;
}

/* Does egress entry a let out every name secret host h covers, on h's port? */
bool hezo_allow_covers(const struct hezo_allow_name *a, const struct hezo_allow_name *h,
		       uint16_t dflt)
{
	uint16_t port = h->port ? h->port : dflt;
	size_t n = strlen(h->name), l = strlen(a->name);

	if (a->port ? a->port != port : (port != 80 && port != 443))
		return false;
	if (!a->wildcard)
		return !h->wildcard && strcmp(a->name, h->name) == 0;
	/* *.a covers x.a and *.x.a; *.a covers *.a itself. */
	if (h->wildcard && strcmp(a->name, h->name) == 0)
		return true;
	return n > l + 1 && h->name[n - l - 1] == '.' && strcmp(h->name + n - l, a->name) == 0;
}

int hezo_secrets_check_egress(const struct hezo_secret *v, size_t n, const struct hezo_egress *e,
			      struct hezo_error **err)
{
	for (size_t i = 0; i < n; i++) {
		if (e->mode != HEZO_EGRESS_PROXY)
			return hezo_error_set(err, EINVAL,
					      "secrets.%s: secrets need egress.mode \"proxy\" "
					      "(proxyd adds their values)",
					      v[i].name);
		for (size_t k = 0; k < v[i].nhosts; k++) {
			const struct hezo_allow_name *h = &v[i].hosts[k];
			bool ok = false;

			for (size_t j = 0; !ok && j < e->nnames; j++)
				ok = hezo_allow_covers(&e->names[j], h, 443);
			if (!ok) {
				char port[8] = "";

				if (h->port)
					snprintf(port, sizeof(port), ":%u", h->port);
				return hezo_error_set(
					err, EINVAL,
					"secrets.%s.hosts[%zu]: %s%s%s is not allowed "
					"by egress.allow",
					v[i].name, k, h->wildcard ? "*." : "", h->name, port);
			}
		}
	}
	return 0;
}

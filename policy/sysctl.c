/* linux.sysctl: only the sysctls the admin lists, each value within the listed bounds. */
/*
 * runc writes each key to /proc/sys with its dots turned into slashes, inside the container's
 * namespaces; only sysctls the kernel keeps per namespace can be set at all, but many of those
 * still loosen the box (net.ipv4.conf.all.route_localnet lets the box route to 127/8). So a key
 * must equal a listed name exactly (no slash spelling, no "..") and its value be one or two
 * decimal numbers, each within the listed bounds; a listed name without bounds takes any value.
 * kernel.domainname (Docker's --domainname) is the one name outside the list: see domainname_ok.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"

const struct hezo_policy_sysctl *hezo_policy_sysctl_find(const struct hezo_policy *p,
							 const char *name)
{
	for (size_t i = 0; i < p->nsysctls; i++)
		if (strcmp(p->sysctls[i].name, name) == 0)
			return &p->sysctls[i];
	return NULL;
}

/* One or two decimal numbers (no leading zero) separated by blanks, each within [lo, hi]. */
static bool value_ok(const char *v, uint64_t lo, uint64_t hi)
{
	size_t count = 0;

	for (const char *s = v;;) {
		size_t blanks = strspn(s, " \t"), digits;
		unsigned long long n;

		s += blanks;
		if (!*s)
			return count >= 1;
		digits = strspn(s, "0123456789");
		/* The kernel reads a leading 0 as octal (proc_dointvec): 0001024 is 532. */
		if (digits == 0 || digits > 19 || ++count > 2 || (count > 1 && blanks == 0) ||
		    (s[0] == '0' && digits > 1))
			return false;
		n = strtoull(s, NULL, 10);
		if (n < lo || n > hi)
			return false;
		s += digits;
	}
}

/*
 * Docker sends --domainname as kernel.domainname. It belongs to the UTS namespace of the process
 * that writes it, so it is the box's own only where the box makes a new one: joined by path, it
 * would rename the owner of that namespace (the host's, or another container's).
 */
static int domainname_ok(const struct hezo_json *linux_, const char *v, struct hezo_error **err)
{
	const struct hezo_json *nss = hezo_json_get(linux_, "namespaces");
	size_t n = v ? strlen(v) : 0;
	bool own = false;
	char qv[128];

	HEZO_JSON_FOREACH (i, nss) {
		const char *t = hezo_json_string(hezo_json_get(nss->items[i], "type"));
		const struct hezo_json *path = hezo_json_get(nss->items[i], "path");

		if (t && strcmp(t, "uts") == 0)
			own = !path || path->type == HEZO_JSON_NULL ||
			      (hezo_json_string(path) && !hezo_json_string(path)[0]);
	}
	if (!v)
		return hezo_policy_ferr(err,
					"linux.sysctl: \"kernel.domainname\": expected a string");
	if (!own)
		return hezo_policy_ferr(err,
					"linux.sysctl: \"kernel.domainname\" is allowed only in a "
					"UTS namespace of the box's own (linux.namespaces: "
					"{\"type\": \"uts\"} without a path)");
	/* The kernel keeps 64 bytes; a name's characters only, so no newline or blank is written.
	 */
	hezo_policy_quote(qv, sizeof(qv), v);
	if (n == 0 || n > 64 ||
	    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != n)
		return hezo_policy_ferr(err,
					"linux.sysctl: \"kernel.domainname\": %s is not 1 to 64 of "
					"[a-zA-Z0-9.-_]",
					qv);
	return 0;
}

int hezo_policy_check_sysctl(const struct hezo_policy *p, struct hezo_json *linux_,
			     struct hezo_error **err)
{
	const struct hezo_json *sc = hezo_json_get(linux_, "sysctl");

	if (!sc || sc->type == HEZO_JSON_NULL)
		return 0;
	if (sc->type != HEZO_JSON_OBJECT)
		return hezo_policy_ferr(err, "linux.sysctl: expected an object, got %s",
					hezo_json_type_name(sc->type));
	HEZO_JSON_FOREACH (i, sc) {
		const struct hezo_policy_sysctl *s = hezo_policy_sysctl_find(p, sc->keys[i]);
		const char *v = hezo_json_string(sc->items[i]);
		char q[256], qv[128];

		if (strcmp(sc->keys[i], "kernel.domainname") == 0) {
			int r = domainname_ok(linux_, v, err);
			if (r < 0)
				return r;
			continue;
		}
		hezo_policy_quote(q, sizeof(q), sc->keys[i]);
		if (!s) {
			hezo_policy_ferr(err,
					 "linux.sysctl: %s is not one of the sysctls the policy "
					 "allows",
					 q);
			return hezo_error_key(err, "sysctls");
		}
		if (!v)
			return hezo_policy_ferr(err, "linux.sysctl: %s: expected a string", q);
		if (s->any)
			continue;
		hezo_policy_quote(qv, sizeof(qv), v);
		if (!value_ok(v, s->lo, s->hi))
			return hezo_policy_ferr(
				err,
				"linux.sysctl: %s: %s is not one or two numbers from "
				"%" PRIu64 " to %" PRIu64,
				q, qv, s->lo, s->hi);
	}
	return 0;
}

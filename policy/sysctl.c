/* linux.sysctl: only the sysctls the admin lists, each value within the listed bounds. */
/*
 * runc writes each key to /proc/sys with its dots turned into slashes, inside the container's
 * namespaces; only sysctls the kernel keeps per namespace can be set at all, but many of those
 * still loosen the box (net.ipv4.conf.all.route_localnet lets the box route to 127/8). So a key
 * must equal a listed name exactly (no slash spelling, no "..") and its value be one or two
 * decimal numbers, each within the listed bounds; a listed name without bounds takes any value.
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

		hezo_policy_quote(q, sizeof(q), sc->keys[i]);
		if (!s)
			return hezo_policy_ferr(
				err,
				"linux.sysctl: %s is not one of the sysctls the policy "
				"allows",
				q);
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

/*
 * One network namespace, one egress: a container that joins a namespace already registered (a
 * pod's app containers, `--network=container:A`) may narrow its section, never widen it.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "hezo-cleanup.h"
#include "hezo-egress.h"

static bool port_covers(uint16_t outer, uint16_t inner)
{
	/* 0 is 80 and 443: only another 0 covers both at once. */
	if (outer == inner)
		return true;
	return outer == 0 && (inner == 80 || inner == 443);
}

static bool name_covers(const struct hezo_allow_name *o, const struct hezo_allow_name *i)
{
	size_t n, s;

	if (!port_covers(o->port, i->port))
		return false;
	if (!o->wildcard)
		return !i->wildcard && strcmp(o->name, i->name) == 0;
	/* *.s covers t (and *.t) when t is s itself (only for *.t) or strictly below s. */
	if (i->wildcard && strcmp(o->name, i->name) == 0)
		return true;
	n = strlen(i->name);
	s = strlen(o->name);
	return n > s + 1 && i->name[n - s - 1] == '.' && strcmp(i->name + n - s, o->name) == 0;
}

static bool cidr_covers(const struct hezo_cidr *o, const struct hezo_cidr *i, bool ports)
{
	if (ports && !port_covers(o->port, i->port))
		return false;
	return o->family == i->family && o->prefix <= i->prefix &&
	       hezo_cidr_contains(o, i->family, i->addr);
}

/* Is allow entry s (canonical) allowed in full by e? */
static bool allow_covered(const char *s, const struct hezo_egress *e)
{
	struct hezo_allow_name n;
	struct hezo_cidr c;
	bool is_cidr;

	if (hezo_allow_parse(s, &n, &c, &is_cidr, NULL) < 0)
		return false;
	if (is_cidr) {
		for (size_t k = 0; k < e->ncidrs; k++)
			if (cidr_covers(&e->cidrs[k], &c, true))
				return true;
		return false;
	}
	for (size_t k = 0; k < e->nnames; k++)
		if (name_covers(&e->names[k], &n))
			return true;
	return false;
}

static bool range_covered(const char *s, const struct hezo_egress *e)
{
	struct hezo_cidr c;

	if (hezo_range_parse(s, &c, NULL) < 0)
		return false;
	for (size_t k = 0; k < e->nranges; k++)
		if (cidr_covers(&e->ranges[k], &c, false))
			return true;
	return false;
}

static bool has_string(const struct hezo_json *arr, const char *s)
{
	HEZO_JSON_FOREACH (i, arr)
		if (strcmp(arr->items[i]->str, s) == 0)
			return true;
	return false;
}

/* Append to out the entries of list (of a section whose parse is from) that other covers. */
static int keep_covered(const struct hezo_json *list, bool ranges, const struct hezo_egress *other,
			struct hezo_json *out, size_t *dropped)
{
	if (!list)
		return 0;
	HEZO_JSON_FOREACH (i, list) {
		char canon[HEZO_EGRESS_ENTRY_MAX];
		const char *s = list->items[i]->str;

		if (!ranges && hezo_allow_normalize(s, canon, NULL) == 0)
			s = canon;
		if (!(ranges ? range_covered(s, other) : allow_covered(s, other))) {
			(*dropped)++;
			continue;
		}
		if (has_string(out, s))
			continue;
		if (hezo_json_append(out, hezo_json_new_string(s)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static bool same_resolvers(const struct hezo_egress *a, const struct hezo_egress *b)
{
	if (a->nresolvers != b->nresolvers)
		return false;
	for (size_t i = 0; i < a->nresolvers; i++) {
		bool found = false;

		for (size_t k = 0; k < b->nresolvers && !found; k++)
			found = a->resolvers[i].family == b->resolvers[k].family &&
				a->resolvers[i].port == b->resolvers[k].port &&
				memcmp(a->resolvers[i].addr, b->resolvers[k].addr,
				       a->resolvers[i].family == AF_INET ? 4 : 16) == 0;
		if (!found)
			return false;
	}
	return true;
}

/* out = the entries of a covered by b, then those of b covered by a (when a lost some). */
static int intersect_list(const struct hezo_json *a, const struct hezo_json *b, bool ranges,
			  const struct hezo_egress *pa, const struct hezo_egress *pb,
			  struct hezo_json **out, size_t *dropped)
{
	_cleanup_json_ struct hezo_json *arr = hezo_json_new_array();
	size_t lost = 0;

	if (!arr)
		return -ENOMEM;
	if (keep_covered(a, ranges, pb, arr, &lost) < 0)
		return -ENOMEM;
	if (lost) {
		size_t unused = 0;

		if (keep_covered(b, ranges, pa, arr, &unused) < 0)
			return -ENOMEM;
	}
	*dropped += lost;
	*out = TAKE_PTR(arr);
	return 0;
}

static int copy_key(struct hezo_json *to, const struct hezo_json *from, const char *key)
{
	const struct hezo_json *v = hezo_json_get(from, key);

	return v ? hezo_json_set(to, key, hezo_json_clone(v)) : 0;
}

int hezo_egress_intersect(const struct hezo_json *a, const struct hezo_json *b,
			  struct hezo_json **out, bool *narrowed, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *res = NULL, *allow = NULL, *ranges = NULL;
	struct hezo_egress pa = {0}, pb = {0};
	const char *mode;
	size_t dropped = 0;
	int r;

	*out = NULL;
	*narrowed = false;
	r = hezo_egress_parse_section(a, &pa, err);
	if (r < 0)
		return hezo_error_prefix(err, "the namespace's egress");
	r = hezo_egress_parse_section(b, &pb, err);
	if (r < 0) {
		hezo_egress_clear(&pa);
		return hezo_error_prefix(err, "the joining container's egress");
	}
	if (pa.mode != pb.mode)
		r = hezo_error_set(err, EPERM, "egress mode %s differs from the namespace's %s",
				   hezo_egress_mode_name(pb.mode), hezo_egress_mode_name(pa.mode));
	else if (!same_resolvers(&pa, &pb))
		r = hezo_error_set(err, EPERM,
				   "egress.resolvers differ from the namespace's (they cannot be "
				   "narrowed: DNS goes to one set of resolvers)");
	else if (intersect_list(hezo_json_get(a, "allow"), hezo_json_get(b, "allow"), false, &pa,
				&pb, &allow, &dropped) < 0 ||
		 intersect_list(hezo_json_get(a, "allowRanges"), hezo_json_get(b, "allowRanges"),
				true, &pa, &pb, &ranges, &dropped) < 0)
		r = hezo_error_set(err, ENOMEM, "out of memory");
	mode = hezo_egress_mode_name(pa.mode);
	hezo_egress_clear(&pa);
	hezo_egress_clear(&pb);
	if (r < 0)
		return r;

	if (!dropped) {
		res = hezo_json_clone(a);
	} else {
		res = hezo_json_new_object();
		if (res && (hezo_json_set(res, "mode", hezo_json_new_string(mode)) < 0 ||
			    hezo_json_set(res, "allow", TAKE_PTR(allow)) < 0 ||
			    hezo_json_set(res, "allowRanges", TAKE_PTR(ranges)) < 0 ||
			    copy_key(res, a, "resolvers") < 0 || copy_key(res, a, "project") < 0))
			res = (hezo_json_free(res), NULL);
	}
	if (!res)
		return hezo_error_set(err, ENOMEM, "out of memory");
	*narrowed = dropped > 0;
	*out = TAKE_PTR(res);
	return 0;
}

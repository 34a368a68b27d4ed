/* runc update's flag form (--memory, --cpu-quota, ...) as one OCI LinuxResources object, and
 * the words of an update call the backend gets beside it. Pure functions of the parsed args. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

int shim_parse_size(const char *s, int64_t *out)
{
	static const char units[] = "kmgtp";
	const char *p = s, *num_end, *u;
	double mult = 1, v;
	char *end;

	if (strcmp(s, "-1") == 0) {
		*out = -1;
		return 0;
	}
	/* digits, optionally .digits groups, as go-units' pattern */
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	while (isdigit((unsigned char)*p))
		p++;
	while (*p == '.' && isdigit((unsigned char)p[1])) {
		p++;
		while (isdigit((unsigned char)*p))
			p++;
	}
	num_end = p;
	if (*p == ' ')
		p++;
	if (*p && (u = strchr(units, tolower((unsigned char)*p)))) {
		for (const char *k = units; k <= u; k++)
			mult *= 1024;
		p++;
	}
	if (*p == 'i' || *p == 'I')
		p++;
	if (*p == 'b' || *p == 'B')
		p++;
	if (*p)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end != num_end)
		return -EINVAL;
	v *= mult;
	if (!isfinite(v) || v >= 9223372036854775807.0)
		return -ERANGE;
	*out = (int64_t)v;
	return 0;
}

enum res_kind {
	R_SIZE,	  /* memory values: sizes or -1 */
	R_INT,	  /* int64 */
	R_UINT,	  /* uint64 */
	R_WEIGHT, /* blkio weight: 10..1000 (0 leaves it) */
	R_STRING,
};

static const struct {
	const char *flag;
	const char *section;
	const char *key;
	enum res_kind kind;
} resource_flags[] = {
	{"memory", "memory", "limit", R_SIZE},
	{"memory-reservation", "memory", "reservation", R_SIZE},
	{"memory-swap", "memory", "swap", R_SIZE},
	{"kernel-memory", "memory", "kernel", R_SIZE},
	{"kernel-memory-tcp", "memory", "kernelTCP", R_SIZE},
	{"cpu-share", "cpu", "shares", R_UINT},
	{"cpu-shares", "cpu", "shares", R_UINT},
	{"cpu-quota", "cpu", "quota", R_INT},
	{"cpu-period", "cpu", "period", R_UINT},
	{"cpu-rt-runtime", "cpu", "realtimeRuntime", R_INT},
	{"cpu-rt-period", "cpu", "realtimePeriod", R_UINT},
	{"cpuset-cpus", "cpu", "cpus", R_STRING},
	{"cpuset-mems", "cpu", "mems", R_STRING},
	{"pids-limit", "pids", "limit", R_INT},
	{"blkio-weight", "blockIO", "weight", R_WEIGHT},
};

bool shim_update_is_resource_flag(const char *name)
{
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(resource_flags); i++)
		if (strcmp(resource_flags[i].flag, name) == 0)
			return true;
	return false;
}

static int parse_int(const char *s, bool is_unsigned, int64_t *si, uint64_t *ui)
{
	char *end;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	if (is_unsigned) {
		if (*s == '-' || *s == '+')
			return -EINVAL;
		*ui = strtoull(s, &end, 10);
	} else {
		*si = strtoll(s, &end, 10);
	}
	if (errno)
		return -errno;
	return *end ? -EINVAL : 0;
}

int shim_update_flags_to_json(const struct shim_args *a, struct hezo_json **out,
			      struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *res = NULL;

	*out = NULL;
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(resource_flags); i++) {
		const char *v = shim_args_get(a, resource_flags[i].flag);
		struct hezo_json *section, *val = NULL;
		int64_t si = 0;
		uint64_t ui = 0;

		if (!v)
			continue;
		switch (resource_flags[i].kind) {
		case R_SIZE:
			if (shim_parse_size(v, &si) < 0)
				return hezo_error_set(err, EINVAL,
						      "update --%s: \"%s\" is not a size",
						      resource_flags[i].flag, v);
			val = hezo_json_new_int(si);
			break;
		case R_INT:
			if (parse_int(v, false, &si, &ui) < 0)
				return hezo_error_set(err, EINVAL,
						      "update --%s: \"%s\" is not an integer",
						      resource_flags[i].flag, v);
			val = hezo_json_new_int(si);
			break;
		case R_UINT:
		case R_WEIGHT:
			if (parse_int(v, true, &si, &ui) < 0)
				return hezo_error_set(
					err, EINVAL,
					"update --%s: \"%s\" is not an unsigned integer",
					resource_flags[i].flag, v);
			if (resource_flags[i].kind == R_WEIGHT) {
				/* runc treats 0 as "leave it", and the kernel accepts 10..1000 */
				if (ui == 0)
					continue;
				if (ui < 10 || ui > 1000)
					return hezo_error_set(err, EINVAL,
							      "update --%s: %s is outside 10..1000",
							      resource_flags[i].flag, v);
			}
			val = hezo_json_new_uint(ui);
			break;
		case R_STRING:
			val = hezo_json_new_string(v);
			break;
		}
		if (!res && !(res = hezo_json_new_object())) {
			hezo_json_free(val);
			return hezo_error_set(err, ENOMEM, "out of memory");
		}
		if (!val || !(section = hezo_json_ensure_object(res, resource_flags[i].section))) {
			hezo_json_free(val);
			return hezo_error_set(err, ENOMEM, "out of memory");
		}
		if (hezo_json_set(section, resource_flags[i].key, val) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	*out = TAKE_PTR(res);
	return 0;
}

int shim_update_backend_args(const struct shim_args *a, char **argv, struct hezo_strv *out)
{
	int r;

	r = hezo_strv_push(out, "--resources");
	r = r ?: hezo_strv_push(out, "-");
	for (size_t i = 0; r == 0 && i < a->n; i++) {
		const struct shim_opt *o = &a->opts[i];

		if (!o->flag || (strcmp(o->flag->name, "resources") != 0 &&
				 !shim_update_is_resource_flag(o->flag->name)))
			r = shim_args_push_opt(out, o, argv);
	}
	return r;
}

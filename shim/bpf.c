/*
 * A container's OCI linux.seccomp profile compiled to a classic BPF program (hex), for the
 * helper that installs it on processes runsc's exec starts without one (docs/runsc.md).
 */
#include <ctype.h>
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

#define BPF_MAX (1024 * 1024)

static void ctx_release(scmp_filter_ctx *c)
{
	if (*c)
		seccomp_release(*c);
}

static int parse_action(const char *name, const struct hezo_json *errno_ret, uint32_t *out)
{
	int64_t e = EPERM;

	if (!name)
		return -EINVAL;
	if (errno_ret && hezo_json_get_int64(errno_ret, &e) < 0)
		return -EINVAL;
	if (strcmp(name, "SCMP_ACT_ALLOW") == 0)
		*out = SCMP_ACT_ALLOW;
	else if (strcmp(name, "SCMP_ACT_ERRNO") == 0)
		*out = SCMP_ACT_ERRNO((uint16_t)e);
	else if (strcmp(name, "SCMP_ACT_KILL") == 0 || strcmp(name, "SCMP_ACT_KILL_THREAD") == 0)
		*out = SCMP_ACT_KILL_THREAD;
	else if (strcmp(name, "SCMP_ACT_KILL_PROCESS") == 0)
		*out = SCMP_ACT_KILL_PROCESS;
	else if (strcmp(name, "SCMP_ACT_TRAP") == 0)
		*out = SCMP_ACT_TRAP;
	else if (strcmp(name, "SCMP_ACT_TRACE") == 0)
		*out = SCMP_ACT_TRACE((uint16_t)e);
	else if (strcmp(name, "SCMP_ACT_LOG") == 0)
		*out = SCMP_ACT_LOG;
	else
		return -EINVAL; /* SCMP_ACT_NOTIFY and unknown ones: nothing to hand them to */
	return 0;
}

static int parse_op(const char *name, enum scmp_compare *out)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {
		{"SCMP_CMP_NE", SCMP_CMP_NE},
		{"SCMP_CMP_LT", SCMP_CMP_LT},
		{"SCMP_CMP_LE", SCMP_CMP_LE},
		{"SCMP_CMP_EQ", SCMP_CMP_EQ},
		{"SCMP_CMP_GE", SCMP_CMP_GE},
		{"SCMP_CMP_GT", SCMP_CMP_GT},
		{"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
	};

	for (size_t i = 0; name && i < HEZO_ARRAY_SIZE(ops); i++)
		if (strcmp(ops[i].name, name) == 0) {
			*out = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

static int parse_arch(const char *name, uint32_t *out)
{
	char low[64];
	size_t i;

	if (!name || strncmp(name, "SCMP_ARCH_", 10) != 0)
		return -EINVAL;
	for (i = 0; name[10 + i] && i < sizeof(low) - 1; i++)
		low[i] = (char)tolower((unsigned char)name[10 + i]);
	low[i] = '\0';
	*out = seccomp_arch_resolve_name(low);
	return *out ? 0 : -EINVAL;
}

/* One rule (all its args ANDed), or one rule per arg when an index repeats, as runc does. */
static int add_rule(scmp_filter_ctx c, uint32_t action, int nr, const struct hezo_json *args,
		    size_t ri, struct hezo_error **err)
{
	struct scmp_arg_cmp cmp[6];
	unsigned seen = 0;
	bool repeat = false;
	size_t n = 0;
	int r;

	HEZO_JSON_FOREACH (i, args) {
		const struct hezo_json *a = args->items[i];
		uint64_t idx, v = 0, v2 = 0;
		enum scmp_compare op;

		if (hezo_json_get_uint64(hezo_json_get(a, "index"), &idx) < 0 || idx > 5 ||
		    hezo_json_get_uint64(hezo_json_get(a, "value"), &v) < 0 ||
		    (hezo_json_get(a, "valueTwo") &&
		     hezo_json_get_uint64(hezo_json_get(a, "valueTwo"), &v2) < 0) ||
		    parse_op(hezo_json_string(hezo_json_get(a, "op")), &op) < 0 || n >= 6)
			return hezo_error_set(err, EINVAL, "seccomp: syscalls[%zu].args[%zu]", ri,
					      i);
		if (seen & (1u << idx))
			repeat = true;
		seen |= 1u << idx;
		cmp[n++] = (struct scmp_arg_cmp){
			.arg = (unsigned)idx, .op = op, .datum_a = v, .datum_b = v2};
	}
	if (!repeat) {
		r = seccomp_rule_add_array(c, action, nr, (unsigned)n, cmp);
	} else {
		r = 0;
		for (size_t i = 0; r == 0 && i < n; i++)
			r = seccomp_rule_add_array(c, action, nr, 1, &cmp[i]);
	}
	if (r < 0)
		return hezo_error_set_errno(err, -r, "seccomp: syscalls[%zu]: cannot add rule", ri);
	return 0;
}

int shim_seccomp_bpf(const struct hezo_json *prof, char **hex, struct hezo_error **err)
{
	_cleanup_(ctx_release) scmp_filter_ctx c = NULL;
	_cleanup_free_ char *data = NULL;
	_cleanup_close_ int fd = -1;
	const struct hezo_json *archs = hezo_json_get_type(prof, "architectures", HEZO_JSON_ARRAY);
	const struct hezo_json *rules = hezo_json_get_type(prof, "syscalls", HEZO_JSON_ARRAY);
	uint32_t def, act, arch;
	size_t len;
	int r;

	*hex = NULL;
	if (parse_action(hezo_json_string(hezo_json_get(prof, "defaultAction")),
			 hezo_json_get(prof, "defaultErrnoRet"), &def) < 0)
		return hezo_error_set(err, EINVAL, "seccomp: defaultAction not supported");
	c = seccomp_init(def);
	if (!c)
		return hezo_error_set(err, ENOMEM, "seccomp: cannot initialise a filter");
	HEZO_JSON_FOREACH (i, archs) {
		if (parse_arch(hezo_json_string(archs->items[i]), &arch) < 0)
			continue; /* an architecture this libseccomp does not know */
		r = seccomp_arch_add(c, arch);
		if (r < 0 && r != -EEXIST)
			return hezo_error_set_errno(err, -r, "seccomp: architectures[%zu]", i);
	}
	HEZO_JSON_FOREACH (i, rules) {
		const struct hezo_json *rule = rules->items[i];
		const struct hezo_json *names = hezo_json_get_type(rule, "names", HEZO_JSON_ARRAY);
		const struct hezo_json *args = hezo_json_get_type(rule, "args", HEZO_JSON_ARRAY);

		if (parse_action(hezo_json_string(hezo_json_get(rule, "action")),
				 hezo_json_get(rule, "errnoRet"), &act) < 0)
			return hezo_error_set(err, EINVAL,
					      "seccomp: syscalls[%zu].action not supported", i);
		if (act == def)
			continue; /* libseccomp refuses rules that repeat the default */
		HEZO_JSON_FOREACH (k, names) {
			int nr = seccomp_syscall_resolve_name(hezo_json_string(names->items[k])
								      ?: "");

			if (nr == __NR_SCMP_ERROR)
				continue; /* unknown here: as runc, skip it */
			r = add_rule(c, act, nr, args, i, err);
			if (r < 0)
				return r;
		}
	}
	fd = memfd_create("hezo-bpf", MFD_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "seccomp: memfd_create");
	r = seccomp_export_bpf(c, fd);
	if (r < 0)
		return hezo_error_set_errno(err, -r, "seccomp: cannot export the filter");
	if (lseek(fd, 0, SEEK_SET) < 0)
		return hezo_error_set_errno(err, errno, "seccomp: lseek");
	r = hezo_read_fd(fd, BPF_MAX, &data, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "seccomp");
	if (len == 0 || len % 8 != 0)
		return hezo_error_set(err, EINVAL, "seccomp: exported filter has %zu bytes", len);
	*hex = malloc(len * 2 + 1);
	if (!*hex)
		return hezo_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < len; i++)
		snprintf(*hex + 2 * i, 3, "%02x", (unsigned char)data[i]);
	return 0;
}

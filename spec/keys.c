/*
 * Key spelling in OCI documents: refuse keys that Go's encoding/json (runc, runsc) would match to
 * a runtime-spec field although they are not spelled as the spec spells it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-spec.h"

/*
 * Go matches an object key to a struct field case-insensitively under Unicode simple folding and
 * lets the later match win, while the shim reads exact keys only: "Process" would be the process
 * runc runs and not the one policy clamped. The spec's field names are ASCII, so the runes that
 * fold onto them are ASCII letters in either case plus U+017F (LONG S, to s) and U+212A (KELVIN
 * SIGN, to k); that is the whole equivalence for these names in Go's equalFold (<= 1.20) and
 * foldName (>= 1.21).
 *
 * The schema below is per struct: a key is compared with the fields of the struct its object
 * decodes into. It is the union of specs-go from 1.0.2 to 1.1.0 (what runc 1.1.5 and runsc
 * 2022-12 and 2024-07 vendor) plus the later fields we know of, so a field that only a newer
 * runtime reads is held to its spelling too. A NULL shape is a leaf: a scalar, an array of
 * scalars, a map to scalars (annotations, sysctl, unified) or interface{} (credentialSpec), whose
 * keys, if any, are data that Go matches exactly. Keys that match no field are skipped with their
 * values, as Go skips them.
 */
enum shape_kind {
	SHAPE_STRUCT,
	SHAPE_ARRAY, /* of elem */
	SHAPE_MAP,   /* string to elem: keys are data */
};

struct field;

struct shape {
	enum shape_kind kind;
	const struct field *fields; /* STRUCT: NULL-terminated */
	const struct shape *elem;   /* ARRAY, MAP */
};

struct field {
	const char *name;
	const struct shape *shape;
};

#define STRUCT(n, ...)                                                                             \
	static const struct field n##_fields[] = {__VA_ARGS__, {NULL, NULL}};                      \
	static const struct shape n##_shape = {SHAPE_STRUCT, n##_fields, NULL}
#define ARRAY(n, e) static const struct shape n##_shape = {SHAPE_ARRAY, NULL, &e##_shape}
#define MAP(n, e)   static const struct shape n##_shape = {SHAPE_MAP, NULL, &e##_shape}
#define F(name)                                                                                    \
	{                                                                                          \
		name, NULL                                                                         \
	}
#define S(name, s)                                                                                 \
	{                                                                                          \
		name, &s##_shape                                                                   \
	}

STRUCT(id_mapping, F("containerID"), F("hostID"), F("size"));
ARRAY(id_mappings, id_mapping);

STRUCT(box, F("height"), F("width"));
STRUCT(user, F("uid"), F("gid"), F("umask"), F("additionalGids"), F("username"));
STRUCT(capabilities, F("bounding"), F("effective"), F("inheritable"), F("permitted"), F("ambient"));
STRUCT(rlimit, F("type"), F("hard"), F("soft"));
ARRAY(rlimits, rlimit);
STRUCT(scheduler, F("policy"), F("nice"), F("priority"), F("flags"), F("runtime"), F("deadline"),
       F("period"));
STRUCT(io_priority, F("class"), F("priority"));
STRUCT(cpu_affinity, F("initial"), F("final"));
STRUCT(process, F("terminal"), S("consoleSize", box), S("user", user), F("args"), F("commandLine"),
       F("env"), F("cwd"), S("capabilities", capabilities), S("rlimits", rlimits),
       F("noNewPrivileges"), F("apparmorProfile"), F("oomScoreAdj"), S("scheduler", scheduler),
       F("selinuxLabel"), S("ioPriority", io_priority), S("execCPUAffinity", cpu_affinity));

STRUCT(root, F("path"), F("readonly"));
STRUCT(mount, F("destination"), F("type"), F("source"), F("options"), S("uidMappings", id_mappings),
       S("gidMappings", id_mappings));
ARRAY(mounts, mount);

STRUCT(hook, F("path"), F("args"), F("env"), F("timeout"));
ARRAY(hook_list, hook);
STRUCT(hooks, S("prestart", hook_list), S("createRuntime", hook_list),
       S("createContainer", hook_list), S("startContainer", hook_list), S("poststart", hook_list),
       S("poststop", hook_list));

STRUCT(device_cgroup, F("allow"), F("type"), F("major"), F("minor"), F("access"));
ARRAY(device_cgroups, device_cgroup);
STRUCT(memory, F("limit"), F("reservation"), F("swap"), F("kernel"), F("kernelTCP"),
       F("swappiness"), F("disableOOMKiller"), F("useHierarchy"), F("checkBeforeUpdate"));
STRUCT(cpu, F("shares"), F("quota"), F("burst"), F("period"), F("realtimeRuntime"),
       F("realtimePeriod"), F("cpus"), F("mems"), F("idle"));
STRUCT(pids, F("limit"));
/* major and minor come from the embedded LinuxBlockIODevice. */
STRUCT(weight_device, F("major"), F("minor"), F("weight"), F("leafWeight"));
ARRAY(weight_devices, weight_device);
STRUCT(throttle_device, F("major"), F("minor"), F("rate"));
ARRAY(throttle_devices, throttle_device);
STRUCT(block_io, F("weight"), F("leafWeight"), S("weightDevice", weight_devices),
       S("throttleReadBpsDevice", throttle_devices), S("throttleWriteBpsDevice", throttle_devices),
       S("throttleReadIOPSDevice", throttle_devices),
       S("throttleWriteIOPSDevice", throttle_devices));
STRUCT(hugepage_limit, F("pageSize"), F("limit"));
ARRAY(hugepage_limits, hugepage_limit);
STRUCT(interface_priority, F("name"), F("priority"));
ARRAY(interface_priorities, interface_priority);
STRUCT(network, F("classID"), S("priorities", interface_priorities));
STRUCT(rdma, F("hcaHandles"), F("hcaObjects"));
MAP(rdma_map, rdma);
STRUCT(resources, S("devices", device_cgroups), S("memory", memory), S("cpu", cpu), S("pids", pids),
       S("blockIO", block_io), S("hugepageLimits", hugepage_limits), S("network", network),
       S("rdma", rdma_map), F("unified"));

STRUCT(namespace, F("type"), F("path"));
ARRAY(namespaces, namespace);
STRUCT(device, F("path"), F("type"), F("major"), F("minor"), F("fileMode"), F("uid"), F("gid"));
ARRAY(devices, device);
STRUCT(seccomp_arg, F("index"), F("value"), F("valueTwo"), F("op"));
ARRAY(seccomp_args, seccomp_arg);
STRUCT(syscall, F("names"), F("action"), F("errnoRet"), S("args", seccomp_args));
ARRAY(syscalls, syscall);
STRUCT(seccomp, F("defaultAction"), F("defaultErrnoRet"), F("architectures"), F("flags"),
       F("listenerPath"), F("listenerMetadata"), S("syscalls", syscalls));
STRUCT(intel_rdt, F("closID"), F("schemata"), F("l3CacheSchema"), F("memBwSchema"), F("enableCMT"),
       F("enableMBM"), F("enableMonitoring"));
STRUCT(personality, F("domain"), F("flags"));
STRUCT(time_offset, F("secs"), F("nanosecs"));
MAP(time_offsets, time_offset);
STRUCT(net_device, F("name"));
MAP(net_devices, net_device);
STRUCT(memory_policy, F("mode"), F("nodes"), F("flags"));
STRUCT(linux_, S("uidMappings", id_mappings), S("gidMappings", id_mappings), F("sysctl"),
       S("resources", resources), F("cgroupsPath"), S("namespaces", namespaces),
       S("devices", devices), S("seccomp", seccomp), F("rootfsPropagation"), F("maskedPaths"),
       F("readonlyPaths"), F("mountLabel"), S("intelRdt", intel_rdt), S("personality", personality),
       S("timeOffsets", time_offsets), S("netDevices", net_devices),
       S("memoryPolicy", memory_policy));

STRUCT(solaris_anet, F("linkname"), F("lowerLink"), F("allowedAddress"),
       F("configureAllowedAddress"), F("defrouter"), F("linkProtection"), F("macAddress"));
ARRAY(solaris_anets, solaris_anet);
STRUCT(solaris_capped_cpu, F("ncpus"));
STRUCT(solaris_capped_memory, F("physical"), F("swap"));
STRUCT(solaris, F("milestone"), F("limitpriv"), F("maxShmMemory"), S("anet", solaris_anets),
       S("cappedCPU", solaris_capped_cpu), S("cappedMemory", solaris_capped_memory));

STRUCT(windows_device, F("id"), F("idType"));
ARRAY(windows_devices, windows_device);
STRUCT(windows_memory, F("limit"));
STRUCT(windows_cpu, F("count"), F("shares"), F("maximum"));
STRUCT(windows_storage, F("iops"), F("bps"), F("sandboxSize"));
STRUCT(windows_resources, S("memory", windows_memory), S("cpu", windows_cpu),
       S("storage", windows_storage));
STRUCT(windows_hyperv, F("utilityVMPath"));
STRUCT(windows_network, F("endpointList"), F("allowUnqualifiedDNSQuery"), F("DNSSearchList"),
       F("networkSharedContainerName"), F("networkNamespace"));
STRUCT(windows, F("layerFolders"), S("devices", windows_devices), S("resources", windows_resources),
       F("credentialSpec"), F("servicing"), F("ignoreFlushesDuringBoot"),
       S("hyperv", windows_hyperv), S("network", windows_network));

STRUCT(vm_hypervisor, F("path"), F("parameters"));
STRUCT(vm_kernel, F("path"), F("parameters"), F("initrd"));
STRUCT(vm_image, F("path"), F("format"));
STRUCT(vm, S("hypervisor", vm_hypervisor), S("kernel", vm_kernel), S("image", vm_image));

STRUCT(zos, S("devices", devices));

STRUCT(spec, F("ociVersion"), S("process", process), S("root", root), F("hostname"),
       F("domainname"), S("mounts", mounts), S("hooks", hooks), F("annotations"),
       S("linux", linux_), S("solaris", solaris), S("windows", windows), S("vm", vm),
       S("zos", zos));

/* ---- folding ---- */

static unsigned char ascii_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/*
 * Fold s into out (at most strlen(s) + 1 bytes): ASCII to lower case, U+017F to 's', U+212A to
 * 'k', every other byte as it is. Two keys that fold equal here fold equal in Go; the converse
 * can fail only for non-ASCII letters other than those two, which never match a field.
 */
static void fold(const char *s, char *out)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		if (p[0] == 0xc5 && p[1] == 0xbf) {
			*out++ = 's';
			p += 2;
		} else if (p[0] == 0xe2 && p[1] == 0x84 && p[2] == 0xaa) {
			*out++ = 'k';
			p += 3;
		} else {
			*out++ = (char)ascii_lower(*p++);
		}
	}
	*out = '\0';
}

/* Does key fold to name (ASCII)? */
static bool folds_to(const char *key, const char *name)
{
	const unsigned char *k = (const unsigned char *)key;
	const unsigned char *n = (const unsigned char *)name;

	for (; *n; n++) {
		unsigned char want = ascii_lower(*n);

		if (k[0] == 0xc5 && k[1] == 0xbf) {
			if (want != 's')
				return false;
			k += 2;
		} else if (k[0] == 0xe2 && k[1] == 0x84 && k[2] == 0xaa) {
			if (want != 'k')
				return false;
			k += 3;
		} else {
			if (ascii_lower(*k) != want)
				return false;
			k++;
		}
	}
	return *k == '\0';
}

/* ---- the walk ---- */

/* Schema depth is 6; a little room over it. */
#define MAX_PATH 12

struct step {
	const char *key; /* NULL: an array index */
	size_t index;
	bool map; /* key is a map key (data), not a field name */
};

struct walk {
	const char *name;
	struct step path[MAX_PATH];
	size_t depth;
	struct hezo_error **err;
};

/* s quoted, with quote, backslash, control and non-ASCII bytes escaped: the message stays one
 * plain line whatever the document holds. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/*
 * "NAME: linux.resources.\"Memory\": differs ..." : the path to the object, then key (quoted;
 * NULL: the message is about the object itself), then the rest. Fields on the path are spelled
 * as the spec spells them; map keys are data and are quoted. Each %s in fmt takes a key and is
 * quoted.
 */
static int walk_fail(struct walk *w, const char *key, const char *fmt, const char *a, const char *b)
{
	_cleanup_free_ char *buf = NULL;
	const char *args[2] = {a, b};
	size_t len = 0, n = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return hezo_error_set(w->err, ENOMEM, "out of memory");
	fprintf(f, "%s: ", w->name);
	for (size_t i = 0; i < w->depth; i++) {
		const struct step *s = &w->path[i];

		if (!s->key) {
			fprintf(f, "[%zu]", s->index);
		} else if (s->map) {
			fputc('[', f);
			put_quoted(f, s->key);
			fputc(']', f);
		} else {
			fprintf(f, "%s%s", i > 0 ? "." : "", s->key);
		}
	}
	if (key) {
		if (w->depth > 0)
			fputc('.', f);
		put_quoted(f, key);
	}
	if (w->depth > 0 || key)
		fputs(": ", f);
	for (const char *p = fmt; *p; p++) {
		if (p[0] == '%' && p[1] == 's' && n < 2) {
			const char *v = args[n++];

			put_quoted(f, v ? v : "");
			p++;
		} else {
			fputc(*p, f);
		}
	}
	if (fclose(f) != 0 || !buf)
		return hezo_error_set(w->err, ENOMEM, "out of memory");
	return hezo_error_set(w->err, EINVAL, "%s", buf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Two keys of one object that Go could take for one field: refuse, naming both. */
static int check_fold_duplicates(struct walk *w, const struct hezo_json *obj)
{
	_cleanup_free_ char **folded = NULL;
	_cleanup_free_ char *pool = NULL;
	size_t total = 0, off = 0;
	int r = 0;

	if (obj->len < 2)
		return 0;
	for (size_t i = 0; i < obj->len; i++)
		total += strlen(obj->keys[i]) + 1;
	folded = calloc(obj->len, sizeof(*folded));
	pool = malloc(total);
	if (!folded || !pool)
		return hezo_error_set(w->err, ENOMEM, "out of memory");
	for (size_t i = 0; i < obj->len; i++) {
		folded[i] = pool + off;
		fold(obj->keys[i], folded[i]);
		off += strlen(obj->keys[i]) + 1;
	}
	qsort(folded, obj->len, sizeof(*folded), cmp_str);
	for (size_t i = 1; i < obj->len; i++) {
		if (strcmp(folded[i - 1], folded[i]) != 0)
			continue;
		/* Name the two original keys, in document order. */
		const char *a = NULL, *b = NULL;
		_cleanup_free_ char *tmp = malloc(total);

		if (!tmp)
			return hezo_error_set(w->err, ENOMEM, "out of memory");
		for (size_t j = 0; j < obj->len && !b; j++) {
			fold(obj->keys[j], tmp);
			if (strcmp(tmp, folded[i]) == 0) {
				if (!a)
					a = obj->keys[j];
				else
					b = obj->keys[j];
			}
		}
		r = walk_fail(w, NULL,
			      "keys %s and %s differ only in case (runc would read them as one)", a,
			      b);
		break;
	}
	return r;
}

static int walk_value(struct walk *w, const struct hezo_json *v, const struct shape *shape);

static int walk_child(struct walk *w, struct step step, const struct hezo_json *v,
		      const struct shape *shape)
{
	int r;

	if (!shape)
		return 0;
	if (w->depth >= MAX_PATH)
		return hezo_error_set(w->err, E2BIG, "%s: nested too deep for the spec", w->name);
	w->path[w->depth++] = step;
	r = walk_value(w, v, shape);
	w->depth--;
	return r;
}

static int walk_struct(struct walk *w, const struct hezo_json *obj, const struct field *fields)
{
	int r;

	for (size_t i = 0; i < obj->len; i++) {
		const char *key = obj->keys[i];
		const struct field *match = NULL;

		for (const struct field *f = fields; f->name && !match; f++)
			if (strcmp(key, f->name) == 0)
				match = f;
		for (const struct field *f = fields; f->name && !match; f++)
			if (folds_to(key, f->name))
				return walk_fail(w, key,
						 "differs from the spec's field %s only in case "
						 "(runc would read it as %s)",
						 f->name, f->name);
		if (!match)
			continue;
		r = walk_child(w, (struct step){.key = key}, obj->items[i], match->shape);
		if (r < 0)
			return r;
	}
	return check_fold_duplicates(w, obj);
}

static int walk_value(struct walk *w, const struct hezo_json *v, const struct shape *shape)
{
	int r;

	switch (shape->kind) {
	case SHAPE_STRUCT:
		if (v->type != HEZO_JSON_OBJECT)
			return 0; /* Go refuses the document; nothing of it is read */
		return walk_struct(w, v, shape->fields);
	case SHAPE_ARRAY:
		if (v->type != HEZO_JSON_ARRAY)
			return 0;
		HEZO_JSON_FOREACH (i, v) {
			r = walk_child(w, (struct step){.index = i}, v->items[i], shape->elem);
			if (r < 0)
				return r;
		}
		return 0;
	case SHAPE_MAP:
		if (v->type != HEZO_JSON_OBJECT)
			return 0;
		/* Map keys are data and Go matches them exactly: json.c already refuses
		 * exact duplicates. */
		HEZO_JSON_FOREACH (i, v) {
			r = walk_child(w, (struct step){.key = v->keys[i], .map = true},
				       v->items[i], shape->elem);
			if (r < 0)
				return r;
		}
		return 0;
	}
	return 0;
}

int hezo_spec_check_keys(const struct hezo_json *doc, enum hezo_spec_doc kind, const char *name,
			 struct hezo_error **err)
{
	struct walk w = {.name = name, .err = err};
	const struct shape *shape;

	switch (kind) {
	case HEZO_SPEC_DOC_CONFIG:
		shape = &spec_shape;
		break;
	case HEZO_SPEC_DOC_PROCESS:
		shape = &process_shape;
		break;
	case HEZO_SPEC_DOC_RESOURCES:
		shape = &resources_shape;
		break;
	default:
		return hezo_error_set(err, EINVAL, "%s: unknown document kind", name);
	}
	if (!doc)
		return hezo_error_set(err, EINVAL, "%s: no document", name);
	return walk_value(&w, doc, shape);
}

/* config.json in a bundle: bounded load, atomic save, hook insertion and small look-ups. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hezo-file.h"
#include "hezo-spec.h"

int hezo_spec_parse(const char *buf, size_t len, const char *name, struct hezo_json **out,
		    struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *v = NULL;
	int r;

	r = hezo_json_parse(buf, len, &v, err);
	if (r < 0) {
		hezo_error_prefix(err, "%s", name);
		return r;
	}
	if (v->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "%s: top level is %s, not an object", name,
				      hezo_json_type_name(v->type));
	*out = TAKE_PTR(v);
	return 0;
}

int hezo_spec_load_at(int dirfd, const char *name, struct hezo_json **out, struct hezo_error **err)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_error_ struct hezo_error *rerr = NULL;
	size_t len = 0;
	int r;

	r = hezo_read_file_at(dirfd, name, HEZO_SPEC_MAX_SIZE, &buf, &len, &rerr);
	if (r < 0) {
		/* hezo_read_file_at names the file inside its message; ours start with the name
		 * like every other error from here, so only its errno is kept. */
		if (r == -EFBIG)
			return hezo_error_set(err, EFBIG, "%s: larger than %u bytes", name,
					      HEZO_SPEC_MAX_SIZE);
		return hezo_error_set(err, -r, "%s: %s", name, strerror(-r));
	}
	return hezo_spec_parse(buf, len, name, out, err);
}

int hezo_spec_save_at(int dirfd, const char *name, const struct hezo_json *spec,
		      struct hezo_error **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = hezo_json_dump(spec, false, &buf, &len, err);
	if (r < 0) {
		hezo_error_prefix(err, "%s", name);
		return r;
	}
	r = hezo_write_file_atomic_at(dirfd, name, buf, len, 0644, err);
	if (r < 0) {
		hezo_error_prefix(err, "%s", name);
		return r;
	}
	return 0;
}

static const char *const hook_stages[] = {
	"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop",
};

static struct hezo_json *string_list(const char *const *list)
{
	_cleanup_json_ struct hezo_json *arr = hezo_json_new_array();

	if (!arr)
		return NULL;
	for (; *list; list++)
		if (hezo_json_append(arr, hezo_json_new_string(*list)) < 0)
			return NULL;
	return TAKE_PTR(arr);
}

/* obj[key] as a container of type, created when absent or null (Go reads null as empty). */
static int child(struct hezo_json *obj, const char *key, enum hezo_json_type type,
		 const char *where, struct hezo_json **out, struct hezo_error **err)
{
	struct hezo_json *v = hezo_json_get(obj, key);

	if (v && v->type == HEZO_JSON_NULL) {
		/* set keeps the key where it was */
		v = type == HEZO_JSON_OBJECT ? hezo_json_new_object() : hezo_json_new_array();
		if (hezo_json_set(obj, key, v) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	if (v && v->type != type)
		return hezo_error_set(err, EINVAL, "%s is %s, not %s", where,
				      hezo_json_type_name(v->type),
				      type == HEZO_JSON_OBJECT ? "an object" : "an array");
	v = type == HEZO_JSON_OBJECT ? hezo_json_ensure_object(obj, key)
				     : hezo_json_ensure_array(obj, key);
	if (!v)
		return hezo_error_set(err, ENOMEM, "out of memory");
	*out = v;
	return 0;
}

int hezo_spec_add_hook(struct hezo_json *spec, const char *stage, const char *path,
		       const char *const *args, const char *const *env, int timeout_sec,
		       struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *hook = NULL;
	struct hezo_json *hooks, *list;
	char where[64];
	bool known = false;
	int r;

	if (!spec || spec->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "spec is not an object");
	for (size_t i = 0; stage && i < HEZO_ARRAY_SIZE(hook_stages); i++)
		known = known || strcmp(stage, hook_stages[i]) == 0;
	if (!known)
		return hezo_error_set(err, EINVAL, "unknown hook stage %s",
				      stage ? stage : "(null)");
	if (!path || path[0] != '/')
		return hezo_error_set(err, EINVAL, "hook path %s is not absolute",
				      path ? path : "(null)");
	if (timeout_sec < 0)
		return hezo_error_set(err, EINVAL, "hook timeout %d is negative", timeout_sec);

	hook = hezo_json_new_object();
	if (!hook || hezo_json_set(hook, "path", hezo_json_new_string(path)) < 0 ||
	    (args && hezo_json_set(hook, "args", string_list(args)) < 0) ||
	    (env && hezo_json_set(hook, "env", string_list(env)) < 0) ||
	    (timeout_sec > 0 && hezo_json_set(hook, "timeout", hezo_json_new_int(timeout_sec)) < 0))
		return hezo_error_set(err, ENOMEM, "out of memory");

	r = child(spec, "hooks", HEZO_JSON_OBJECT, "hooks", &hooks, err);
	if (r < 0)
		return r;
	snprintf(where, sizeof(where), "hooks.%s", stage);
	r = child(hooks, stage, HEZO_JSON_ARRAY, where, &list, err);
	if (r < 0)
		return r;
	if (hezo_json_append(list, TAKE_PTR(hook)) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	return 0;
}

const char *hezo_spec_root_path(const struct hezo_json *spec)
{
	return hezo_json_string(hezo_json_get_type(
		hezo_json_get_type(spec, "root", HEZO_JSON_OBJECT), "path", HEZO_JSON_STRING));
}

struct hezo_json *hezo_spec_annotations(const struct hezo_json *spec)
{
	return hezo_json_get_type(spec, "annotations", HEZO_JSON_OBJECT);
}

const char *hezo_spec_annotation(const struct hezo_json *spec, const char *key)
{
	return hezo_json_string(hezo_json_get(hezo_spec_annotations(spec), key));
}

struct hezo_json *hezo_spec_linux(const struct hezo_json *spec)
{
	return hezo_json_get_type(spec, "linux", HEZO_JSON_OBJECT);
}

struct hezo_json *hezo_spec_process(const struct hezo_json *spec)
{
	return hezo_json_get_type(spec, "process", HEZO_JSON_OBJECT);
}

struct hezo_json *hezo_spec_namespace(const struct hezo_json *spec, const char *type)
{
	struct hezo_json *ns =
		hezo_json_get_type(hezo_spec_linux(spec), "namespaces", HEZO_JSON_ARRAY);

	if (!type)
		return NULL;
	HEZO_JSON_FOREACH (i, ns) {
		const char *t = hezo_json_string(hezo_json_get(ns->items[i], "type"));
		if (t && strcmp(t, type) == 0)
			return ns->items[i];
	}
	return NULL;
}

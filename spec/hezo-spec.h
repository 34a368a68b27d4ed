/*
 * OCI config.json in a bundle: bounded load, atomic save, and the few edits and look-ups the shim
 * and hook need. Everything not touched here is written back exactly as it was read.
 */
#ifndef HEZO_SPEC_H
#define HEZO_SPEC_H

#include "hezo-error.h"
#include "hezo-json.h"

/* Larger config.json (or process / resources) documents are refused. */
#define HEZO_SPEC_MAX_SIZE (16u << 20)

/*
 * Parse buf as a JSON document that must be an object. name prefixes every message
 * ("config.json: line 1, byte 5: ..."). Pure: no I/O.
 */
int hezo_spec_parse(const char *buf, size_t len, const char *name, struct hezo_json **out,
		    struct hezo_error **err);

/* Read dirfd/name (at most HEZO_SPEC_MAX_SIZE bytes) and parse it as above. */
int hezo_spec_load_at(int dirfd, const char *name, struct hezo_json **out, struct hezo_error **err);

/* Write spec compactly over dirfd/name atomically; a new file gets mode 0644, an old one keeps
 * its mode and owner. On failure the old file is untouched. */
int hezo_spec_save_at(int dirfd, const char *name, const struct hezo_json *spec,
		      struct hezo_error **err);

/*
 * Append a hook to spec.hooks.STAGE after the hooks already there (creating hooks and the array
 * when absent or null). stage is an OCI hook stage ("prestart", "createRuntime", ...); path must
 * be absolute; args and env are NULL-terminated lists or NULL; timeout_sec 0 means none.
 */
int hezo_spec_add_hook(struct hezo_json *spec, const char *stage, const char *path,
		       const char *const *args, const char *const *env, int timeout_sec,
		       struct hezo_error **err);

/* The documents the shim hands the backend, each decoded by runc into its own Go type. */
enum hezo_spec_doc {
	HEZO_SPEC_DOC_CONFIG,	 /* config.json: specs.Spec */
	HEZO_SPEC_DOC_PROCESS,	 /* exec --process: specs.Process */
	HEZO_SPEC_DOC_RESOURCES, /* update --resources: specs.LinuxResources */
};

/*
 * Refuse the key spellings that runc's Go decoder reads differently from the shim: a key, at any
 * depth, that folds (ASCII case, U+017F, U+212A) to a runtime-spec field of its object without
 * being spelled exactly as the spec spells it, and two keys of one field object that fold to one
 * another. Keys of maps (annotations, sysctl, ...) are data and stay exact. -EINVAL with one line,
 * e.g. 'config.json: "Process": differs from the spec's field "process" only in case (runc would
 * read it as "process")'; name ("config.json", "process", "resources") starts it. Pure.
 */
int hezo_spec_check_keys(const struct hezo_json *doc, enum hezo_spec_doc kind, const char *name,
			 struct hezo_error **err);

/* Look-ups; NULL when absent or of another type. */
const char *hezo_spec_root_path(const struct hezo_json *spec);
struct hezo_json *hezo_spec_annotations(const struct hezo_json *spec);
/* The string value of annotations[key]. */
const char *hezo_spec_annotation(const struct hezo_json *spec, const char *key);
struct hezo_json *hezo_spec_linux(const struct hezo_json *spec);
struct hezo_json *hezo_spec_process(const struct hezo_json *spec);
/* The linux.namespaces entry whose "type" is type (e.g. "network"). */
struct hezo_json *hezo_spec_namespace(const struct hezo_json *spec, const char *type);

#endif

/* Docker's daemon.json: add and remove our "runtimes" entry, keeping everything else as it was. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hezo-install.h"
#include "hezo-json.h"

static int dup_buf(const char *buf, size_t len, char **out, size_t *outlen, struct hezo_error **err)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return hezo_error_set(err, ENOMEM, "out of memory");
	memcpy(copy, buf, len);
	copy[len] = '\0';
	*out = copy;
	*outlen = len;
	return 0;
}

static int dump_file(const struct hezo_json *root, char **out, size_t *outlen,
		     struct hezo_error **err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	char *grown;
	int r;

	r = hezo_json_dump(root, true, &text, &len, err);
	if (r < 0)
		return r;
	/* A text file ends with a newline; editors and diff expect it. */
	if (len == 0 || text[len - 1] != '\n') {
		grown = realloc(text, len + 2);
		if (!grown)
			return hezo_error_set(err, ENOMEM, "out of memory");
		text = grown;
		text[len++] = '\n';
		text[len] = '\0';
	}
	*out = TAKE_PTR(text);
	*outlen = len;
	return 0;
}

static int parse_object(const char *buf, size_t len, struct hezo_json **out,
			struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *root = NULL;
	int r;

	r = hezo_json_parse(buf, len, &root, err);
	if (r < 0)
		return hezo_error_prefix(err, "not valid JSON");
	if (root->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "top level is a JSON %s, not an object",
				      hezo_json_type_name(root->type));
	*out = TAKE_PTR(root);
	return 0;
}

int hezo_install_docker_merge(const char *old, size_t len, bool exists, const char *shim,
			      char **out, size_t *outlen, bool *changed, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *root = NULL;
	struct hezo_json *runtimes, *entry, *path;
	int r;

	*changed = false;
	if (!shim || shim[0] != '/')
		return hezo_error_set(err, EINVAL, "shim path \"%s\" is not absolute",
				      shim ? shim : "");
	if (exists) {
		r = parse_object(old, len, &root, err);
		if (r < 0)
			return r;
	} else {
		root = hezo_json_new_object();
		if (!root)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}

	runtimes = hezo_json_get(root, "runtimes");
	if (runtimes && runtimes->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "runtimes: is a JSON %s, not an object",
				      hezo_json_type_name(runtimes->type));
	entry = hezo_json_get(runtimes, HEZO_INSTALL_DOCKER_RUNTIME);
	if (entry && entry->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "runtimes.%s: is a JSON %s, not an object",
				      HEZO_INSTALL_DOCKER_RUNTIME,
				      hezo_json_type_name(entry->type));
	path = hezo_json_get(entry, "path");
	if (exists && path && hezo_json_string(path) && strcmp(hezo_json_string(path), shim) == 0)
		return dup_buf(old, len, out, outlen, err);

	runtimes = hezo_json_ensure_object(root, "runtimes");
	if (!runtimes)
		return hezo_error_set(err, ENOMEM, "out of memory");
	/* Keep whatever else the admin put in our entry (runtimeArgs such as --hezo-project). */
	entry = hezo_json_ensure_object(runtimes, HEZO_INSTALL_DOCKER_RUNTIME);
	if (!entry)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = hezo_json_set(entry, "path", hezo_json_new_string(shim));
	if (r < 0)
		return hezo_error_set(err, -r, "cannot set runtimes.%s.path",
				      HEZO_INSTALL_DOCKER_RUNTIME);
	r = dump_file(root, out, outlen, err);
	if (r < 0)
		return r;
	*changed = true;
	return 0;
}

/* Would install, run on this original, have written exactly cur? */
static bool install_wrote(const char *orig, size_t orig_len, bool exists, const char *shim,
			  const char *cur, size_t len)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *expect = NULL;
	size_t expect_len = 0;
	bool changed = false;

	if (hezo_install_docker_merge(orig, orig_len, exists, shim, &expect, &expect_len, &changed,
				      &e) < 0)
		return false;
	return changed && expect_len == len && memcmp(expect, cur, len) == 0;
}

int hezo_install_docker_unmerge(const char *cur, size_t len, const char *backup, size_t backup_len,
				enum hezo_uninstall_action *action, char **out, size_t *outlen,
				struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *root = NULL;
	_cleanup_json_ struct hezo_json *orig = NULL;
	struct hezo_json *runtimes, *entry;
	const char *shim;
	int r;

	*action = HEZO_UNINSTALL_NOTHING;
	*out = NULL;
	*outlen = 0;
	r = parse_object(cur, len, &root, err);
	if (r < 0)
		return r;
	runtimes = hezo_json_get_type(root, "runtimes", HEZO_JSON_OBJECT);
	entry = hezo_json_get(runtimes, HEZO_INSTALL_DOCKER_RUNTIME);
	if (!entry)
		return 0;

	shim = hezo_json_string(hezo_json_get(entry, "path"));
	if (shim) {
		if (backup && install_wrote(backup, backup_len, true, shim, cur, len)) {
			*action = HEZO_UNINSTALL_RESTORE_BACKUP;
			return 0;
		}
		if (install_wrote(NULL, 0, false, shim, cur, len)) {
			*action = HEZO_UNINSTALL_DELETE;
			return 0;
		}
	}

	/* Edited since: take out only our entry, and the "runtimes" object if we brought it. */
	r = hezo_json_remove(runtimes, HEZO_INSTALL_DOCKER_RUNTIME);
	if (r < 0)
		return hezo_error_set(err, -r, "cannot remove runtimes.%s",
				      HEZO_INSTALL_DOCKER_RUNTIME);
	if (backup) {
		_cleanup_error_ struct hezo_error *e = NULL;

		if (parse_object(backup, backup_len, &orig, &e) < 0)
			orig = NULL;
	}
	if (runtimes->len == 0 && !(orig && hezo_json_get(orig, "runtimes"))) {
		r = hezo_json_remove(root, "runtimes");
		if (r < 0)
			return hezo_error_set(err, -r, "cannot remove runtimes");
	}
	r = dump_file(root, out, outlen, err);
	if (r < 0)
		return r;
	*action = HEZO_UNINSTALL_REWRITE;
	return 0;
}

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

/*
 * Project runtimes go into daemon.json as text: the bytes around them are never rewritten, so
 * taking one out gives back the file as it was, whatever else created or removed its own entry
 * in between. Every insertion is put right after the '{' of "runtimes" (with a comma after it
 * when the object was not empty), or, without "runtimes", as `"runtimes":{ENTRY}` right after the
 * top level's '{'; each result is checked by parsing it.
 */

static size_t ws(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* Past the JSON string starting at s[i] == '"'; len when unterminated. */
static size_t skip_string(const char *s, size_t len, size_t i)
{
	for (i++; i < len; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return len;
}

/* Past the value starting at s[i] (the parser checks its shape; this only finds its end). */
static size_t skip_value(const char *s, size_t len, size_t i)
{
	size_t depth = 0;

	if (i < len && s[i] == '"')
		return skip_string(s, len, i);
	for (; i < len; i++) {
		if (s[i] == '"') {
			i = skip_string(s, len, i) - 1;
		} else if (s[i] == '{' || s[i] == '[') {
			depth++;
		} else if (s[i] == '}' || s[i] == ']') {
			if (depth == 0)
				return i;
			if (--depth == 0)
				return i + 1;
		} else if (depth == 0 && (s[i] == ',' || s[i] == ' ' || s[i] == '\t' ||
					  s[i] == '\n' || s[i] == '\r')) {
			return i;
		}
	}
	return len;
}

/*
 * The top level's '{' in *top and, when it has a "runtimes" member (spelled without escapes),
 * the offset of that member's value in *rt (else len).
 */
static int find_runtimes(const char *s, size_t len, size_t *top, size_t *rt,
			 struct hezo_error **err)
{
	size_t i = ws(s, len, 0);

	*rt = len;
	if (i >= len || s[i] != '{')
		return hezo_error_set(err, EINVAL, "top level is not a JSON object");
	*top = i++;
	for (;;) {
		size_t k, kend;

		i = ws(s, len, i);
		if (i >= len || s[i] == '}')
			return 0;
		if (s[i] != '"')
			return hezo_error_set(err, EINVAL, "byte %zu: expected a member name", i);
		k = i;
		kend = skip_string(s, len, i);
		i = ws(s, len, kend);
		if (i >= len || s[i] != ':')
			return hezo_error_set(err, EINVAL, "byte %zu: expected ':'", i);
		i = ws(s, len, i + 1);
		if (kend - k == 10 && memcmp(s + k, "\"runtimes\"", 10) == 0)
			*rt = i;
		i = ws(s, len, skip_value(s, len, i));
		if (i < len && s[i] == ',')
			i++;
	}
}

/* `"NAME":ENTRY` compactly, as the text inserted and searched for. */
static int member_text(const char *name, const struct hezo_json *entry, char **out, size_t *outlen,
		       struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *wrap = hezo_json_new_object();
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (!wrap || hezo_json_set(wrap, name, hezo_json_clone(entry)) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = hezo_json_dump(wrap, false, &text, &len, err);
	if (r < 0)
		return r;
	/* Drop the braces of the wrapping object. */
	memmove(text, text + 1, len - 2);
	text[len - 2] = '\0';
	*out = TAKE_PTR(text);
	*outlen = len - 2;
	return 0;
}

static int splice(const char *s, size_t len, size_t at, size_t cut, const char *ins, size_t inslen,
		  char **out, size_t *outlen, struct hezo_error **err)
{
	char *n = malloc(len - cut + inslen + 1);

	if (!n)
		return hezo_error_set(err, ENOMEM, "out of memory");
	memcpy(n, s, at);
	memcpy(n + at, ins, inslen);
	memcpy(n + at + inslen, s + at + cut, len - at - cut);
	n[len - cut + inslen] = '\0';
	*out = n;
	*outlen = len - cut + inslen;
	return 0;
}

/* Parsed new, without runtimes[name] (and "runtimes" when it held only that), is parsed old. */
static bool same_but_entry(const char *old, size_t len, const char *new, size_t new_len,
			   const char *name, bool wrapper)
{
	_cleanup_json_ struct hezo_json *a = NULL, *b = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	struct hezo_json *rt;

	if (hezo_json_parse(new, new_len, &b, &e) < 0 ||
	    (len > 0 && hezo_json_parse(old, len, &a, &e) < 0))
		return false;
	if (!a && !(a = hezo_json_new_object()))
		return false;
	rt = hezo_json_get_type(b, "runtimes", HEZO_JSON_OBJECT);
	if (!rt || !hezo_json_get(rt, name) || hezo_json_remove(rt, name) < 0)
		return false;
	if (wrapper && hezo_json_remove(b, "runtimes") < 0)
		return false;
	return hezo_json_equal(a, b);
}

int hezo_install_docker_add_runtime(const char *old, size_t len, bool exists, const char *name,
				    const struct hezo_json *entry, char **out, size_t *outlen,
				    bool *changed, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *root = NULL;
	_cleanup_free_ char *mem = NULL, *ins = NULL;
	const struct hezo_json *runtimes, *have;
	size_t mem_len = 0, top = 0, rt = 0, at;
	bool wrapper = false;
	int r;

	*changed = false;
	if (!exists || ws(old, len, 0) == len) {
		old = "";
		len = 0;
	} else {
		r = parse_object(old, len, &root, err);
		if (r < 0)
			return r;
	}
	runtimes = hezo_json_get(root, "runtimes");
	if (runtimes && runtimes->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "runtimes: is a JSON %s, not an object",
				      hezo_json_type_name(runtimes->type));
	have = hezo_json_get(runtimes, name);
	if (have && hezo_json_equal(have, entry))
		return dup_buf(old, len, out, outlen, err);
	if (have)
		return hezo_error_set(err, EEXIST,
				      "runtimes.%s is already there, with other settings (not "
				      "hezo-shim's for this project); remove it first",
				      name);
	r = member_text(name, entry, &mem, &mem_len, err);
	if (r < 0)
		return r;
	if (len == 0) {
		if (asprintf(&ins, "{\"runtimes\":{%s}}\n", mem) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
		at = 0;
		wrapper = true;
	} else {
		r = find_runtimes(old, len, &top, &rt, err);
		if (r < 0)
			return r;
		if (runtimes && (rt >= len || old[rt] != '{'))
			return hezo_error_set(
				err, EINVAL,
				"\"runtimes\" is spelled with escapes; write it plainly");
		if (runtimes) {
			at = rt + 1;
			r = asprintf(&ins, "%s%s", mem, runtimes->len ? "," : "");
		} else {
			at = top + 1;
			wrapper = true;
			r = asprintf(&ins, "\"runtimes\":{%s}%s", mem, root->len ? "," : "");
		}
		if (r < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	r = splice(old, len, at, 0, ins, strlen(ins), out, outlen, err);
	if (r < 0)
		return r;
	if (!same_but_entry(old, len, *out, *outlen, name, wrapper)) {
		free(*out);
		*out = NULL;
		return hezo_error_set(err, EINVAL,
				      "cannot add runtimes.%s to this file as text; add it by hand",
				      name);
	}
	*changed = true;
	return 0;
}

int hezo_install_docker_remove_runtime(const char *cur, size_t len, const char *name,
				       const struct hezo_json *entry, char **out, size_t *outlen,
				       bool *changed, bool *delete_file, struct hezo_error **err)
{
	static const char empty_wrap[] = "\"runtimes\":{}";
	_cleanup_free_ char *mem = NULL, *a = NULL;
	size_t mem_len = 0, a_len = 0, at, cut, top = 0, rt = 0;
	bool wrapper = false;
	const char *hit;
	int r;

	*changed = false;
	*delete_file = false;
	r = member_text(name, entry, &mem, &mem_len, err);
	if (r < 0)
		return r;
	hit = memmem(cur, len, mem, mem_len);
	if (!hit)
		return dup_buf(cur, len, out, outlen, err);
	at = (size_t)(hit - cur);
	cut = mem_len;
	if (at + cut < len && cur[at + cut] == ',')
		cut++;
	else if (at > 0 && cur[at - 1] == ',')
		at--, cut++;
	r = splice(cur, len, at, cut, "", 0, &a, &a_len, err);
	if (r < 0)
		return r;
	/* The "runtimes" a project brought, empty now: right after the top level's '{'. */
	if (find_runtimes(a, a_len, &top, &rt, NULL) == 0 &&
	    a_len - top - 1 >= sizeof(empty_wrap) - 1 &&
	    memcmp(a + top + 1, empty_wrap, sizeof(empty_wrap) - 1) == 0) {
		size_t w = sizeof(empty_wrap) - 1;
		char *b = NULL;
		size_t b_len = 0;

		if (top + 1 + w < a_len && a[top + 1 + w] == ',')
			w++;
		r = splice(a, a_len, top + 1, w, "", 0, &b, &b_len, err);
		if (r < 0)
			return r;
		free(a);
		a = b;
		a_len = b_len;
		wrapper = true;
	}
	if (!same_but_entry(a, a_len, cur, len, name, wrapper))
		return hezo_error_set(err, EINVAL,
				      "cannot take runtimes.%s out of this file as text; remove it "
				      "by hand",
				      name);
	*delete_file = wrapper && a_len == 3 && memcmp(a, "{}\n", 3) == 0;
	*out = TAKE_PTR(a);
	*outlen = a_len;
	*changed = true;
	return 0;
}

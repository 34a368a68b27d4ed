/* Parsing what the hook is given: the OCI state on stdin and the shim's --egress argument. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-egress.h"
#include "hezo-hook.h"
#include "hezo-id.h"

void hezo_hook_state_clear(struct hezo_hook_state *st)
{
	free(st->id);
	free(st->status);
	free(st->bundle);
	memset(st, 0, sizeof(*st));
}

bool hezo_hook_id_valid(const char *id)
{
	return hezo_id_valid(id);
}

static int dup_optional_string(const struct hezo_json *root, const char *key, char **out,
			       struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(root, key);

	*out = NULL;
	if (!v || v->type == HEZO_JSON_NULL)
		return 0;
	if (v->type != HEZO_JSON_STRING)
		return hezo_error_set(err, EINVAL, "state: \"%s\" is a %s, not a string", key,
				      hezo_json_type_name(v->type));
	*out = strdup(v->str);
	return *out ? 0 : hezo_error_set(err, ENOMEM, "state: out of memory");
}

int hezo_hook_parse_state(const char *buf, size_t len, bool need_pid, struct hezo_hook_state *out,
			  struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *root = NULL;
	struct hezo_hook_state st = {0};
	const struct hezo_json *v;
	int r;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		return hezo_error_set(err, EINVAL, "state: empty input on stdin");
	r = hezo_json_parse(buf, len, &root, err);
	if (r < 0)
		return hezo_error_prefix(err, "state");
	if (root->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "state: not a JSON object");

	v = hezo_json_get(root, "id");
	if (!v)
		return hezo_error_set(err, EINVAL, "state: no \"id\"");
	if (v->type != HEZO_JSON_STRING)
		return hezo_error_set(err, EINVAL, "state: \"id\" is not a string");
	if (!hezo_hook_id_valid(v->str))
		return hezo_error_set(err, EINVAL, "state: \"id\" is not " HEZO_ID_RULE);

	v = hezo_json_get(root, "pid");
	if (v && v->type != HEZO_JSON_NULL) {
		int64_t pid;

		/* runsc reports -1 once the sandbox is gone (poststop); nothing else is negative.
		 */
		r = hezo_json_get_int64(v, &pid);
		if (r < 0 || pid < -1 || pid > HEZO_HOOK_PID_MAX)
			return hezo_error_set(err, EINVAL, "state: \"pid\" is not a process id");
		st.pid = pid < 0 ? 0 : (int)pid;
	}
	if (need_pid && st.pid <= 0)
		return hezo_error_set(err, EINVAL, "state: no \"pid\" of a running container");

	st.id = strdup(hezo_json_get(root, "id")->str);
	if (!st.id)
		return hezo_error_set(err, ENOMEM, "state: out of memory");
	r = dup_optional_string(root, "status", &st.status, err);
	if (r >= 0)
		r = dup_optional_string(root, "bundle", &st.bundle, err);
	if (r >= 0 && st.bundle && st.bundle[0] != '/')
		r = hezo_error_set(err, EINVAL, "state: \"bundle\" is not an absolute path");
	if (r < 0) {
		hezo_hook_state_clear(&st);
		return r;
	}
	*out = st;
	return 0;
}

void hezo_hook_egress_clear(struct hezo_hook_egress *eg)
{
	hezo_json_free(eg->json);
	memset(eg, 0, sizeof(*eg));
}

int hezo_hook_parse_egress(const char *arg, struct hezo_hook_egress *out, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *root = NULL;
	struct hezo_egress parsed;
	const struct hezo_json *v;
	const char *mode;
	int r;

	memset(out, 0, sizeof(*out));
	r = hezo_json_parse(arg, strlen(arg), &root, err);
	if (r < 0)
		return hezo_error_prefix(err, "--egress");
	if (root->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "--egress: not a JSON object");

	v = hezo_json_get(root, "mode");
	mode = hezo_json_string(v);
	if (!mode)
		return hezo_error_set(err, EINVAL, "--egress: no \"mode\" string");
	if (!strcmp(mode, "proxy"))
		out->mode = HEZO_HOOK_MODE_PROXY;
	else if (!strcmp(mode, "deny"))
		out->mode = HEZO_HOOK_MODE_DENY;
	else if (!strcmp(mode, "off"))
		out->mode = HEZO_HOOK_MODE_OFF;
	else
		return hezo_error_set(err, EINVAL,
				      "--egress: unknown mode (want proxy, deny or off)");

	/* Every entry by the grammar proxyd will enforce: a section it would refuse fails here,
	 * before anything is wired. */
	r = hezo_egress_parse_section(root, &parsed, err);
	if (r < 0)
		return hezo_error_prefix(err, "--egress");
	hezo_egress_clear(&parsed);

	v = hezo_json_get(root, "project");
	if (v && v->type != HEZO_JSON_NULL) {
		if (v->type != HEZO_JSON_STRING || !v->str[0])
			return hezo_error_set(err, EINVAL,
					      "--egress: \"project\" is not a non-empty string");
		out->project = v->str;
	}
	out->json = TAKE_PTR(root);
	return 0;
}

/*
 * proxyd's control requests checked before anything touches the kernel: the op, the container id,
 * the project, the egress section (parsed as proxyd will enforce it) and the list/stats cursor.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-id.h"
#include "proxyd-parse.h"

#define ID_RULE HEZO_ID_RULE

void hezo_ctl_request_clear(struct hezo_ctl_request *r)
{
	hezo_json_free(r->egress);
	hezo_egress_clear(&r->eg);
	memset(r, 0, sizeof(*r));
}

bool hezo_ctl_id_valid(const char *id)
{
	/* The id names a state file and a bind mount under proxyd's state directory. */
	return hezo_id_valid(id);
}

static int get_id(const struct hezo_json *doc, const char *key, bool required, char *out,
		  struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(doc, key);
	const char *s = hezo_json_string(v);

	out[0] = '\0';
	if (!v || (!required && v->type == HEZO_JSON_NULL))
		return required ? hezo_error_set(err, EINVAL, "%s: missing", key) : 0;
	if (!s || !hezo_ctl_id_valid(s))
		return hezo_error_set(err, EINVAL, "%s: not " ID_RULE, key);
	strcpy(out, s);
	return 0;
}

static int check_keys(const struct hezo_json *doc, const char *const *known, size_t n,
		      struct hezo_error **err)
{
	HEZO_JSON_FOREACH (i, doc) {
		bool ok = false;

		for (size_t k = 0; k < n && !ok; k++)
			ok = strcmp(doc->keys[i], known[k]) == 0;
		if (!ok)
			return hezo_error_set(err, EINVAL, "%s: unknown key", doc->keys[i]);
	}
	return 0;
}

int hezo_ctl_registration(const struct hezo_json *doc, struct hezo_ctl_request *out,
			  struct hezo_error **err)
{
	static const char *const known[] = {"op", "id", "project", "egress", "cgroup"};
	const struct hezo_json *egress, *pj, *cg;
	struct hezo_ctl_request q = {.op = HEZO_CTL_REGISTER};
	int r;

	memset(out, 0, sizeof(*out));
	if (!doc || doc->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "registration is not a JSON object");
	r = check_keys(doc, known, HEZO_ARRAY_SIZE(known), err);
	if (r < 0)
		return r;
	r = get_id(doc, "id", true, q.id, err);
	if (r < 0)
		return r;
	egress = hezo_json_get(doc, "egress");
	/* The hook sends the project at the top; an operator's egress section may carry it. */
	pj = hezo_json_get(doc, "project");
	if (!pj && egress && egress->type == HEZO_JSON_OBJECT)
		pj = hezo_json_get(egress, "project");
	if (pj && pj->type != HEZO_JSON_NULL) {
		const char *project = hezo_json_string(pj);

		if (!project || strlen(project) >= HEZO_CTL_PROJECT_MAX)
			return hezo_error_set(err, EINVAL,
					      "project: not a string of at most 64 bytes");
		strcpy(q.project, project);
	}
	cg = hezo_json_get(doc, "cgroup");
	if (cg && hezo_json_get_uint64(cg, &q.cgroup) < 0)
		return hezo_error_set(err, EINVAL, "cgroup: not a cgroup id");
	r = hezo_egress_parse(egress, &q.eg, err);
	if (r < 0)
		return r;
	q.egress = hezo_json_clone(egress);
	if (!q.egress) {
		hezo_egress_clear(&q.eg);
		return hezo_error_set(err, ENOMEM, "out of memory");
	}
	*out = q;
	return 0;
}

int hezo_ctl_request_parse(const char *buf, size_t len, struct hezo_ctl_request *out,
			   struct hezo_error **err)
{
	static const char *const id_keys[] = {"op", "id"};
	static const char *const page_keys[] = {"op", "after"};
	_cleanup_json_ struct hezo_json *doc = NULL;
	struct hezo_ctl_request q = {0};
	const char *op;
	int r;

	memset(out, 0, sizeof(*out));
	if (hezo_json_parse(buf, len, &doc, err) < 0)
		return hezo_error_prefix(err, "request");
	if (doc->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "request is not a JSON object");
	op = hezo_json_string(hezo_json_get(doc, "op"));
	if (!op)
		return hezo_error_set(err, EINVAL, "op: missing");
	if (strcmp(op, "register") == 0)
		return hezo_ctl_registration(doc, out, err);

	if (strcmp(op, "deregister") == 0) {
		q.op = HEZO_CTL_DEREGISTER;
		r = check_keys(doc, id_keys, HEZO_ARRAY_SIZE(id_keys), err);
		if (r >= 0)
			r = get_id(doc, "id", true, q.id, err);
	} else if (strcmp(op, "list") == 0 || strcmp(op, "stats") == 0) {
		q.op = op[0] == 'l' ? HEZO_CTL_LIST : HEZO_CTL_STATS;
		r = check_keys(doc, page_keys, HEZO_ARRAY_SIZE(page_keys), err);
		if (r >= 0)
			r = get_id(doc, "after", false, q.after, err);
	} else {
		r = hezo_error_set(err, EINVAL, "op: unknown (register, deregister, list, stats)");
	}
	if (r < 0)
		return r;
	*out = q;
	return 0;
}

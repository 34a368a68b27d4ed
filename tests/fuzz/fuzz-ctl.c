/*
 * libFuzzer target for proxyd's control requests (proxyd/request.c): the input is one message as
 * it arrives on the control socket. Whatever is accepted must be safe to act on, and a
 * registration must survive proxyd's state file (written, read back at restart) unchanged.
 *
 * Build and run by hand from the top of the checkout:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec -Iegress \
 *       -Iproxyd \
 *       tests/fuzz/fuzz-ctl.c proxyd/request.c egress/grammar.c egress/section.c egress/match.c \
 *       spec/json.c base/error.c \
 *       -lyajl -o /tmp/fuzz-ctl
 *   mkdir -p /tmp/fuzz-ctl-corpus && /tmp/fuzz-ctl -max_total_time=60 /tmp/fuzz-ctl-corpus \
 *       tests/fuzz/corpus/ctl
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxyd-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The id names proxyd's state file and namespace mount: it must not be able to leave the
 * directory or be empty. */
static void check_id(const char *id)
{
	size_t n = strlen(id);

	if (!hezo_ctl_id_valid(id) || n == 0 || n >= HEZO_CTL_ID_MAX || strchr(id, '/') ||
	    id[0] == '.')
		abort();
}

/* proxyd answers a refusal with {"ok":false,"error":msg}: that reply must be writable. */
static void check_refusal(int r, const struct hezo_error *err, const struct hezo_ctl_request *q)
{
	_cleanup_error_ struct hezo_error *e2 = NULL;
	_cleanup_json_ struct hezo_json *rep = hezo_json_new_object();
	_cleanup_free_ char *text = NULL;
	size_t len;

	if (!err || !err->msg || !err->msg[0] || err->errnum <= 0 || r != -err->errnum)
		abort();
	if (q->op || q->id[0] || q->egress || q->eg.nnames || q->eg.names)
		abort();
	if (!rep || hezo_json_set(rep, "error", hezo_json_new_string(err->msg)) < 0)
		return;
	if (hezo_json_dump(rep, false, &text, &len, &e2) < 0)
		abort();
}

/* What registry.c persists for a registration, read back the way a restarted proxyd does. */
static void check_restore(const struct hezo_ctl_request *q)
{
	_cleanup_json_ struct hezo_json *doc = hezo_json_new_object(), *back = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_(hezo_ctl_request_clear) struct hezo_ctl_request again = {0};
	_cleanup_free_ char *text = NULL;
	size_t len;

	if (!doc || hezo_json_set(doc, "id", hezo_json_new_string(q->id)) < 0 ||
	    hezo_json_set(doc, "project", hezo_json_new_string(q->project)) < 0 ||
	    hezo_json_set(doc, "egress", hezo_json_clone(q->egress)) < 0)
		return;
	if (hezo_json_dump(doc, false, &text, &len, &err) < 0 ||
	    hezo_json_parse(text, len, &back, &err) < 0)
		abort();
	if (hezo_ctl_registration(back, &again, &err) < 0)
		abort();
	if (again.op != HEZO_CTL_REGISTER || strcmp(again.id, q->id) ||
	    strcmp(again.project, q->project) || !hezo_json_equal(again.egress, q->egress))
		abort();
	if (again.eg.nnames != q->eg.nnames || again.eg.ncidrs != q->eg.ncidrs ||
	    again.eg.nranges != q->eg.nranges || again.eg.nresolvers != q->eg.nresolvers)
		abort();
	for (size_t i = 0; i < q->eg.nnames; i++)
		if (strcmp(again.eg.names[i].name, q->eg.names[i].name) ||
		    again.eg.names[i].wildcard != q->eg.names[i].wildcard ||
		    again.eg.names[i].port != q->eg.names[i].port)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_(hezo_ctl_request_clear) struct hezo_ctl_request q = {0};
	int r;

	r = hezo_ctl_request_parse((const char *)data, size, &q, &err);
	if (r < 0) {
		check_refusal(r, err, &q);
		return 0;
	}
	if (err)
		abort();
	switch (q.op) {
	case HEZO_CTL_REGISTER:
		check_id(q.id);
		if (strlen(q.project) >= HEZO_CTL_PROJECT_MAX || q.after[0])
			abort();
		if (!q.egress || q.egress->type != HEZO_JSON_OBJECT)
			abort();
		check_restore(&q);
		break;
	case HEZO_CTL_DEREGISTER:
		check_id(q.id);
		if (q.project[0] || q.egress || q.after[0])
			abort();
		break;
	case HEZO_CTL_LIST:
	case HEZO_CTL_STATS:
		if (q.id[0] || q.egress)
			abort();
		if (q.after[0])
			check_id(q.after);
		break;
	default:
		abort();
	}
	return 0;
}

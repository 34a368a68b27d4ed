/*
 * list: runc's list, of the containers hezo-shim made under this --root, and for a project's
 * runtime only that project's. The backend's own list shows whatever its state directory holds:
 * another project's containers (their IDs, bundles and init PIDs) and containers no box was
 * ever put on. Each backend the records name is asked once, in JSON, and what it says of a
 * recorded container of its own is printed in the form the caller asked for.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

struct list_walk {
	const struct shim_ctx *ctx;
	char key[SHIM_KEY_LEN];
	struct hezo_json *mine; /* id -> its record, for this --root and the caller's project */
};

static int list_one(void *data, const char *key, struct hezo_json *rec)
{
	struct list_walk *w = data;
	const char *id = hezo_json_string(hezo_json_get(rec, "id"));

	if (strcmp(key, w->key) != 0 || !id || shim_validate_id(id, NULL) < 0 ||
	    shim_record_for_caller(w->ctx, id, rec, NULL) < 0)
		return 0;
	return hezo_json_set(w->mine, id, hezo_json_clone(rec));
}

/* What backend (named in a record) says in `list --format json` of its recorded containers. */
static int ask_backend(struct shim_ctx *ctx, const struct hezo_json *mine, const char *backend,
		       struct hezo_json *out, struct hezo_error **err)
{
	_cleanup_target_ struct shim_target t = {0};
	_cleanup_strv_ struct hezo_strv av = {0};
	_cleanup_json_ struct hezo_json *doc = NULL;
	_cleanup_free_ char *text = NULL;
	char *args[] = {"--format", "json", NULL};
	size_t len = 0;
	int r;

	/* The first record of that backend: its path and global flags are the backend's. */
	HEZO_JSON_FOREACH (i, mine) {
		const char *b = hezo_json_string(hezo_json_get(mine->items[i], "backend"));
		if (b && strcmp(b, backend) == 0) {
			r = shim_record_target(mine->items[i], &t, err);
			if (r < 0)
				return r;
			break;
		}
	}
	r = shim_backend_argv(ctx, &t, "list", 2, args, &av, err);
	if (r < 0)
		return r;
	r = shim_spawn_capture(ctx, &av, &text, &len, err);
	if (r < 0)
		return r;
	if (r != 0)
		return hezo_error_set(err, EIO, "list: %s list exited with status %d", backend, r);
	r = hezo_json_parse(text, len, &doc, err);
	if (r < 0)
		return hezo_error_prefix(err, "list: %s's answer", backend);
	if (doc->type == HEZO_JSON_NULL)
		return 0;
	if (doc->type != HEZO_JSON_ARRAY)
		return hezo_error_set(err, EINVAL, "list: %s's answer is not a JSON array",
				      backend);
	HEZO_JSON_FOREACH (i, doc) {
		const struct hezo_json *c = doc->items[i];
		const char *id = hezo_json_string(hezo_json_get(c, "id"));
		const struct hezo_json *rec = id ? hezo_json_get(mine, id) : NULL;
		const char *b = hezo_json_string(hezo_json_get(rec, "backend"));

		if (!b || strcmp(b, backend) != 0)
			continue;
		r = hezo_json_append(out, hezo_json_clone(c));
		if (r < 0)
			return hezo_error_set(err, -r, "out of memory");
	}
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const char *x = hezo_json_string(hezo_json_get(*(struct hezo_json *const *)a, "id"));
	const char *y = hezo_json_string(hezo_json_get(*(struct hezo_json *const *)b, "id"));

	return strcmp(x ?: "", y ?: "");
}

/* Characters, as Go's tabwriter counts them (UTF-8 sequences, not bytes). */
static size_t width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

#define COLUMNS 6

static void cells(const struct hezo_json *c, char pid[24], const char *out[COLUMNS])
{
	int64_t p = 0;

	(void)hezo_json_get_int64(hezo_json_get(c, "pid"), &p);
	snprintf(pid, 24, "%lld", (long long)p);
	out[0] = hezo_json_string(hezo_json_get(c, "id")) ?: "";
	out[1] = pid;
	out[2] = hezo_json_string(hezo_json_get(c, "status")) ?: "";
	out[3] = hezo_json_string(hezo_json_get(c, "bundle")) ?: "";
	out[4] = hezo_json_string(hezo_json_get(c, "created")) ?: "";
	out[5] = hezo_json_string(hezo_json_get(c, "owner")) ?: "";
}

/*
 * runc's table: Go's tabwriter with cells at least 12 wide and 3 of padding; the last column
 * is not padded.
 */
static void print_table(const struct hezo_json *list)
{
	static const char *const head[COLUMNS] = {"ID",	    "PID",     "STATUS",
						  "BUNDLE", "CREATED", "OWNER"};
	size_t w[COLUMNS - 1];
	const char *row[COLUMNS];
	char pid[24];

	for (size_t k = 0; k + 1 < COLUMNS; k++)
		w[k] = width(head[k]);
	HEZO_JSON_FOREACH (i, list) {
		cells(list->items[i], pid, row);
		for (size_t k = 0; k + 1 < COLUMNS; k++)
			if (width(row[k]) > w[k])
				w[k] = width(row[k]);
	}
	for (size_t k = 0; k + 1 < COLUMNS; k++)
		w[k] = w[k] + 3 < 12 ? 12 : w[k] + 3;
	for (size_t i = 0; i <= list->len; i++) {
		const char *const *r = row;

		if (i == 0)
			r = head;
		else
			cells(list->items[i - 1], pid, row);
		for (size_t k = 0; k + 1 < COLUMNS; k++)
			printf("%s%*s", r[k], (int)(w[k] - width(r[k])), "");
		printf("%s\n", r[COLUMNS - 1]);
	}
}

int shim_cmd_list(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	static const char *const backends[] = {"runc", "runsc", "crun"};
	_cleanup_json_ struct hezo_json *mine = hezo_json_new_object(), *list = NULL;
	const char *fmt = shim_args_get(&v->args, "format") ?: "table";
	struct list_walk w = {.ctx = ctx, .mine = mine};
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	if (v->args.npos > 0)
		return hezo_error_set(err, EINVAL, "list: takes no container (%s)",
				      shim_args_positional(&v->args, 0));
	if (strcmp(fmt, "table") != 0 && strcmp(fmt, "json") != 0)
		return hezo_error_set(err, EINVAL, "list: invalid format option \"%s\"", fmt);
	list = hezo_json_new_array();
	if (!mine || !list)
		return hezo_error_set(err, ENOMEM, "out of memory");
	shim_record_key_for_root(ctx->g.root, w.key);
	r = shim_records_foreach(ctx, list_one, &w);
	if (r < 0)
		return hezo_error_set(err, -r, "list: state directory %s: %s", ctx->state_dir,
				      strerror(-r));
	for (size_t b = 0; b < HEZO_ARRAY_SIZE(backends); b++) {
		bool named = false;

		HEZO_JSON_FOREACH (i, mine) {
			const char *n = hezo_json_string(hezo_json_get(mine->items[i], "backend"));
			named = named || (n && strcmp(n, backends[b]) == 0);
		}
		if (named && (r = ask_backend(ctx, mine, backends[b], list, err)) < 0)
			return r;
	}
	if (list->len > 1)
		qsort(list->items, list->len, sizeof(list->items[0]), by_id);
	if (shim_args_bool(&v->args, "quiet")) {
		HEZO_JSON_FOREACH (i, list)
			printf("%s\n", hezo_json_string(hezo_json_get(list->items[i], "id")));
	} else if (strcmp(fmt, "table") == 0) {
		print_table(list);
	} else {
		/* As runc's encoder: none is null. */
		if (list->len == 0)
			text = strdup("null"), len = 4;
		else if ((r = hezo_json_dump(list, false, &text, &len, err)) < 0)
			return r;
		if (!text)
			return hezo_error_set(err, ENOMEM, "out of memory");
		printf("%s\n", text);
	}
	return fflush(stdout) == 0 ? 0 : hezo_error_set(err, EIO, "list: cannot write to stdout");
}

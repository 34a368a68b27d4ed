/* `hezo-shim project`: the admin verb, told which boxes of a project live by the records. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-install.h"
#include "shim.h"

struct live_walk {
	const char *project;
	unsigned count;
	char *first;
};

static int live_one(void *data, const char *key, struct hezo_json *rec)
{
	struct live_walk *w = data;
	const char *project = hezo_json_string(hezo_json_get(rec, "project"));
	const char *id = hezo_json_string(hezo_json_get(rec, "id"));

	(void)key;
	if (!project || strcmp(project, w->project) != 0 || !shim_record_live(rec))
		return 0;
	if (w->count++ == 0 && id && !(w->first = strdup(id)))
		return -ENOMEM;
	return 0;
}

static int live_boxes(void *data, const char *project, unsigned *count, char **first)
{
	struct live_walk w = {.project = project};
	int r = shim_records_foreach(data, live_one, &w);

	if (r < 0) {
		free(w.first);
		return r;
	}
	*count = w.count;
	*first = w.first;
	return 0;
}

int shim_cmd_project(struct shim_ctx *ctx, int argc, char **argv)
{
	const struct hezo_project_env env = {.live = live_boxes, .data = ctx};

	return hezo_project_main(argc, argv, &env);
}

/* `hezo-shim policy show [--project P]` and `hezo-shim policy check FILE`. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <fcntl.h>
#include <stdlib.h>

#include "hezo-config.h"
#include "hezo-file.h"
#include "hezo-install.h"
#include "hezo-json.h"
#include "hezo-policy.h"

static void policy_usage(FILE *f)
{
	fprintf(f, "Usage: hezo-shim policy show [--policy PATH] [--project NAME]\n"
		   "       hezo-shim policy check FILE\n"
		   "       hezo-shim policy check --project NAME FILE   (layered over the main "
		   "policy)\n");
}

static int policy_show(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"project", required_argument, NULL, 'p'},
		{"policy", required_argument, NULL, 'f'},
		{NULL, 0, NULL, 0},
	};
	const char *path = getenv("HEZO_POLICY") ? getenv("HEZO_POLICY") : HEZO_POLICY_PATH;
	const char *project = NULL;
	_cleanup_policy_ struct hezo_policy *base = NULL, *eff = NULL;
	_cleanup_json_ struct hezo_json *ann = NULL, *doc = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			project = optarg;
			break;
		case 'f':
			path = optarg;
			break;
		default:
			fprintf(stderr,
				"hezo-shim policy show: unknown or incomplete option \"%s\"\n",
				argv[optind - 1]);
			policy_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hezo-shim policy show: unexpected argument \"%s\"\n",
			argv[optind]);
		return 2;
	}
	if (hezo_policy_load(path, &base, &e) < 0) {
		fprintf(stderr, "hezo-shim: %s\n", e->msg);
		return 1;
	}
	if (project) {
		ann = hezo_json_new_object();
		if (!ann ||
		    hezo_json_set(ann, "org.hezo.project", hezo_json_new_string(project)) < 0)
			return 1;
	}
	if (hezo_policy_for_container(base, ann, NULL, &eff, &e) < 0) {
		fprintf(stderr, "hezo-shim: %s\n", e->msg);
		return 1;
	}
	doc = hezo_policy_to_json(eff);
	if (!doc || hezo_json_dump(doc, true, &text, &len, &e) < 0) {
		fprintf(stderr, "hezo-shim: cannot print the policy: %s\n",
			e ? e->msg : "out of memory");
		return 1;
	}
	fwrite(text, 1, len, stdout);
	if (len == 0 || text[len - 1] != '\n')
		fputc('\n', stdout);
	return 0;
}

/* A project file, as the shim layers projectsDir/NAME.json over the main policy. */
static int policy_check_project(const char *name, const char *file)
{
	const char *env = getenv("HEZO_POLICY");
	_cleanup_policy_ struct hezo_policy *base = NULL, *p = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if (hezo_policy_load(env && *env ? env : HEZO_POLICY_PATH, &base, &e) < 0 ||
	    hezo_read_file_at(AT_FDCWD, file, 1 << 20, &buf, &len, &e) < 0 ||
	    hezo_policy_layer_project(base, name, file, buf, len, &p, &e) < 0) {
		fprintf(stderr, "hezo-shim: %s\n", e->msg);
		return 1;
	}
	printf("%s: ok as project %s (backend %s)\n", file, name,
	       hezo_backend_name(hezo_policy_backend(p)));
	return 0;
}

static int policy_check(int argc, char **argv)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *buf = NULL;
	char **msgs = NULL;
	size_t len = 0, n = 0;
	int r;

	if (argc == 4 && strcmp(argv[1], "--project") == 0)
		return policy_check_project(argv[2], argv[3]);
	if (argc != 2 || argv[1][0] == '-') {
		policy_usage(stderr);
		return 2;
	}
	if (hezo_read_file_at(AT_FDCWD, argv[1], 1 << 20, &buf, &len, &e) < 0) {
		fprintf(stderr, "hezo-shim: policy %s\n", e->msg);
		return 1;
	}
	/* Every bad field, one line each, so an admin fixes a file in one pass. */
	r = hezo_policy_check(buf, len, argv[1], &msgs, &n, &e);
	for (size_t i = 0; i < n; i++) {
		fprintf(stderr, "hezo-shim: %s\n", msgs[i]);
		free(msgs[i]);
	}
	free(msgs);
	if (r < 0) {
		if (n == 0)
			fprintf(stderr, "hezo-shim: %s\n", e->msg);
		return 1;
	}
	/* Then the same load the shim does, so what passes here is what the shim accepts. */
	hezo_error_free(TAKE_PTR(e));
	if (hezo_policy_load(argv[1], &p, &e) < 0) {
		fprintf(stderr, "hezo-shim: %s\n", e->msg);
		return 1;
	}
	printf("%s: ok (mode %s, backend %s)\n", argv[1],
	       hezo_policy_production(p) ? "production" : "dev",
	       hezo_backend_name(hezo_policy_backend(p)));
	return 0;
}

int hezo_policy_cmd_main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "show") == 0)
		return policy_show(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "check") == 0)
		return policy_check(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		policy_usage(stdout);
		return 0;
	}
	policy_usage(stderr);
	return 2;
}

/*
 * Test driver: put one OCI document through the policy as the shim does (hezo_policy_apply_spec,
 * _process or _resources, with no environment) and print the result, for tests/tools/keys.sh.
 * The fields whose check needs this machine's engines (root.path, linux.cgroupsPath, hooks: see
 * policy/paths.c, tested in tests/unit/policy with a fake env) or the policy's own lists
 * (linux.sysctl: policy/sysctl.c) or that the box refuses whatever they hold (a non-empty
 * resources.unified: policy/fields.c) are first pointed at what needs neither, after the key check
 * has seen the document as it came, so that key spelling is what decides here.
 * Usage: keys-apply spec|process|resources FILE [POLICY_FILE]   (default policy: "{}")
 * Exit 0: the applied document on stdout; 1: "refused: MESSAGE" on stdout; 2: usage or I/O.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "hezo-file.h"
#include "hezo-policy.h"
#include "hezo-spec.h"

static int neutralise(struct hezo_json *doc)
{
	struct hezo_json *root = hezo_json_get_type(doc, "root", HEZO_JSON_OBJECT);
	struct hezo_json *linux_ = hezo_json_get_type(doc, "linux", HEZO_JSON_OBJECT);

	if (root && hezo_json_get(root, "path") &&
	    hezo_json_set(root, "path", hezo_json_new_string("rootfs")) < 0)
		return -1;
	if (linux_) {
		hezo_json_remove(linux_, "cgroupsPath");
		hezo_json_remove(linux_, "sysctl");
		hezo_json_remove(hezo_json_get_type(linux_, "resources", HEZO_JSON_OBJECT),
				 "unified");
	}
	hezo_json_remove(doc, "hooks");
	return 0;
}

int main(int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *doc = NULL;
	_cleanup_free_ char *data = NULL, *out = NULL;
	size_t len;
	int r;

	if (argc < 3 || argc > 4 ||
	    (strcmp(argv[1], "spec") && strcmp(argv[1], "process") &&
	     strcmp(argv[1], "resources"))) {
		fprintf(stderr, "usage: keys-apply spec|process|resources FILE [POLICY_FILE]\n");
		return 2;
	}
	r = argc == 4 ? hezo_policy_load(argv[3], &p, &err)
		      : hezo_policy_parse("{}", 2, "(default)", &p, &err);
	if (r < 0) {
		fprintf(stderr, "%s\n", err->msg);
		return 2;
	}
	r = hezo_read_file_at(AT_FDCWD, argv[2], HEZO_SPEC_MAX_SIZE, &data, &len, &err);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", argv[2], err->msg);
		return 2;
	}
	r = hezo_spec_parse(data, len, argv[1], &doc, &err);
	if (r == 0) {
		if (strcmp(argv[1], "spec") == 0) {
			r = hezo_spec_check_keys(doc, HEZO_SPEC_DOC_CONFIG, "config.json", &err);
			if (r == 0 && neutralise(doc) < 0) {
				fprintf(stderr, "out of memory\n");
				return 2;
			}
			r = r ?: hezo_policy_apply_spec(p, doc, NULL, &err);
		} else if (strcmp(argv[1], "process") == 0)
			r = hezo_policy_apply_process(p, doc, &err);
		else {
			r = hezo_spec_check_keys(doc, HEZO_SPEC_DOC_RESOURCES, "resources", &err);
			if (r == 0)
				hezo_json_remove(doc, "unified");
			r = r ?: hezo_policy_apply_resources(p, doc, NULL, &err);
		}
	}
	if (r < 0) {
		printf("refused: %s\n", err->msg);
		return 1;
	}
	r = hezo_json_dump(doc, false, &out, &len, &err);
	if (r < 0) {
		fprintf(stderr, "%s\n", err->msg);
		return 2;
	}
	return fwrite(out, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : 2;
}

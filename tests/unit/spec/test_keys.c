/* Unit tests for spec/keys.c: the key spellings runc's Go decoder would read differently. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hezo-spec.h"

static const char *doc_name(enum hezo_spec_doc kind)
{
	return kind == HEZO_SPEC_DOC_CONFIG    ? "config.json"
	       : kind == HEZO_SPEC_DOC_PROCESS ? "process"
					       : "resources";
}

/* The checker's verdict on text: NULL when accepted, else the message (malloc'd). */
static char *check(enum hezo_spec_doc kind, const char *text)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *doc = NULL;
	int r;

	if (hezo_json_parse(text, strlen(text), &doc, &err) < 0)
		fail_msg("test input does not parse: %s: %s", err->msg, text);
	r = hezo_spec_check_keys(doc, kind, doc_name(kind), &err);
	if (r == 0) {
		assert_null(err);
		return NULL;
	}
	assert_int_equal(r, -EINVAL);
	assert_non_null(err);
	assert_null(strchr(err->msg, '\n'));
	return strdup(err->msg);
}

static void accepted(enum hezo_spec_doc kind, const char *text)
{
	_cleanup_free_ char *msg = check(kind, text);

	if (msg)
		fail_msg("refused: %s\n  input: %s", msg, text);
}

static void refused(enum hezo_spec_doc kind, const char *text, const char *want)
{
	_cleanup_free_ char *msg = check(kind, text);

	if (!msg)
		fail_msg("accepted: %s", text);
	if (strcmp(msg, want) != 0)
		fail_msg("message\n  got:  %s\n  want: %s", msg, want);
}

static void test_captured_documents(void **state)
{
	static const struct {
		const char *file;
		enum hezo_spec_doc kind;
	} docs[] = {
		{"config-docker.json", HEZO_SPEC_DOC_CONFIG},
		{"config-docker-flags.json", HEZO_SPEC_DOC_CONFIG},
		{"config-docker-privileged.json", HEZO_SPEC_DOC_CONFIG},
		{"config-podman.json", HEZO_SPEC_DOC_CONFIG},
		{"config-ctr.json", HEZO_SPEC_DOC_CONFIG},
		{"process-docker-exec-privileged.json", HEZO_SPEC_DOC_PROCESS},
		{"resources-docker-update.json", HEZO_SPEC_DOC_RESOURCES},
	};
	const char *d = getenv("HEZO_TEST_DATA");
	_cleanup_close_ int dfd = open(d ? d : "tests/data", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	(void)state;
	assert_true(dfd >= 0);
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		_cleanup_error_ struct hezo_error *err = NULL;
		_cleanup_json_ struct hezo_json *doc = NULL;

		if (hezo_spec_load_at(dfd, docs[i].file, &doc, &err) < 0)
			fail_msg("%s: %s", docs[i].file, err->msg);
		if (hezo_spec_check_keys(doc, docs[i].kind, docs[i].file, &err) < 0)
			fail_msg("%s", err->msg);
	}
}

static void test_capitalised_top_level(void **state)
{
	(void)state;
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"process\":{\"args\":[\"sh\"]},\"Process\":{\"capabilities\":{\"bounding\":"
		"[\"CAP_SYS_ADMIN\"]},\"noNewPrivileges\":false}}",
		"config.json: \"Process\": differs from the spec's field \"process\" only in case "
		"(runc would read it as \"process\")");
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"Linux\":{\"namespaces\":[{\"type\":\"mount\"}],\"seccomp\":null},\"linux\":{}}",
		"config.json: \"Linux\": differs from the spec's field \"linux\" only in case "
		"(runc would read it as \"linux\")");
	refused(HEZO_SPEC_DOC_CONFIG, "{\"MOUNTS\":[]}",
		"config.json: \"MOUNTS\": differs from the spec's field \"mounts\" only in case "
		"(runc would read it as \"mounts\")");
	refused(HEZO_SPEC_DOC_CONFIG, "{\"ociversion\":\"1.0.2\"}",
		"config.json: \"ociversion\": differs from the spec's field \"ociVersion\" only in "
		"case (runc would read it as \"ociVersion\")");
}

static void test_nested(void **state)
{
	(void)state;
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\"},"
		"{\"destination\":\"/x\",\"Source\":\"/\",\"type\":\"bind\"}]}",
		"config.json: mounts[1].\"Source\": differs from the spec's field \"source\" only "
		"in case (runc would read it as \"source\")");
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"linux\":{\"resources\":{\"memory\":{\"limit\":1},\"pids\":{\"Limit\":-1}}}}",
		"config.json: linux.resources.pids.\"Limit\": differs from the spec's field "
		"\"limit\" only in case (runc would read it as \"limit\")");
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"hooks\":{\"prestart\":[{\"path\":\"/bin/true\",\"ARGS\":[\"x\"]}]}}",
		"config.json: hooks.prestart[0].\"ARGS\": differs from the spec's field \"args\" "
		"only in case (runc would read it as \"args\")");
	refused(HEZO_SPEC_DOC_CONFIG, "{\"hooks\":{\"Prestart\":[]}}",
		"config.json: hooks.\"Prestart\": differs from the spec's field \"prestart\" only "
		"in case (runc would read it as \"prestart\")");
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"linux\":{\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{"
		"\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
		"\"Value\":1,\"op\":\"SCMP_CMP_EQ\"}]}]}}}",
		"config.json: linux.seccomp.syscalls[0].args[0].\"Value\": differs from the spec's "
		"field \"value\" only in case (runc would read it as \"value\")");
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"linux\":{\"seccomp\":{\"DefaultAction\":\"SCMP_ACT_ALLOW\"}}}",
		"config.json: linux.seccomp.\"DefaultAction\": differs from the spec's field "
		"\"defaultAction\" only in case (runc would read it as \"defaultAction\")");
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"process\":{\"user\":{\"uid\":0},\"Capabilities\":{\"bounding\":[]}}}",
		"config.json: process.\"Capabilities\": differs from the spec's field "
		"\"capabilities\" only in case (runc would read it as \"capabilities\")");
	/* A field whose tag is not lower camel case. */
	refused(HEZO_SPEC_DOC_CONFIG, "{\"windows\":{\"network\":{\"dnsSearchList\":[]}}}",
		"config.json: windows.network.\"dnsSearchList\": differs from the spec's field "
		"\"DNSSearchList\" only in case (runc would read it as \"DNSSearchList\")");
	/* The embedded LinuxBlockIODevice's fields. */
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"linux\":{\"resources\":{\"blockIO\":{\"throttleReadBpsDevice\":[{\"MAJOR\":8,"
		"\"minor\":0,\"rate\":1}]}}}}",
		"config.json: linux.resources.blockIO.throttleReadBpsDevice[0].\"MAJOR\": differs "
		"from the spec's field \"major\" only in case (runc would read it as \"major\")");
}

static void test_unicode_folds(void **state)
{
	(void)state;
	/* U+017F LATIN SMALL LETTER LONG S folds to s. */
	refused(HEZO_SPEC_DOC_CONFIG, "{\"proce\\u017fs\":{}}",
		"config.json: \"proce\\xc5\\xbfs\": differs from the spec's field \"process\" "
		"only in case (runc would read it as \"process\")");
	/* U+212A KELVIN SIGN folds to k. */
	refused(HEZO_SPEC_DOC_CONFIG, "{\"hoo\\u212as\":{}}",
		"config.json: \"hoo\\xe2\\x84\\xaas\": differs from the spec's field \"hooks\" "
		"only in case (runc would read it as \"hooks\")");
	refused(HEZO_SPEC_DOC_RESOURCES, "{\"bloc\\u212aIO\":{\"weight\":10}}",
		"resources: \"bloc\\xe2\\x84\\xaaIO\": differs from the spec's field \"blockIO\" "
		"only in case (runc would read it as \"blockIO\")");
	/* Other letters outside ASCII fold to nothing the spec names. */
	accepted(HEZO_SPEC_DOC_CONFIG, "{\"proce\\u00dfs\":{},\"\\u0130d\":1,\"h\\u0131\":2}");
	/* A LONG S where the field has no s is no match. */
	accepted(HEZO_SPEC_DOC_CONFIG, "{\"root\":{\"\\u017fath\":\"/\"}}");
}

static void test_process_document(void **state)
{
	(void)state;
	accepted(HEZO_SPEC_DOC_PROCESS,
		 "{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\","
		 "\"capabilities\":{\"bounding\":[]},\"noNewPrivileges\":true}");
	refused(HEZO_SPEC_DOC_PROCESS,
		"{\"args\":[\"sh\"],\"cwd\":\"/\",\"Capabilities\":{\"bounding\":"
		"[\"CAP_SYS_ADMIN\"]}}",
		"process: \"Capabilities\": differs from the spec's field \"capabilities\" only "
		"in case (runc would read it as \"capabilities\")");
	refused(HEZO_SPEC_DOC_PROCESS, "{\"args\":[\"sh\"],\"NoNewPrivileges\":false}",
		"process: \"NoNewPrivileges\": differs from the spec's field \"noNewPrivileges\" "
		"only in case (runc would read it as \"noNewPrivileges\")");
	refused(HEZO_SPEC_DOC_PROCESS, "{\"capabilities\":{\"Bounding\":[\"CAP_SYS_ADMIN\"]}}",
		"process: capabilities.\"Bounding\": differs from the spec's field \"bounding\" "
		"only in case (runc would read it as \"bounding\")");
	/* A process document is not a config.json: "process" means nothing at its top. */
	accepted(HEZO_SPEC_DOC_PROCESS, "{\"Process\":{}}");
}

static void test_resources_document(void **state)
{
	(void)state;
	refused(HEZO_SPEC_DOC_RESOURCES,
		"{\"Memory\":{\"limit\":8589934592,\"swap\":-1},\"Pids\":{\"limit\":-1},"
		"\"CPU\":{\"quota\":-1}}",
		"resources: \"Memory\": differs from the spec's field \"memory\" only in case "
		"(runc would read it as \"memory\")");
	refused(HEZO_SPEC_DOC_RESOURCES, "{\"memory\":{\"limit\":1},\"Pids\":{\"limit\":-1}}",
		"resources: \"Pids\": differs from the spec's field \"pids\" only in case (runc "
		"would read it as \"pids\")");
	refused(HEZO_SPEC_DOC_RESOURCES, "{\"cpu\":{\"Quota\":-1}}",
		"resources: cpu.\"Quota\": differs from the spec's field \"quota\" only in case "
		"(runc would read it as \"quota\")");
	accepted(HEZO_SPEC_DOC_RESOURCES,
		 "{\"memory\":{\"limit\":1},\"pids\":{\"limit\":10},\"cpu\":{\"quota\":1000}}");
}

static void test_maps_are_data(void **state)
{
	(void)state;
	/* Go decodes these into map[string]...: their keys are matched exactly. */
	accepted(
		HEZO_SPEC_DOC_CONFIG,
		"{\"annotations\":{\"Process\":\"a\",\"process\":\"b\",\"PROCESS\":\"c\"},"
		"\"linux\":{\"sysctl\":{\"Net.IPv4.ip_forward\":\"1\",\"net.ipv4.ip_forward\":"
		"\"0\"},\"resources\":{\"unified\":{\"Memory.max\":\"1\",\"memory.max\":\"2\"}}}}");
	/* A map whose values are structs: the values' keys are field names again. */
	accepted(
		HEZO_SPEC_DOC_CONFIG,
		"{\"linux\":{\"resources\":{\"rdma\":{\"MLX5\":{\"hcaHandles\":1},\"mlx5\":{}}}}}");
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"linux\":{\"resources\":{\"rdma\":{\"mlx5_0\":{\"HcaHandles\":1}}}}}",
		"config.json: linux.resources.rdma[\"mlx5_0\"].\"HcaHandles\": differs from the "
		"spec's field \"hcaHandles\" only in case (runc would read it as \"hcaHandles\")");
	refused(HEZO_SPEC_DOC_CONFIG, "{\"linux\":{\"timeOffsets\":{\"monotonic\":{\"Secs\":1}}}}",
		"config.json: linux.timeOffsets[\"monotonic\"].\"Secs\": differs from the spec's "
		"field \"secs\" only in case (runc would read it as \"secs\")");
	/* The map field's own name is a field name. */
	refused(HEZO_SPEC_DOC_CONFIG, "{\"Annotations\":{}}",
		"config.json: \"Annotations\": differs from the spec's field \"annotations\" only "
		"in case (runc would read it as \"annotations\")");
	/* interface{}: Go keeps the keys as they are. */
	accepted(HEZO_SPEC_DOC_CONFIG,
		 "{\"windows\":{\"credentialSpec\":{\"Process\":1,\"a\":2}}}");
}

static void test_fold_duplicates(void **state)
{
	(void)state;
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"process\":{\"user\":{\"uid\":0,\"x-tag\":1,\"X-TAG\":2}}}",
		"config.json: process.user: keys \"x-tag\" and \"X-TAG\" differ only in case "
		"(runc would read them as one)");
	refused(HEZO_SPEC_DOC_CONFIG, "{\"a\\u017f\":1,\"AS\":2}",
		"config.json: keys \"a\\xc5\\xbf\" and \"AS\" differ only in case (runc would read "
		"them as one)");
	accepted(HEZO_SPEC_DOC_CONFIG, "{\"x-a\":1,\"x-b\":2,\"process\":{}}");
}

static void test_unknown_subtrees_skipped(void **state)
{
	(void)state;
	/* Go skips a key that names no field, and everything under it. */
	accepted(HEZO_SPEC_DOC_CONFIG, "{\"x-extension\":{\"Process\":{\"Capabilities\":1}}}");
	/* Values of the wrong type fail runc's decode; nothing under them is read. */
	accepted(HEZO_SPEC_DOC_CONFIG, "{\"process\":\"sh\",\"mounts\":{\"Source\":1}}");
	/* Arrays of strings hold no keys Go reads. */
	accepted(HEZO_SPEC_DOC_CONFIG, "{\"process\":{\"args\":[{\"Process\":1}]}}");
}

static void test_message_is_one_line(void **state)
{
	(void)state;
	refused(HEZO_SPEC_DOC_CONFIG,
		"{\"linux\":{\"rdma\":{}, "
		"\"resources\":{\"rdma\":{\"a\\nb\\\"\":{\"HCAHANDLES\":1}}}}}",
		"config.json: linux.resources.rdma[\"a\\x0ab\\\"\"].\"HCAHANDLES\": differs from "
		"the spec's field \"hcaHandles\" only in case (runc would read it as "
		"\"hcaHandles\")");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_captured_documents),
		cmocka_unit_test(test_capitalised_top_level),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_unicode_folds),
		cmocka_unit_test(test_process_document),
		cmocka_unit_test(test_resources_document),
		cmocka_unit_test(test_maps_are_data),
		cmocka_unit_test(test_fold_duplicates),
		cmocka_unit_test(test_unknown_subtrees_skipped),
		cmocka_unit_test(test_message_is_one_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for policy/: parsing every key and every kind of error, project layering and the
 * annotations a workload may (and may not) use. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hezo-policy.h"
#include "test-policy.h"

#define NAME "/etc/hezo/policy.json"

struct hezo_policy *parse_ok(const char *json)
{
	struct hezo_policy *p = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_policy_parse(json, strlen(json), NAME, &p, &err);

	if (r < 0)
		print_error("unexpected error for %s: %s\n", json, err ? err->msg : "(none)");
	assert_int_equal(r, 0);
	assert_non_null(p);
	return p;
}

static void parse_fails(const char *json, const char *want)
{
	struct hezo_policy *p = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_policy_parse(json, strlen(json), NAME, &p, &err);

	if (r == 0)
		print_error("accepted: %s\n", json);
	assert_true(r < 0);
	assert_null(p);
	assert_non_null(err);
	assert_non_null(err->msg);
	if (strncmp(err->msg, "policy " NAME ": ", strlen("policy " NAME ": ")) != 0 ||
	    !strstr(err->msg, want))
		print_error("for %s\n  got:  %s\n  want: %s\n", json, err->msg, want);
	assert_true(strncmp(err->msg, "policy " NAME ": ", strlen("policy " NAME ": ")) == 0);
	assert_non_null(strstr(err->msg, want));
}

char *json_text(const struct hezo_json *v)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	char *out = NULL;

	assert_non_null(v);
	assert_int_equal(hezo_json_dump(v, false, &out, NULL, &err), 0);
	return out;
}

/* The effective policy's value at dotted path, as compact JSON text. */
char *policy_value(const struct hezo_policy *p, const char *path)
{
	_cleanup_json_ struct hezo_json *j = hezo_policy_to_json(p);
	struct hezo_json *v;

	assert_non_null(j);
	v = hezo_json_get_path(j, path);
	if (!v)
		print_error("no %s in effective policy\n", path);
	assert_non_null(v);
	return json_text(v);
}

void assert_value(const struct hezo_policy *p, const char *path, const char *want)
{
	_cleanup_free_ char *got = policy_value(p, path);

	if (strcmp(got, want) != 0)
		print_error("%s: got %s, want %s\n", path, got, want);
	assert_string_equal(got, want);
}

static void test_defaults(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	const char *const *args;

	assert_true(hezo_policy_production(p));
	assert_int_equal(hezo_policy_backend(p), HEZO_BACKEND_RUNSC);
	assert_string_equal(hezo_policy_backend_path(p, HEZO_BACKEND_RUNSC), "/usr/bin/runsc");
	assert_string_equal(hezo_policy_backend_path(p, HEZO_BACKEND_RUNC), "/usr/sbin/runc");
	assert_string_equal(hezo_policy_backend_path(p, HEZO_BACKEND_CRUN), "/usr/bin/crun");
	args = hezo_policy_backend_args(p, HEZO_BACKEND_RUNC);
	assert_non_null(args);
	assert_null(args[0]);
	assert_int_equal(hezo_policy_runsc_network(p), HEZO_RUNSC_NET_HOST);
	assert_int_equal(hezo_policy_runsc_pids_headroom(p), 0);
	assert_null(hezo_policy_project(p));
	assert_int_equal(hezo_policy_egress_mode(p), HEZO_EGRESS_PROXY);
	assert_false(hezo_policy_cap_allowed(p, "CAP_CHOWN"));
	assert_value(p, "capabilities", "[]");
	assert_value(p, "noNewPrivileges", "true");
	assert_value(p, "readonlyRootfs", "true");
	assert_value(p, "tmpfs",
		     "{\"/tmp\":67108864,\"/run\":16777216,\"/var/run\":16777216,"
		     "\"/var/tmp\":16777216}");
	assert_value(p, "resources", "{\"pids\":256,\"memory\":2147483648,\"swap\":0,\"cpus\":2}");
	assert_value(p, "seccomp", "\"default\"");
	assert_value(p, "namespaces", "{\"allowHost\":[],\"requireUser\":false}");
	assert_value(p, "egress",
		     "{\"mode\":\"proxy\",\"allow\":[],\"resolvers\":[],\"allowRanges\":[]}");
	assert_value(p, "projectsDir", "\"/etc/hezo/projects\"");
	assert_value(p, "dockerPidFile", "\"/var/run/docker.pid\"");
	assert_value(p, "cgroupParents",
		     "[\"/\",\"/docker\",\"/system.slice\",\"/machine.slice\",\"/libpod_parent\","
		     "\"/kubepods\",\"/kubepods.slice\",\"/default\",\"/k8s.io\"]");
	assert_value(p, "allowedHooks", "[]");
	assert_value(p, "mounts.engineRoots",
		     "[\"/var/lib/docker/containers\",\"/var/lib/containers/storage\","
		     "\"/run/containers/storage\",\"/var/run/containers/storage\","
		     "\"/var/lib/containerd\",\"/run/containerd\"]");
}

/* etc/policy.json, the shipped file, states exactly the built-in defaults. */
static void test_shipped_file_is_defaults(void **state)
{
	_cleanup_free_ char *path = NULL, *a = NULL, *b = NULL;
	_cleanup_policy_ struct hezo_policy *file = NULL;
	_cleanup_policy_ struct hezo_policy *empty = parse_ok("{}");
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *ja = NULL, *jb = NULL;

	assert_true(asprintf(&path, "%s/etc/policy.json", test_source_root()) > 0);
	assert_int_equal(hezo_policy_load(path, &file, &err), 0);
	ja = hezo_policy_to_json(file);
	jb = hezo_policy_to_json(empty);
	a = json_text(ja);
	b = json_text(jb);
	assert_string_equal(a, b);
}

static void test_every_key(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok(
		"{\"version\":1,\"mode\":\"dev\",\"backend\":\"runc\","
		"\"allowBackends\":[\"runc\",\"runsc\",\"crun\"],"
		"\"backends\":{\"runsc\":{\"path\":\"/opt/runsc\",\"network\":\"none\","
		"\"pidsHeadroom\":64,\"args\":[\"--debug\"]},"
		"\"runc\":{\"path\":\"/opt//runc/\",\"args\":[\"--systemd-cgroup\",\"--x\"]},"
		"\"crun\":{\"path\":\"/opt/crun\",\"args\":[]}},"
		"\"capabilities\":[\"net_bind_service\",\"CAP_chown\",\"CAP_NET_BIND_SERVICE\"],"
		"\"noNewPrivileges\":false,\"readonlyRootfs\":false,"
		"\"tmpfs\":{\"/scratch/\":\"1g\",\"/tmp\":\"512k\",\"/data\":4096,\"/x\":\"2G\"},"
		"\"resources\":{\"pids\":100,\"memory\":\"64m\",\"swap\":\"1m\",\"cpus\":0.5},"
		"\"seccomp\":\"/etc/hezo/seccomp.json\",\"devices\":[\"/dev/fuse\"],"
		"\"mounts\":{\"allowedSources\":[\"/srv/hezo\"],\"engineRoots\":[\"/e\"],"
		"\"kubeletRoot\":\"/k//l/\"},"
		"\"namespaces\":{\"allowHost\":[\"network\",\"pid\"],\"requireUser\":true},"
		"\"egress\":{\"mode\":\"deny\",\"allow\":[\"Example.COM\",\"*.example.org:8443\","
		"\"10.0.0.0/8:5432\",\"192.0.2.1\",\"192.0.2.2:22\",\"2001:db8::1\","
		"\"[2001:db8::2]:443\",\"2001:db8::/32:443\"],"
		"\"resolvers\":[\"127.0.0.1\",\"127.0.0.1:5353\",\"::1\",\"[::1]:53\"],"
		"\"allowRanges\":[\"10.0.0.0/8\",\"fd00::/8\"]},"
		"\"projectsDir\":\"/srv/projects\"}");
	const char *const *args;

	assert_false(hezo_policy_production(p));
	assert_int_equal(hezo_policy_backend(p), HEZO_BACKEND_RUNC);
	assert_string_equal(hezo_policy_backend_path(p, HEZO_BACKEND_RUNC), "/opt/runc");
	args = hezo_policy_backend_args(p, HEZO_BACKEND_RUNC);
	assert_string_equal(args[0], "--systemd-cgroup");
	assert_string_equal(args[1], "--x");
	assert_null(args[2]);
	assert_int_equal(hezo_policy_runsc_network(p), HEZO_RUNSC_NET_NONE);
	assert_int_equal(hezo_policy_runsc_pids_headroom(p), 64);
	assert_int_equal(hezo_policy_egress_mode(p), HEZO_EGRESS_DENY);
	assert_true(hezo_policy_cap_allowed(p, "CAP_CHOWN"));
	assert_true(hezo_policy_cap_allowed(p, "net_bind_service"));
	assert_false(hezo_policy_cap_allowed(p, "CAP_SYS_ADMIN"));
	assert_false(hezo_policy_cap_allowed(p, "bogus"));
	assert_value(p, "allowBackends", "[\"runsc\",\"runc\",\"crun\"]");
	assert_value(p, "capabilities", "[\"CAP_NET_BIND_SERVICE\",\"CAP_CHOWN\"]");
	assert_value(p, "noNewPrivileges", "false");
	assert_value(p, "readonlyRootfs", "false");
	assert_value(p, "tmpfs",
		     "{\"/scratch\":1073741824,\"/tmp\":524288,\"/data\":4096,\"/x\":2147483648}");
	assert_value(p, "resources",
		     "{\"pids\":100,\"memory\":67108864,\"swap\":1048576,"
		     "\"cpus\":0.5}");
	assert_value(p, "seccomp", "\"/etc/hezo/seccomp.json\"");
	assert_value(p, "devices", "[\"/dev/fuse\"]");
	assert_value(p, "mounts",
		     "{\"allowedSources\":[\"/srv/hezo\"],\"engineRoots\":[\"/e\"],"
		     "\"kubeletRoot\":\"/k/l\"}");
	assert_value(p, "namespaces", "{\"allowHost\":[\"pid\",\"network\"],\"requireUser\":true}");
	assert_value(
		p, "egress.allow",
		"[\"example.com\",\"*.example.org:8443\",\"10.0.0.0/8:5432\",\"192.0.2.1\","
		"\"192.0.2.2:22\",\"2001:db8::1\",\"[2001:db8::2]:443\",\"2001:db8::/32:443\"]");
	assert_value(p, "egress.resolvers",
		     "[\"127.0.0.1\",\"127.0.0.1:5353\",\"::1\",\"[::1]:53\"]");
	assert_value(p, "egress.allowRanges", "[\"10.0.0.0/8\",\"fd00::/8\"]");
	assert_value(p, "projectsDir", "\"/srv/projects\"");
	assert_value(p, "backends.runsc",
		     "{\"path\":\"/opt/runsc\",\"network\":\"none\","
		     "\"pidsHeadroom\":64,\"args\":[\"--debug\"]}");
}

static void test_to_json_round_trip(void **state)
{
	_cleanup_policy_ struct hezo_policy *p =
		parse_ok("{\"mode\":\"dev\",\"resources\":{\"cpus\":1.25,\"memory\":\"3g\"},"
			 "\"capabilities\":[\"CAP_KILL\"],\"egress\":{\"allow\":[\"a.example\"]}}");
	_cleanup_policy_ struct hezo_policy *q = NULL;
	_cleanup_json_ struct hezo_json *j = hezo_policy_to_json(p), *k = NULL;
	_cleanup_free_ char *a = json_text(j), *b = NULL;

	q = parse_ok(a);
	k = hezo_policy_to_json(q);
	b = json_text(k);
	assert_string_equal(a, b);
	assert_value(q, "resources.cpus", "1.25");
}

static void test_sizes(void **state)
{
	static const struct {
		const char *in;
		const char *out;
	} cases[] = {
		{"\"64m\"", "67108864"}, {"\"2g\"", "2147483648"}, {"67108864", "67108864"},
		{"\"1k\"", "1024"},	 {"\"2G\"", "2147483648"}, {"\"4096\"", "4096"},
		{"\"16M\"", "16777216"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char doc[128];
		snprintf(doc, sizeof(doc), "{\"resources\":{\"memory\":%s}}", cases[i].in);
		_cleanup_policy_ struct hezo_policy *p = parse_ok(doc);
		assert_value(p, "resources.memory", cases[i].out);
	}
}

static const struct {
	const char *json;
	const char *want;
} parse_errors[] = {
	/* documents */
	{"", "policy " NAME ": "},
	{"{", "policy " NAME ": "},
	{"[]", "expected a JSON object, got array"},
	{"{\"bogus\":1}", "unknown key \"bogus\""},
	{"{\"cgroupParents\":[\"docker\"]}",
	 "cgroupParents[0]: \"docker\" is not an absolute path without \"..\""},
	{"{\"cgroupParents\":\"/docker\"}", "cgroupParents: expected"},
	{"{\"allowedHooks\":[\"/a/../b\"]}",
	 "allowedHooks[0]: \"/a/../b\" is not an absolute path"},
	{"{\"allowedHooks\":[1]}", "allowedHooks[0]: expected"},
	{"{\"Version\":1}", "unknown key \"Version\""},
	{"{\"version\":2}", "version: 2 is not a supported version"},
	{"{\"version\":\"1\"}", "version: \"1\" is not a supported version"},
	{"{\"mode\":\"prod\"}", "mode: \"prod\" is not production or dev"},
	{"{\"mode\":1}", "mode: expected a string, got number"},
	/* backends */
	{"{\"backend\":\"docker\"}", "backend: \"docker\" is not a backend"},
	{"{\"backend\":\"runc\"}", "backend: runc is not in allowBackends"},
	{"{\"allowBackends\":[\"runsc\",\"runc\"],\"backend\":\"runc\"}",
	 "backend: runc is not allowed in production mode"},
	{"{\"allowBackends\":[\"runsc\",\"runc\"]}",
	 "allowBackends: runc is not allowed in production mode"},
	{"{\"mode\":\"dev\",\"allowBackends\":[\"runsc\",\"kata\"]}",
	 "allowBackends[1]: \"kata\" is not a backend"},
	{"{\"allowBackends\":\"runsc\"}", "allowBackends: expected a list, got string"},
	{"{\"backends\":{\"kata\":{}}}", "backends: unknown key \"kata\""},
	{"{\"backends\":{\"runc\":{\"network\":\"host\"}}}",
	 "backends.runc: unknown key \"network\""},
	{"{\"backends\":{\"runc\":{\"path\":\"runc\"}}}",
	 "backends.runc.path: \"runc\" is not an absolute path"},
	{"{\"backends\":{\"runc\":{\"path\":\"/usr/../bin/runc\"}}}", "backends.runc.path:"},
	{"{\"backends\":{\"runc\":{\"args\":[1]}}}",
	 "backends.runc.args[0]: expected a string, got number"},
	{"{\"backends\":{\"runsc\":{\"network\":\"bridge\"}}}",
	 "backends.runsc.network: \"bridge\" is not host, none or sandbox"},
	{"{\"backends\":{\"runsc\":{\"network\":\"sandbox\"}}}",
	 "backends.runsc.network: \"sandbox\" hides traffic"},
	{"{\"backends\":{\"runsc\":{\"pidsHeadroom\":-1}}}",
	 "backends.runsc.pidsHeadroom: -1 is not a whole number"},
	/* capabilities */
	{"{\"capabilities\":[\"CAP_FLY\"]}", "capabilities[0]: \"CAP_FLY\" is not a capability"},
	{"{\"capabilities\":[\"CAP_CHOWN\",\"12\"]}",
	 "capabilities[1]: \"12\" is not a capability"},
	{"{\"capabilities\":[\"\"]}", "capabilities[0]: \"\" is not a capability"},
	{"{\"capabilities\":\"CAP_CHOWN\"}", "capabilities: expected a list, got string"},
	/* File capabilities and device nodes a box would leave on the host (red team ws3, F2). */
	{"{\"capabilities\":[\"CAP_CHOWN\",\"setfcap\"]}",
	 "capabilities[1]: CAP_SETFCAP is never granted: a box would write file capabilities"},
	{"{\"capabilities\":[\"CAP_MKNOD\"]}", "capabilities[0]: CAP_MKNOD is never granted"},
	{"{\"noNewPrivileges\":\"yes\"}", "noNewPrivileges: expected true or false, got string"},
	{"{\"readonlyRootfs\":1}", "readonlyRootfs: expected true or false, got number"},
	/* tmpfs and sizes */
	{"{\"tmpfs\":{\"tmp\":\"64m\"}}", "tmpfs[\"tmp\"]: \"tmp\" is not an absolute path"},
	{"{\"tmpfs\":{\"/tmp/../etc\":\"64m\"}}", "tmpfs[\"/tmp/../etc\"]:"},
	{"{\"tmpfs\":{\"/proc/x\":\"64m\"}}", "a tmpfs cannot be mounted over /proc/x"},
	{"{\"tmpfs\":{\"/dev\":\"64m\"}}", "a tmpfs cannot be mounted over /dev"},
	{"{\"tmpfs\":{\"/tmp\":\"64m\",\"/tmp/\":\"1m\"}}", "/tmp is listed twice"},
	{"{\"tmpfs\":{\"/tmp\":\"64 MB\"}}", "tmpfs[\"/tmp\"]: \"64 MB\" is not a size"},
	{"{\"tmpfs\":{\"/tmp\":0}}", "tmpfs[\"/tmp\"]: 0: must be more than 0"},
	{"{\"tmpfs\":[\"/tmp\"]}", "tmpfs: expected an object, got array"},
	{"{\"resources\":{\"memory\":\"2 GB\"}}", "resources.memory: \"2 GB\" is not a size"},
	{"{\"resources\":{\"memory\":\"2gb\"}}", "resources.memory: \"2gb\" is not a size"},
	{"{\"resources\":{\"memory\":\"\"}}", "resources.memory: \"\" is not a size"},
	{"{\"resources\":{\"memory\":-5}}", "resources.memory: -5 is not a size"},
	{"{\"resources\":{\"memory\":1.5}}", "resources.memory: 1.5 is not a size"},
	{"{\"resources\":{\"memory\":\"99999999999999999999\"}}", "resources.memory:"},
	{"{\"resources\":{\"memory\":\"17179869184g\"}}", "is not a size"},
	{"{\"resources\":{\"memory\":true}}", "resources.memory: boolean is not a size"},
	{"{\"resources\":{\"memory\":0}}", "resources.memory: 0: must be more than 0"},
	{"{\"resources\":{\"swap\":\"lots\"}}", "resources.swap: \"lots\" is not a size"},
	{"{\"resources\":{\"pids\":0}}", "resources.pids: 0: must be more than 0"},
	{"{\"resources\":{\"pids\":\"100\"}}", "resources.pids: \"100\" is not a whole number"},
	{"{\"resources\":{\"cpus\":\"2\"}}", "resources.cpus: \"2\" is not a CPU count"},
	{"{\"resources\":{\"cpus\":0}}", "resources.cpus: 0 is not a CPU count"},
	{"{\"resources\":{\"cpus\":1.2345}}", "resources.cpus: 1.2345 is not a CPU count"},
	{"{\"resources\":{\"cpus\":-1}}", "resources.cpus: -1 is not a CPU count"},
	{"{\"resources\":{\"cpus\":1e3}}", "resources.cpus: 1e3 is not a CPU count"},
	{"{\"resources\":{\"cpu\":1}}", "resources: unknown key \"cpu\""},
	/* seccomp, devices, mounts, namespaces */
	{"{\"seccomp\":\"strict\"}", "seccomp: \"strict\" is neither \"default\" nor an absolute"},
	{"{\"seccomp\":null}", "seccomp: expected a string, got null"},
	{"{\"devices\":[\"dev/fuse\"]}", "devices[0]: \"dev/fuse\" is not an absolute path"},
	{"{\"mounts\":{\"allowedSources\":[\"srv\"]}}",
	 "mounts.allowedSources[0]: \"srv\" is not an absolute path"},
	{"{\"mounts\":{\"engineRoots\":[\"/a/../b\"]}}", "mounts.engineRoots[0]:"},
	{"{\"mounts\":{\"allowed\":[]}}", "mounts: unknown key \"allowed\""},
	{"{\"namespaces\":{\"allowHost\":[\"mount\"]}}",
	 "namespaces.allowHost[0]: \"mount\" cannot be shared with the host"},
	{"{\"namespaces\":{\"allowHost\":[\"user\"]}}", "namespaces.allowHost[0]: \"user\""},
	{"{\"namespaces\":{\"requireUser\":\"yes\"}}", "namespaces.requireUser: expected true"},
	{"{\"namespaces\":{\"user\":true}}", "namespaces: unknown key \"user\""},
	/* egress */
	{"{\"egress\":{\"mode\":\"allow\"}}", "egress.mode: \"allow\" is not proxy, deny or off"},
	{"{\"egress\":{\"allow\":[\"exa mple.com\"]}}", "egress.allow[0]: \"exa mple.com\" is not"},
	{"{\"egress\":{\"allow\":[\"ok.example\",\"10.0.0.0/33\"]}}",
	 "egress.allow[1]: \"10.0.0.0/33\" is not"},
	{"{\"egress\":{\"allow\":[\"10.0.0.1/8\"]}}", "egress.allow[0]: \"10.0.0.1/8\""},
	{"{\"egress\":{\"allow\":[\"example.com:99999\"]}}", "egress.allow[0]:"},
	{"{\"egress\":{\"allow\":[\"example.com:0\"]}}", "egress.allow[0]:"},
	{"{\"egress\":{\"allow\":[\"*.\"]}}", "egress.allow[0]:"},
	{"{\"egress\":{\"allow\":[\"a.*.example\"]}}", "egress.allow[0]:"},
	{"{\"egress\":{\"allow\":[\"300.1.1.1\"]}}", "egress.allow[0]: \"300.1.1.1\""},
	{"{\"egress\":{\"allow\":[\"-bad.example\"]}}", "egress.allow[0]:"},
	{"{\"egress\":{\"allow\":[\"http://example.com\"]}}", "egress.allow[0]:"},
	{"{\"egress\":{\"allow\":[\"\"]}}", "egress.allow[0]:"},
	{"{\"egress\":{\"resolvers\":[\"dns.example\"]}}",
	 "egress.resolvers[0]: \"dns.example\" is not an IP address or IP:port"},
	{"{\"egress\":{\"resolvers\":[\"1.1.1.1:\"]}}", "egress.resolvers[0]:"},
	{"{\"egress\":{\"resolvers\":[\"::1:53\"]}}", NULL},
	{"{\"egress\":{\"allowRanges\":[\"10.0.0.0\"]}}",
	 "egress.allowRanges[0]: \"10.0.0.0\" is not a CIDR"},
	{"{\"egress\":{\"allowRanges\":[\"192.168.1.1/16\"]}}", "egress.allowRanges[0]:"},
	{"{\"egress\":{\"allowRanges\":[\"fd00::/129\"]}}", "egress.allowRanges[0]:"},
	{"{\"egress\":{\"proxy\":\"x\"}}", "egress: unknown key \"proxy\""},
	{"{\"projectsDir\":\"projects\"}", "projectsDir: \"projects\" is not an absolute path"},
	{"{\"dockerPidFile\":\"docker.pid\"}",
	 "dockerPidFile: \"docker.pid\" is not an absolute path"},
	/* a hostile value is quoted, never printed raw */
	{"{\"mode\":\"a\\nb\\u0001\"}", "mode: \"a\\nb\\u0001\" is not production or dev"},
};

static void test_parse_errors(void **state)
{
	for (size_t i = 0; i < sizeof(parse_errors) / sizeof(parse_errors[0]); i++) {
		if (parse_errors[i].want) {
			parse_fails(parse_errors[i].json, parse_errors[i].want);
		} else {
			/* "::1:53" is an IPv6 address, not ::1 port 53: accepted as such. */
			_cleanup_policy_ struct hezo_policy *p = parse_ok(parse_errors[i].json);
			assert_non_null(p);
		}
	}
}

static void test_load_errors(void **state)
{
	_cleanup_free_ char *dir = make_tempdir(), *path = NULL, *prof = NULL;
	struct hezo_policy *p = NULL;
	struct hezo_error *err = NULL;

	assert_true(asprintf(&path, "%s/policy.json", dir) > 0);
	assert_int_equal(hezo_policy_load(path, &p, &err), -ENOENT);
	assert_non_null(strstr(err->msg, path));
	assert_true(strncmp(err->msg, "policy ", 7) == 0);
	hezo_error_free(TAKE_PTR(err));

	write_file(path, "{\"resources\":{\"memory\":\"2 GB\"}}");
	assert_true(hezo_policy_load(path, &p, &err) < 0);
	assert_true(strstr(err->msg, "resources.memory: \"2 GB\" is not a size") != NULL);
	assert_true(strstr(err->msg, path) != NULL);
	hezo_error_free(TAKE_PTR(err));

	/* A seccomp path is read at load: missing, then malformed, then fine. */
	assert_true(asprintf(&prof, "%s/seccomp.json", dir) > 0);
	{
		_cleanup_free_ char *doc = NULL;
		assert_true(asprintf(&doc, "{\"seccomp\":\"%s\"}", prof) > 0);
		write_file(path, doc);
	}
	assert_int_equal(hezo_policy_load(path, &p, &err), -ENOENT);
	assert_non_null(strstr(err->msg, prof));
	assert_non_null(strstr(err->msg, ": seccomp: "));
	hezo_error_free(TAKE_PTR(err));

	write_file(prof, "{\"defaultAction\":\"SCMP_ACT_MAYBE\"}");
	assert_true(hezo_policy_load(path, &p, &err) < 0);
	assert_non_null(strstr(err->msg, "defaultAction: \"SCMP_ACT_MAYBE\" is not known"));
	hezo_error_free(TAKE_PTR(err));

	write_file(prof,
		   "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],"
		   "\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":9,\"op\":"
		   "\"SCMP_CMP_EQ\"}]}]}");
	assert_true(hezo_policy_load(path, &p, &err) < 0);
	assert_non_null(strstr(err->msg, "syscalls[0].args[0].index"));
	hezo_error_free(TAKE_PTR(err));

	write_file(prof, "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"archMap\":[]}");
	assert_true(hezo_policy_load(path, &p, &err) < 0);
	assert_non_null(strstr(err->msg, "archMap: unknown key"));
	hezo_error_free(TAKE_PTR(err));

	write_file(prof, "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":"
			 "[\"SCMP_ARCH_X86_64\"],\"syscalls\":[{\"names\":[\"read\","
			 "\"no_such_syscall\"],\"action\":\"SCMP_ACT_ALLOW\"},{\"names\":"
			 "[\"another_unknown\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
	assert_int_equal(hezo_policy_load(path, &p, &err), 0);
	{
		/* Installed as read, less the names no listed architecture knows. */
		_cleanup_json_ struct hezo_json *spec = minimal_spec();
		_cleanup_free_ char *got = NULL;
		assert_int_equal(hezo_policy_apply_spec(p, spec, NULL, &err), 0);
		got = json_text(hezo_json_get_path(spec, "linux.seccomp"));
		assert_string_equal(got,
				    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":"
				    "[\"SCMP_ARCH_X86_64\"],\"syscalls\":[{\"names\":[\"read\"],"
				    "\"action\":\"SCMP_ACT_ALLOW\"}]}");
	}
	hezo_policy_free(p);
	remove_tree(dir);
}

/* ---- projects and annotations ---- */

struct projfix {
	char *dir;
	struct hezo_policy *base;
};

static int proj_setup(void **state)
{
	struct projfix *f = calloc(1, sizeof(*f));
	_cleanup_free_ char *doc = NULL, *pdir = NULL;

	f->dir = make_tempdir();
	assert_true(asprintf(&pdir, "%s/projects", f->dir) > 0);
	assert_int_equal(mkdir(pdir, 0755), 0);
	assert_true(asprintf(&doc,
			     "{\"mode\":\"dev\",\"allowBackends\":[\"runsc\",\"runc\"],"
			     "\"resources\":{\"memory\":\"2g\",\"pids\":256,\"cpus\":2},"
			     "\"egress\":{\"allow\":[\"a.example\",\"b.example:8443\"]},"
			     "\"projectsDir\":\"%s\"}",
			     pdir) > 0);
	f->base = parse_ok(doc);
	write_file_at(pdir, "web.json",
		      "{\"resources\":{\"memory\":\"4g\"},\"tmpfs\":{\"/tmp\":\"1g\"},"
		      "\"capabilities\":[\"CAP_NET_BIND_SERVICE\"],"
		      "\"egress\":{\"allow\":[\"pypi.org\",\"*.pythonhosted.org\"]}}");
	write_file_at(pdir, "batch.json", "{\"backend\":\"runc\"}");
	write_file_at(pdir, "kube-ns.json", "{\"resources\":{\"pids\":64}}");
	write_file_at(pdir, "hint.json", "{\"resources\":{\"pids\":32}}");
	write_file_at(pdir, "sneaky.json", "{\"mode\":\"dev\"}");
	write_file_at(pdir, "typo.json", "{\"resources\":{\"memroy\":\"1g\"}}");
	write_file_at(pdir, "prodbreak.json", "{\"allowBackends\":[\"runc\"]}");
	write_file_at(pdir, "notjson.json", "{");
	*state = f;
	return 0;
}

static int proj_teardown(void **state)
{
	struct projfix *f = *state;

	remove_tree(f->dir);
	free(f->dir);
	hezo_policy_free(f->base);
	free(f);
	return 0;
}

static struct hezo_json *annotations(const char *json)
{
	struct hezo_json *a = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_int_equal(hezo_json_parse(json, strlen(json), &a, &err), 0);
	return a;
}

static struct hezo_policy *for_container_ok(const struct hezo_policy *base, const char *annots,
					    const char *hint)
{
	_cleanup_json_ struct hezo_json *a = annots ? annotations(annots) : NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_policy *p = NULL;
	int r = hezo_policy_for_container(base, a, hint, &p, &err);

	if (r < 0)
		print_error("for_container(%s, %s): %s\n", annots ? annots : "-", hint ? hint : "-",
			    err ? err->msg : "?");
	assert_int_equal(r, 0);
	assert_non_null(p);
	return p;
}

static void for_container_fails(const struct hezo_policy *base, const char *annots,
				const char *hint, const char *want)
{
	_cleanup_json_ struct hezo_json *a = annots ? annotations(annots) : NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_policy *p = NULL;
	int r = hezo_policy_for_container(base, a, hint, &p, &err);

	if (r == 0 || !err || !strstr(err->msg, want))
		print_error("for_container(%s): got %s, want %s\n", annots ? annots : "-",
			    err ? err->msg : "success", want);
	assert_true(r < 0);
	assert_null(p);
	assert_non_null(strstr(err->msg, want));
}

static void test_project_layering(void **state)
{
	struct projfix *f = *state;
	_cleanup_policy_ struct hezo_policy *p =
		for_container_ok(f->base, "{\"org.hezo.project\":\"web\"}", NULL);
	_cleanup_json_ struct hezo_json *eg = hezo_policy_egress_json(p);
	_cleanup_free_ char *egs = json_text(eg);

	assert_string_equal(hezo_policy_project(p), "web");
	/* Scalars replaced, objects merged key by key, lists replaced. */
	assert_value(p, "resources", "{\"pids\":256,\"memory\":4294967296,\"swap\":0,\"cpus\":2}");
	assert_value(p, "tmpfs",
		     "{\"/tmp\":1073741824,\"/run\":16777216,\"/var/run\":16777216,"
		     "\"/var/tmp\":16777216}");
	assert_value(p, "capabilities", "[\"CAP_NET_BIND_SERVICE\"]");
	assert_true(hezo_policy_cap_allowed(p, "CAP_NET_BIND_SERVICE"));
	assert_string_equal(egs,
			    "{\"mode\":\"proxy\",\"allow\":[\"pypi.org\",\"*.pythonhosted.org\"],"
			    "\"resolvers\":[],\"allowRanges\":[],\"project\":\"web\"}");
	assert_value(p, "project", "\"web\"");
	/* The base is untouched. */
	assert_value(f->base, "resources.memory", "2147483648");
	assert_null(hezo_policy_project(f->base));
}

static void test_project_selection(void **state)
{
	struct projfix *f = *state;
	struct hezo_policy *p;

	/* --hezo-project > Kubernetes namespace > annotation, which may only repeat the first two
	 */
	for_container_fails(f->base,
			    "{\"org.hezo.project\":\"web\","
			    "\"io.kubernetes.cri.sandbox-namespace\":\"kube-ns\"}",
			    "hint",
			    "annotation \"org.hezo.project\"=\"web\": this container's project is "
			    "\"hint\" (from --hezo-project); the annotation may repeat it, not "
			    "choose another");
	for_container_fails(f->base,
			    "{\"org.hezo.project\":\"web\","
			    "\"io.kubernetes.cri.sandbox-namespace\":\"kube-ns\"}",
			    NULL,
			    "this container's project is \"kube-ns\" (from annotation "
			    "\"io.kubernetes.cri.sandbox-namespace\")");
	p = for_container_ok(f->base, "{\"org.hezo.project\":\"hint\"}", "hint");
	assert_string_equal(hezo_policy_project(p), "hint");
	hezo_policy_free(p);
	p = for_container_ok(f->base,
			     "{\"org.hezo.project\":\"kube-ns\","
			     "\"io.kubernetes.cri.sandbox-namespace\":\"kube-ns\"}",
			     NULL);
	assert_string_equal(hezo_policy_project(p), "kube-ns");
	hezo_policy_free(p);
	p = for_container_ok(f->base, "{\"org.hezo.project\":\"web\"}", NULL);
	assert_string_equal(hezo_policy_project(p), "web");
	hezo_policy_free(p);
	/* CRI-O names the namespace with a key of its own (red team pass 5, F8). */
	for_container_fails(
		f->base,
		"{\"org.hezo.project\":\"web\",\"io.kubernetes.pod.namespace\":\"kube-ns\"}", NULL,
		"this container's project is \"kube-ns\" (from annotation "
		"\"io.kubernetes.pod.namespace\")");
	p = for_container_ok(f->base, "{\"io.kubernetes.pod.namespace\":\"kube-ns\"}", NULL);
	assert_string_equal(hezo_policy_project(p), "kube-ns");
	hezo_policy_free(p);
	for_container_fails(f->base,
			    "{\"io.kubernetes.cri.sandbox-namespace\":\"kube-ns\","
			    "\"io.kubernetes.pod.namespace\":\"web\"}",
			    NULL, "name two Kubernetes namespaces");
	p = for_container_ok(f->base, "{\"io.kubernetes.cri.sandbox-namespace\":\"kube-ns\"}",
			     "hint");
	assert_string_equal(hezo_policy_project(p), "hint");
	assert_value(p, "resources.pids", "32");
	hezo_policy_free(p);
	p = for_container_ok(f->base, "{\"io.kubernetes.cri.sandbox-namespace\":\"kube-ns\"}",
			     NULL);
	assert_string_equal(hezo_policy_project(p), "kube-ns");
	assert_value(p, "resources.pids", "64");
	hezo_policy_free(p);
	/* No project at all: the base as it is. */
	p = for_container_ok(f->base, "{\"com.example\":\"x\"}", NULL);
	assert_null(hezo_policy_project(p));
	{
		_cleanup_json_ struct hezo_json *a = hezo_policy_to_json(p);
		_cleanup_json_ struct hezo_json *b = hezo_policy_to_json(f->base);
		_cleanup_free_ char *sa = json_text(a), *sb = json_text(b);
		assert_string_equal(sa, sb);
	}
	hezo_policy_free(p);
	p = for_container_ok(f->base, NULL, NULL);
	assert_null(hezo_policy_project(p));
	hezo_policy_free(p);
	/* A Kubernetes namespace without a project file: the global box, exactly. */
	p = for_container_ok(f->base, "{\"io.kubernetes.cri.sandbox-namespace\":\"default\"}",
			     NULL);
	assert_null(hezo_policy_project(p));
	{
		_cleanup_json_ struct hezo_json *a = hezo_policy_to_json(p);
		_cleanup_json_ struct hezo_json *b = hezo_policy_to_json(f->base);
		_cleanup_free_ char *sa = json_text(a), *sb = json_text(b);
		assert_string_equal(sa, sb);
	}
	hezo_policy_free(p);
	/* A project may change the backend among allowBackends. */
	p = for_container_ok(f->base, NULL, "batch");
	assert_int_equal(hezo_policy_backend(p), HEZO_BACKEND_RUNC);
	hezo_policy_free(p);
}

static void test_project_refusals(void **state)
{
	struct projfix *f = *state;

	for_container_fails(f->base, "{\"org.hezo.project\":\"../../etc/passwd\"}", NULL,
			    "annotation \"org.hezo.project\": project name \"../../etc/passwd\" "
			    "is not");
	for_container_fails(f->base, NULL, "../x", "--hezo-project: project name \"../x\"");
	for_container_fails(f->base, "{\"io.kubernetes.cri.sandbox-namespace\":\"a/b\"}", NULL,
			    "project name \"a/b\"");
	for_container_fails(f->base, "{\"org.hezo.project\":\".hidden\"}", NULL, "\".hidden\"");
	for_container_fails(f->base, "{\"org.hezo.project\":\"Web\"}", NULL, "\"Web\"");
	for_container_fails(f->base, "{\"org.hezo.project\":\"\"}", NULL, "project name \"\"");
	for_container_fails(
		f->base,
		"{\"org.hezo.project\":"
		"\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
		NULL, "project name");
	for_container_fails(f->base, "{\"org.hezo.project\":\"nosuch\"}", NULL,
			    "project nosuch: no project file ");
	/* In a namespace, an annotation naming any other project is refused. */
	for_container_fails(f->base,
			    "{\"org.hezo.project\":\"nosuch\","
			    "\"io.kubernetes.cri.sandbox-namespace\":\"default\"}",
			    NULL, "this container's project is \"default\"");
	for_container_fails(f->base, NULL, "nosuch", "project nosuch: no project file ");
	/* A namespace's project file that is there but wrong is an error, not the global box. */
	for_container_fails(f->base, "{\"io.kubernetes.cri.sandbox-namespace\":\"typo\"}", NULL,
			    "typo.json: resources: unknown key \"memroy\"");
	for_container_fails(f->base, NULL, "sneaky", "sneaky.json: mode: only the main policy");
	/* Whoever may write projectsDir or a project file chooses its box (red team ws3, F3). */
	{
		_cleanup_free_ char *pdir = NULL, *web = NULL;

		assert_true(asprintf(&pdir, "%s/projects", f->dir) > 0);
		assert_true(asprintf(&web, "%s/web.json", pdir) > 0);
		assert_int_equal(chmod(pdir, 0777), 0);
		for_container_fails(f->base, NULL, "web",
				    "not root's, or writable by group or others");
		assert_int_equal(chmod(pdir, 0755), 0);
		assert_int_equal(chmod(web, 0666), 0);
		for_container_fails(
			f->base, NULL, "web",
			"web.json: not a regular file of root's that root alone may write");
		assert_int_equal(chmod(web, 0644), 0);
	}
	for_container_fails(f->base, NULL, "typo", "typo.json: resources: unknown key \"memroy\"");
	for_container_fails(f->base, NULL, "notjson", "policy ");
	for_container_fails(f->base, "{\"org.hezo.project\":5}", NULL,
			    "annotation \"org.hezo.project\": expected a string");
}

/* A project may narrow cgroupParents and allowedHooks, never widen them. */
static void test_project_narrows_paths(void **state)
{
	_cleanup_free_ char *dir = make_tempdir(), *doc = NULL;
	_cleanup_policy_ struct hezo_policy *base = NULL, *p = NULL;

	assert_true(asprintf(&doc,
			     "{\"projectsDir\":\"%s\",\"cgroupParents\":[\"/\",\"/docker\"],"
			     "\"allowedHooks\":[\"/usr/libexec/hook-a\",\"/usr/libexec/hook-b\"]}",
			     dir) > 0);
	base = parse_ok(doc);
	write_file_at(dir, "narrow.json",
		      "{\"cgroupParents\":[\"/docker/team\",\"/\"],"
		      "\"allowedHooks\":[\"/usr/libexec/hook-b\"]}");
	write_file_at(dir, "wide.json", "{\"cgroupParents\":[\"/user.slice\"]}");
	write_file_at(dir, "under.json", "{\"cgroupParents\":[\"/x\"]}");
	write_file_at(dir, "hook.json", "{\"allowedHooks\":[\"/bin/sh\"]}");
	p = for_container_ok(base, NULL, "narrow");
	assert_value(p, "cgroupParents", "[\"/docker/team\",\"/\"]");
	assert_value(p, "allowedHooks", "[\"/usr/libexec/hook-b\"]");
	for_container_fails(
		base, NULL, "wide",
		"wide.json: cgroupParents: /user.slice is not allowed by the main policy");
	/* "/" admits the top level alone, not every parent below it. */
	for_container_fails(base, NULL, "under", "under.json: cgroupParents: /x is not allowed");
	for_container_fails(base, NULL, "hook",
			    "hook.json: allowedHooks: /bin/sh is not in the main policy's list");
	remove_tree(dir);
}

static void test_project_production_rules(void **state)
{
	_cleanup_free_ char *dir = make_tempdir(), *doc = NULL;
	_cleanup_policy_ struct hezo_policy *base = NULL;

	assert_true(asprintf(&doc, "{\"projectsDir\":\"%s\"}", dir) > 0);
	base = parse_ok(doc);
	write_file_at(dir, "p.json", "{\"allowBackends\":[\"runsc\",\"runc\"]}");
	write_file_at(dir, "q.json", "{\"backend\":\"runc\"}");
	for_container_fails(base, NULL, "p", "p.json: allowBackends: runc is not allowed in prod");
	for_container_fails(base, NULL, "q", "q.json: backend: runc is not in allowBackends");
	remove_tree(dir);
}

static void test_annotations_tighten(void **state)
{
	struct projfix *f = *state;
	_cleanup_policy_ struct hezo_policy *p = for_container_ok(
		f->base,
		"{\"org.hezo.memory\":\"512m\",\"org.hezo.pids\":\"100\",\"org.hezo.cpus\":\"0.5\","
		"\"org.hezo.backend\":\"runc\",\"org.hezo.egress.allow\":\" B.example:8443 ,\","
		"\"com.example.other\":\"ignored\"}",
		NULL);

	assert_value(p, "resources", "{\"pids\":100,\"memory\":536870912,\"swap\":0,\"cpus\":0.5}");
	assert_int_equal(hezo_policy_backend(p), HEZO_BACKEND_RUNC);
	assert_value(p, "egress.allow", "[\"b.example:8443\"]");
	/* Equal to the ceiling is fine. */
	hezo_policy_free(for_container_ok(f->base, "{\"org.hezo.memory\":\"2g\"}", NULL));
	/* An empty allow list tightens to nothing. */
	{
		_cleanup_policy_ struct hezo_policy *q =
			for_container_ok(f->base, "{\"org.hezo.egress.allow\":\"\"}", NULL);
		assert_value(q, "egress.allow", "[]");
	}
}

static void test_annotations_hostile(void **state)
{
	struct projfix *f = *state;

	for_container_fails(f->base, "{\"org.hezo.memory\":\"8g\"}", NULL,
			    "annotation \"org.hezo.memory\"=\"8g\": above the policy's memory");
	for_container_fails(f->base, "{\"org.hezo.memory\":\"lots\"}", NULL,
			    "annotation \"org.hezo.memory\"=\"lots\": not a size");
	for_container_fails(f->base, "{\"org.hezo.memory\":\"0\"}", NULL, "not a size");
	for_container_fails(f->base, "{\"org.hezo.pids\":\"100000\"}", NULL,
			    "annotation \"org.hezo.pids\"=\"100000\": above the policy's pids");
	for_container_fails(f->base, "{\"org.hezo.pids\":\"-1\"}", NULL, "not a whole number");
	for_container_fails(f->base, "{\"org.hezo.pids\":\"1k\"}", NULL, "not a whole number");
	for_container_fails(f->base, "{\"org.hezo.cpus\":\"3\"}", NULL,
			    "annotation \"org.hezo.cpus\"=\"3\": above the policy's CPU");
	for_container_fails(f->base, "{\"org.hezo.cpus\":\"two\"}", NULL, "not a CPU count");
	for_container_fails(
		f->base, "{\"org.hezo.backend\":\"crun\"}", NULL,
		"annotation \"org.hezo.backend\"=\"crun\": backend not in allowBackends");
	for_container_fails(f->base, "{\"org.hezo.backend\":\"kata\"}", NULL, "not a backend");
	for_container_fails(f->base, "{\"org.hezo.x\":\"1\"}", NULL,
			    "annotation \"org.hezo.x\"=\"1\": unknown hezo annotation");
	for_container_fails(f->base, "{\"org.hezo.memory.max\":\"1m\"}", NULL,
			    "unknown hezo annotation");
	for_container_fails(f->base, "{\"org.hezo.egress.allow\":\"a.example,evil.example\"}", NULL,
			    "\"evil.example\" is not in the policy's egress.allow");
	for_container_fails(f->base, "{\"org.hezo.egress.allow\":\"*.example\"}", NULL,
			    "is not in the policy's egress.allow");
	for_container_fails(f->base, "{\"org.hezo.memory\":512}", NULL,
			    "annotation \"org.hezo.memory\": expected a string, got number");
	/* A project file does not make an annotation able to loosen. */
	for_container_fails(f->base, "{\"org.hezo.project\":\"web\",\"org.hezo.memory\":\"5g\"}",
			    NULL, "above the policy's memory ceiling 4294967296");
}

static void test_production_backend_annotation(void **state)
{
	_cleanup_policy_ struct hezo_policy *base = parse_ok("{}");

	for_container_fails(base, "{\"org.hezo.backend\":\"runc\"}", NULL,
			    "backend not in allowBackends");
}

/* policy check names every bad field in one pass, and only field errors stop the cross-field
 * rules (which would otherwise judge defaults). */
static void test_check_collects_every_error(void **state)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	const char *doc = "{\"version\":1,\"mode\":\"dev\",\"backend\":\"runc\","
			  "\"allowBackends\":[\"runc\"],"
			  "\"resources\":{\"memory\":\"2 GB\",\"pids\":-1,\"bogus\":1},"
			  "\"capabilities\":[\"CAP_NOPE\"],\"egress\":{\"mode\":\"sideways\"},"
			  "\"typo\":true}";
	static const char *const want[] = {
		"policy t.json: resources.memory: \"2 GB\" is not a size",
		"resources.pids:",
		"resources: unknown key \"bogus\"",
		"capabilities[0]:",
		"egress.mode:",
		"unknown key \"typo\"",
	};
	char **msgs = NULL;
	size_t n = 0;

	assert_true(hezo_policy_check(doc, strlen(doc), "t.json", &msgs, &n, &err) < 0);
	assert_int_equal(n, HEZO_ARRAY_SIZE(want));
	for (size_t i = 0; i < n; i++) {
		assert_non_null(strstr(msgs[i], want[i]));
		free(msgs[i]);
	}
	free(msgs);
	/* The first one is also the ordinary error. */
	assert_non_null(strstr(err->msg, want[0]));
	hezo_error_free(TAKE_PTR(err));

	/* A good file: nothing collected. */
	doc = "{\"version\":1,\"mode\":\"dev\",\"backend\":\"runc\",\"allowBackends\":[\"runc\"]}";
	assert_int_equal(hezo_policy_check(doc, strlen(doc), "t.json", &msgs, &n, &err), 0);
	assert_int_equal(n, 0);
	free(msgs);
	/* A cross-field rule is reported once the fields themselves are fine. */
	doc = "{\"version\":1,\"backend\":\"runc\"}";
	assert_true(hezo_policy_check(doc, strlen(doc), "t.json", &msgs, &n, &err) < 0);
	assert_int_equal(n, 1);
	assert_non_null(strstr(msgs[0], "backend: runc is not in allowBackends"));
	free(msgs[0]);
	free(msgs);
}

/* ---- init and admission (issue 18) ---- */

static void test_init_admission(void **state)
{
	_cleanup_policy_ struct hezo_policy *d = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *n =
		parse_ok("{\"init\":false,\"admission\":{\"maxActive\":5,\"wait\":0}}");
	_cleanup_policy_ struct hezo_policy *a =
		parse_ok("{\"admission\":{\"maxActive\":\"auto\",\"exempt\":true}}");
	struct hezo_admission adm;

	assert_true(hezo_policy_init(d));
	hezo_policy_admission(d, &adm);
	assert_int_equal(adm.max_active, 0);
	assert_false(adm.auto_size);
	assert_int_equal(adm.wait_sec, 300);
	assert_false(adm.exempt);
	assert_value(d, "admission", "{\"wait\":300,\"exempt\":false}");
	assert_value(d, "init", "true");

	assert_false(hezo_policy_init(n));
	hezo_policy_admission(n, &adm);
	assert_int_equal(adm.max_active, 5);
	assert_int_equal(adm.wait_sec, 0);
	assert_value(n, "admission", "{\"maxActive\":5,\"wait\":0,\"exempt\":false}");

	hezo_policy_admission(a, &adm);
	assert_true(adm.auto_size);
	assert_true(adm.exempt);
	assert_value(a, "admission.maxActive", "\"auto\"");

	parse_fails("{\"init\":1}", "init: expected");
	parse_fails("{\"admission\":{\"maxActive\":0}}",
		    "admission.maxActive: 0 is not a whole number above 0 or \"auto\"");
	parse_fails("{\"admission\":{\"maxActive\":\"many\"}}",
		    "admission.maxActive: \"many\" is not a whole number above 0 or \"auto\"");
	parse_fails("{\"admission\":{\"wait\":-1}}", "admission.wait: ");
	parse_fails("{\"admission\":{\"exempt\":\"yes\"}}", "admission.exempt: expected");
	parse_fails("{\"admission\":{\"maxactive\":2}}", "admission: unknown key \"maxactive\"");
}

static void test_admission_project(void **state)
{
	struct projfix *f = *state;
	_cleanup_free_ char *pdir = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL;
	struct hezo_admission adm;

	assert_true(asprintf(&pdir, "%s/projects", f->dir) > 0);
	write_file_at(pdir, "assistant.json", "{\"admission\":{\"exempt\":true},\"init\":false}");
	write_file_at(pdir, "greedy.json", "{\"admission\":{\"maxActive\":100}}");
	p = for_container_ok(f->base, "{\"org.hezo.project\":\"assistant\"}", NULL);
	hezo_policy_admission(p, &adm);
	assert_true(adm.exempt);
	assert_false(hezo_policy_init(p));
	/* The limit is the machine's: a project may not raise it. */
	for_container_fails(f->base, "{\"org.hezo.project\":\"greedy\"}", NULL,
			    "admission.maxActive: only the main policy file may set this");
}

const struct CMUnitTest policy_parse_tests[] = {
	cmocka_unit_test(test_check_collects_every_error),
	cmocka_unit_test(test_defaults),
	cmocka_unit_test(test_shipped_file_is_defaults),
	cmocka_unit_test(test_every_key),
	cmocka_unit_test(test_to_json_round_trip),
	cmocka_unit_test(test_sizes),
	cmocka_unit_test(test_parse_errors),
	cmocka_unit_test(test_load_errors),
	cmocka_unit_test_setup_teardown(test_project_layering, proj_setup, proj_teardown),
	cmocka_unit_test_setup_teardown(test_project_selection, proj_setup, proj_teardown),
	cmocka_unit_test_setup_teardown(test_project_refusals, proj_setup, proj_teardown),
	cmocka_unit_test(test_project_production_rules),
	cmocka_unit_test(test_project_narrows_paths),
	cmocka_unit_test_setup_teardown(test_annotations_tighten, proj_setup, proj_teardown),
	cmocka_unit_test_setup_teardown(test_annotations_hostile, proj_setup, proj_teardown),
	cmocka_unit_test(test_production_backend_annotation),
	cmocka_unit_test(test_init_admission),
	cmocka_unit_test_setup_teardown(test_admission_project, proj_setup, proj_teardown),
};
const size_t policy_parse_ntests = sizeof(policy_parse_tests) / sizeof(policy_parse_tests[0]);

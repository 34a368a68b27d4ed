/* Unit tests for what engine flags can no longer loosen: tmpfs options and size (policy/tmpfs.c),
 * the OOM killer, sysctls and the relative resource knobs. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hezo-policy.h"
#include "test-policy.h"

static struct hezo_json *parse_json(const char *s)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_json *v = NULL;

	assert_int_equal(hezo_json_parse(s, strlen(s), &v, &err), 0);
	return v;
}

static void assert_json(const struct hezo_json *v, const char *want)
{
	_cleanup_free_ char *got = json_text(v);

	if (strcmp(got, want) != 0)
		print_error("got  %s\nwant %s\n", got, want);
	assert_string_equal(got, want);
}

static void parse_fails(const char *doc, const char *want)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_policy *p = NULL;
	int r = hezo_policy_parse(doc, strlen(doc), "t", &p, &err);

	if (r == 0 || !strstr(err->msg, want))
		print_error("parse: got %s, want %s\n", r == 0 ? "success" : err->msg, want);
	assert_true(r < 0);
	assert_non_null(strstr(err->msg, want));
	hezo_policy_free(p);
}

/* The options the engine's one tmpfs at dest comes out with, after apply. */
static void tmpfs_gets(const struct hezo_policy *p, const char *dest, const char *opts,
		       const char *want)
{
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *doc = NULL;
	const struct hezo_json *mounts;

	assert_true(asprintf(&doc,
			     "[{\"destination\":\"%s\",\"type\":\"tmpfs\",\"source\":\"tmpfs\","
			     "\"options\":%s}]",
			     dest, opts) > 0);
	assert_int_equal(hezo_json_set(spec, "mounts", parse_json(doc)), 0);
	if (hezo_policy_apply_spec(p, spec, NULL, &err) < 0)
		print_error("apply: %s\n", err->msg);
	assert_null(err);
	mounts = hezo_json_get(spec, "mounts");
	assert_string_equal(hezo_json_string(hezo_json_get(mounts->items[0], "destination")), dest);
	assert_json(hezo_json_get(mounts->items[0], "options"), want);
}

static void test_tmpfs_key(void **state)
{
	_cleanup_policy_ struct hezo_policy *def = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *set = parse_ok("{\"tmpfsMax\":\"1g\"}");
	_cleanup_free_ char *dir = make_tempdir(), *doc = NULL;
	_cleanup_policy_ struct hezo_policy *base = NULL, *low = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_policy *high = NULL;

	assert_value(def, "tmpfsMax", "67108864");
	assert_value(set, "tmpfsMax", "1073741824");
	parse_fails("{\"tmpfsMax\":0}", "policy t: tmpfsMax: 0: must be more than 0");
	parse_fails("{\"tmpfsMax\":\"lots\"}", "tmpfsMax: \"lots\" is not a size");

	assert_true(asprintf(&doc, "{\"tmpfsMax\":\"128m\",\"projectsDir\":\"%s\"}", dir) > 0);
	base = parse_ok(doc);
	write_file_at(dir, "low.json", "{\"tmpfsMax\":\"1m\"}");
	write_file_at(dir, "high.json", "{\"tmpfsMax\":\"129m\"}");
	assert_int_equal(hezo_policy_for_container(base, NULL, "low", &low, &err), 0);
	assert_value(low, "tmpfsMax", "1048576");
	assert_true(hezo_policy_for_container(base, NULL, "high", &high, &err) < 0);
	assert_null(high);
	assert_non_null(strstr(err->msg, "high.json: tmpfsMax: a project may only lower the main "
					 "policy's 134217728"));
	remove_tree(dir);
}

static void test_tmpfs_clamped(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *small = parse_ok("{\"tmpfsMax\":\"1m\"}");

	/* docker run --tmpfs /x:rw,exec,size=8m and /x:rw,suid,dev: no loosening flag stays. */
	tmpfs_gets(p, "/x", "[\"rw\",\"exec\",\"size=8m\"]",
		   "[\"rw\",\"nosuid\",\"noexec\",\"nodev\",\"size=8388608\"]");
	tmpfs_gets(p, "/x", "[\"rw\",\"suid\",\"dev\",\"nodev\",\"exec\",\"noexec\"]",
		   "[\"rw\",\"nosuid\",\"noexec\",\"nodev\",\"size=67108864\"]");
	/* No size, size=0 (no limit), a percentage of RAM or too big: the policy's maximum. */
	tmpfs_gets(p, "/x", "[]", "[\"nosuid\",\"noexec\",\"nodev\",\"size=67108864\"]");
	tmpfs_gets(p, "/x", "[\"size=0\"]", "[\"nosuid\",\"noexec\",\"nodev\",\"size=67108864\"]");
	tmpfs_gets(p, "/x", "[\"size=50%\"]",
		   "[\"nosuid\",\"noexec\",\"nodev\",\"size=67108864\"]");
	tmpfs_gets(p, "/x", "[\"size=99999999999999999999\"]",
		   "[\"nosuid\",\"noexec\",\"nodev\",\"size=67108864\"]");
	tmpfs_gets(p, "/x", "[\"size=1e\"]", "[\"nosuid\",\"noexec\",\"nodev\",\"size=67108864\"]");
	/* The kernel reads the last of size= and nr_blocks= (pages). */
	tmpfs_gets(p, "/x", "[\"size=1k\",\"nr_blocks=1000000\",\"mode=1777\"]",
		   "[\"mode=1777\",\"nosuid\",\"noexec\",\"nodev\",\"size=67108864\"]");
	tmpfs_gets(p, "/x", "[\"nr_blocks=1000000\",\"size=1k\",\"nr_inodes=10\"]",
		   "[\"nr_inodes=10\",\"nosuid\",\"noexec\",\"nodev\",\"size=1024\"]");
	tmpfs_gets(small, "/x", "[\"size=8m\"]",
		   "[\"nosuid\",\"noexec\",\"nodev\",\"size=1048576\"]");
	/* Docker's /dev: device nodes must open, so dev/nodev stay as the engine wrote them. */
	tmpfs_gets(p, "/dev", "[\"nosuid\",\"strictatime\",\"mode=755\",\"size=65536k\"]",
		   "[\"strictatime\",\"mode=755\",\"nosuid\",\"noexec\",\"size=67108864\"]");
	tmpfs_gets(p, "/dev", "[\"exec\",\"suid\",\"nodev\",\"size=1g\"]",
		   "[\"nodev\",\"nosuid\",\"noexec\",\"size=67108864\"]");
	tmpfs_gets(small, "/dev/shm", "[\"dev\",\"size=65536k\"]",
		   "[\"nosuid\",\"noexec\",\"nodev\",\"size=1048576\"]");
}

/* exec.tmpfs: where a tmpfs may execute is the policy's word, and a project may only tighten it. */
static void test_tmpfs_exec_key(void **state)
{
	_cleanup_policy_ struct hezo_policy *def = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *ex = parse_ok("{\"exec\":{\"tmpfs\":true}}");
	_cleanup_free_ char *dir = make_tempdir(), *doc = NULL;
	_cleanup_policy_ struct hezo_policy *base = NULL, *shut = NULL, *tight = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_policy *open_ = NULL;

	assert_value(def, "exec.tmpfs", "false");
	parse_fails("{\"exec\":{\"tmpfs\":1}}", "exec.tmpfs");
	parse_fails("{\"exec\":{\"image\":false}}", "exec");
	/* The engine's word stands: exec stays exec, noexec stays noexec; suid and dev still go. */
	tmpfs_gets(ex, "/x", "[\"rw\",\"exec\",\"suid\",\"size=8m\"]",
		   "[\"rw\",\"exec\",\"nosuid\",\"nodev\",\"size=8388608\"]");
	tmpfs_gets(ex, "/x", "[\"noexec\"]", "[\"noexec\",\"nosuid\",\"nodev\",\"size=67108864\"]");
	/* And the policy's own tmpfs follows the same word. */
	tmpfs_gets(ex, "/tmp", "[\"noexec\"]",
		   "[\"nosuid\",\"nodev\",\"exec\",\"mode=1777\",\"size=67108864\"]");
	tmpfs_gets(def, "/tmp", "[\"exec\"]",
		   "[\"nosuid\",\"nodev\",\"noexec\",\"mode=1777\",\"size=67108864\"]");

	assert_true(asprintf(&doc, "{\"projectsDir\":\"%s\"}", dir) > 0);
	base = parse_ok(doc);
	write_file_at(dir, "open.json", "{\"exec\":{\"tmpfs\":true}}");
	write_file_at(dir, "shut.json", "{\"exec\":{\"tmpfs\":false}}");
	assert_true(hezo_policy_for_container(base, NULL, "open", &open_, &err) < 0);
	assert_null(open_);
	assert_non_null(strstr(err->msg, "open.json: exec.tmpfs: a project may only tighten"));
	assert_int_equal(hezo_policy_for_container(base, NULL, "shut", &shut, NULL), 0);
	free(doc);
	assert_true(asprintf(&doc, "{\"projectsDir\":\"%s\",\"exec\":{\"tmpfs\":true}}", dir) > 0);
	hezo_policy_free(base);
	base = parse_ok(doc);
	assert_int_equal(hezo_policy_for_container(base, NULL, "shut", &tight, NULL), 0);
	assert_value(tight, "exec.tmpfs", "false");
	remove_tree(dir);
}

/* Each rewrite of an engine's tmpfs is reported with its reason. */
static void test_tmpfs_rewrites(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_json_ struct hezo_json *in = minimal_spec(), *out = NULL, *rw = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_int_equal(
		hezo_json_set(in, "mounts",
			      parse_json("[{\"destination\":\"/x\",\"type\":\"tmpfs\","
					 "\"source\":\"tmpfs\",\"options\":[\"noexec\",\"rw\","
					 "\"exec\",\"size=1g\"]},"
					 "{\"destination\":\"/y\",\"type\":\"tmpfs\","
					 "\"source\":\"tmpfs\",\"options\":[\"nosuid\",\"nodev\","
					 "\"noexec\",\"size=1m\"]}]")),
		0);
	out = hezo_json_clone(in);
	assert_int_equal(hezo_policy_apply_spec(p, out, NULL, &err), 0);
	rw = hezo_policy_tmpfs_rewrites(p, in, out);
	assert_json(rw, "[{\"mount\":\"/x\",\"asked\":null,\"got\":\"nosuid\",\"reason\":\"a "
			"tmpfs is always nosuid\"},"
			"{\"mount\":\"/x\",\"asked\":\"exec\",\"got\":\"noexec\",\"reason\":"
			"\"exec.tmpfs is false: no tmpfs may execute\"},"
			"{\"mount\":\"/x\",\"asked\":null,\"got\":\"nodev\",\"reason\":\"a tmpfs "
			"other than /dev is always nodev\"},"
			"{\"mount\":\"/x\",\"asked\":\"size=1073741824\",\"got\":"
			"\"size=67108864\",\"reason\":\"above tmpfsMax 67108864\"}]");
}

static void test_oom_killer_stays(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	_cleanup_json_ struct hezo_json *upd =
		parse_json("{\"memory\":{\"limit\":67108864,\"disableOOMKiller\":true}}");
	_cleanup_json_ struct hezo_json *bad = parse_json("{\"memory\":{\"disableOOMKiller\":1}}");
	_cleanup_error_ struct hezo_error *err = NULL;

	/* docker run --oom-kill-disable --memory 64m */
	assert_int_equal(hezo_json_set(hezo_json_get(spec, "linux"), "resources",
				       parse_json("{\"memory\":{\"limit\":67108864,"
						  "\"disableOOMKiller\":true}}")),
			 0);
	assert_int_equal(hezo_policy_apply_spec(p, spec, NULL, &err), 0);
	assert_json(hezo_json_get_path(spec, "linux.resources.memory"),
		    "{\"limit\":67108864,\"disableOOMKiller\":false,\"swap\":67108864}");
	/* update: the same */
	assert_int_equal(hezo_policy_apply_resources(p, upd, NULL, &err), 0);
	assert_json(hezo_json_get(upd, "memory"),
		    "{\"limit\":67108864,\"disableOOMKiller\":false,\"swap\":67108864}");
	assert_true(hezo_policy_apply_resources(p, bad, NULL, &err) < 0);
	assert_non_null(
		strstr(err->msg, "resources.memory.disableOOMKiller: expected true or false"));
}

/* config.json with linux.sysctl set to the object sysctl, applied; NULL or the error message. */
static char *sysctl_apply(const struct hezo_policy *p, const char *sysctl)
{
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_int_equal(hezo_json_set(hezo_json_get(spec, "linux"), "sysctl", parse_json(sysctl)),
			 0);
	if (hezo_policy_apply_spec(p, spec, NULL, &err) == 0) {
		assert_json(hezo_json_get_path(spec, "linux.sysctl"), sysctl);
		return NULL;
	}
	return strdup(err->msg);
}

static void sysctl_refused(const struct hezo_policy *p, const char *sysctl, const char *want)
{
	_cleanup_free_ char *msg = sysctl_apply(p, sysctl);

	if (!msg || strcmp(msg, want) != 0)
		print_error("%s: got %s, want %s\n", sysctl, msg ? msg : "success", want);
	assert_non_null(msg);
	assert_string_equal(msg, want);
}

static void test_sysctls(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *any =
		parse_ok("{\"sysctls\":{\"net.ipv4.conf.all.route_localnet\":true,"
			 "\"kernel.shm_rmid_forced\":\"1 1\"}}");

	assert_value(p, "sysctls",
		     "{\"kernel.shm_rmid_forced\":\"0 1\",\"net.ipv4.ip_local_port_range\":"
		     "\"1024 65535\",\"net.ipv4.tcp_syncookies\":\"0 2\","
		     "\"net.ipv4.ping_group_range\":\"0 2147483647\","
		     "\"net.ipv4.ip_unprivileged_port_start\":\"0 65536\"}");
	/* What Docker sends by default, and the rest of the safe set, pass. */
	assert_null(sysctl_apply(p, "{\"net.ipv4.ip_unprivileged_port_start\":\"0\","
				    "\"net.ipv4.ping_group_range\":\"0 2147483647\"}"));
	assert_null(sysctl_apply(p, "{\"kernel.shm_rmid_forced\":\"1\","
				    "\"net.ipv4.ip_local_port_range\":\"32768\\t60999\","
				    "\"net.ipv4.tcp_syncookies\":\"2\"}"));
	sysctl_refused(p, "{\"net.ipv4.conf.all.route_localnet\":\"1\"}",
		       "linux.sysctl: \"net.ipv4.conf.all.route_localnet\" is not one of the "
		       "sysctls the policy allows");
	/* runc's slash spelling reaches the same file: only the listed spelling counts. */
	sysctl_refused(p, "{\"net/ipv4/tcp_syncookies\":\"1\"}",
		       "linux.sysctl: \"net/ipv4/tcp_syncookies\" is not one of the sysctls the "
		       "policy allows");
	sysctl_refused(p, "{\"net.ipv4.ip_local_port_range\":\"80 90\"}",
		       "linux.sysctl: \"net.ipv4.ip_local_port_range\": \"80 90\" is not one or "
		       "two numbers from 1024 to 65535");
	sysctl_refused(p, "{\"net.ipv4.ping_group_range\":\"0 4294967295\"}",
		       "linux.sysctl: \"net.ipv4.ping_group_range\": \"0 4294967295\" is not one "
		       "or two numbers from 0 to 2147483647");
	/* The kernel reads a leading 0 as octal: 0001024 is port 532 (red team pass 12, part N,
	 * L1). */
	sysctl_refused(p, "{\"net.ipv4.ip_local_port_range\":\"0001024 65535\"}",
		       "linux.sysctl: \"net.ipv4.ip_local_port_range\": \"0001024 65535\" is not "
		       "one or two numbers from 1024 to 65535");
	assert_null(sysctl_apply(p, "{\"net.ipv4.ping_group_range\":\"0 2147483647\"}"));
	sysctl_refused(p, "{\"kernel.shm_rmid_forced\":\"1 1 1\"}",
		       "linux.sysctl: \"kernel.shm_rmid_forced\": \"1 1 1\" is not one or two "
		       "numbers from 0 to 1");
	sysctl_refused(p, "{\"kernel.shm_rmid_forced\":\"-1\"}",
		       "linux.sysctl: \"kernel.shm_rmid_forced\": \"-1\" is not one or two numbers "
		       "from 0 to 1");
	sysctl_refused(p, "{\"kernel.shm_rmid_forced\":\"\"}",
		       "linux.sysctl: \"kernel.shm_rmid_forced\": \"\" is not one or two numbers "
		       "from 0 to 1");
	sysctl_refused(p, "{\"kernel.shm_rmid_forced\":1}",
		       "linux.sysctl: \"kernel.shm_rmid_forced\": expected a string");
	/* Docker's --domainname: in the box's own UTS namespace, whatever the list says. */
	assert_null(sysctl_apply(p, "{\"kernel.domainname\":\"x.test\"}"));
	assert_null(sysctl_apply(any, "{\"kernel.domainname\":\"a-b_c.D9\"}"));
	sysctl_refused(p, "{\"kernel.domainname\":\"x test\"}",
		       "linux.sysctl: \"kernel.domainname\": \"x test\" is not 1 to 64 of "
		       "[a-zA-Z0-9.-_]");
	sysctl_refused(p, "{\"kernel.domainname\":\"x\\ny\"}",
		       "linux.sysctl: \"kernel.domainname\": \"x\\ny\" is not 1 to 64 of "
		       "[a-zA-Z0-9.-_]");
	sysctl_refused(
		p, "{\"kernel.domainname\":\"\"}",
		"linux.sysctl: \"kernel.domainname\": \"\" is not 1 to 64 of [a-zA-Z0-9.-_]");
	sysctl_refused(p,
		       "{\"kernel.domainname\":\"a123456789b123456789c123456789d123456789e123456789"
		       "f123456789g12345\"}",
		       "linux.sysctl: \"kernel.domainname\": \"a123456789b123456789c123456789d12345"
		       "6789e123456789f123456789g12345\" is not 1 to 64 of [a-zA-Z0-9.-_]");
	sysctl_refused(p, "{\"kernel.domainname\":1}",
		       "linux.sysctl: \"kernel.domainname\": expected a string");
	{
		/* The host's UTS namespace (allowHost): its name is the host's, not the box's. */
		_cleanup_policy_ struct hezo_policy *host =
			parse_ok("{\"namespaces\":{\"allowHost\":[\"uts\"]}}");
		_cleanup_json_ struct hezo_json *spec = minimal_spec();
		_cleanup_error_ struct hezo_error *err = NULL;
		struct hezo_json *nss = hezo_json_get_path(spec, "linux.namespaces");

		for (size_t i = 0; i < nss->len; i++)
			if (strcmp(hezo_json_string(hezo_json_get(nss->items[i], "type")) ?: "",
				   "uts") == 0)
				hezo_json_remove_at(nss, i);
		assert_int_equal(hezo_json_set(hezo_json_get(spec, "linux"), "sysctl",
					       parse_json("{\"kernel.domainname\":\"x.test\"}")),
				 0);
		assert_true(hezo_policy_apply_spec(host, spec, NULL, &err) < 0);
		assert_string_equal(err->msg,
				    "linux.sysctl: \"kernel.domainname\" is allowed only in a UTS "
				    "namespace of the box's own (linux.namespaces: {\"type\": "
				    "\"uts\"} without a path)");
	}
	/* An admin's own list replaces the default one. */
	assert_null(sysctl_apply(any, "{\"net.ipv4.conf.all.route_localnet\":\"1\"}"));
	sysctl_refused(any, "{\"kernel.shm_rmid_forced\":\"0\"}",
		       "linux.sysctl: \"kernel.shm_rmid_forced\": \"0\" is not one or two numbers "
		       "from 1 to 1");
	sysctl_refused(any, "{\"net.ipv4.tcp_syncookies\":\"1\"}",
		       "linux.sysctl: \"net.ipv4.tcp_syncookies\" is not one of the sysctls the "
		       "policy allows");
	parse_fails("{\"sysctls\":{\"a..b\":true}}",
		    "policy t: sysctls[\"a..b\"]: not a sysctl name");
	parse_fails("{\"sysctls\":{\"net/ipv4/x\":true}}", "not a sysctl name");
	parse_fails("{\"sysctls\":{\"a.b\":\"2 1\"}}",
		    "sysctls[\"a.b\"]: \"2 1\" is neither true nor \"LOW HIGH\"");
	parse_fails("{\"sysctls\":{\"a.b\":false}}", "is neither true nor");
	parse_fails("{\"sysctls\":[]}", "sysctls: expected an object, got array");
}

static void test_sysctls_project(void **state)
{
	_cleanup_free_ char *dir = make_tempdir(), *doc = NULL, *lowv = NULL;
	_cleanup_policy_ struct hezo_policy *base = NULL, *low = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_policy *bad = NULL;

	assert_true(asprintf(&doc, "{\"projectsDir\":\"%s\"}", dir) > 0);
	base = parse_ok(doc);
	write_file_at(dir, "low.json",
		      "{\"sysctls\":{\"net.ipv4.ip_local_port_range\":\"2000 3000\"}}");
	write_file_at(dir, "wide.json",
		      "{\"sysctls\":{\"net.ipv4.ip_local_port_range\":\"80 3000\"}}");
	write_file_at(dir, "new.json", "{\"sysctls\":{\"net.ipv4.conf.all.forwarding\":true}}");
	assert_int_equal(hezo_policy_for_container(base, NULL, "low", &low, &err), 0);
	lowv = policy_value(low, "sysctls");
	assert_non_null(strstr(lowv, "\"net.ipv4.ip_local_port_range\":\"2000 3000\""));
	assert_true(hezo_policy_for_container(base, NULL, "wide", &bad, &err) < 0);
	assert_non_null(strstr(err->msg, "wide.json: sysctls: net.ipv4.ip_local_port_range: a "
					 "project may only narrow the main policy's 1024 65535"));
	hezo_error_free(TAKE_PTR(err));
	assert_true(hezo_policy_for_container(base, NULL, "new", &bad, &err) < 0);
	assert_non_null(strstr(err->msg, "new.json: sysctls: net.ipv4.conf.all.forwarding is "
					 "not in the main policy's list"));
	assert_null(bad);
	remove_tree(dir);
}

/* linux.resources after apply of a config.json whose resources are res. */
static void resources_get(const struct hezo_policy *p, const char *res, const char *path,
			  const char *want)
{
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_int_equal(hezo_json_set(hezo_json_get(spec, "linux"), "resources", parse_json(res)),
			 0);
	if (hezo_policy_apply_spec(p, spec, NULL, &err) < 0)
		print_error("apply: %s\n", err->msg);
	assert_null(err);
	assert_json(hezo_json_get_path(spec, path), want);
}

static void test_weights(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *low =
		parse_ok("{\"weights\":{\"cpuShares\":256,\"blkioWeight\":100}}");
	_cleanup_json_ struct hezo_json *upd =
		parse_json("{\"cpu\":{\"shares\":262144},\"blockIO\":{\"weight\":1000}}");
	_cleanup_json_ struct hezo_json *upd2 = parse_json("{\"cpu\":{\"quota\":1000}}");
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_value(p, "weights", "{\"cpuShares\":1024,\"blkioWeight\":500}");
	parse_fails("{\"weights\":{\"cpuShares\":1}}",
		    "policy t: weights.cpuShares: 1 is not from 2 to 262144");
	parse_fails("{\"weights\":{\"blkioWeight\":1001}}",
		    "weights.blkioWeight: 1001 is not from 10 to 1000");
	parse_fails("{\"weights\":{\"x\":1}}", "weights");
	/* docker run --cpu-shares 262144 --blkio-weight 1000 --blkio-weight-device ...:900 */
	resources_get(p,
		      "{\"cpu\":{\"shares\":262144},\"blockIO\":{\"weight\":1000,\"leafWeight\":"
		      "1000,\"weightDevice\":[{\"major\":8,\"minor\":0,\"weight\":900,"
		      "\"leafWeight\":20}]}}",
		      "linux.resources.blockIO",
		      "{\"weight\":500,\"leafWeight\":500,\"weightDevice\":[{\"major\":8,"
		      "\"minor\":0,\"weight\":500,\"leafWeight\":20}]}");
	resources_get(p, "{\"cpu\":{\"shares\":262144}}", "linux.resources.cpu.shares", "1024");
	/* Lower stays lower; Docker's 0 (unset) stays unset while the policy is the kernel's. */
	resources_get(p, "{\"cpu\":{\"shares\":2},\"blockIO\":{\"weight\":0}}",
		      "linux.resources.cpu.shares", "2");
	resources_get(p, "{\"cpu\":{\"shares\":0},\"blockIO\":{\"weight\":0}}",
		      "linux.resources.blockIO", "{\"weight\":0}");
	resources_get(p, "{\"cpu\":{\"shares\":0}}", "linux.resources.cpu.shares", "0");
	resources_get(low, "{\"cpu\":{\"shares\":0}}", "linux.resources.cpu.shares", "256");
	resources_get(low, "{}", "linux.resources.cpu.shares", "256");
	resources_get(low, "{\"cpu\":{\"shares\":1024}}", "linux.resources.cpu.shares", "256");
	/* update: clamped when sent, absent stays absent. */
	assert_int_equal(hezo_policy_apply_resources(low, upd, NULL, &err), 0);
	assert_json(hezo_json_get_path(upd, "cpu.shares"), "256");
	assert_json(hezo_json_get_path(upd, "blockIO.weight"), "100");
	assert_int_equal(hezo_policy_apply_resources(low, upd2, NULL, &err), 0);
	assert_null(hezo_json_get_path(upd2, "cpu.shares"));
}

/* ---- the rest of the walk table (policy/fields.c) ---- */

/* config.json = minimal_spec() with the JSON at dotted path (linux.X or process.X). */
static char *apply_with(const char *path, const char *json)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *obj = strdup(path);
	char *dot = strchr(obj, '.');
	struct hezo_json *parent;

	*dot = '\0';
	parent = hezo_json_ensure_object(spec, obj);
	if (strncmp(dot + 1, "resources.", 10) == 0)
		parent = hezo_json_ensure_object(parent, "resources"), dot += 10;
	assert_int_equal(hezo_json_set(parent, dot + 1, parse_json(json)), 0);
	if (hezo_policy_apply_spec(p, spec, NULL, &err) < 0)
		return strdup(err->msg);
	return json_text(hezo_json_get_path(spec, path));
}

static void refused(const char *path, const char *json, const char *want)
{
	_cleanup_free_ char *got = apply_with(path, json);

	if (!strstr(got, want))
		print_error("%s = %s: got %s, want %s\n", path, json, got, want);
	assert_non_null(strstr(got, want));
}

static void kept(const char *path, const char *json, const char *want)
{
	_cleanup_free_ char *got = apply_with(path, json);

	if (strcmp(got, want) != 0)
		print_error("%s = %s: got %s, want %s\n", path, json, got, want);
	assert_string_equal(got, want);
}

static void test_walk_fields(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_json_ struct hezo_json *upd = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	(void)state;
	/* linux.resources */
	refused("linux.resources.unified", "{\"memory.max\":\"max\"}",
		"linux.resources.unified: cgroup files by name are not allowed");
	kept("linux.resources.unified", "{}", "{}");
	refused("linux.resources.network", "{\"classID\":1048577}",
		"linux.resources.network: the host's traffic class");
	refused("linux.resources.network", "{\"priorities\":[{\"name\":\"eth0\",\"priority\":7}]}",
		"linux.resources.network:");
	kept("linux.resources.network", "{\"classID\":0}", "{\"classID\":0}");
	kept("linux.resources.cpu",
	     "{\"realtimeRuntime\":950000,\"realtimePeriod\":1000000,\"burst\":100000,"
	     "\"cpus\":\"0\",\"mems\":\"0\",\"idle\":1}",
	     "{\"cpus\":\"0\",\"mems\":\"0\",\"idle\":1,\"period\":100000,\"quota\":200000}");
	kept("linux.resources.memory",
	     "{\"reservation\":1048576,\"kernel\":8388608,\"kernelTCP\":1048576,"
	     "\"swappiness\":10}",
	     "{\"reservation\":1048576,\"kernel\":8388608,\"kernelTCP\":1048576,\"swappiness\":10,"
	     "\"limit\":2147483648,\"swap\":2147483648}");
	kept("linux.resources.blockIO",
	     "{\"throttleReadBpsDevice\":[{\"major\":8,\"minor\":0,"
	     "\"rate\":1048576}]}",
	     "{\"throttleReadBpsDevice\":[{\"major\":8,\"minor\":0,\"rate\":1048576}]}");
	kept("linux.resources.hugepageLimits", "[{\"pageSize\":\"2MB\",\"limit\":0}]",
	     "[{\"pageSize\":\"2MB\",\"limit\":0}]");
	/* the same in update */
	upd = parse_json("{\"cpu\":{\"realtimeRuntime\":950000,\"quota\":50000}}");
	assert_int_equal(hezo_policy_apply_resources(p, upd, NULL, &err), 0);
	assert_json(hezo_json_get(upd, "cpu"), "{\"quota\":50000,\"period\":100000}");
	hezo_json_free(upd);
	upd = parse_json("{\"unified\":{\"pids.max\":\"max\"}}");
	assert_int_equal(hezo_policy_apply_resources(p, upd, NULL, &err), -EINVAL);
	assert_non_null(strstr(err->msg, "resources.unified: cgroup files by name"));

	/* process */
	refused("process.scheduler", "{\"policy\":\"SCHED_FIFO\",\"priority\":99}",
		"process.scheduler: only SCHED_OTHER, SCHED_BATCH or SCHED_IDLE");
	refused("process.scheduler", "{\"policy\":\"SCHED_OTHER\",\"nice\":-20}",
		"process.scheduler:");
	kept("process.scheduler", "{\"policy\":\"SCHED_BATCH\",\"nice\":5}",
	     "{\"policy\":\"SCHED_BATCH\",\"nice\":5}");
	refused("process.ioPriority", "{\"class\":\"IOPRIO_CLASS_RT\",\"priority\":0}",
		"process.ioPriority: only IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE");
	kept("process.ioPriority", "{\"class\":\"IOPRIO_CLASS_IDLE\",\"priority\":7}",
	     "{\"class\":\"IOPRIO_CLASS_IDLE\",\"priority\":7}");
	kept("process.apparmorProfile", "\"unconfined\"", "\"unconfined\"");
	kept("process.execCPUAffinity", "{\"initial\":\"0\",\"final\":\"0-1\"}",
	     "{\"initial\":\"0\",\"final\":\"0-1\"}");
	kept("process.selinuxLabel", "\"system_u:system_r:spc_t:s0\"",
	     "\"system_u:system_r:spc_t:s0\"");
	kept("process.user", "{\"uid\":0,\"gid\":0,\"umask\":0,\"additionalGids\":[10]}",
	     "{\"uid\":0,\"gid\":0,\"umask\":0,\"additionalGids\":[10]}");
	kept("process.consoleSize", "{\"height\":24,\"width\":80}", "{\"height\":24,\"width\":80}");
	kept("process.noNewPrivileges", "false", "true");
	kept("process.oomScoreAdj", "-1000", "0");

	/* linux */
	refused("linux.rootfsPropagation", "\"shared\"",
		"linux.rootfsPropagation: only private, slave or unbindable");
	refused("linux.rootfsPropagation", "\"rshared\"", "linux.rootfsPropagation:");
	kept("linux.rootfsPropagation", "\"rslave\"", "\"rslave\"");
	refused("linux.intelRdt", "{\"closID\":\"guaranteed_group\"}",
		"linux.intelRdt: not allowed");
	refused("linux.personality", "{\"domain\":\"LINUX\",\"flags\":[\"READ_IMPLIES_EXEC\"]}",
		"linux.personality: only domain LINUX or LINUX32, without flags");
	kept("linux.personality", "{\"domain\":\"LINUX32\"}", "{\"domain\":\"LINUX32\"}");
	kept("linux.timeOffsets", "{\"monotonic\":{\"secs\":10,\"nanosecs\":0}}",
	     "{\"monotonic\":{\"secs\":10,\"nanosecs\":0}}");
	kept("linux.resources.rdma", "{\"mlx5_1\":{\"hcaHandles\":3}}",
	     "{\"mlx5_1\":{\"hcaHandles\":3}}");
	refused("linux.netDevices", "{\"eth1\":{}}", "linux.netDevices: host network devices");
	kept("linux.mountLabel", "\"system_u:object_r:container_file_t:s0\"",
	     "\"system_u:object_r:container_file_t:s0\"");
	kept("linux.uidMappings", "[{\"containerID\":0,\"hostID\":100000,\"size\":65536}]",
	     "[{\"containerID\":0,\"hostID\":100000,\"size\":65536}]");
	kept("linux.maskedPaths", "[]",
	     "[\"/proc/asound\",\"/proc/acpi\",\"/proc/kcore\",\"/proc/keys\",\"/proc/"
	     "latency_stats\",\"/proc/timer_list\",\"/proc/timer_stats\",\"/proc/sched_debug\","
	     "\"/proc/scsi\",\"/sys/firmware\",\"/sys/devices/virtual/powercap\",\"/proc/"
	     "slabinfo\","
	     "\"/proc/vmallocinfo\",\"/proc/key-users\",\"/sys/kernel/slab\","
	     "\"/sys/kernel/vmcoreinfo\"]");
	/* annotations the backends read as settings of their own */
	refused("annotations.dev.gvisor.spec.cgroup-parent", "\"/loose\"",
		"annotations: \"dev.gvisor.spec.cgroup-parent\" is read by runsc");
	refused("annotations.dev.gvisor.internal.seccomp.x", "\"RuntimeDefault\"",
		"(dev.gvisor.*), which the box does not allow");
	refused("annotations.dev.gvisor.flag.network", "\"host\"", "read by runsc");
	refused("annotations.run.oci.seccomp_bpf_data", "\"AAAA\"",
		"read by crun as a setting of its own (run.oci.*)");
	refused("annotations.run.oci.hooks.stdout", "\"/etc/shadow\"", "read by crun");
	refused("annotations.org.systemd.property.MemoryMax", "\"infinity\"",
		"read by runc and crun as a setting of its own (org.systemd.property.*)");
	refused("annotations.org.criu.config", "\"/tmp/c\"",
		"read by runc as a setting of its own (org.criu.*)");
	kept("annotations.kept", "\"dev.gvisor.spec.cgroup-parent\"",
	     "\"dev.gvisor.spec.cgroup-parent\"");
	kept("linux.readonlyPaths", "[\"/etc\"]",
	     "[\"/etc\",\"/proc/bus\",\"/proc/fs\",\"/proc/irq\",\"/proc/sys\",\"/proc/"
	     "sysrq-trigger\"]");
}

const struct CMUnitTest policy_flags_tests[] = {
	cmocka_unit_test(test_tmpfs_key),	 cmocka_unit_test(test_tmpfs_clamped),
	cmocka_unit_test(test_tmpfs_exec_key),	 cmocka_unit_test(test_tmpfs_rewrites),
	cmocka_unit_test(test_oom_killer_stays), cmocka_unit_test(test_sysctls),
	cmocka_unit_test(test_sysctls_project),	 cmocka_unit_test(test_weights),
	cmocka_unit_test(test_walk_fields),
};
const size_t policy_flags_ntests = HEZO_ARRAY_SIZE(policy_flags_tests);

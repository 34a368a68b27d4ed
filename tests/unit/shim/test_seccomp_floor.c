/*
 * The seccomp floor (policy/seccomp-floor.c) judged by what the kernel would do: the box's, the
 * engine's and the combined profile are each compiled as runc compiles them (shim/bpf.c, over
 * libseccomp) and run in a classic-BPF interpreter on many calls. The combined filter must let a
 * call through only when both others do, and be no stricter where both allow it plainly.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hezo-file.h"
#include "policy-internal.h"
#include "shim.h"

struct filter {
	struct sock_filter insns[8192];
	size_t n;
};

static void compile(const struct hezo_json *prof, struct filter *f)
{
	_cleanup_free_ char *hex = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	size_t len;

	if (shim_seccomp_bpf(prof, &hex, &err) < 0)
		fail_msg("cannot compile: %s", err->msg);
	len = strlen(hex) / 2;
	assert_true(len % sizeof(struct sock_filter) == 0);
	assert_true(len <= sizeof(f->insns));
	for (size_t i = 0; i < len; i++) {
		unsigned v;
		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		((unsigned char *)f->insns)[i] = (unsigned char)v;
	}
	f->n = len / sizeof(struct sock_filter);
}

/* Classic BPF as the kernel runs it on struct seccomp_data. */
static uint32_t run(const struct filter *f, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};

	for (size_t pc = 0; pc < f->n; pc++) {
		const struct sock_filter *in = &f->insns[pc];
		uint32_t src = BPF_SRC(in->code) == BPF_X ? x : in->k;

		switch (BPF_CLASS(in->code)) {
		case BPF_LD:
			if (BPF_MODE(in->code) == BPF_ABS && BPF_SIZE(in->code) == BPF_W &&
			    in->k % 4 == 0 && in->k < sizeof(*d))
				memcpy(&a, (const char *)d + in->k, 4);
			else if (BPF_MODE(in->code) == BPF_IMM)
				a = in->k;
			else if (BPF_MODE(in->code) == BPF_MEM && in->k < BPF_MEMWORDS)
				a = mem[in->k];
			else
				fail_msg("ld %#x at %zu", in->code, pc);
			break;
		case BPF_LDX:
			if (BPF_MODE(in->code) == BPF_IMM)
				x = in->k;
			else if (BPF_MODE(in->code) == BPF_MEM && in->k < BPF_MEMWORDS)
				x = mem[in->k];
			else
				fail_msg("ldx %#x at %zu", in->code, pc);
			break;
		case BPF_ST:
			assert_true(in->k < BPF_MEMWORDS);
			mem[in->k] = a;
			break;
		case BPF_STX:
			assert_true(in->k < BPF_MEMWORDS);
			mem[in->k] = x;
			break;
		case BPF_ALU:
			switch (BPF_OP(in->code)) {
			case BPF_ADD:
				a += src;
				break;
			case BPF_SUB:
				a -= src;
				break;
			case BPF_AND:
				a &= src;
				break;
			case BPF_OR:
				a |= src;
				break;
			case BPF_LSH:
				a <<= src & 31;
				break;
			case BPF_RSH:
				a >>= src & 31;
				break;
			case BPF_NEG:
				a = -a;
				break;
			default:
				fail_msg("alu %#x at %zu", in->code, pc);
			}
			break;
		case BPF_JMP: {
			bool t = false; /* fail_msg ends the test: set for the compiler */
			switch (BPF_OP(in->code)) {
			case BPF_JA:
				pc += in->k;
				continue;
			case BPF_JEQ:
				t = a == src;
				break;
			case BPF_JGT:
				t = a > src;
				break;
			case BPF_JGE:
				t = a >= src;
				break;
			case BPF_JSET:
				t = (a & src) != 0;
				break;
			default:
				fail_msg("jmp %#x at %zu", in->code, pc);
			}
			pc += t ? in->jt : in->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(in->code) == BPF_A ? a : in->k;
		case BPF_MISC:
			if (BPF_MISCOP(in->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			fail_msg("class %#x at %zu", in->code, pc);
		}
	}
	fail_msg("ran off the end of the filter");
	return 0;
}

static bool allows(uint32_t ret)
{
	uint32_t act = ret & SECCOMP_RET_ACTION_FULL;
	return act == SECCOMP_RET_ALLOW || act == SECCOMP_RET_LOG;
}

static struct hezo_json *parse(const char *text)
{
	struct hezo_json *v = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	if (hezo_json_parse(text, strlen(text), &v, &err) < 0)
		fail_msg("%s", err->msg);
	return v;
}

static struct hezo_json *docker_default(void)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *spec = NULL;
	const char *dir = getenv("HEZO_TEST_DATA");
	size_t len = 0;

	assert_non_null(dir);
	assert_true(asprintf(&path, "%s/config-docker.json", dir) > 0);
	assert_int_equal(hezo_read_file_at(-100, path, 1 << 24, &buf, &len, &err), 0);
	assert_int_equal(hezo_json_parse(buf, len, &spec, &err), 0);
	return hezo_json_clone(hezo_json_get_path(spec, "linux.seccomp"));
}

static struct hezo_json *floor_ok(const struct hezo_json *box, const struct hezo_json *eng)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_json *out = NULL;

	if (hezo_policy_seccomp_floor(box, eng, &out, &err) < 0)
		fail_msg("floor refused: %s", err->msg);
	return out;
}

static const char *floor_err(const struct hezo_json *box, const char *eng_text)
{
	static char msg[512];
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *eng = parse(eng_text), *out = NULL;

	assert_int_equal(hezo_policy_seccomp_floor(box, eng, &out, &err), -EINVAL);
	assert_null(out);
	snprintf(msg, sizeof(msg), "%s", err->msg);
	return msg;
}

/* Argument values worth trying: flags one by one, namespace flags, personalities, edges. */
static const uint64_t arg_values[] = {
	0,
	1,
	2,
	8,
	0x11,
	0x100,
	0x10000,
	0x20000,
	0x20008,
	0x400000,
	0x10000000,
	0x20000,
	0x40000000,
	0x7e020000,
	0x01000000,
	0x00020000,
	0xffffffff,
	0x100000000ULL,
	0xffffffffffffffffULL,
	3,
	17,
};

struct verdicts {
	size_t calls, both, only_one, neither, lost; /* lost: both allowed, result refused */
};

/*
 * Every syscall number 0..460 on x86_64 and i386, with each argument in turn set to each value
 * above (the others 0): the result must refuse whatever either side refuses.
 */
static void check_floor(const struct hezo_json *box, const struct hezo_json *eng,
			const struct hezo_json *res, struct verdicts *v)
{
	static struct filter fb, fe, fr;
	static const uint32_t arches[] = {AUDIT_ARCH_X86_64, AUDIT_ARCH_I386};

	compile(box, &fb);
	compile(eng, &fe);
	compile(res, &fr);
	memset(v, 0, sizeof(*v));
	for (size_t ai = 0; ai < HEZO_ARRAY_SIZE(arches); ai++)
		for (int nr = 0; nr < 460; nr++)
			for (size_t idx = 0; idx < 6; idx++)
				for (size_t k = 0; k < HEZO_ARRAY_SIZE(arg_values); k++) {
					struct seccomp_data d = {.nr = nr, .arch = arches[ai]};
					bool b, e, r;

					d.args[idx] = arg_values[k];
					b = allows(run(&fb, &d));
					e = allows(run(&fe, &d));
					r = allows(run(&fr, &d));
					v->calls++;
					if (r && !(b && e))
						fail_msg("arch %#x nr %d args[%zu]=%#llx: combined "
							 "allows, box %d engine %d",
							 arches[ai], nr, idx,
							 (unsigned long long)arg_values[k], b, e);
					if (b && e && !r)
						v->lost++;
					if (b && e)
						v->both++;
					else if (b || e)
						v->only_one++;
					else
						v->neither++;
				}
}

static bool verdict_for(const struct hezo_json *prof, const char *name, uint64_t arg0)
{
	static struct filter f;
	struct seccomp_data d = {.arch = AUDIT_ARCH_X86_64};

	d.nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name);
	assert_true(d.nr >= 0);
	d.args[0] = arg0;
	compile(prof, &f);
	return allows(run(&f, &d));
}

#define CLONE_NEWUSER_FLAG 0x10000000ULL
#define SIGCHLD_FLAG	   17ULL

static void test_docker_default_profile(void **state)
{
	_cleanup_json_ struct hezo_json *box = hezo_policy_seccomp_default();
	_cleanup_json_ struct hezo_json *eng = docker_default(), *res = NULL;
	struct verdicts v;

	(void)state;
	res = floor_ok(box, eng);
	check_floor(box, eng, res, &v);
	/* Docker's profile and ours agree on most of the ordinary calls: none of them is lost. */
	assert_int_equal(v.lost, 0);
	assert_true(v.both > 10000);
	assert_true(v.only_one > 1000);
	assert_false(verdict_for(res, "ptrace", 0)); /* Docker allows it, we do not */
	assert_false(verdict_for(res, "unshare", CLONE_NEWUSER_FLAG));
	assert_false(verdict_for(res, "clone", CLONE_NEWUSER_FLAG | SIGCHLD_FLAG));
	assert_true(verdict_for(res, "clone", SIGCHLD_FLAG));
	assert_true(verdict_for(res, "personality", 8));
	assert_false(verdict_for(res, "personality", 0x400000)); /* READ_IMPLIES_EXEC */
	assert_true(verdict_for(res, "mkdir", 0));
	/* x32 is Docker's, not ours: the result lists only what both list. */
	assert_string_equal(hezo_json_string(hezo_json_get_path(res, "architectures")->items[0]),
			    "SCMP_ARCH_X86_64");
	assert_int_equal(hezo_json_get(res, "architectures")->len, 2);
}

static void test_allow_all_profile(void **state)
{
	_cleanup_json_ struct hezo_json *box = hezo_policy_seccomp_default();
	_cleanup_json_ struct hezo_json *eng =
		parse("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}");
	_cleanup_json_ struct hezo_json *res = NULL;
	struct verdicts v;

	(void)state;
	res = floor_ok(box, eng);
	check_floor(box, eng, res, &v);
	assert_int_equal(v.lost, 0);
	/* The engine allows everything: the result is the box's profile exactly. */
	assert_false(verdict_for(res, "unshare", CLONE_NEWUSER_FLAG));
	assert_false(verdict_for(res, "clone", CLONE_NEWUSER_FLAG | SIGCHLD_FLAG));
	assert_false(verdict_for(res, "mount", 0));
	assert_true(verdict_for(res, "mkdir", 0));
	assert_string_equal(hezo_json_string(hezo_json_get(res, "defaultAction")),
			    "SCMP_ACT_ERRNO");
	/* An engine list of no architectures is the native one alone. */
	assert_int_equal(hezo_json_get(res, "architectures")->len, 0);
}

/* A profile stricter than ours: mkdir and uname refused, personality by another rule. */
static void test_stricter_profile(void **state)
{
	_cleanup_json_ struct hezo_json *box = hezo_policy_seccomp_default();
	_cleanup_json_ struct hezo_json *eng = parse(
		"{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86_64\"],"
		"\"syscalls\":[{\"names\":[\"mkdir\",\"mkdirat\"],\"action\":\"SCMP_ACT_ERRNO\","
		"\"errnoRet\":13},{\"names\":[\"uname\"],\"action\":\"SCMP_ACT_KILL_PROCESS\"},"
		"{\"names\":[\"write\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,"
		"\"value\":2,\"op\":\"SCMP_CMP_EQ\"}]}]}");
	_cleanup_json_ struct hezo_json *res = NULL;
	struct verdicts v;
	static struct filter f;
	struct seccomp_data d = {.arch = AUDIT_ARCH_X86_64};

	(void)state;
	res = floor_ok(box, eng);
	check_floor(box, eng, res, &v);
	assert_false(verdict_for(res, "mkdir", 0));
	assert_false(verdict_for(res, "uname", 0));
	assert_true(verdict_for(res, "read", 0));
	/* The engine's own action and errno stay. */
	compile(res, &f);
	d.nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, "mkdir");
	assert_int_equal(run(&f, &d), SECCOMP_RET_ERRNO | 13);
	d.nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, "uname");
	assert_int_equal(run(&f, &d), SECCOMP_RET_KILL_PROCESS);
	/* A refusal that depends on an argument cannot be written as an allow: write is refused
	 * (counted as lost), never let through on fd 2. */
	assert_false(verdict_for(res, "write", 2));
	assert_true(v.lost > 0);
	/* i386 is ours but not the engine's: its calls are refused. */
	assert_int_equal(hezo_json_get(res, "architectures")->len, 1);
}

/* Arguments: the engine narrows our clone rule, ours narrows its; same-index conflicts refuse. */
static void test_argument_rules(void **state)
{
	_cleanup_json_ struct hezo_json *box = parse(
		"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
		"{\"names\":[\"read\",\"write\"],\"action\":\"SCMP_ACT_ALLOW\"},"
		"{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":1,"
		"\"value\":21505,\"op\":\"SCMP_CMP_EQ\"}]},"
		"{\"names\":[\"socket\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
		"\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]},"
		"{\"names\":[\"socket\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
		"\"value\":2,\"op\":\"SCMP_CMP_EQ\"}]}]}");
	_cleanup_json_ struct hezo_json *eng = parse(
		"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
		"{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
		"\"value\":0,\"op\":\"SCMP_CMP_EQ\"}]},"
		"{\"names\":[\"write\",\"ioctl\"],\"action\":\"SCMP_ACT_LOG\"},"
		"{\"names\":[\"socket\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
		"\"value\":2,\"op\":\"SCMP_CMP_EQ\"},{\"index\":1,\"value\":1,\"op\":"
		"\"SCMP_CMP_EQ\"}]},"
		"{\"names\":[\"socket\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
		"\"value\":1,\"op\":\"SCMP_CMP_GE\"},{\"index\":0,\"value\":10,\"op\":"
		"\"SCMP_CMP_LE\"}]}]}");
	_cleanup_json_ struct hezo_json *res = NULL;
	struct verdicts v;

	(void)state;
	res = floor_ok(box, eng);
	check_floor(box, eng, res, &v);
	assert_true(verdict_for(res, "read", 0));
	assert_false(verdict_for(res, "read", 3));
	assert_true(verdict_for(res, "write", 5));
	/* socket(AF_INET, SOCK_STREAM) by both; AF_UNIX only by a rule runc would read as OR. */
	{
		static struct filter f;
		struct seccomp_data d = {.arch = AUDIT_ARCH_X86_64};
		d.nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, "socket");
		compile(res, &f);
		d.args[0] = 2;
		d.args[1] = 1;
		assert_true(allows(run(&f, &d)));
		d.args[1] = 2;
		assert_false(allows(run(&f, &d)));
		d.args[0] = 1;
		d.args[1] = 1;
		assert_false(allows(run(&f, &d)));
		d.nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, "ioctl");
		d.args[0] = 0;
		d.args[1] = 21505;
		assert_int_equal(run(&f, &d), SECCOMP_RET_LOG); /* the stricter of ALLOW and LOG */
	}
}

/* Names no listed architecture knows are left out of the floor; the engine's tree is untouched. */
static void test_engine_unknown_names(void **state)
{
	_cleanup_json_ struct hezo_json *box = hezo_policy_seccomp_default();
	_cleanup_json_ struct hezo_json *eng = parse(
		"{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],"
		"\"syscalls\":[{\"names\":[\"read\",\"no_such_syscall\"],\"action\":"
		"\"SCMP_ACT_ALLOW\"},{\"names\":[\"another_unknown\"],\"action\":\"SCMP_ACT_"
		"ALLOW\"}]}");
	_cleanup_json_ struct hezo_json *before = hezo_json_clone(eng), *res = NULL;
	_cleanup_free_ char *text = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	(void)state;
	res = floor_ok(box, eng);
	assert_true(hezo_json_equal(eng, before));
	assert_int_equal(hezo_json_dump(res, false, &text, NULL, &err), 0);
	assert_null(strstr(text, "no_such_syscall"));
	assert_null(strstr(text, "another_unknown"));
	assert_true(verdict_for(res, "read", 0));
	assert_false(verdict_for(res, "write", 1));
}

static void test_engine_refusals(void **state)
{
	_cleanup_json_ struct hezo_json *box = hezo_policy_seccomp_default();

	(void)state;
	assert_string_equal(floor_err(box, "{\"defaultAction\":\"SCMP_ACT_NOTIFY\","
					   "\"listenerPath\":\"/run/l.sock\"}"),
			    "linux.seccomp.listenerPath: a seccomp notify listener is not allowed");
	assert_string_equal(floor_err(box, "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":"
					   "[{\"names\":[\"mkdir\"],\"action\":"
					   "\"SCMP_ACT_NOTIFY\"}]}"),
			    "linux.seccomp.syscalls[0].action: SCMP_ACT_NOTIFY is not allowed");
	assert_string_equal(floor_err(box, "{\"defaultAction\":\"SCMP_ACT_TRACE\"}"),
			    "linux.seccomp.defaultAction: SCMP_ACT_TRACE is not allowed");
	assert_string_equal(floor_err(box, "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"flags\":"
					   "[\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\"]}"),
			    "linux.seccomp.flags[0]: SECCOMP_FILTER_FLAG_SPEC_ALLOW would loosen "
			    "the box's filter");
	assert_string_equal(floor_err(box, "{\"defaultAction\":\"SCMP_ACT_MAYBE\"}"),
			    "linux.seccomp: defaultAction: \"SCMP_ACT_MAYBE\" is not known");
	assert_string_equal(floor_err(box, "{\"syscalls\":[]}"),
			    "linux.seccomp: defaultAction: missing");
}

/* Flags that only log are kept; the result is stable when combined with itself again. */
static void test_flags_and_idempotence(void **state)
{
	_cleanup_json_ struct hezo_json *box = hezo_policy_seccomp_default();
	_cleanup_json_ struct hezo_json *eng = docker_default(), *res = NULL, *again = NULL;
	_cleanup_free_ char *a = NULL, *b = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	(void)state;
	assert_int_equal(hezo_json_set(eng, "flags", parse("[\"SECCOMP_FILTER_FLAG_LOG\"]")), 0);
	res = floor_ok(box, eng);
	assert_string_equal(hezo_json_string(hezo_json_get(res, "flags")->items[0]),
			    "SECCOMP_FILTER_FLAG_LOG");
	again = floor_ok(box, res);
	assert_int_equal(hezo_json_dump(res, false, &a, NULL, &err), 0);
	assert_int_equal(hezo_json_dump(again, false, &b, NULL, &err), 0);
	assert_string_equal(a, b);
}

/* What the compiled profile returns for name with args (unset ones 0). */
static uint32_t verdict_args(const struct hezo_json *prof, const char *name, uint64_t a0,
			     uint64_t a1, uint64_t a2, uint64_t a3)
{
	static struct filter f;
	struct seccomp_data d = {.arch = AUDIT_ARCH_X86_64, .args = {a0, a1, a2, a3}};

	d.nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name);
	assert_true(d.nr >= 0);
	compile(prof, &f);
	return run(&f, &d);
}

/* policy/seccomp-setid.c: no set-id mode gets through, whatever profile it rewrites. */
static void test_no_setid(void **state)
{
	_cleanup_json_ struct hezo_json *def = hezo_policy_seccomp_default();
	_cleanup_json_ struct hezo_json *eng = docker_default();
	struct hezo_json *profs[] = {
		hezo_json_clone(def),
		floor_ok(def, eng),
		parse("{\"defaultAction\":\"SCMP_ACT_ALLOW\"}"),
		parse("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"chmod\","
		      "\"openat\",\"mkdir\",\"openat2\"],\"action\":\"SCMP_ACT_LOG\"}]}"),
		/* A name twice in one rule (red team ws3, F1a): every copy is guarded. */
		parse("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"chmod\","
		      "\"chmod\",\"openat\",\"mkdir\",\"mkdir\",\"openat2\"],\"action\":"
		      "\"SCMP_ACT_ALLOW\"}]}"),
	};
	const uint64_t at = (uint64_t)-100, creat = O_CREAT | O_WRONLY;

	(void)state;
	for (size_t i = 0; i < sizeof(profs) / sizeof(profs[0]); i++) {
		_cleanup_error_ struct hezo_error *err = NULL;
		_cleanup_free_ char *once = NULL, *twice = NULL;
		struct hezo_json *p = profs[i];

		assert_int_equal(hezo_policy_seccomp_no_setid(p, &err), 0);
		assert_false(allows(verdict_args(p, "chmod", 0, 04755, 0, 0)));
		assert_false(allows(verdict_args(p, "chmod", 0, 02755, 0, 0)));
		assert_true(allows(verdict_args(p, "chmod", 0, 0755, 0, 0)));
		assert_false(allows(verdict_args(p, "openat", at, 0, creat, 04755)));
		assert_false(allows(verdict_args(p, "openat", at, 0, 020200000 | O_WRONLY, 06700)));
		assert_true(allows(verdict_args(p, "openat", at, 0, creat, 0644)));
		/* Without O_CREAT the mode is not read: what a caller leaves there does not count.
		 */
		assert_true(allows(verdict_args(p, "openat", at, 0, O_RDONLY, 04755)));
		assert_false(allows(verdict_args(p, "mkdir", 0, 02755, 0, 0)));
		assert_true(allows(verdict_args(p, "mkdir", 0, 0755, 0, 0)));
		assert_false(allows(verdict_args(p, "openat2", at, 0, 0, 0)));
		if (i < 3) {
			assert_false(allows(verdict_args(p, "fchmod", 3, 04755, 0, 0)));
			assert_true(allows(verdict_args(p, "fchmod", 3, 0600, 0, 0)));
			assert_false(allows(verdict_args(p, "fchmodat", at, 0, 06755, 0)));
			assert_false(allows(verdict_args(p, "open", 0, creat, 04755, 0)));
			assert_false(allows(verdict_args(p, "creat", 0, 04755, 0, 0)));
			assert_false(allows(verdict_args(p, "mknodat", at, 0, 0100000 | 04755, 0)));
		}
		/* Rewritten twice, the same profile. */
		assert_int_equal(hezo_json_dump(p, false, &once, NULL, &err), 0);
		assert_int_equal(hezo_policy_seccomp_no_setid(p, &err), 0);
		assert_int_equal(hezo_json_dump(p, false, &twice, NULL, &err), 0);
		assert_string_equal(once, twice);
		hezo_json_free(p);
	}
}

/*
 * A rule comparing one argument twice (red team ws3, F1b): runc and runsc install each comparison
 * as a rule of its own, so a mode comparison added beside them holds for none; such a rule that
 * lets chmod run is dropped, and the refusing default answers every chmod.
 */
static void test_no_setid_repeated_index(void **state)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *p =
		parse("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"chmod\"],"
		      "\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,\"value\":1,\"op\":"
		      "\"SCMP_CMP_NE\"},{\"index\":0,\"value\":2,\"op\":\"SCMP_CMP_NE\"}]}]}");
	const struct hezo_json *rules;

	(void)state;
	assert_int_equal(hezo_policy_seccomp_no_setid(p, &err), 0);
	rules = hezo_json_get(p, "syscalls");
	HEZO_JSON_FOREACH (i, rules) {
		const struct hezo_json *r = rules->items[i];
		const struct hezo_json *names = hezo_json_get(r, "names");
		bool chmod = false;

		HEZO_JSON_FOREACH (j, names)
			chmod = chmod || strcmp(hezo_json_string(names->items[j]), "chmod") == 0;
		assert_false(chmod && strcmp(hezo_json_string(hezo_json_get(r, "action")),
					     "SCMP_ACT_ALLOW") == 0);
	}
	assert_false(allows(verdict_args(p, "chmod", 0, 04755, 0, 0)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_default_profile),
		cmocka_unit_test(test_allow_all_profile),
		cmocka_unit_test(test_stricter_profile),
		cmocka_unit_test(test_argument_rules),
		cmocka_unit_test(test_engine_unknown_names),
		cmocka_unit_test(test_engine_refusals),
		cmocka_unit_test(test_flags_and_idempotence),
		cmocka_unit_test(test_no_setid),
		cmocka_unit_test(test_no_setid_repeated_index),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * hezo-shim: called exactly like runc. Reads runc's global flags, then hands the verb to its
 * handler; create/run/exec/update go through policy, checkpoint/restore are refused, everything
 * else passes through.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hezo-commit.h"
#include "hezo-config.h"
#include "hezo-install.h"
#include "hezo-log.h"
#include "hezo-netlog.h"
#include "shim.h"

extern char **environ;

typedef int (*verb_fn)(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);

/* The policed verbs check their ID before anything else; the others judge it themselves. */
#define POLICED (SHIM_VERB_HELP_PASSES | SHIM_VERB_ID)

static const struct {
	const char *name;
	verb_fn fn;
	unsigned rules; /* the opening's (shim_verb_open) */
} handlers[] = {
	{"create", shim_cmd_create, POLICED | SHIM_VERB_ONE_ID | SHIM_VERB_STDIO},
	{"run", shim_cmd_create, POLICED | SHIM_VERB_ONE_ID | SHIM_VERB_STDIO},
	{"exec", shim_cmd_exec, POLICED | SHIM_VERB_STDIO},
	/* containerd shows update's stderr, not its --log. */
	{"update", shim_cmd_update, POLICED | SHIM_VERB_ONE_ID | SHIM_VERB_STDERR},
	{"delete", shim_cmd_delete, POLICED | SHIM_VERB_NO_ID_PASSES | SHIM_VERB_ONE_ID},
	{"start", shim_cmd_start, 0},
	{"kill", shim_cmd_kill, 0},
	{"ps", shim_cmd_ps, 0},
	{"stats", shim_cmd_stats, 0},
	{"features", shim_cmd_features, 0},
	{"inspect", shim_cmd_inspect, 0},
	{"state", shim_cmd_state, 0},
	{"list", shim_cmd_list, SHIM_VERB_HELP_PASSES},
};

/*
 * Our own administrative commands. They are checked before the forbidden list because runsc
 * has verbs of the same names (install, uninstall) that must never be reached through us.
 */
static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} admin[] = {
	{"install", hezo_install_main}, {"uninstall", hezo_uninstall_main},
	{"doctor", hezo_doctor_main},	{"policy", hezo_policy_cmd_main},
	{"netlog", hezo_netlog_main},
};

/*
 * Backend verbs that would start or touch a sandbox without the policy seeing it (runsc's do,
 * boot and gofer, runc's init, runsc's helpers that edit the host). Never passed through.
 */
static const char *const forbidden[] = {
	"do",	     "boot",   "gofer",	   "init",	    "install",
	"uninstall", "umount", "mitigate", "write-control",
};

static bool is_forbidden(const char *w)
{
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(forbidden); i++)
		if (strcmp(forbidden[i], w) == 0)
			return true;
	return false;
}

static void usage(FILE *f)
{
	fputs("usage: hezo-shim [global options] COMMAND [options] [ID] [args...]\n"
	      "\n"
	      "An OCI runtime called like runc: create and run put the container in the\n"
	      "policy's box (" HEZO_POLICY_PATH ", or $HEZO_POLICY), exec and update\n"
	      "are clamped to it, and every other command goes to the backend that created\n"
	      "the container\n"
	      "(checkpoint and restore are refused: CRIU would restore outside the box).\n"
	      "\n"
	      "Commands: create run exec update start state kill delete ps pause resume events\n"
	      "          features list\n"
	      "Admin:    install|uninstall --docker|--containerd|--podman [--dry-run]\n"
	      "          doctor                      check backends, kernel, proxyd, engines\n"
	      "          project create NAME [--workspace DIR|volume] [--allow HOST]...\n"
	      "          project list | show NAME | rm NAME   a project and its runtime hezo-NAME\n"
	      "          policy check FILE           validate a policy file, naming every error\n"
	      "          policy show [--project P]   the effective policy (of a project)\n"
	      "          inspect CONTAINER           the box a container got, as applied\n"
	      "          netlog [--follow] [--blocked] [--keys] CONTAINER\n"
	      "          ps [-q] [--no-trunc] [--format table|json]   every live box\n"
	      "          stats [--no-stream] [--format table|json] [--interval S]   live use\n"
	      "\n"
	      "Global options (handed to the backend):\n"
	      "  --root DIR  --log FILE  --log-format text|json  --debug  --systemd-cgroup\n"
	      "  --rootless true|false|auto\n"
	      "Refused: --criu (CRIU restores outside the box), checkpoint, restore\n"
	      "Ours:\n"
	      "  --hezo-project NAME   the container's project when no annotation names one\n"
	      "  --version, -v         print the version\n"
	      "  --help, -h            this text\n"
	      "\n"
	      "Environment of the shim itself: HEZO_POLICY, HEZO_STATE_DIR, HEZO_HOOK_PATH,\n"
	      "HEZO_PROXYD_SOCKET.\n",
	      f);
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

/*
 * What the caller's own process would pass on to the box: a negative OOM score (containerd runs
 * at -999, its runc shim at -998), a negative nice, a realtime scheduling or I/O class. Every
 * process the backend starts for the box inherits this one's; config.json's oomScoreAdj is set
 * where it is absent (policy/rlimits.c), but an exec by flags has none. All are raised to the
 * default, which needs no privilege (a positive OOM score is lowered to 0 where it may be).
 */
static int neutral_priority(struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	struct sched_param sp = {0};
	char buf[16] = "";
	long v;
	int policy, prio;

	fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) < 0)
		return hezo_error_set_errno(err, errno, "/proc/self/oom_score_adj");
	v = strtol(buf, NULL, 10);
	/* Above 0 it is only lowered where this process may (a box's own comes from config.json).
	 */
	if (v != 0 && (lseek(fd, 0, SEEK_SET) < 0 || write(fd, "0", 1) != 1) && v < 0)
		return hezo_error_set_errno(err, errno,
					    "/proc/self/oom_score_adj: raising %ld to 0", v);
	errno = 0;
	prio = getpriority(PRIO_PROCESS, 0);
	if (errno == 0 && prio < 0 && setpriority(PRIO_PROCESS, 0, 0) < 0)
		return hezo_error_set_errno(err, errno, "raising nice %d to 0", prio);
	policy = sched_getscheduler(0);
	if ((policy == SCHED_FIFO || policy == SCHED_RR) &&
	    sched_setscheduler(0, SCHED_OTHER, &sp) < 0)
		return hezo_error_set_errno(err, errno, "leaving the realtime scheduling class");
	/* ioprio: class in the top 3 bits; 1 is realtime, 2 best-effort (level 4 the default) */
	prio = (int)syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
	if (prio >= 0 && (prio >> 13) == 1 && syscall(SYS_ioprio_set, 1, 0, (2 << 13) | 4) < 0)
		return hezo_error_set_errno(err, errno, "leaving the realtime I/O class");
	return 0;
}

/* The verb's opening, then the verb: its exit status, or -errno and err. */
static int run_verb(struct shim_ctx *c, const char *verb, int argc, char **argv,
		    struct hezo_error **err)
{
	_cleanup_verb_ struct shim_verb v = {0};
	verb_fn fn = shim_cmd_passthrough;
	unsigned rules = 0;
	int r;

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(handlers); i++)
		if (strcmp(handlers[i].name, verb) == 0) {
			fn = handlers[i].fn;
			rules = handlers[i].rules;
			break;
		}
	c->fail_stderr = rules & SHIM_VERB_STDERR;
	r = shim_verb_open(verb, argc, argv, rules, &v, err);
	if (r < 0)
		return r;
	if (r > 0) {
		/* --help, or nothing to act on: the backend's own answer, as for any verb. */
		c->fail_stderr = false;
		fn = shim_cmd_passthrough;
	}
	/* The verbs that start the box's processes. */
	if ((rules & SHIM_VERB_STDIO) && (r = neutral_priority(err)) < 0)
		return r;
	return fn(c, &v, err);
}

static int dispatch(struct shim_ctx *c, int argc, char **argv, struct hezo_error **err)
{
	const char *verb;
	int r;

	r = shim_parse_globals(argc, argv, &c->g, err);
	if (r < 0)
		return r;
	if (c->g.version) {
		printf("hezo-shim version %s\ncommit: %s\nspec: %s\n", HEZO_VERSION, HEZO_COMMIT,
		       HEZO_OCI_SPEC_VERSION);
		return 0;
	}
	if (c->g.help || c->g.verb >= argc || strcmp(argv[c->g.verb], "help") == 0) {
		usage(stdout);
		return 0;
	}
	c->policy_path = env_or("HEZO_POLICY", HEZO_POLICY_PATH);
	c->state_dir = env_or("HEZO_STATE_DIR", HEZO_STATE_DIR);
	c->hook_path = env_or("HEZO_HOOK_PATH", HEZO_HOOK_PATH);
	c->proxyd_socket = env_or("HEZO_PROXYD_SOCKET", HEZO_PROXYD_SOCKET);

	verb = argv[c->g.verb];
	r = shim_root_settle(&c->g, err);
	if (r < 0)
		return r;
	if (strcmp(verb, "project") == 0)
		return shim_cmd_project(c, argc - c->g.verb, argv + c->g.verb);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(admin); i++)
		if (strcmp(admin[i].name, verb) == 0)
			return admin[i].fn(argc - c->g.verb, argv + c->g.verb);
	if (is_forbidden(verb))
		return hezo_error_set(err, EPERM, "command \"%s\" is not allowed through hezo-shim",
				      verb);
	/*
	 * Only the global flags the shim knows reach the backend: any other would follow the
	 * policy's own on its command line and override them (runsc's --oci-seccomp=false,
	 * --ignore-cgroups, --network=host, --allow-flag-override).
	 */
	if (c->g.unknown.n > 0) {
		char q[128];

		hezo_json_escape(q, sizeof(q), c->g.unknown.v[0]);
		return hezo_error_set(
			err, EPERM,
			"global flag \"%s\" is not handed to the backend through "
			"hezo-shim (only --root, --log, --log-format, --debug, "
			"--systemd-cgroup and --rootless; a backend's own flags go in "
			"the policy's backends.NAME.args)",
			q);
	}
	/* CRIU runs as root on the host: it dumps and restores the processes' credentials,
	 * capability sets and seccomp filters from an image the caller names. */
	if (c->g.criu)
		return hezo_error_set(err, EPERM,
				      "global flag --criu: CRIU runs as root outside the box, so "
				      "which binary runs is not the caller's to choose");
	if (strcmp(verb, "checkpoint") == 0 || strcmp(verb, "restore") == 0)
		return hezo_error_set(err, EPERM,
				      "command \"%s\" is not allowed through hezo-shim: CRIU, as "
				      "root on the host, takes the processes' credentials, "
				      "capabilities and seccomp filters from the checkpoint image, "
				      "outside the box",
				      verb);
	return run_verb(c, verb, argc - c->g.verb - 1, argv + c->g.verb + 1, err);
}

/*
 * runc's nsexec reads _LIBCONTAINER_* (the handshake with its own init) on every start, before
 * its command line: the caller's would make the backend act on descriptors and data of the
 * caller's choosing. runc's create and run hand the box systemd's LISTEN_FDS descriptors (see
 * fds.c). The shim uses none of them.
 */
static void scrub_backend_env(void)
{
	for (size_t i = 0; environ[i];) {
		_cleanup_free_ char *name = NULL;

		if (strncmp(environ[i], "_LIBCONTAINER_", 14) != 0 &&
		    strncmp(environ[i], "LISTEN_", 7) != 0) {
			i++;
			continue;
		}
		name = strndup(environ[i], strcspn(environ[i], "="));
		/* unsetenv takes it out of environ; if it cannot, nothing may run. */
		if (!name || unsetenv(name) < 0) {
			fputs("hezo-shim: cannot clear _LIBCONTAINER_* and LISTEN_* from the "
			      "environment\n",
			      stderr);
			exit(1);
		}
	}
}

int main(int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	struct shim_ctx ctx = {.argc = argc, .argv = argv, .log_fd = -1};
	int r;

	scrub_backend_env();
	r = dispatch(&ctx, argc, argv, &err);

	/* Every failure is reported here, once. */
	if (r < 0)
		r = shim_report(&ctx, err);

	shim_globals_done(&ctx.g);
	if (ctx.log_fd >= 0)
		close(ctx.log_fd);
	return r;
}

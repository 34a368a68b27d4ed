/*
 * hezo-proxyd: the egress proxy every jailed container's traffic goes through (docs/egress.md).
 * Start-up: flags, state dir, registrations restored, control socket, privileges dropped; then
 * the loop. With --ctl it is instead a small client of a running daemon.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "hezo-commit.h"
#include "hezo-config.h"
#include "hezo-file.h"
#include "proxyd.h"
#include "tls.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hezo-proxyd [OPTIONS]\n"
		"       hezo-proxyd [--socket PATH] --ctl list|stats|deregister ID|register ...\n"
		"\n"
		"  --state-dir DIR     registrations and namespace mounts (default "
		"/run/hezo-proxyd)\n"
		"  --log-dir DIR       netlog files, one ID.jsonl per container\n"
		"                      (default /var/log/hezo-proxyd, env HEZO_NETLOG_DIR)\n"
		"  --socket PATH       control socket (default %s)\n"
		"  --upstream IP[:PORT] resolver for containers whose policy names none\n"
		"  --conn-limit N      open connections per container (default 256)\n"
		"  --dns-rate N        DNS queries per second per container (default 200)\n"
		"  --idle-timeout S    idle relay timeout in seconds (default 300)\n"
		"  --intercept-memory MIB  memory intercepted connections may reserve (default "
		"512)\n"
		"  --intercept-share MIB   one registration's share of it (default 128)\n"
		"  --metrics ADDR      serve Prometheus metrics on 127.0.0.1:PORT, [::1]:PORT or\n"
		"                      unix:PATH (root only); off by default (docs/metrics.md)\n"
#if HEZO_TEST_SWITCHES
		"  --test-upstream-ca FILE  tests only: trust this CA file toward secrets' hosts\n"
		"                      instead of the host's roots\n"
#endif
		"  --foreground        accepted for service managers; proxyd never forks\n"
		"  --no-seccomp        skip the seccomp filter (debugging only)\n"
		"  --ctl VERB ...      talk to a running proxyd (see proxyd/README.md)\n"
		"  --version\n",
		HEZO_PROXYD_SOCKET);
}

static int parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || !*s || *end || v < min || v > max)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/* --flag N (optarg) within min..max into *out, or a line saying what was expected. */
static bool uint_opt(const char *flag, unsigned min, unsigned max, unsigned *out)
{
	if (parse_uint(optarg, min, max, out) == 0)
		return true;
	fprintf(stderr, "%shezo-proxyd: %s %s: expected %u..%u\n", pd_log_prefix("error"), flag,
		optarg, min, max);
	return false;
}

static int parse_upstream(const char *s)
{
	/* Same syntax as egress.resolvers: the one grammar (egress/). */
	return hezo_resolver_parse(s, &pd_cfg.upstream, NULL);
}

static void tick(void)
{
	pd_registry_tick(pd_now_ms());
}

int main(int argc, char **argv)
{
	enum {
		OPT_STATE = 256,
		OPT_LOG,
		OPT_SOCKET,
		OPT_UPSTREAM,
		OPT_FG,
		OPT_NOSECCOMP,
		OPT_CTL,
		OPT_CONNS,
		OPT_RATE,
		OPT_IDLE,
		OPT_ICPT_MEM,
		OPT_ICPT_SHARE,
		OPT_METRICS,
		OPT_UPSTREAM_CA,
		OPT_VERSION,
		OPT_HELP
	};
	static const struct option opts[] = {
		{"state-dir", required_argument, NULL, OPT_STATE},
		{"log-dir", required_argument, NULL, OPT_LOG},
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"upstream", required_argument, NULL, OPT_UPSTREAM},
		{"foreground", no_argument, NULL, OPT_FG},
		{"no-seccomp", no_argument, NULL, OPT_NOSECCOMP},
		{"ctl", no_argument, NULL, OPT_CTL},
		{"conn-limit", required_argument, NULL, OPT_CONNS},
		{"dns-rate", required_argument, NULL, OPT_RATE},
		{"idle-timeout", required_argument, NULL, OPT_IDLE},
		{"intercept-memory", required_argument, NULL, OPT_ICPT_MEM},
		{"intercept-share", required_argument, NULL, OPT_ICPT_SHARE},
		{"metrics", required_argument, NULL, OPT_METRICS},
#if HEZO_TEST_SWITCHES
		{"test-upstream-ca", required_argument, NULL, OPT_UPSTREAM_CA},
#endif
		{"version", no_argument, NULL, OPT_VERSION},
		{"help", no_argument, NULL, OPT_HELP},
		{0},
	};
	_cleanup_error_ struct hezo_error *err = NULL;
	bool use_seccomp = true, ctl = false;
	const char *metrics = NULL, *upstream_ca = NULL;
	const char *env = getenv("HEZO_NETLOG_DIR");
	struct rlimit rl;
	int c, r;

	if (env && *env)
		pd_cfg.log_dir = env;
	while (!ctl && (c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE:
			pd_cfg.state_dir = optarg;
			break;
		case OPT_LOG:
			pd_cfg.log_dir = optarg;
			break;
		case OPT_SOCKET:
			pd_cfg.socket = optarg;
			break;
		case OPT_UPSTREAM:
			if (parse_upstream(optarg) < 0) {
				fprintf(stderr,
					"hezo-proxyd: --upstream %s: expected IP or IP:PORT\n",
					optarg);
				return 2;
			}
			break;
		case OPT_FG:
			break;
		case OPT_NOSECCOMP:
			use_seccomp = false;
			break;
		case OPT_CTL:
			ctl = true;
			break;
		case OPT_CONNS:
			if (!uint_opt("--conn-limit", 1, 65536, &pd_cfg.conn_cap))
				return 2;
			break;
		case OPT_RATE:
			if (!uint_opt("--dns-rate", 1, 1000000, &pd_cfg.dns_rate))
				return 2;
			break;
		case OPT_IDLE:
			if (!uint_opt("--idle-timeout", 1, 86400, &pd_cfg.idle_timeout_s))
				return 2;
			break;
		case OPT_ICPT_MEM:
			if (!uint_opt("--intercept-memory", 1, 1 << 20, &pd_cfg.icpt_mem_mib))
				return 2;
			break;
		case OPT_ICPT_SHARE:
			if (!uint_opt("--intercept-share", 1, 1 << 20, &pd_cfg.icpt_share_mib))
				return 2;
			break;
		case OPT_METRICS:
			metrics = optarg;
			break;
		case OPT_UPSTREAM_CA:
			upstream_ca = optarg;
			break;
		case OPT_VERSION:
			printf("hezo-proxyd %s (%s)\n", HEZO_VERSION, HEZO_COMMIT);
			return 0;
		case 'h':
		case OPT_HELP:
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (ctl)
		return pd_ctl_main(pd_cfg.socket, argc - optind, argv + optind);
	if (optind != argc) {
		fprintf(stderr, "%shezo-proxyd: unexpected argument %s\n", pd_log_prefix("error"),
			argv[optind]);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr,
			"%shezo-proxyd: must run as root (it enters containers' network "
			"namespaces)\n",
			pd_log_prefix("error"));
		return 1;
	}

	signal(SIGPIPE, SIG_IGN);
	umask(0077);
	/* A relay holds two sockets, and a pipe per direction while moving data. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536) {
		rl.rlim_cur = rl.rlim_max < 65536 ? rl.rlim_max : 65536;
		if (rl.rlim_max < 65536) {
			struct rlimit want = {65536, 65536};

			if (setrlimit(RLIMIT_NOFILE, &want) == 0)
				rl = want;
		}
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	r = hezo_mkdir_p(pd_cfg.state_dir, 0755, 0700);
	if (r < 0) {
		fprintf(stderr, "%shezo-proxyd: state dir %s: %s\n", pd_log_prefix("error"),
			pd_cfg.state_dir, strerror(-r));
		return 1;
	}
	r = hezo_mkdir_p(pd_cfg.log_dir, 0755, 0750);
	if (r < 0) {
		fprintf(stderr, "%shezo-proxyd: log dir %s: %s\n", pd_log_prefix("error"),
			pd_cfg.log_dir, strerror(-r));
		return 1;
	}
	/* The netns helper forks first, so it inherits nothing but what it needs. */
	if (pd_netns_init(&err) < 0 || pd_loop_init(&err) < 0 || pd_registry_init(&err) < 0) {
		fprintf(stderr, "%shezo-proxyd: %s\n", pd_log_prefix("error"), err->msg);
		return 1;
	}
	/*
	 * Running containers get their listeners back before the control socket exists: callers
	 * take the socket as the sign that proxyd serves again, and what a container sends until
	 * the loop runs waits in the listeners' queues instead of being refused.
	 */
	pd_registry_restore();
	if (pd_control_init(&err) < 0 || pd_metrics_init(metrics, &err) < 0) {
		fprintf(stderr, "%shezo-proxyd: %s\n", pd_log_prefix("error"), err->msg);
		return 1;
	}
	/* The supervisor's socket is connected while proxyd may still open any socket. */
	if (pd_notify_init(&err) < 0) {
		pd_log("warning", "%s: the service manager is not told when proxyd is ready",
		       err->msg);
		hezo_error_free(TAKE_PTR(err));
	}
	/* Secrets' values are read into memory: no core dump may hold one. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* Without a CA, connections to secrets' hosts are refused (intercept.c); others relay. */
	if (pd_tls_init(pd_cfg.state_dir, upstream_ca, &err) < 0) {
		pd_log("error", "%s: connections to secrets' hosts will be refused", err->msg);
		hezo_error_free(TAKE_PTR(err));
	}
	if (pd_drop_privileges(use_seccomp, &err) < 0) {
		fprintf(stderr, "%shezo-proxyd: %s\n", pd_log_prefix("error"), err->msg);
		return 1;
	}
	pd_log("info", "hezo-proxyd %s serving on %s (state %s, netlog %s)", HEZO_VERSION,
	       pd_cfg.socket, pd_cfg.state_dir, pd_cfg.log_dir);
	/* Queued netlog lines bound the loop's wait, so they reach the file within their delay;
	 * what is queued when it ends is written before proxyd exits. */
	/* Every socket listens (the control socket, metrics, restored boxes' listeners): what
	 * connects now is answered once the loop runs. */
	pd_notify("READY=1");
	r = pd_loop_run(tick, pd_netlog_poll);
	pd_notify("STOPPING=1");
	pd_netlog_flush_all();
	if (r < 0) {
		pd_log("error", "event loop: %s", strerror(-r));
		return 1;
	}
	/* Registrations and namespace mounts stay: a restarted proxyd picks them up. */
	unlink(pd_cfg.socket);
	return 0;
}

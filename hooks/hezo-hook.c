/* hezo-hook: the OCI hook that jails a container's network namespace (wire, at prestart) and
 * releases it (unwire, at poststop). See docs/egress.md. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hezo-commit.h"
#include "hezo-config.h"
#include "hezo-file.h"
#include "hezo-cgroup.h"
#include "hezo-hook.h"
#include "hezo-netns.h"

#define PROXYD_TIMEOUT_MS 5000
#define CONFIG_MAX	  (16 * 1024 * 1024)

/* Test-only: seconds to stop between registering and installing the table, so a test can kill the
 * hook at its most awkward moment. Capped well below the runtime's hook timeout. */
#define PAUSE_ENV "HEZO_HOOK_TEST_PAUSE_AFTER_REGISTER"

/* HEZO_HOOK_TIMING=1: one line on stderr with the time from main() to each step's end, so the
 * wiring can be told apart from the exec and loader cost an outside timer also sees. */
#define TIMING_ENV "HEZO_HOOK_TIMING"

static struct timespec t_main;

static double ms_since_main(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t_main.tv_sec) * 1e3 +
	       (double)(t.tv_nsec - t_main.tv_nsec) / 1e6;
}

static int fail(struct hezo_error *e)
{
	fprintf(stderr, "hezo-hook: %s\n", e && e->msg ? e->msg : "out of memory");
	hezo_error_free(e);
	return 1;
}

static void warn(const char *what, struct hezo_error *e)
{
	fprintf(stderr, "hezo-hook: %s: %s\n", what, e && e->msg ? e->msg : "out of memory");
}

static const char *proxyd_socket(void)
{
	const char *s = getenv("HEZO_PROXYD_SOCKET");

	return s && *s ? s : HEZO_PROXYD_SOCKET;
}

static int read_state(bool need_pid, struct hezo_hook_state *st, struct hezo_error **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = hezo_read_fd(STDIN_FILENO, HEZO_HOOK_STATE_MAX, &buf, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "reading the state on stdin");
	return hezo_hook_parse_state(buf, len, need_pid, st, err);
}

static uint32_t batch_seq(void)
{
	/* Any value works on a private socket; time keeps traces of separate runs apart. */
	return (uint32_t)time(NULL) & 0x7fffffff;
}

static int nft_apply(bool wire, const struct hezo_hook_nft_params *p, struct hezo_error **err)
{
	_cleanup_free_ char *buf = malloc(HEZO_HOOK_NFT_BUF);
	uint32_t seq = batch_seq();
	unsigned nacks = 0;
	ssize_t len;

	if (!buf)
		return hezo_error_set(err, ENOMEM, "out of memory");
	len = wire ? hezo_hook_nft_build_wire(buf, HEZO_HOOK_NFT_BUF, seq, p, &nacks)
		   : hezo_hook_nft_build_delete(buf, HEZO_HOOK_NFT_BUF, seq, &nacks);
	if (len < 0)
		return hezo_error_set(err, (int)-len, "nftables: building the batch failed");
	return hezo_hook_nft_send(buf, (size_t)len, seq, nacks, !wire, err);
}

static int deregister(int fd, const char *id, struct hezo_error **err)
{
	_cleanup_close_ int own = -1;
	_cleanup_free_ char *req = NULL;
	struct hezo_hook_reply reply = {0};
	size_t reqlen;
	int r;

	if (fd < 0) {
		r = hezo_hook_control_connect(proxyd_socket(), &own, err);
		if (r < 0)
			return r;
		fd = own;
	}
	r = hezo_hook_build_deregister(id, &req, &reqlen, err);
	if (r < 0)
		return r;
	r = hezo_hook_control_call(fd, req, reqlen, -1, PROXYD_TIMEOUT_MS, &reply, err);
	if (r >= 0 && !reply.ok)
		r = hezo_error_set(err, EPROTO, "hezo-proxyd refused to deregister: %s",
				   reply.error);
	hezo_hook_reply_clear(&reply);
	return r;
}

/* Does the egress section name secrets (a "secrets" object that is not empty)? */
static bool has_secrets(const struct hezo_hook_egress *eg)
{
	_cleanup_json_ struct hezo_json *none = hezo_json_new_object();
	const struct hezo_json *s = hezo_json_get_type(eg->json, "secrets", HEZO_JSON_OBJECT);

	return s && !(none && hezo_json_equal(s, none));
}

static int do_register(int fd, int nsfd, const struct hezo_hook_state *st,
		       const struct hezo_hook_egress *eg, struct hezo_hook_nft_params *p,
		       struct hezo_error **err)
{
	_cleanup_error_ struct hezo_error *cgerr = NULL;
	_cleanup_free_ char *req = NULL;
	struct hezo_hook_reply reply = {0};
	uint64_t cgroup = 0;
	size_t reqlen;
	int r;

	/*
	 * Which connections are this container's when others share its namespace. Unknown (0),
	 * proxyd would take every connection of the namespace for a sole member's, a process
	 * that joined it without registering included: a container with secrets is refused
	 * instead (fail closed); one without only gets the warning.
	 */
	if (hezo_cgroup_id(st->pid, &cgroup, &cgerr) < 0) {
		if (has_secrets(eg))
			return hezo_error_set(err, EPERM,
					      "cannot read the container's cgroup v2 id (%s): its "
					      "secrets would go to every process of its network "
					      "namespace",
					      cgerr && cgerr->msg ? cgerr->msg : "cgroup");
		fprintf(stderr, "hezo-hook: warning: %s\n",
			cgerr && cgerr->msg ? cgerr->msg : "cgroup");
	}
	r = hezo_hook_build_register(st->id, eg, cgroup, &req, &reqlen, err);
	if (r < 0)
		return r;
	r = hezo_hook_control_call(fd, req, reqlen, nsfd, PROXYD_TIMEOUT_MS, &reply, err);
	if (r < 0)
		return hezo_error_prefix(err, "registering with hezo-proxyd");
	if (!reply.ok) {
		r = hezo_error_set(err, EPERM, "hezo-proxyd refused the registration: %s",
				   reply.error);
		hezo_hook_reply_clear(&reply);
		return r;
	}
	p->tcp_port = (uint16_t)(reply.tcp_port ?: HEZO_HOOK_TCP_PORT);
	p->dns_port = (uint16_t)(reply.dns_port ?: HEZO_HOOK_DNS_PORT);
	hezo_hook_reply_clear(&reply);
	return 0;
}

static void test_pause(void)
{
#if HEZO_TEST_SWITCHES
	const char *s = getenv(PAUSE_ENV);
	char *end;
	long n;

	if (!s || !*s)
		return;
	n = strtol(s, &end, 10);
	if (*end || n <= 0 || n > 30)
		return;
	sleep((unsigned)n);
#endif
}

static int cmd_wire(int argc, char **argv)
{
	static const struct option opts[] = {
		{"egress", required_argument, NULL, 'e'},
		{},
	};
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_close_ int nsfd = -1, ctl = -1, lock = -1;
	struct hezo_hook_state st = {0};
	struct hezo_hook_egress eg = {0};
	struct hezo_hook_nft_params p = {0};
	const char *egress_arg = NULL;
	bool registered = false;
	double t_reg = 0, t_lo = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			egress_arg = optarg;
			break;
		default:
			fprintf(stderr, "hezo-hook: wire: unknown option\n");
			return 1;
		}
	}
	if (!egress_arg || optind != argc) {
		fprintf(stderr, "hezo-hook: usage: hezo-hook wire --egress JSON < state\n");
		return 1;
	}

	r = hezo_hook_parse_egress(egress_arg, &eg, &err);
	if (r >= 0)
		r = read_state(eg.mode != HEZO_HOOK_MODE_OFF, &st, &err);
	if (r < 0)
		goto out;
	if (eg.mode == HEZO_HOOK_MODE_OFF)
		goto out;
	p.mode = eg.mode;

	r = hezo_hook_netns_open_pid(st.pid, &nsfd, &err);
	if (r >= 0)
		r = hezo_hook_netns_lock(nsfd, &lock, &err);
	if (r < 0)
		goto out;

	if (eg.mode == HEZO_HOOK_MODE_PROXY) {
		r = hezo_hook_control_connect(proxyd_socket(), &ctl, &err);
		if (r < 0)
			goto out;
		r = do_register(ctl, nsfd, &st, &eg, &p, &err);
		if (r < 0)
			goto out;
		registered = true;
		t_reg = ms_since_main();
		test_pause();
	}

	r = hezo_hook_netns_enter(nsfd, &err);
	if (r < 0)
		goto out;
	r = hezo_hook_link_lo_up(&err);
	if (r < 0)
		goto out;
	t_lo = ms_since_main();
	r = nft_apply(true, &p, &err);
	if (r < 0)
		hezo_error_prefix(&err, "installing the egress table");
	else if (HEZO_TEST_SWITCHES && getenv(TIMING_ENV))
		fprintf(stderr,
			"hezo-hook: timing: wired %.3f ms after main() (registered at %.3f, lo up "
			"at %.3f; the rest is the nftables batch and its socket's close)\n",
			ms_since_main(), t_reg, t_lo);

out:
	if (r < 0) {
		/*
		 * Undo the registration; the first error is the one reported. The table is left
		 * as it was: the batch is atomic, so a failed one changed nothing, and a table
		 * already there is another container's that shares this namespace (deleting it
		 * would unfilter that container).
		 */
		if (registered) {
			struct hezo_error *e2 = NULL;
			if (deregister(ctl, st.id, &e2) < 0)
				deregister(-1, st.id, NULL);
			hezo_error_free(e2);
		}
		hezo_hook_state_clear(&st);
		hezo_hook_egress_clear(&eg);
		return fail(TAKE_PTR(err));
	}
	hezo_hook_state_clear(&st);
	hezo_hook_egress_clear(&eg);
	return 0;
}

/* The namespace config.json names, if any: the only one that can outlive the container's
 * processes and still be found (a pod's, another container's, a bind-mounted one). */
static int bundle_netns_path(const char *bundle, char **out, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *cfg = NULL;
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int dfd = -1;
	const struct hezo_json *nss;
	size_t len;
	int r;

	*out = NULL;
	dfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : hezo_error_set_errno(err, errno, "bundle %s", bundle);
	r = hezo_read_file_at(dfd, "config.json", CONFIG_MAX, &buf, &len, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0 || hezo_json_parse(buf, len, &cfg, err) < 0)
		return hezo_error_prefix(err, "bundle %s", bundle);
	nss = hezo_json_get_path(cfg, "linux.namespaces");
	if (!nss || nss->type != HEZO_JSON_ARRAY)
		return 0;
	HEZO_JSON_FOREACH (i, nss) {
		const char *type = hezo_json_string(hezo_json_get(nss->items[i], "type"));
		const char *path = hezo_json_string(hezo_json_get(nss->items[i], "path"));

		if (type && !strcmp(type, "network") && path && path[0] == '/') {
			*out = strdup(path);
			return *out ? 0 : hezo_error_set(err, ENOMEM, "out of memory");
		}
	}
	return 0;
}

/*
 * Poststop must not wedge the container's removal, so unwire always exits 0 and reports
 * unexpected trouble as a warning line. proxyd not running is expected (deny mode, or proxyd
 * down): it drops registrations whose namespace no process uses any more.
 * The state's pid is never used here: by poststop the container's processes are gone and the
 * number may already belong to someone else's container.
 * The table goes only with the namespace's last process: while another container (a pod's
 * other containers, the one this container joined) still runs in it, the table is theirs too.
 * A namespace the runtime created for this container alone dies with it, table and all.
 */
static int cmd_unwire(int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *nspath = NULL;
	_cleanup_close_ int nsfd = -1, lock = -1;
	bool used = true;
	struct hezo_hook_state st = {0};
	int r;

	if (argc != 1) {
		fprintf(stderr, "hezo-hook: usage: hezo-hook unwire < state\n");
		return 0;
	}
	r = read_state(false, &st, &err);
	if (r < 0) {
		warn("unwire", err);
		return 0;
	}

	r = deregister(-1, st.id, &err);
	if (r < 0 && r != -ENOENT && r != -ECONNREFUSED)
		warn("unwire", err);
	hezo_error_free(TAKE_PTR(err));
	r = 0;

	if (st.bundle)
		r = bundle_netns_path(st.bundle, &nspath, &err);
	if (r >= 0 && nspath) {
		r = hezo_hook_netns_open_path(nspath, &nsfd, &err);
		if (r == -ENOENT) {
			r = 0;
		} else if (r >= 0) {
			r = hezo_hook_netns_lock(nsfd, &lock, &err);
			if (r >= 0)
				r = hezo_netns_in_use(nsfd, &used, &err);
			if (r >= 0 && !used)
				r = hezo_hook_netns_enter(nsfd, &err);
			if (r >= 0 && !used)
				r = nft_apply(false, NULL, &err);
		}
	}
	if (r < 0 && err)
		warn("unwire", err);
	hezo_hook_state_clear(&st);
	return 0;
}

int main(int argc, char **argv)
{
	clock_gettime(CLOCK_MONOTONIC, &t_main);
	if (argc >= 2 && !strcmp(argv[1], "wire"))
		return cmd_wire(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "unwire"))
		return cmd_unwire(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) {
		printf("hezo-hook %s (commit %s)\n", HEZO_VERSION, HEZO_COMMIT);
		return 0;
	}
	fprintf(stderr,
		"hezo-hook: usage: hezo-hook wire --egress JSON | unwire  (state on stdin)\n");
	return 1;
}

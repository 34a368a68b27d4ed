/* `hezo-shim doctor [--format json]`: one line (or one JSON entry) per check of what hezo-shim
 * needs on this host; non-zero on any FAIL. */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/magic.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netlink.h>
#include <dirent.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "hezo-config.h"
#include "hezo-install.h"
#include "hezo-json.h"
#include "hezo-policy.h"
#include "install-internal.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

struct doctor {
	unsigned ok, fail, warn, skip;
	const char *policy_path, *proxyd_socket, *hook_path;
	const char *docker_config, *containerd_config, *podman_config;
	struct hezo_policy *policy;
	bool docker_given;
	/* Set when the main policy or a project's asks for proxy egress: proxyd must answer. */
	const char *proxy_user;
	char proxy_project[300];
	struct hezo_json *checks; /* --format json: the entries, printed at the end */
};

static void report(struct doctor *d, const char *status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void report(struct doctor *d, const char *status, const char *fmt, ...)
{
	va_list ap;

	if (strcmp(status, "ok") == 0)
		d->ok++;
	else if (strcmp(status, "FAIL") == 0)
		d->fail++;
	else if (strcmp(status, "warn") == 0)
		d->warn++;
	else
		d->skip++;
	if (d->checks) {
		_cleanup_free_ char *msg = NULL;
		struct hezo_json *c = hezo_json_new_object();
		int r;

		va_start(ap, fmt);
		r = vasprintf(&msg, fmt, ap);
		va_end(ap);
		if (r < 0 || !c || hezo_json_set(c, "status", hezo_json_new_string(status)) < 0 ||
		    hezo_json_set(c, "message", hezo_json_new_string(msg)) < 0 ||
		    hezo_json_append(d->checks, c) < 0) {
			hezo_json_free(c);
			d->fail++;
		}
		return;
	}
	printf("%-4s ", status);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static bool executable(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static void check_policy(struct doctor *d)
{
	_cleanup_error_ struct hezo_error *e = NULL;

	if (hezo_policy_load(d->policy_path, &d->policy, &e) < 0) {
		report(d, "FAIL", "%s", e && e->msg ? e->msg : "policy does not load");
		return;
	}
	report(d, "ok", "policy %s loads (mode %s, backend %s)", d->policy_path,
	       hezo_policy_production(d->policy) ? "production" : "dev",
	       hezo_backend_name(hezo_policy_backend(d->policy)));
	if (hezo_policy_egress_mode(d->policy) == HEZO_EGRESS_PROXY)
		d->proxy_user = "the policy";
}

/*
 * Every project file as its containers get it (layered over the policy): a file that does not
 * layer refuses every box of its project, and a project with proxy egress needs proxyd even when
 * the main policy has none.
 */
static void check_projects(struct doctor *d)
{
	DIR *dir;
	const char *pdir;
	struct dirent *de;
	unsigned n = 0;

	if (!d->policy)
		return;
	pdir = hezo_policy_projects_dir(d->policy);
	if (!pdir || !(dir = opendir(pdir))) {
		if (pdir && errno != ENOENT)
			report(d, "FAIL", "projects: cannot read %s: %s", pdir, strerror(errno));
		return;
	}
	while ((de = readdir(dir))) {
		_cleanup_error_ struct hezo_error *e = NULL;
		_cleanup_policy_ struct hezo_policy *p = NULL;
		size_t len = strlen(de->d_name);
		char name[256];

		if (de->d_name[0] == '.' || len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 5), de->d_name);
		n++;
		if (hezo_policy_for_container(d->policy, NULL, name, &p, &e) < 0) {
			report(d, "FAIL", "project %s: %s", name,
			       e && e->msg ? e->msg : "does not load");
			continue;
		}
		report(d, "ok", "project %s loads (backend %s, egress %s)", name,
		       hezo_backend_name(hezo_policy_backend(p)),
		       hezo_policy_egress_mode(p) == HEZO_EGRESS_PROXY ? "proxy" : "not proxy");
		if (hezo_policy_egress_mode(p) == HEZO_EGRESS_PROXY && !d->proxy_user) {
			snprintf(d->proxy_project, sizeof(d->proxy_project), "project %s", name);
			d->proxy_user = d->proxy_project;
		}
	}
	closedir(dir);
	if (n == 0)
		report(d, "skip", "projects: none in %s", pdir);
}

/* "runc version 1.1.5\ncommit: ..." -> "1.1.5"; the first line otherwise. */
static void first_version(const char *out, char *v, size_t size)
{
	const char *p = strstr(out, "version ");
	size_t n;

	p = p ? p + 8 : out;
	n = strcspn(p, "\n");
	snprintf(v, size, "%.*s", (int)n, p);
}

long hezo_install_runsc_release(const char *out)
{
	const char *p;
	long date = 0;
	int n = 0;

	if (!out)
		return -EINVAL;
	p = strstr(out, "version ");
	if (!p || memchr(out, '\n', (size_t)(p - out)))
		return -EINVAL;
	p += 8;
	if (strncmp(p, "release-", 8) == 0)
		p += 8;
	else if (strncmp(p, "0.0~", 4) == 0)
		p += 4;
	else
		return -EINVAL;
	for (; n < 8 && p[n] >= '0' && p[n] <= '9'; n++)
		date = date * 10 + (p[n] - '0');
	if (n != 8 || (p[n] >= '0' && p[n] <= '9') || date < 20180101L)
		return -EINVAL;
	return date;
}

/* What this host's runsc means for the box: Debian 12's own release has two known costs. */
static void check_runsc_release(struct doctor *d, const char *out, bool needed)
{
	long date = hezo_install_runsc_release(out);

	if (date < 0)
		report(d, "warn",
		       "runsc: cannot tell the release from `runsc --version`; "
		       "hezo-shim is tested with %ld",
		       HEZO_INSTALL_RUNSC_TESTED);
	else if (date <= HEZO_INSTALL_RUNSC_OLD)
		report(d, "warn",
		       "runsc: release %ld (Debian 12's own) returns EAGAIN from blocking reads "
		       "in host network mode and costs about 8 host tasks per sandboxed process; "
		       "install %ld or newer: apt-get install -t bookworm-backports runsc%s",
		       date, HEZO_INSTALL_RUNSC_TESTED, needed ? " (the policy uses runsc)" : "");
	else if (date < HEZO_INSTALL_RUNSC_TESTED)
		report(d, "warn",
		       "runsc: release %ld is older than %ld, the one hezo-shim is tested with",
		       date, HEZO_INSTALL_RUNSC_TESTED);
}

static void check_backends(struct doctor *d)
{
	static const char *const defaults[] = {"/usr/bin/runsc", "/usr/sbin/runc", "/usr/bin/crun"};

	for (int b = 0; b < HEZO_BACKEND_COUNT; b++) {
		const char *name = hezo_backend_name((enum hezo_backend)b);
		const char *path = d->policy ? hezo_policy_backend_path(d->policy, b) : defaults[b];
		bool needed = d->policy &&
			      (hezo_policy_backend(d->policy) == (enum hezo_backend)b ||
			       (b == HEZO_BACKEND_RUNSC && hezo_policy_production(d->policy)));
		_cleanup_free_ char *out = NULL;
		char version[128];
		int r;

		if (!path)
			path = defaults[b];
		if (!executable(path)) {
			if (needed)
				report(d, "FAIL",
				       "%s: %s is missing or not executable, and the policy "
				       "%s",
				       name, path,
				       hezo_policy_backend(d->policy) == (enum hezo_backend)b
					       ? "uses it by default"
					       : "is production (runsc only)");
			else
				report(d, "skip", "%s: not installed at %s", name, path);
			continue;
		}
		{
			const char *argv[] = {path, "--version", NULL};

			r = hezo_install_run(argv, 10000, &out);
		}
		if (r != 0) {
			report(d, needed ? "FAIL" : "warn", "%s: `%s --version` exits %d: %.200s",
			       name, path, r, out ? out : "");
			continue;
		}
		first_version(out, version, sizeof(version));
		report(d, "ok", "%s %s at %s%s", name, version, path,
		       needed ? " (required by the policy)" : "");
		if (b == HEZO_BACKEND_RUNSC)
			check_runsc_release(d, out, needed);
		/* Limits the box cannot close, said rather than claimed (docs/hardening.md). */
		for (const char *const *l = hezo_backend_limits((enum hezo_backend)b); *l; l++)
			report(d, needed ? "warn" : "skip", "%s: %s", name, *l);
	}
}

static void check_hook(struct doctor *d)
{
	if (executable(d->hook_path))
		report(d, "ok", "hook %s is executable", d->hook_path);
	else
		report(d, "FAIL", "hook %s is missing or not executable: egress wiring cannot run",
		       d->hook_path);
}

/* Ask nf_tables for its generation id: answers only when the kernel has nf_tables. */
static int nft_probe(char *why, size_t size)
{
	struct {
		struct nlmsghdr nh;
		struct nfgenmsg nfg;
	} req = {
		.nh = {.nlmsg_len = sizeof(req),
		       .nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETGEN,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK,
		       .nlmsg_seq = 1},
		.nfg = {.nfgen_family = AF_UNSPEC, .version = NFNETLINK_V0},
	};
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	_cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	char buf[8192];
	struct pollfd pfd;
	ssize_t n;

	if (fd < 0) {
		snprintf(why, size, "netlink NETLINK_NETFILTER socket: %s", strerror(errno));
		return -1;
	}
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(why, size, "netlink send: %s", strerror(errno));
		return -1;
	}
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	if (poll(&pfd, 1, 2000) <= 0) {
		snprintf(why, size, "no answer from nfnetlink");
		return -1;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < (ssize_t)sizeof(struct nlmsghdr)) {
		snprintf(why, size, "short netlink answer");
		return -1;
	}
	for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n);
	     nh = NLMSG_NEXT(nh, n)) {
		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);

			if (e->error != 0) {
				snprintf(why, size, "nf_tables answers: %s", strerror(-e->error));
				return -1;
			}
		} else if ((nh->nlmsg_type & 0xff) == NFT_MSG_NEWGEN) {
			return 0;
		}
	}
	return 0;
}

static void check_kernel(struct doctor *d)
{
	static const char *const ns[] = {"mnt", "pid", "net", "ipc", "uts", "user", "cgroup"};
	char why[256], missing[128] = "";
	struct statfs sfs;
	struct stat st;
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *actions = NULL;
	size_t len = 0;
	bool exists = false;
	int r;

	if (nft_probe(why, sizeof(why)) == 0)
		report(d, "ok", "kernel: nf_tables answers over netlink");
	else
		report(d, "FAIL",
		       "kernel: nftables unusable (%s): egress rules cannot be installed", why);

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(ns); i++) {
		char p[64];

		snprintf(p, sizeof(p), "/proc/self/ns/%s", ns[i]);
		if (lstat(p, &st) < 0)
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 " %s", ns[i]);
	}
	if (missing[0])
		report(d, "FAIL", "kernel: namespaces missing:%s", missing);
	else
		report(d, "ok", "kernel: namespaces mnt pid net ipc uts user cgroup");

	if (statfs("/sys/fs/cgroup", &sfs) < 0) {
		report(d, "FAIL", "kernel: statfs /sys/fs/cgroup: %s", strerror(errno));
	} else if (sfs.f_type == CGROUP2_SUPER_MAGIC) {
		report(d, "ok", "kernel: cgroup v2 (unified) at /sys/fs/cgroup");
	} else if (sfs.f_type == TMPFS_MAGIC) {
		struct statfs u;
		bool hybrid = statfs("/sys/fs/cgroup/unified", &u) == 0 &&
			      u.f_type == CGROUP2_SUPER_MAGIC;

		report(d, "ok", "kernel: cgroup v1%s at /sys/fs/cgroup",
		       hybrid ? " (hybrid, cgroup2 at /sys/fs/cgroup/unified)" : "");
	} else {
		report(d, "FAIL", "kernel: /sys/fs/cgroup is not a cgroup mount (magic 0x%lx)",
		       (unsigned long)sfs.f_type);
	}

	r = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
	if (r < 0) {
		report(d, "FAIL", "kernel: seccomp unavailable (prctl PR_GET_SECCOMP: %s)",
		       strerror(errno));
	} else if (hezo_install_read_optional("/proc/sys/kernel/seccomp/actions_avail", &actions,
					      &len, &exists, &e) < 0 ||
		   !exists) {
		report(d, "FAIL",
		       "kernel: seccomp filters unavailable (no "
		       "/proc/sys/kernel/seccomp/actions_avail)");
	} else {
		actions[strcspn(actions, "\n")] = '\0';
		if (strstr(actions, "errno") && strstr(actions, "kill_process"))
			report(d, "ok", "kernel: seccomp filters (actions: %s)", actions);
		else
			report(d, "FAIL", "kernel: seccomp lacks errno/kill_process actions (%s)",
			       actions);
	}
}

/*
 * A file a runc box holds costs it about 400 bytes of kernel memory, charged to its memory cgroup,
 * and a mapping keeps a file open past its descriptor: so the memory cap, not RLIMIT_NOFILE, is
 * what bounds a box's share of the host's file table (fs.file-max, one global count).
 */
#define FILE_KMEM	 400
#define HEZO_SYSCTL_FILE "/usr/lib/sysctl.d/50-hezo-shim.conf"

static void check_file_table(struct doctor *d)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	unsigned long long file_max;
	uint64_t mem, files;
	size_t len = 0;
	bool exists = false;

	if (!d->policy)
		return;
	if (hezo_install_read_optional("/proc/sys/fs/file-max", &text, &len, &exists, &e) < 0 ||
	    !exists) {
		report(d, "skip", "kernel: fs.file-max cannot be read");
		return;
	}
	file_max = strtoull(text, NULL, 10);
	mem = hezo_policy_memory(d->policy);
	files = mem ? mem / FILE_KMEM : UINT64_MAX;
	if (file_max >= files) {
		report(d, "ok",
		       "kernel: fs.file-max %llu holds the files one box's memory cap could pay "
		       "for",
		       file_max);
		return;
	}
	if (mem)
		report(d, "warn",
		       "kernel: fs.file-max %llu is below the %" PRIu64 " files one runc box's "
		       "memory cap (%" PRIu64 " bytes, ~%d bytes a file) could hold open: one box "
		       "can fill the host's file table; raise it as systemd does: sysctl "
		       "-p " HEZO_SYSCTL_FILE " (or sysctl -w fs.file-max=9223372036854775807)",
		       file_max, files, mem, FILE_KMEM);
	else
		report(d, "warn",
		       "kernel: fs.file-max %llu bounds a runc box without a memory cap "
		       "(resources.memory) by nothing else: one box can fill the host's file "
		       "table; "
		       "raise it as systemd does: sysctl -p " HEZO_SYSCTL_FILE
		       " (or sysctl -w fs.file-max=9223372036854775807)",
		       file_max);
}

static void check_proxyd(struct doctor *d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	static const char req[] = "{\"op\":\"stats\"}";
	_cleanup_close_ int fd = -1;
	_cleanup_json_ struct hezo_json *reply = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	char buf[65536];
	struct pollfd pfd;
	ssize_t n;

	if (!d->policy) {
		report(d, "skip",
		       "proxyd: the policy does not load, so its egress mode is unknown");
		return;
	}
	if (!d->proxy_user) {
		report(d, "skip", "proxyd: neither the policy nor a project has egress proxy");
		return;
	}
	if (strlen(d->proxyd_socket) >= sizeof(sa.sun_path)) {
		report(d, "FAIL", "proxyd: socket path %s is too long", d->proxyd_socket);
		return;
	}
	strcpy(sa.sun_path, d->proxyd_socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		report(d, "FAIL",
		       "proxyd: cannot connect to %s (%s): containers with egress proxy "
		       "(%s) will be refused; start it: systemctl start hezo-proxyd",
		       d->proxyd_socket, strerror(errno), d->proxy_user);
		return;
	}
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) {
		report(d, "FAIL", "proxyd: send to %s: %s", d->proxyd_socket, strerror(errno));
		return;
	}
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	if (poll(&pfd, 1, 3000) <= 0) {
		report(d, "FAIL", "proxyd: no answer on %s within 3 s", d->proxyd_socket);
		return;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	if (n <= 0) {
		report(d, "FAIL", "proxyd: %s closed without answering", d->proxyd_socket);
		return;
	}
	if (hezo_json_parse(buf, (size_t)n, &reply, &e) < 0 ||
	    !hezo_json_is_true(hezo_json_get(reply, "ok"))) {
		report(d, "FAIL", "proxyd: unexpected answer to stats: %.*s",
		       (int)(n > 200 ? 200 : n), buf);
		return;
	}
	report(d, "ok", "proxyd answers on %s", d->proxyd_socket);
}

static void check_docker(struct doctor *d)
{
	_cleanup_free_ char *dockerd = hezo_install_which("dockerd");
	_cleanup_free_ char *text = NULL, *info = NULL;
	_cleanup_json_ struct hezo_json *root = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	const char *shim;
	size_t len = 0;
	bool exists = false;

	if (!dockerd && !d->docker_given) {
		report(d, "skip", "docker: dockerd is not installed");
		return;
	}
	if (hezo_install_read_optional(d->docker_config, &text, &len, &exists, &e) < 0) {
		report(d, "FAIL", "docker: %s", e->msg);
		return;
	}
	if (!exists) {
		report(d, "warn", "docker: not registered (no %s); run: hezo-shim install --docker",
		       d->docker_config);
		return;
	}
	if (hezo_json_parse(text, len, &root, &e) < 0) {
		report(d, "FAIL", "docker: %s is not valid JSON: %s", d->docker_config, e->msg);
		return;
	}
	shim = hezo_json_string(
		hezo_json_get_path(root, "runtimes." HEZO_INSTALL_DOCKER_RUNTIME ".path"));
	if (!shim) {
		report(d, "warn",
		       "docker: %s has no runtime \"%s\"; run: hezo-shim install --docker",
		       d->docker_config, HEZO_INSTALL_DOCKER_RUNTIME);
		return;
	}
	if (!executable(shim)) {
		report(d, "FAIL", "docker: runtime \"%s\" points at %s, which is not executable",
		       HEZO_INSTALL_DOCKER_RUNTIME, shim);
		return;
	}
	{
		const char *argv[] = {"docker", "info", "--format", "{{json .Runtimes}}", NULL};

		if (hezo_install_run(argv, 10000, &info) == 0 && info[0] == '{' &&
		    !strstr(info, "\"" HEZO_INSTALL_DOCKER_RUNTIME "\"")) {
			report(d, "warn",
			       "docker: %s registers %s, but the running dockerd has not "
			       "loaded it; reload: kill -HUP $(cat /var/run/docker.pid)",
			       d->docker_config, shim);
			return;
		}
	}
	report(d, "ok", "docker: runtime \"%s\" -> %s in %s", HEZO_INSTALL_DOCKER_RUNTIME, shim,
	       d->docker_config);
}

/* Our block's runtime path: the string after `marker` on a line inside the block. */
static bool block_path(const char *text, const char *marker, char *path, size_t size)
{
	const char *b = strstr(text, HEZO_INSTALL_BLOCK_BEGIN), *p, *q;

	if (!b || !(p = strstr(b, marker)))
		return false;
	p = strchr(p + strlen(marker), '"');
	if (!p || !(q = strchr(p + 1, '"')))
		return false;
	snprintf(path, size, "%.*s", (int)(q - p - 1), p + 1);
	return true;
}

static void check_toml_engine(struct doctor *d, const char *engine, const char *binary,
			      const char *config, const char *marker, const char *flag)
{
	_cleanup_free_ char *exe = hezo_install_which(binary);
	_cleanup_free_ char *text = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	char shim[4096];
	size_t len = 0;
	bool exists = false;

	if (!exe) {
		report(d, "skip", "%s: not installed", engine);
		return;
	}
	if (hezo_install_read_optional(config, &text, &len, &exists, &e) < 0) {
		report(d, "FAIL", "%s: %s", engine, e->msg);
		return;
	}
	if (!exists || !hezo_install_blocks_present(text, len)) {
		report(d, "warn", "%s: not registered in %s; run: hezo-shim install --%s", engine,
		       config, flag);
		return;
	}
	if (!block_path(text, marker, shim, sizeof(shim)) || !executable(shim)) {
		report(d, "FAIL", "%s: the hezo-shim block in %s names no executable shim", engine,
		       config);
		return;
	}
	report(d, "ok", "%s: registered in %s -> %s", engine, config, shim);
}

/* The shim's own environment may point at other paths; doctor checks what the shim will use. */
static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

int hezo_doctor_main(int argc, char **argv)
{
	enum { OPT_POLICY = 256, OPT_SOCKET, OPT_DOCKER, OPT_CONTAINERD, OPT_PODMAN, OPT_FORMAT };
	static const struct option longopts[] = {
		{"policy", required_argument, NULL, OPT_POLICY},
		{"proxyd-socket", required_argument, NULL, OPT_SOCKET},
		{"docker-config", required_argument, NULL, OPT_DOCKER},
		{"containerd-config", required_argument, NULL, OPT_CONTAINERD},
		{"podman-config", required_argument, NULL, OPT_PODMAN},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct doctor d = {
		.policy_path = env_or("HEZO_POLICY", HEZO_POLICY_PATH),
		.proxyd_socket = env_or("HEZO_PROXYD_SOCKET", HEZO_PROXYD_SOCKET),
		.hook_path = env_or("HEZO_HOOK_PATH", HEZO_HOOK_PATH),
		.docker_config = "/etc/docker/daemon.json",
		.containerd_config = "/etc/containerd/config.toml",
		.podman_config = "/etc/containers/containers.conf",
	};
	_cleanup_json_ struct hezo_json *doc = NULL;
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_POLICY:
			d.policy_path = optarg;
			break;
		case OPT_SOCKET:
			d.proxyd_socket = optarg;
			break;
		case OPT_DOCKER:
			d.docker_config = optarg;
			d.docker_given = true;
			break;
		case OPT_CONTAINERD:
			d.containerd_config = optarg;
			break;
		case OPT_PODMAN:
			d.podman_config = optarg;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "json") == 0 && !doc) {
				doc = hezo_json_new_object();
				d.checks = doc ? hezo_json_ensure_array(doc, "checks") : NULL;
				if (!d.checks) {
					fprintf(stderr, "hezo-shim doctor: out of memory\n");
					return 2;
				}
			} else if (strcmp(optarg, "text") != 0 && strcmp(optarg, "json") != 0) {
				fprintf(stderr, "hezo-shim doctor: --format %s: text or json\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			printf("Usage: hezo-shim doctor [--format text|json] [--policy PATH]\n"
			       "       [--proxyd-socket PATH] [--docker-config PATH]\n"
			       "       [--containerd-config PATH] [--podman-config PATH]\n");
			return 0;
		default:
			fprintf(stderr, "hezo-shim doctor: unknown or incomplete option \"%s\"\n",
				argv[optind - 1]);
			return 2;
		}
	}
	check_policy(&d);
	check_projects(&d);
	check_backends(&d);
	check_hook(&d);
	check_kernel(&d);
	check_file_table(&d);
	check_proxyd(&d);
	check_docker(&d);
	check_toml_engine(&d, "containerd", "containerd", d.containerd_config, "BinaryName",
			  "containerd");
	check_toml_engine(&d, "podman", "podman", d.podman_config, HEZO_INSTALL_PODMAN_RUNTIME " =",
			  "podman");
	rc = d.fail ? 1 : 0;
	if (doc) {
		_cleanup_free_ char *out = NULL;
		_cleanup_error_ struct hezo_error *e = NULL;
		size_t len;

		if (hezo_json_set(doc, "ok", hezo_json_new_uint(d.ok)) < 0 ||
		    hezo_json_set(doc, "failed", hezo_json_new_uint(d.fail)) < 0 ||
		    hezo_json_set(doc, "warnings", hezo_json_new_uint(d.warn)) < 0 ||
		    hezo_json_set(doc, "skipped", hezo_json_new_uint(d.skip)) < 0 ||
		    hezo_json_dump(doc, false, &out, &len, &e) < 0) {
			fprintf(stderr, "hezo-shim doctor: cannot write the JSON report\n");
			rc = 2;
		} else {
			printf("%s\n", out);
		}
	} else {
		printf("%u ok, %u failed, %u warnings, %u skipped\n", d.ok, d.fail, d.warn, d.skip);
	}
	hezo_policy_free(d.policy);
	return rc;
}

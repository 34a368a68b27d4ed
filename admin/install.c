/* `hezo-shim install` and `hezo-shim uninstall`: register the shim with Docker, containerd, podman.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-install.h"
#include "hezo-json.h"
#include "install-internal.h"

#define DOCKER_CONFIG	  "/etc/docker/daemon.json"
#define DOCKER_PIDFILE	  "/var/run/docker.pid"
#define CONTAINERD_CONFIG "/etc/containerd/config.toml"
#define PODMAN_CONFIG	  "/etc/containers/containers.conf"
#define BACKUP_SUFFIX	  ".hezo-backup"

struct opts {
	const char *verb;
	bool docker, containerd, podman;
	bool dry_run, no_reload, restart;
	const char *config, *shim, *pidfile;
};

static void usage(FILE *f, const char *verb)
{
	fprintf(f,
		"Usage: hezo-shim %s --docker|--containerd|--podman [OPTIONS]\n"
		"  --docker        %s /etc/docker/daemon.json (runtime \"hezo-shim\")\n"
		"  --containerd    %s /etc/containerd/config.toml (runtime \"hezo\", CRI handler)\n"
		"  --podman        %s /etc/containers/containers.conf (runtime \"hezo-shim\")\n"
		"  --config PATH   edit PATH instead of the engine's usual file (one engine only)\n"
		"%s"
		"  --dry-run       print what would be written; change nothing\n"
		"  --no-reload     do not signal dockerd (SIGHUP) afterwards\n"
		"  --pidfile PATH  dockerd's pid file (default " DOCKER_PIDFILE ")\n"
		"  --restart       restart containerd with systemctl afterwards\n",
		verb, strcmp(verb, "install") ? "unregister from" : "register in",
		strcmp(verb, "install") ? "unregister from" : "register in",
		strcmp(verb, "install") ? "unregister from" : "register in",
		strcmp(verb, "install")
			? ""
			: "  --shim PATH     the shim engines run (default: this binary)\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	enum { OPT_NO_RELOAD = 256, OPT_PIDFILE, OPT_RESTART, OPT_SHIM, OPT_CONFIG };
	static const struct option longopts[] = {
		{"docker", no_argument, NULL, 'd'},
		{"containerd", no_argument, NULL, 'c'},
		{"podman", no_argument, NULL, 'p'},
		{"dry-run", no_argument, NULL, 'n'},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"shim", required_argument, NULL, OPT_SHIM},
		{"no-reload", no_argument, NULL, OPT_NO_RELOAD},
		{"pidfile", required_argument, NULL, OPT_PIDFILE},
		{"restart", no_argument, NULL, OPT_RESTART},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	o->verb = argv[0];
	optind = 0; /* the shim may have run getopt already: start over */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->docker = true;
			break;
		case 'c':
			o->containerd = true;
			break;
		case 'p':
			o->podman = true;
			break;
		case 'n':
			o->dry_run = true;
			break;
		case OPT_CONFIG:
			o->config = optarg;
			break;
		case OPT_SHIM:
			o->shim = optarg;
			break;
		case OPT_NO_RELOAD:
			o->no_reload = true;
			break;
		case OPT_PIDFILE:
			o->pidfile = optarg;
			break;
		case OPT_RESTART:
			o->restart = true;
			break;
		case 'h':
			usage(stdout, o->verb);
			return 1;
		default:
			fprintf(stderr, "hezo-shim %s: unknown or incomplete option \"%s\"\n",
				o->verb, argv[optind - 1]);
			usage(stderr, o->verb);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hezo-shim %s: unexpected argument \"%s\"\n", o->verb,
			argv[optind]);
		return -1;
	}
	if (!o->docker && !o->containerd && !o->podman) {
		fprintf(stderr,
			"hezo-shim %s: name an engine: --docker, --containerd or --podman\n",
			o->verb);
		return -1;
	}
	if (o->config && o->docker + o->containerd + o->podman > 1) {
		fprintf(stderr, "hezo-shim %s: --config goes with one engine only\n", o->verb);
		return -1;
	}
	if (o->shim && o->shim[0] != '/') {
		fprintf(stderr, "hezo-shim %s: --shim %s: give an absolute path\n", o->verb,
			o->shim);
		return -1;
	}
	return 0;
}

static void fail(const struct opts *o, const char *engine, const char *path,
		 const struct hezo_error *e, const char *what)
{
	fprintf(stderr, "hezo-shim %s: %s: %s: %s; %s\n", o->verb, engine, path,
		e && e->msg ? e->msg : "failed", what);
}

static void show(const char *engine, const char *path, const char *text, size_t len)
{
	printf("%s: would write %s:\n", engine, path);
	fwrite(text, 1, len, stdout);
	if (len && text[len - 1] != '\n')
		printf("\n");
	printf("%s: (end of %s; --dry-run changed nothing)\n", engine, path);
}

static int write_config(const char *path, const char *text, size_t len, struct hezo_error **err)
{
	return hezo_write_file_atomic_at(AT_FDCWD, path, text, len, 0644, err);
}

/* Docker re-reads "runtimes" on SIGHUP; no restart, running containers are untouched. */
bool hezo_install_reload_docker(const char *pidfile)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *text = NULL, *comm = NULL, *commpath = NULL;
	size_t len = 0;
	bool exists = false;
	long pid;

	if (!pidfile)
		pidfile = DOCKER_PIDFILE;
	if (hezo_install_read_optional(pidfile, &text, &len, &exists, &e) < 0 || !exists) {
		printf("docker: dockerd is not running (no %s); it reads the file when it starts\n",
		       pidfile);
		return false;
	}
	pid = strtol(text, NULL, 10);
	if (pid <= 1 || asprintf(&commpath, "/proc/%ld/comm", pid) < 0 ||
	    hezo_install_read_optional(commpath, &comm, &len, &exists, &e) < 0 || !exists ||
	    strncmp(comm, "dockerd", 7) != 0) {
		printf("docker: dockerd is not running (stale %s); it reads the file when it "
		       "starts\n",
		       pidfile);
		return false;
	}
	if (kill((pid_t)pid, SIGHUP) < 0) {
		printf("docker: could not signal dockerd (pid %ld): %s; reload it with "
		       "`kill -HUP %ld` or restart it\n",
		       pid, strerror(errno), pid);
		return false;
	}
	printf("docker: sent SIGHUP to dockerd (pid %ld) to reload its runtimes\n", pid);
	return true;
}

static bool reload_docker(const struct opts *o)
{
	if (o->no_reload || o->dry_run)
		return false;
	return hezo_install_reload_docker(o->pidfile);
}

/* Whether TEXT (NULL: no file) is a JSON object with a top-level "runtimes" key. */
bool hezo_install_has_runtimes(const char *text, size_t len)
{
	_cleanup_json_ struct hezo_json *j = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;

	return text && hezo_json_parse(text, len, &j, &e) == 0 &&
	       hezo_json_get(j, "runtimes") != NULL;
}

/*
 * dockerd 20.10 keeps the runtimes it has when a reload finds no file, or a file without
 * "runtimes" (measured: `docker info` still listed hezo-shim after the file went). Before the
 * file becomes such, dockerd is shown an empty "runtimes" once, and the change waits until it
 * has read that (its close of the file, seen by inotify; 5 s at most).
 */
void hezo_install_docker_drop_runtimes(const char *path, const char *pidfile)
{
	static const char empty[] = "{\"runtimes\": {}}\n";
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_close_ int in = -1;
	struct pollfd pfd;
	char buf[4096];

	if (write_config(path, empty, sizeof(empty) - 1, &e) < 0)
		return;
	in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (in < 0 || inotify_add_watch(in, path, IN_CLOSE_NOWRITE) < 0)
		return;
	pfd = (struct pollfd){.fd = in, .events = POLLIN};
	if (hezo_install_reload_docker(pidfile) && poll(&pfd, 1, 5000) == 1)
		(void)!read(in, buf, sizeof(buf));
}

static void drop_runtimes_first(const struct opts *o, const char *path)
{
	if (o->no_reload || o->dry_run)
		return;
	hezo_install_docker_drop_runtimes(path, o->pidfile);
}

static int docker_install(const struct opts *o, const char *shim)
{
	const char *path = o->config ? o->config : DOCKER_CONFIG;
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *old = NULL, *new = NULL, *backup = NULL, *bak = NULL;
	size_t len = 0, new_len = 0, bak_len = 0;
	bool exists = false, changed = false, bak_exists = false;
	struct stat st;

	if (hezo_install_read_optional(path, &old, &len, &exists, &e) < 0) {
		fail(o, "docker", path, e, "nothing changed");
		return 1;
	}
	if (hezo_install_docker_merge(old, len, exists, shim, &new, &new_len, &changed, &e) < 0) {
		fail(o, "docker", path, e, "file left unchanged");
		return 1;
	}
	if (!changed) {
		printf("docker: %s already registers runtime \"%s\" at %s; nothing to do\n", path,
		       HEZO_INSTALL_DOCKER_RUNTIME, shim);
		return 0;
	}
	if (o->dry_run) {
		show("docker", path, new, new_len);
		return 0;
	}
	if (asprintf(&backup, "%s" BACKUP_SUFFIX, path) < 0)
		return 1;
	if (exists) {
		if (hezo_install_read_optional(backup, &bak, &bak_len, &bak_exists, &e) < 0) {
			fail(o, "docker", backup, e, "nothing changed");
			return 1;
		}
		if (!bak_exists) {
			mode_t mode = stat(path, &st) == 0 ? (st.st_mode & 07777) : 0600;

			if (hezo_write_file_atomic_at(AT_FDCWD, backup, old, len, mode, &e) < 0) {
				fail(o, "docker", backup, e, "nothing changed");
				return 1;
			}
			printf("docker: saved the original as %s\n", backup);
		} else {
			printf("docker: kept the existing backup %s\n", backup);
		}
	}
	if (write_config(path, new, new_len, &e) < 0) {
		fail(o, "docker", path, e, "file left unchanged (is Docker installed?)");
		return 1;
	}
	printf("docker: registered runtime \"%s\" (%s) in %s%s\n", HEZO_INSTALL_DOCKER_RUNTIME,
	       shim, path, exists ? "" : " (new file)");
	reload_docker(o);
	printf("docker: use it with `docker run --runtime %s ...`\n", HEZO_INSTALL_DOCKER_RUNTIME);
	return 0;
}

static int docker_uninstall(const struct opts *o)
{
	const char *path = o->config ? o->config : DOCKER_CONFIG;
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *cur = NULL, *backup = NULL, *bak = NULL, *out = NULL;
	size_t len = 0, bak_len = 0, out_len = 0;
	bool exists = false, bak_exists = false;
	enum hezo_uninstall_action action;

	if (hezo_install_read_optional(path, &cur, &len, &exists, &e) < 0) {
		fail(o, "docker", path, e, "nothing changed");
		return 1;
	}
	if (!exists) {
		printf("docker: %s does not exist; nothing to do\n", path);
		return 0;
	}
	if (asprintf(&backup, "%s" BACKUP_SUFFIX, path) < 0 ||
	    hezo_install_read_optional(backup, &bak, &bak_len, &bak_exists, &e) < 0) {
		fail(o, "docker", backup, e, "nothing changed");
		return 1;
	}
	if (hezo_install_docker_unmerge(cur, len, bak_exists ? bak : NULL, bak_len, &action, &out,
					&out_len, &e) < 0) {
		fail(o, "docker", path, e, "file left unchanged");
		return 1;
	}
	if ((action == HEZO_UNINSTALL_DELETE ||
	     (action == HEZO_UNINSTALL_RESTORE_BACKUP &&
	      !hezo_install_has_runtimes(bak, bak_len)) ||
	     (action == HEZO_UNINSTALL_REWRITE && !hezo_install_has_runtimes(out, out_len))))
		drop_runtimes_first(o, path);
	switch (action) {
	case HEZO_UNINSTALL_NOTHING:
		printf("docker: %s does not register runtime \"%s\"; nothing to do\n", path,
		       HEZO_INSTALL_DOCKER_RUNTIME);
		return 0;
	case HEZO_UNINSTALL_RESTORE_BACKUP:
		if (o->dry_run) {
			printf("docker: would restore %s from %s (unchanged since install)\n", path,
			       backup);
			return 0;
		}
		if (rename(backup, path) < 0) {
			fprintf(stderr, "hezo-shim uninstall: docker: rename %s to %s: %s\n",
				backup, path, strerror(errno));
			return 1;
		}
		printf("docker: restored %s from %s: it is byte for byte what it was before "
		       "install\n",
		       path, backup);
		break;
	case HEZO_UNINSTALL_DELETE:
		if (o->dry_run) {
			printf("docker: would remove %s (install created it)\n", path);
			return 0;
		}
		if (unlink(path) < 0) {
			fprintf(stderr, "hezo-shim uninstall: docker: remove %s: %s\n", path,
				strerror(errno));
			return 1;
		}
		printf("docker: removed %s (install had created it)\n", path);
		break;
	case HEZO_UNINSTALL_REWRITE:
		if (o->dry_run) {
			show("docker", path, out, out_len);
			return 0;
		}
		if (write_config(path, out, out_len, &e) < 0) {
			fail(o, "docker", path, e, "file left unchanged");
			return 1;
		}
		printf("docker: %s was edited after install: removed only runtimes.%s and kept the "
		       "other changes%s%s\n",
		       path, HEZO_INSTALL_DOCKER_RUNTIME,
		       bak_exists ? "; the pre-install copy stays at " : "",
		       bak_exists ? backup : "");
		break;
	}
	reload_docker(o);
	return 0;
}

/* Ask containerd itself whether it can read the new file and sees runtime. */
int hezo_install_containerd_check(const char *text, size_t len, const char *runtime,
				  struct hezo_error **err)
{
	_cleanup_free_ char *exe = hezo_install_which("containerd");
	_cleanup_free_ char *out = NULL;
	char tmp[] = "/tmp/hezo-containerd-check-XXXXXX";
	int fd, r;

	if (!exe)
		return 0;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "mkstemp");
	r = hezo_write_all(fd, text, len);
	close(fd);
	if (r < 0) {
		unlink(tmp);
		return hezo_error_set(err, -r, "write %s", tmp);
	}
	{
		const char *argv[] = {"containerd", "--config", tmp, "config", "dump", NULL};

		r = hezo_install_run(argv, 20000, &out);
	}
	unlink(tmp);
	if (r != 0)
		return hezo_error_set(err, EINVAL,
				      "containerd cannot read the result (`containerd "
				      "config dump` exit %d): %.300s",
				      r, out ? out : "");
	{
		_cleanup_free_ char *bare = NULL, *quoted = NULL;

		if (asprintf(&bare, ".containerd.runtimes.%s]", runtime) < 0 ||
		    asprintf(&quoted, ".containerd.runtimes.\"%s\"]", runtime) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
		if (!strstr(out, bare) && !strstr(out, quoted))
			return hezo_error_set(err, EINVAL,
					      "containerd reads the result but does not see "
					      "runtime \"%s\"",
					      runtime);
	}
	return 0;
}

static void restart_containerd(const struct opts *o)
{
	_cleanup_free_ char *out = NULL;
	const char *argv[] = {"systemctl", "restart", "containerd", NULL};
	int r;

	if (o->dry_run)
		return;
	if (!o->restart) {
		printf("containerd: restart containerd to load it (running containers keep "
		       "running): systemctl restart containerd\n");
		return;
	}
	r = hezo_install_run(argv, 60000, &out);
	if (r == 0)
		printf("containerd: restarted containerd\n");
	else
		printf("containerd: `systemctl restart containerd` failed (%d): %s; restart it "
		       "yourself\n",
		       r, out ? out : strerror(-r));
}

typedef int (*toml_add_fn)(const char *, size_t, bool, const char *, char **, size_t *, bool *,
			   struct hezo_error **);

static int toml_install(const struct opts *o, const char *engine, const char *path, toml_add_fn add,
			const char *shim)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *old = NULL, *new = NULL;
	size_t len = 0, new_len = 0;
	bool exists = false, changed = false;

	if (hezo_install_read_optional(path, &old, &len, &exists, &e) < 0) {
		fail(o, engine, path, e, "nothing changed");
		return 1;
	}
	if (add(old, len, exists, shim, &new, &new_len, &changed, &e) < 0) {
		fail(o, engine, path, e, "file left unchanged");
		return 1;
	}
	if (!changed) {
		printf("%s: %s already registers %s; nothing to do\n", engine, path, shim);
		return 0;
	}
	if (add == hezo_install_containerd_add &&
	    hezo_install_containerd_check(new, new_len, HEZO_INSTALL_CONTAINERD_RUNTIME, &e) < 0) {
		fail(o, engine, path, e, "file left unchanged");
		return 1;
	}
	if (o->dry_run) {
		show(engine, path, new, new_len);
		return 0;
	}
	if (write_config(path, new, new_len, &e) < 0) {
		fail(o, engine, path, e, "file left unchanged");
		return 1;
	}
	printf("%s: registered %s in %s%s\n", engine, shim, path, exists ? "" : " (new file)");
	return 0;
}

static int toml_uninstall(const struct opts *o, const char *engine, const char *path)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *cur = NULL, *out = NULL;
	size_t len = 0, out_len = 0;
	bool exists = false, changed = false, del = false;

	if (hezo_install_read_optional(path, &cur, &len, &exists, &e) < 0) {
		fail(o, engine, path, e, "nothing changed");
		return 1;
	}
	if (!exists) {
		printf("%s: %s does not exist; nothing to do\n", engine, path);
		return 0;
	}
	if (hezo_install_blocks_remove(cur, len, &out, &out_len, &changed, &del, &e) < 0) {
		fail(o, engine, path, e, "file left unchanged");
		return 1;
	}
	if (!changed) {
		printf("%s: %s holds no hezo-shim block; nothing to do\n", engine, path);
		return 0;
	}
	if (o->dry_run) {
		if (del)
			printf("%s: would remove %s (install created it)\n", engine, path);
		else
			show(engine, path, out, out_len);
		return 0;
	}
	if (del) {
		if (unlink(path) < 0) {
			fprintf(stderr, "hezo-shim %s: %s: remove %s: %s\n", o->verb, engine, path,
				strerror(errno));
			return 1;
		}
		printf("%s: removed %s (install had created it)\n", engine, path);
		return 0;
	}
	if (write_config(path, out, out_len, &e) < 0) {
		fail(o, engine, path, e, "file left unchanged");
		return 1;
	}
	printf("%s: removed the hezo-shim block from %s; the rest is as it was\n", engine, path);
	return 0;
}

int hezo_install_main(int argc, char **argv)
{
	struct opts o = {0};
	_cleanup_free_ char *shim = NULL;
	int r, rc = 0;

	r = parse_opts(argc, argv, &o);
	if (r != 0)
		return r > 0 ? 0 : 2;
	shim = o.shim ? strdup(o.shim) : hezo_install_default_shim();
	if (!shim)
		return 1;
	if (access(shim, X_OK) < 0)
		fprintf(stderr, "hezo-shim install: warning: %s is not an executable file (yet)\n",
			shim);
	if (o.docker)
		rc |= docker_install(&o, shim);
	if (o.containerd) {
		r = toml_install(&o, "containerd", o.config ? o.config : CONTAINERD_CONFIG,
				 hezo_install_containerd_add, shim);
		rc |= r;
		if (r == 0)
			restart_containerd(&o);
	}
	if (o.podman) {
		r = toml_install(&o, "podman", o.config ? o.config : PODMAN_CONFIG,
				 hezo_install_podman_add, shim);
		rc |= r;
		if (r == 0 && !o.dry_run)
			printf("podman: use it with `podman --runtime %s run ...`\n",
			       HEZO_INSTALL_PODMAN_RUNTIME);
	}
	return rc;
}

int hezo_uninstall_main(int argc, char **argv)
{
	struct opts o = {0};
	int r, rc = 0;

	r = parse_opts(argc, argv, &o);
	if (r != 0)
		return r > 0 ? 0 : 2;
	if (o.shim) {
		fprintf(stderr, "hezo-shim uninstall: --shim is for install only\n");
		return 2;
	}
	if (o.docker)
		rc |= docker_uninstall(&o);
	if (o.containerd) {
		r = toml_uninstall(&o, "containerd", o.config ? o.config : CONTAINERD_CONFIG);
		rc |= r;
		if (r == 0)
			restart_containerd(&o);
	}
	if (o.podman)
		rc |= toml_uninstall(&o, "podman", o.config ? o.config : PODMAN_CONFIG);
	return rc;
}

/*
 * `hezo-shim project create|list|show|rm`: a project file and a runtime `hezo-NAME` for it in
 * every engine installed, in one command, and taken out again leaving each file as it was.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-config.h"
#include "hezo-file.h"
#include "hezo-install.h"
#include "hezo-json.h"
#include "hezo-mountinfo.h"
#include "hezo-policy.h"
#include "hezo-strv.h"
#include "install-internal.h"

#define DOCKER_CONFIG	  "/etc/docker/daemon.json"
#define CONTAINERD_CONFIG "/etc/containerd/config.toml"
/* podman reads every *.conf here after containers.conf: a project's runtime is a file of its own.
 */
#define PODMAN_DIR "/etc/containers/containers.conf.d"

enum { ENGINE_DOCKER = 1, ENGINE_CONTAINERD = 2, ENGINE_PODMAN = 4 };

struct popts {
	const char *sub, *name;
	const char *workspace, *backend, *shim, *policy;
	const char *docker_config, *containerd_config, *podman_dir, *link_dir, *pidfile;
	struct hezo_strv allow;
	unsigned engines; /* 0: every engine installed */
	bool force, no_reload;
};

static void usage(FILE *f)
{
	fputs("Usage: hezo-shim project create NAME [--workspace DIR|volume] [--allow HOST]...\n"
	      "                                     [--backend runc|runsc] [--force]\n"
	      "       hezo-shim project list\n"
	      "       hezo-shim project show NAME\n"
	      "       hezo-shim project rm NAME\n"
	      "create writes PROJECTS_DIR/NAME.json (checked as `policy check --project` does) "
	      "and\n"
	      "registers runtime hezo-NAME with every engine installed; rm undoes both, refused\n"
	      "while a box of the project lives.\n"
	      "  --engine docker|containerd|podman   only these engines (repeat; default: "
	      "installed)\n"
	      "  --shim PATH          the shim the runtimes run (default: this binary)\n"
	      "  --policy PATH        the main policy (default $HEZO_POLICY or " HEZO_POLICY_PATH
	      ")\n"
	      "  --docker-config PATH, --containerd-config PATH, --podman-dir DIR, --link-dir DIR\n"
	      "  --pidfile PATH       dockerd's pid file;  --no-reload  do not signal dockerd\n",
	      f);
}

static int parse(int argc, char **argv, struct popts *o)
{
	enum {
		O_WORKSPACE = 256,
		O_ALLOW,
		O_BACKEND,
		O_FORCE,
		O_SHIM,
		O_POLICY,
		O_DOCKER,
		O_CONTAINERD,
		O_PODMAN,
		O_LINKS,
		O_PIDFILE,
		O_NORELOAD,
		O_ENGINE,
	};
	static const struct option longopts[] = {
		{"workspace", required_argument, NULL, O_WORKSPACE},
		{"allow", required_argument, NULL, O_ALLOW},
		{"backend", required_argument, NULL, O_BACKEND},
		{"force", no_argument, NULL, O_FORCE},
		{"shim", required_argument, NULL, O_SHIM},
		{"policy", required_argument, NULL, O_POLICY},
		{"docker-config", required_argument, NULL, O_DOCKER},
		{"containerd-config", required_argument, NULL, O_CONTAINERD},
		{"podman-dir", required_argument, NULL, O_PODMAN},
		{"link-dir", required_argument, NULL, O_LINKS},
		{"pidfile", required_argument, NULL, O_PIDFILE},
		{"no-reload", no_argument, NULL, O_NORELOAD},
		{"engine", required_argument, NULL, O_ENGINE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? -1 : 1;
	}
	o->sub = argv[1];
	optind = 0;
	opterr = 0;
	/* Options may come before or after NAME. */
	while ((c = getopt_long(argc - 1, argv + 1, "h", longopts, NULL)) != -1) {
		switch (c) {
		case O_WORKSPACE:
			o->workspace = optarg;
			break;
		case O_ALLOW:
			if (hezo_strv_push(&o->allow, optarg) < 0)
				return -1;
			break;
		case O_BACKEND:
			o->backend = optarg;
			break;
		case O_FORCE:
			o->force = true;
			break;
		case O_SHIM:
			o->shim = optarg;
			break;
		case O_POLICY:
			o->policy = optarg;
			break;
		case O_DOCKER:
			o->docker_config = optarg;
			break;
		case O_CONTAINERD:
			o->containerd_config = optarg;
			break;
		case O_PODMAN:
			o->podman_dir = optarg;
			break;
		case O_LINKS:
			o->link_dir = optarg;
			break;
		case O_PIDFILE:
			o->pidfile = optarg;
			break;
		case O_NORELOAD:
			o->no_reload = true;
			break;
		case O_ENGINE:
			if (strcmp(optarg, "docker") == 0)
				o->engines |= ENGINE_DOCKER;
			else if (strcmp(optarg, "containerd") == 0)
				o->engines |= ENGINE_CONTAINERD;
			else if (strcmp(optarg, "podman") == 0)
				o->engines |= ENGINE_PODMAN;
			else {
				fprintf(stderr,
					"hezo-shim project: --engine %s: docker, containerd or "
					"podman\n",
					optarg);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			fprintf(stderr, "hezo-shim project: unknown or incomplete option \"%s\"\n",
				argv[optind]);
			return -1;
		}
	}
	/* getopt_long (without '+') moved the operands to the end: argv[1 + optind..]. */
	if (optind < argc - 1)
		o->name = argv[1 + optind++];
	if (optind < argc - 1) {
		fprintf(stderr, "hezo-shim project %s: unexpected argument \"%s\"\n", o->sub,
			argv[1 + optind]);
		return -1;
	}
	if (strcmp(o->sub, "list") != 0 && !o->name) {
		fprintf(stderr, "hezo-shim project %s: name the project\n", o->sub);
		return -1;
	}
	if (o->shim && o->shim[0] != '/') {
		fprintf(stderr, "hezo-shim project: --shim %s: give an absolute path\n", o->shim);
		return -1;
	}
	return 0;
}

static const char *docker_path(const struct popts *o)
{
	return o->docker_config ? o->docker_config : DOCKER_CONFIG;
}

static const char *containerd_path(const struct popts *o)
{
	return o->containerd_config ? o->containerd_config : CONTAINERD_CONFIG;
}

/* The engines create registers with: those named, else those whose program is installed. */
static unsigned engines(const struct popts *o)
{
	unsigned e = o->engines;
	_cleanup_free_ char *d = NULL, *c = NULL, *p = NULL;

	if (e)
		return e;
	if (o->docker_config || (d = hezo_install_which("dockerd")))
		e |= ENGINE_DOCKER;
	if (o->containerd_config || (c = hezo_install_which("containerd")))
		e |= ENGINE_CONTAINERD;
	if (o->podman_dir || (p = hezo_install_which("podman")))
		e |= ENGINE_PODMAN;
	return e;
}

static int load_base(const struct popts *o, struct hezo_policy **out)
{
	const char *env = getenv("HEZO_POLICY");
	const char *path = o->policy ? o->policy : env && *env ? env : HEZO_POLICY_PATH;
	_cleanup_error_ struct hezo_error *e = NULL;

	if (hezo_policy_load(path, out, &e) < 0) {
		fprintf(stderr, "hezo-shim project: %s\n", e->msg);
		return -1;
	}
	return 0;
}

/* The docker entry of project name, as create writes it (shim NULL: the one in cur). */
static struct hezo_json *docker_entry(const char *name, const char *shim)
{
	_cleanup_json_ struct hezo_json *entry = hezo_json_new_object();
	struct hezo_json *args = hezo_json_new_array();

	if (!entry || !args || hezo_json_set(entry, "path", hezo_json_new_string(shim)) < 0 ||
	    hezo_json_set(entry, "runtimeArgs", args) < 0 ||
	    hezo_json_append(args, hezo_json_new_string("--hezo-project")) < 0 ||
	    hezo_json_append(args, hezo_json_new_string(name)) < 0)
		return NULL;
	return TAKE_PTR(entry);
}

/*
 * The entry runtimes.hezo-NAME of a daemon.json, when it is one create wrote: a path and
 * exactly `--hezo-project NAME`. NULL otherwise.
 */
static struct hezo_json *docker_entry_in(const char *text, size_t len, const char *runtime,
					 const char *name)
{
	_cleanup_json_ struct hezo_json *root = NULL, *want = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	const struct hezo_json *have;
	const char *path;

	if (!text || hezo_json_parse(text, len, &root, &e) < 0)
		return NULL;
	have = hezo_json_get(hezo_json_get(root, "runtimes"), runtime);
	path = hezo_json_string(hezo_json_get(have, "path"));
	if (!path || !(want = docker_entry(name, path)) || !hezo_json_equal(have, want))
		return NULL;
	return TAKE_PTR(want);
}

static char *link_path(const struct popts *o, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/hezo-shim@%s", o->link_dir ? o->link_dir : HEZO_PROJECT_LINK_DIR,
		     name) < 0)
		return NULL;
	return p;
}

static char *podman_file(const struct popts *o, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/hezo-%s.conf", o->podman_dir ? o->podman_dir : PODMAN_DIR, name) < 0)
		return NULL;
	return p;
}

static char *podman_text(const char *runtime, const char *link)
{
	char *t = NULL;

	/* Names and paths here are of [a-z0-9._@/-]: a TOML basic string needs no escapes. */
	if (asprintf(&t,
		     "# Written by `hezo-shim project create`; `hezo-shim project rm` removes this "
		     "file.\n[engine.runtimes]\n\"%s\" = [\"%s\"]\n",
		     runtime, link) < 0)
		return NULL;
	return t;
}

/* One file create or rm changes, with what it held before (for undo, and to say what it did). */
struct change {
	char *path;
	char *old, *new; /* new NULL: remove the file */
	size_t old_len, new_len;
	bool existed;
	bool is_link; /* new is the target of a symlink */
	const char *what;
};

struct plan {
	struct change c[6];
	size_t n;
};

static void plan_done(struct plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->c[i].path);
		free(p->c[i].old);
		free(p->c[i].new);
	}
}

static int mkdir_p(const char *path)
{
	_cleanup_free_ char *d = strdup(path);

	if (!d)
		return -ENOMEM;
	for (char *s = d + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(d, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return 0;
}

static int apply_one(const struct change *c, struct hezo_error **err)
{
	if (mkdir_p(c->path) < 0)
		return hezo_error_set_errno(err, errno, "%s: cannot make its directory", c->path);
	if (c->is_link) {
		_cleanup_free_ char *tmp = NULL;

		if (!c->new) {
			if (unlink(c->path) < 0 && errno != ENOENT)
				return hezo_error_set_errno(err, errno, "remove %s", c->path);
			return 0;
		}
		if (asprintf(&tmp, "%s.tmp%d", c->path, (int)getpid()) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
		unlink(tmp);
		if (symlink(c->new, tmp) < 0 || rename(tmp, c->path) < 0) {
			int e = errno;

			unlink(tmp);
			return hezo_error_set_errno(err, e, "link %s -> %s", c->path, c->new);
		}
		return 0;
	}
	if (!c->new) {
		if (unlink(c->path) < 0 && errno != ENOENT)
			return hezo_error_set_errno(err, errno, "remove %s", c->path);
		return 0;
	}
	return hezo_write_file_atomic_at(AT_FDCWD, c->path, c->new, c->new_len, 0644, err);
}

/* Put a file back as it was before apply_one. */
static void undo_one(const struct change *c)
{
	_cleanup_error_ struct hezo_error *e = NULL;

	if (!c->existed) {
		unlink(c->path);
	} else if (c->is_link) {
		unlink(c->path);
		(void)!symlink(c->old, c->path);
	} else {
		hezo_write_file_atomic_at(AT_FDCWD, c->path, c->old, c->old_len, 0644, &e);
	}
}

/* Write every change, in order; on a failure, undo those written and say which failed. */
static int plan_apply(const struct plan *p)
{
	_cleanup_error_ struct hezo_error *e = NULL;

	for (size_t i = 0; i < p->n; i++) {
		if (apply_one(&p->c[i], &e) < 0) {
			fprintf(stderr, "hezo-shim project: %s; the files before it are put back\n",
				e->msg);
			while (i-- > 0)
				undo_one(&p->c[i]);
			return -1;
		}
		printf("%s: %s %s\n", p->c[i].what,
		       !p->c[i].new	 ? "removed"
		       : p->c[i].existed ? "rewrote"
					 : "wrote",
		       p->c[i].path);
	}
	return 0;
}

static struct change *plan_add(struct plan *p, const char *what, const char *path)
{
	struct change *c = &p->c[p->n];

	*c = (struct change){.what = what, .path = strdup(path)};
	if (!c->path)
		return NULL;
	p->n++;
	return c;
}

static int read_link(const char *path, char **out, bool *exists)
{
	char buf[PATH_MAX];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);

	*exists = false;
	*out = NULL;
	if (n < 0)
		return errno == ENOENT ? 0 : -errno;
	buf[n] = '\0';
	*exists = true;
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

static int project_doc(const struct popts *o, char **text, size_t *len)
{
	_cleanup_json_ struct hezo_json *doc = hezo_json_new_object();
	_cleanup_error_ struct hezo_error *e = NULL;
	char *grown;

	if (!doc)
		return -ENOMEM;
	if (o->backend && hezo_json_set(doc, "backend", hezo_json_new_string(o->backend)) < 0)
		return -ENOMEM;
	if (o->allow.n) {
		struct hezo_json *eg = hezo_json_ensure_object(doc, "egress");
		struct hezo_json *list = hezo_json_new_array();

		if (!eg || !list || hezo_json_set(eg, "allow", list) < 0)
			return -ENOMEM;
		for (size_t i = 0; i < o->allow.n; i++)
			if (hezo_json_append(list, hezo_json_new_string(o->allow.v[i])) < 0)
				return -ENOMEM;
	}
	/* "workspace" is the policy's key to check (a directory, or the word "volume"). */
	if (o->workspace && hezo_json_set(doc, "workspace", hezo_json_new_string(o->workspace)) < 0)
		return -ENOMEM;
	if (hezo_json_dump(doc, true, text, len, &e) < 0)
		return -ENOMEM;
	grown = realloc(*text, *len + 2);
	if (!grown)
		return -ENOMEM;
	*text = grown;
	(*text)[(*len)++] = '\n';
	(*text)[*len] = '\0';
	return 0;
}

/*
 * The shim refuses a box whose workspace is, holds or is inside another project's (by name,
 * symlink or bind mount), or has a symlink on its path: a project made so would never run a box,
 * so create says so first.
 */
static int workspace_taken(const struct hezo_policy *base, const struct hezo_policy *p)
{
	_cleanup_(hezo_mounts_free) struct hezo_mounts mounts = {0};
	char why[2 * PATH_MAX + 128], dir[PATH_MAX];
	int r = hezo_mounts_read(&mounts);

	if (r < 0) {
		fprintf(stderr, "hezo-shim project create: /proc/self/mountinfo: %s\n",
			strerror(-r));
		return r;
	}
	r = hezo_policy_workspace_clash(base, p, &mounts, why, sizeof(why));
	if (r < 0) {
		hezo_policy_projects_why(base, r, why, sizeof(why));
		fprintf(stderr, "hezo-shim project create: %s\n", why);
	} else if (r > 0)
		fprintf(stderr, "hezo-shim project create: workspace %s\n", why);
	if (r != 0)
		return r > 0 ? -EEXIST : r;
	/* A missing part stops the walk before any symlink after it; one before it is ELOOP. */
	if (hezo_policy_workspace_is_volume(p) ||
	    hezo_policy_workspace_dir(p, dir, sizeof(dir)) < 0)
		return 0;
	r = hezo_open_nofollow(dir, NULL);
	if (r == -ELOOP) {
		fprintf(stderr,
			"hezo-shim project create: workspace %s: a symlink is on its path, and the "
			"shim opens a workspace without following one\n",
			dir);
		return r;
	}
	if (r >= 0)
		close(r);
	return 0;
}

/*
 * The workspace's parent keeps other users out of it: a box's root may chmod the workspace 755
 * while it runs (red team ws2, F1). One others can search is refused; a missing one is made
 * 0700 (make) once every other check has passed. A volume lives in the engine's closed store.
 */
static int workspace_parent(const struct hezo_policy *p, bool make)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	if (hezo_policy_workspace_is_volume(p) ||
	    hezo_policy_workspace_dir(p, dir, sizeof(dir)) < 0)
		return 0;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0; /* "/NAME": the policy refuses a workspace whose parent is / */
	*slash = '\0';
	if (stat(dir, &st) == 0) {
		if (!(st.st_mode & (S_IXGRP | S_IXOTH)))
			return 0;
		fprintf(stderr,
			"hezo-shim project create: workspace %s/%s: other users can search its "
			"parent; chmod 0700 %s\n",
			dir, slash + 1, dir);
		return -EPERM;
	}
	if (errno != ENOENT || !make) {
		int e = errno;

		if (e == ENOENT)
			return 0;
		fprintf(stderr, "hezo-shim project create: workspace parent %s: %s\n", dir,
			strerror(e));
		return -e;
	}
	/* Its own parents as any directory create makes; it alone 0700. */
	if (mkdir_p(dir) < 0 || (mkdir(dir, 0700) < 0 && errno != EEXIST)) {
		int e = errno;

		fprintf(stderr, "hezo-shim project create: workspace parent %s: %s\n", dir,
			strerror(e));
		return -e;
	}
	return 0;
}

/*
 * Is text what create writes? The inputs it records (backend, egress.allow, workspace) are read
 * back and the file written again from them: a file with anything else in it, or laid out
 * otherwise, is someone else's (an admin's own NAME.json).
 */
static bool project_doc_ours(const char *text, size_t len)
{
	_cleanup_json_ struct hezo_json *doc = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *want = NULL;
	const struct hezo_json *v, *allow;
	struct popts in = {0};
	size_t want_len = 0;
	bool ours = false;

	if (hezo_json_parse(text, len, &doc, &e) < 0 || doc->type != HEZO_JSON_OBJECT)
		return false;
	v = hezo_json_get(doc, "backend");
	if (v && !(in.backend = hezo_json_string(v)))
		return false;
	v = hezo_json_get(doc, "workspace");
	if (v && !(in.workspace = hezo_json_string(v)))
		return false;
	allow = hezo_json_get_type(hezo_json_get(doc, "egress"), "allow", HEZO_JSON_ARRAY);
	HEZO_JSON_FOREACH (i, allow) {
		const char *host = hezo_json_string(allow->items[i]);

		if (!host || hezo_strv_push(&in.allow, host) < 0)
			goto out;
	}
	ours = project_doc(&in, &want, &want_len) == 0 && want_len == len &&
	       memcmp(want, text, len) == 0;
out:
	hezo_strv_done(&in.allow);
	return ours;
}

static int cmd_create(const struct popts *o)
{
	_cleanup_policy_ struct hezo_policy *base = NULL, *layered = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *text = NULL, *file = NULL, *shim = NULL, *runtime = NULL;
	_cleanup_free_ char *link = NULL, *pfile = NULL;
	_cleanup_(plan_done) struct plan p = {0};
	unsigned eng = engines(o);
	size_t len = 0;
	bool docker_changed = false;
	struct change *c;

	if (load_base(o, &base) < 0)
		return 1;
	if (project_doc(o, &text, &len) < 0 || asprintf(&runtime, "hezo-%s", o->name) < 0 ||
	    asprintf(&file, "%s/%s.json", hezo_policy_projects_dir(base), o->name) < 0)
		return 1;
	/* The checks the shim makes of the file when a box of the project is created. */
	if (hezo_policy_layer_project(base, o->name, file, text, len, &layered, &e) < 0) {
		fprintf(stderr, "hezo-shim project create: %s\n", e->msg);
		return 1;
	}
	if (workspace_taken(base, layered) < 0 || workspace_parent(layered, false) < 0)
		return 1;
	shim = o->shim ? strdup(o->shim) : hezo_install_default_shim();
	link = link_path(o, o->name);
	pfile = podman_file(o, o->name);
	if (!shim || !link || !pfile)
		return 1;

	c = plan_add(&p, "project", file);
	if (!c || hezo_install_read_optional(file, &c->old, &c->old_len, &c->existed, &e) < 0) {
		fprintf(stderr, "hezo-shim project create: %s\n", e ? e->msg : "out of memory");
		return 1;
	}
	if (c->existed && (c->old_len != len || memcmp(c->old, text, len) != 0) && !o->force) {
		fprintf(stderr,
			"hezo-shim project create: %s exists and says something else; --force "
			"replaces it\n",
			file);
		return 1;
	}
	if (c->existed && c->old_len == len && memcmp(c->old, text, len) == 0) {
		printf("project: %s is already this project's file\n", file);
		p.n--;
		free(c->path);
		free(c->old);
	} else {
		c->new = TAKE_PTR(text);
		c->new_len = len;
	}

	if (eng & (ENGINE_CONTAINERD | ENGINE_PODMAN)) {
		/* containerd and podman run a binary with no arguments: its name says the project.
		 */
		c = plan_add(&p, "runtime link", link);
		if (!c || read_link(link, &c->old, &c->existed) < 0) {
			fprintf(stderr, "hezo-shim project create: cannot read %s\n", link);
			return 1;
		}
		c->is_link = true;
		if (c->existed && strcmp(c->old, shim) == 0) {
			p.n--;
			free(c->path);
			free(c->old);
		} else if (c->existed && !o->force) {
			fprintf(stderr,
				"hezo-shim project create: %s points at %s, not %s; --force "
				"replaces it\n",
				link, c->old, shim);
			return 1;
		} else if (!(c->new = strdup(shim))) {
			return 1;
		}
	}
	if (eng & ENGINE_DOCKER) {
		_cleanup_json_ struct hezo_json *entry = docker_entry(o->name, shim);
		const char *path = docker_path(o);

		c = plan_add(&p, "docker", path);
		if (!c || !entry ||
		    hezo_install_read_optional(path, &c->old, &c->old_len, &c->existed, &e) < 0 ||
		    hezo_install_docker_add_runtime(c->old, c->old_len, c->existed, runtime, entry,
						    &c->new, &c->new_len, &docker_changed,
						    &e) < 0) {
			fprintf(stderr, "hezo-shim project create: docker: %s: %s\n", path,
				e ? e->msg : "out of memory");
			return 1;
		}
		if (!docker_changed) {
			printf("docker: %s already registers runtime %s\n", path, runtime);
			p.n--;
			free(c->path);
			free(c->old);
			free(c->new);
		}
	}
	if (eng & ENGINE_CONTAINERD) {
		const char *path = containerd_path(o);
		bool changed = false;

		c = plan_add(&p, "containerd", path);
		if (!c ||
		    hezo_install_read_optional(path, &c->old, &c->old_len, &c->existed, &e) < 0 ||
		    hezo_install_containerd_project_add(c->old, c->old_len, c->existed, runtime,
							link, &c->new, &c->new_len, &changed,
							&e) < 0 ||
		    (changed &&
		     hezo_install_containerd_check(c->new, c->new_len, runtime, &e) < 0)) {
			fprintf(stderr, "hezo-shim project create: containerd: %s: %s\n", path,
				e ? e->msg : "out of memory");
			return 1;
		}
		if (!changed) {
			printf("containerd: %s already registers runtime %s\n", path, runtime);
			p.n--;
			free(c->path);
			free(c->old);
			free(c->new);
		}
	}
	if (eng & ENGINE_PODMAN) {
		_cleanup_free_ char *want = podman_text(runtime, link);

		c = plan_add(&p, "podman", pfile);
		if (!c || !want ||
		    hezo_install_read_optional(pfile, &c->old, &c->old_len, &c->existed, &e) < 0) {
			fprintf(stderr, "hezo-shim project create: podman: %s: %s\n", pfile,
				e ? e->msg : "out of memory");
			return 1;
		}
		if (c->existed && strcmp(c->old, want) == 0) {
			printf("podman: %s already registers runtime %s\n", pfile, runtime);
			p.n--;
			free(c->path);
			free(c->old);
		} else if (c->existed && !o->force) {
			fprintf(stderr,
				"hezo-shim project create: podman: %s exists and says something "
				"else; --force replaces it\n",
				pfile);
			return 1;
		} else {
			c->new_len = strlen(want);
			c->new = TAKE_PTR(want);
		}
	}
	if (workspace_parent(layered, true) < 0 || plan_apply(&p) < 0)
		return 1;
	if (docker_changed && !o->no_reload)
		hezo_install_reload_docker(o->pidfile);
	if (eng & ENGINE_CONTAINERD)
		printf("containerd: restart containerd to load runtime %s (a CRI RuntimeClass "
		       "handler)\n",
		       runtime);
	printf("project %s: `docker run --runtime=%s`, `podman --runtime %s run`\n", o->name,
	       runtime, runtime);
	return 0;
}

/* The podman drop-in c read, when it is the one create writes; else one line says why not. */
static bool podman_ours(const struct change *c, const char *runtime, const char *link)
{
	_cleanup_free_ char *want = podman_text(runtime, link);

	if (want && c->old_len == strlen(want) && memcmp(c->old, want, c->old_len) == 0)
		return true;
	fprintf(stderr,
		"hezo-shim project rm: podman: %s is not the drop-in `project create` writes; "
		"nothing removed\n",
		c->path);
	return false;
}

static int cmd_rm(const struct popts *o, const struct hezo_project_env *env)
{
	_cleanup_policy_ struct hezo_policy *base = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *file = NULL, *runtime = NULL, *link = NULL, *pfile = NULL;
	_cleanup_free_ char *first = NULL, *shim = NULL, *docker_shim = NULL;
	_cleanup_(plan_done) struct plan p = {0};
	bool docker_changed = false, docker_empty = false;
	unsigned live = 0;
	struct change *c;
	int r;

	if (load_base(o, &base) < 0)
		return 1;
	if (asprintf(&runtime, "hezo-%s", o->name) < 0 ||
	    asprintf(&file, "%s/%s.json", hezo_policy_projects_dir(base), o->name) < 0 ||
	    !(link = link_path(o, o->name)) || !(pfile = podman_file(o, o->name)))
		return 1;
	if (env && env->live) {
		r = env->live(env->data, o->name, &live, &first);
		if (r < 0) {
			fprintf(stderr,
				"hezo-shim project rm: cannot tell whether boxes of project %s "
				"live "
				"(%s); nothing changed\n",
				o->name, strerror(-r));
			return 1;
		}
		if (live > 0) {
			fprintf(stderr,
				"hezo-shim project rm: %u box%s of project %s still live (%s); "
				"stop "
				"and remove %s first\n",
				live, live == 1 ? "" : "es", o->name, first ? first : "?",
				live == 1 ? "it" : "them");
			return 1;
		}
	}

	{
		const char *path = docker_path(o);
		_cleanup_json_ struct hezo_json *entry = NULL;
		bool del = false;

		c = plan_add(&p, "docker", path);
		if (!c ||
		    hezo_install_read_optional(path, &c->old, &c->old_len, &c->existed, &e) < 0) {
			fprintf(stderr, "hezo-shim project rm: docker: %s: %s\n", path,
				e ? e->msg : "out of memory");
			return 1;
		}
		entry = docker_entry_in(c->old, c->old_len, runtime, o->name);
		/* create wrote the link to the shim it wrote here. */
		if (entry &&
		    !(docker_shim = strdup(hezo_json_string(hezo_json_get(entry, "path")))))
			return 1;
		if (entry && hezo_install_docker_remove_runtime(c->old, c->old_len, runtime, entry,
								&c->new, &c->new_len,
								&docker_changed, &del, &e) < 0) {
			fprintf(stderr, "hezo-shim project rm: docker: %s: %s\n", path, e->msg);
			return 1;
		}
		if (!docker_changed) {
			if (c->existed && !entry && hezo_install_has_runtimes(c->old, c->old_len))
				printf("docker: %s holds no runtime %s as create writes it; left "
				       "as it is\n",
				       path, runtime);
			p.n--;
			free(c->path);
			free(c->old);
			free(c->new);
		} else {
			docker_empty = del || !hezo_install_has_runtimes(c->new, c->new_len);
			if (del) {
				free(c->new);
				c->new = NULL;
			}
		}
	}
	{
		const char *path = containerd_path(o);
		bool changed = false, del = false;

		c = plan_add(&p, "containerd", path);
		if (!c ||
		    hezo_install_read_optional(path, &c->old, &c->old_len, &c->existed, &e) < 0 ||
		    (c->existed &&
		     hezo_install_containerd_project_remove(c->old, c->old_len, runtime, &c->new,
							    &c->new_len, &changed, &del, &e) < 0)) {
			fprintf(stderr, "hezo-shim project rm: containerd: %s: %s\n", path,
				e ? e->msg : "out of memory");
			return 1;
		}
		if (!changed) {
			p.n--;
			free(c->path);
			free(c->old);
			free(c->new);
		} else if (del) {
			free(c->new);
			c->new = NULL;
		}
	}
	{
		_cleanup_free_ char *target = NULL;
		bool lexists = false;

		c = plan_add(&p, "podman", pfile);
		if (!c ||
		    hezo_install_read_optional(pfile, &c->old, &c->old_len, &c->existed, &e) < 0) {
			fprintf(stderr, "hezo-shim project rm: podman: %s: %s\n", pfile,
				e ? e->msg : "out of memory");
			return 1;
		}
		if (!c->existed) {
			p.n--;
			free(c->path);
		} else if (!podman_ours(c, runtime, link)) {
			return 1;
		}
		c = plan_add(&p, "runtime link", link);
		if (!c)
			return 1;
		r = read_link(link, &target, &lexists);
		if (r < 0) {
			fprintf(stderr,
				"hezo-shim project rm: %s is not the symlink create makes (%s); "
				"nothing removed\n",
				link, strerror(-r));
			return 1;
		}
		shim = o->shim ? strdup(o->shim) : hezo_install_default_shim();
		if (!shim)
			return 1;
		if (lexists && strcmp(target, shim) != 0 &&
		    (!docker_shim || strcmp(target, docker_shim) != 0)) {
			fprintf(stderr,
				"hezo-shim project rm: %s points at %s, not at the shim %s%s%s; "
				"nothing removed\n",
				link, target, shim,
				docker_shim && strcmp(docker_shim, shim) ? " nor " : "",
				docker_shim && strcmp(docker_shim, shim) ? docker_shim : "");
			return 1;
		}
		c->is_link = true;
		c->existed = lexists;
		c->old = TAKE_PTR(target);
		if (!lexists) {
			p.n--;
			free(c->path);
			free(c->old);
		}
	}
	c = plan_add(&p, "project", file);
	if (!c || hezo_install_read_optional(file, &c->old, &c->old_len, &c->existed, &e) < 0) {
		fprintf(stderr, "hezo-shim project rm: %s: %s\n", file,
			e ? e->msg : "out of memory");
		return 1;
	}
	if (!c->existed) {
		p.n--;
		free(c->path);
	} else if (!project_doc_ours(c->old, c->old_len)) {
		fprintf(stderr,
			"hezo-shim project rm: %s is not a file `project create` writes "
			"(edited, or written by hand); nothing removed\n",
			file);
		return 1;
	}
	if (p.n == 0) {
		printf("project %s: nothing to remove\n", o->name);
		return 0;
	}
	/* dockerd keeps runtimes a reload finds no "runtimes" for: show it an empty one first. */
	if (docker_changed && docker_empty && !o->no_reload)
		hezo_install_docker_drop_runtimes(docker_path(o), o->pidfile);
	if (plan_apply(&p) < 0)
		return 1;
	/* A drop-in directory create made, empty again. */
	{
		_cleanup_free_ char *dir = strdup(pfile);
		char *slash = dir ? strrchr(dir, '/') : NULL;

		if (slash) {
			*slash = '\0';
			(void)rmdir(dir);
		}
	}
	if (docker_changed && !o->no_reload)
		hezo_install_reload_docker(o->pidfile);
	printf("project %s: removed\n", o->name);
	return 0;
}

/* Which engines register project name's runtime now, for list and show. */
static void print_registrations(const struct popts *o, const char *name)
{
	_cleanup_free_ char *runtime = NULL, *d = NULL, *c = NULL, *pf = podman_file(o, name);
	_cleanup_json_ struct hezo_json *entry = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	size_t dl = 0, cl = 0;
	bool dx = false, cx = false;
	char marker[200];

	if (asprintf(&runtime, "hezo-%s", name) < 0)
		return;
	hezo_install_read_optional(docker_path(o), &d, &dl, &dx, &e);
	hezo_error_free(TAKE_PTR(e));
	hezo_install_read_optional(containerd_path(o), &c, &cl, &cx, &e);
	entry = docker_entry_in(d, dl, runtime, name);
	snprintf(marker, sizeof(marker), "\n# BEGIN hezo-project %s\n", runtime);
	printf("%s\truntime %s:%s%s%s\n", name, runtime, entry ? " docker" : "",
	       c && strstr(c, marker) ? " containerd" : "",
	       pf && access(pf, F_OK) == 0 ? " podman" : "");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmd_list(const struct popts *o)
{
	_cleanup_policy_ struct hezo_policy *base = NULL;
	_cleanup_strv_ struct hezo_strv names = {0};
	struct dirent *de;
	DIR *d;

	if (load_base(o, &base) < 0)
		return 1;
	d = opendir(hezo_policy_projects_dir(base));
	if (!d) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "hezo-shim project list: %s: %s\n", hezo_policy_projects_dir(base),
			strerror(errno));
		return 1;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char name[256];

		if (n < 6 || n - 5 >= sizeof(name) || strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		memcpy(name, de->d_name, n - 5);
		name[n - 5] = '\0';
		if (hezo_strv_push(&names, name) < 0)
			break;
	}
	closedir(d);
	qsort(names.v, names.n, sizeof(names.v[0]), by_name);
	for (size_t i = 0; i < names.n; i++)
		print_registrations(o, names.v[i]);
	return 0;
}

static int cmd_show(const struct popts *o, const struct hezo_project_env *env)
{
	_cleanup_policy_ struct hezo_policy *base = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *file = NULL, *text = NULL, *first = NULL;
	size_t len = 0;
	unsigned live = 0;
	bool exists = false;

	if (load_base(o, &base) < 0)
		return 1;
	if (asprintf(&file, "%s/%s.json", hezo_policy_projects_dir(base), o->name) < 0)
		return 1;
	if (hezo_install_read_optional(file, &text, &len, &exists, &e) < 0 || !exists) {
		fprintf(stderr, "hezo-shim project show: no project %s (%s)\n", o->name,
			e ? e->msg : file);
		return 1;
	}
	printf("# %s\n", file);
	fwrite(text, 1, len, stdout);
	if (len && text[len - 1] != '\n')
		putchar('\n');
	print_registrations(o, o->name);
	if (env && env->live && env->live(env->data, o->name, &live, &first) >= 0)
		printf("%s\tlive boxes: %u%s%s\n", o->name, live, first ? " (" : "",
		       first ? first : "");
	return 0;
}

int hezo_project_main(int argc, char **argv, const struct hezo_project_env *env)
{
	struct popts o = {0};
	int r = parse(argc, argv, &o), rc;

	if (r != 0) {
		hezo_strv_done(&o.allow);
		return r > 0 ? 0 : 2;
	}
	if (o.name && strcmp(o.sub, "list") != 0 && !hezo_policy_project_name_valid(o.name)) {
		fprintf(stderr,
			"hezo-shim project: \"%.64s\": a project name is 1 to 64 of [a-z0-9._-], "
			"not starting with \".\"\n",
			o.name);
		hezo_strv_done(&o.allow);
		return 2;
	}
	if (strcmp(o.sub, "create") == 0)
		rc = cmd_create(&o);
	else if (strcmp(o.sub, "rm") == 0)
		rc = cmd_rm(&o, env);
	else if (strcmp(o.sub, "list") == 0)
		rc = cmd_list(&o);
	else if (strcmp(o.sub, "show") == 0)
		rc = cmd_show(&o, env);
	else {
		usage(stderr);
		rc = 2;
	}
	hezo_strv_done(&o.allow);
	return rc;
}

/*
 * Registrations, one per network namespace: creating one (listeners in its namespace, a bind
 * mount and a state file so a restarted proxyd finds it again), the containers that join and
 * leave it (each with its own cgroup and secrets), removing it with its last member, restoring
 * all at start, and the once-a-second housekeeping.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-cgroup.h"
#include "hezo-file.h"
#include "proxyd.h"

#define STATE_MAX (1u << 20)

struct pd_container *pd_containers;

static int containers_dir = -1;

/* proxyd.h's sizes are the request parser's: ids and projects are copied between them. */
_Static_assert(PD_ID_MAX == HEZO_CTL_ID_MAX, "PD_ID_MAX");
_Static_assert(PD_PROJECT_MAX == HEZO_CTL_PROJECT_MAX, "PD_PROJECT_MAX");

static ssize_t member_index(const struct pd_container *c, const char *id)
{
	for (size_t i = 0; i < c->nmembers; i++)
		if (strcmp(c->members[i]->id, id) == 0)
			return (ssize_t)i;
	return -1;
}

static void member_free(struct pd_member *m)
{
	if (!m)
		return;
	hezo_secrets_free(m->secrets, m->nsecrets);
	hezo_json_free(m->secrets_json);
	free(m);
}

/*
 * A member: id, its cgroup, and its secrets, those of q's egress (moved out of it: the
 * namespace's egress keeps none) or of json (a state file's, checked again). NULL: out of memory
 * or json refused (err says why).
 */
static struct pd_member *member_new(const char *id, uint64_t cgroup, struct hezo_ctl_request *q,
				    const struct hezo_json *json, struct hezo_error **err)
{
	struct pd_member *m = calloc(1, sizeof(*m));
	const struct hezo_json *from = json;

	if (!m) {
		hezo_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(m->id, sizeof(m->id), "%s", id);
	m->cgroup = cgroup;
	if (q) {
		from = hezo_json_get(q->egress, "secrets");
		m->secrets = q->eg.secrets;
		m->nsecrets = q->eg.nsecrets;
		q->eg.secrets = NULL;
		q->eg.nsecrets = 0;
	} else if (json && hezo_secrets_parse(json, true, &m->secrets, &m->nsecrets, err) < 0) {
		member_free(m);
		return NULL;
	}
	if (from && !(m->secrets_json = hezo_json_clone(from))) {
		member_free(m);
		hezo_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	return m;
}

/* A member as the state file keeps it. */
static struct hezo_json *member_json(const struct pd_member *m)
{
	struct hezo_json *o = hezo_json_new_object();

	if (o && (hezo_json_set(o, "id", hezo_json_new_string(m->id)) < 0 ||
		  hezo_json_set(o, "cgroup", hezo_json_new_uint(m->cgroup)) < 0 ||
		  (m->secrets_json &&
		   hezo_json_set(o, "secrets", hezo_json_clone(m->secrets_json)) < 0)))
		o = (hezo_json_free(o), NULL);
	return o;
}

struct pd_container *pd_container_find(const char *id)
{
	for (struct pd_container *c = pd_containers; c; c = c->next)
		if (member_index(c, id) >= 0)
			return c;
	return NULL;
}

/* The registration named id (its first member's), whether or not id is still a member. */
static struct pd_container *registration_named(const char *id)
{
	for (struct pd_container *c = pd_containers; c; c = c->next)
		if (strcmp(c->id, id) == 0)
			return c;
	return NULL;
}

static struct pd_container *registration_of_netns(const struct stat *nst)
{
	for (struct pd_container *c = pd_containers; c; c = c->next) {
		struct stat ost;

		if (fstat(c->netns_fd, &ost) == 0 && ost.st_dev == nst->st_dev &&
		    ost.st_ino == nst->st_ino)
			return c;
	}
	return NULL;
}

int pd_registry_init(struct hezo_error **err)
{
	containers_dir = pd_state_subdir("containers", err);
	if (containers_dir < 0)
		return containers_dir;
	pd_host_addrs_refresh();
	return 0;
}

static void container_free(struct pd_container *c)
{
	for (int i = 0; i < 2; i++) {
		pd_watch_close(&c->tcp[i].w);
		pd_watch_close(&c->udp[i].w);
		pd_watch_close(&c->dnstcp[i].w);
	}
	pd_agent_stop(c);
	pd_netlog_flush(c);
	free(c->logbuf);
	c->logbuf = NULL;
	if (c->log_fd >= 0)
		close(c->log_fd);
	if (c->netns_fd >= 0)
		close(c->netns_fd);
	c->log_fd = c->netns_fd = c->agent.w.fd = -1;
	if (c->diag_fd >= 0)
		close(c->diag_fd);
	c->diag_fd = -1;
	hezo_egress_clear(&c->eg);
	hezo_pin_clear(&c->pins);
	hezo_json_free(c->reg);
	c->reg = NULL;
	for (size_t i = 0; i < c->nmembers; i++)
		member_free(c->members[i]);
	free(c->members);
	c->members = NULL;
	c->nmembers = 0;
	pd_defer_free(c);
}

static void state_name(const char *id, char *buf, size_t size)
{
	snprintf(buf, size, "%s.json", id);
}

/* The state file of registration c: reg ({"id","project","egress"}) and its members. */
static int write_state(const struct pd_container *c, const struct hezo_json *reg,
		       struct pd_member *const *members, size_t nmembers, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *doc = hezo_json_clone(reg);
	_cleanup_free_ char *text = NULL;
	struct hezo_json *arr = hezo_json_new_array();
	char name[PD_ID_MAX + 8];
	size_t len;
	int r;

	if (!doc || hezo_json_set(doc, "members", arr) < 0)
		return hezo_error_set(err, ENOMEM, "state file: out of memory");
	for (size_t i = 0; i < nmembers; i++)
		if (hezo_json_append(arr, member_json(members[i])) < 0)
			return hezo_error_set(err, ENOMEM, "state file: out of memory");
	state_name(c->id, name, sizeof(name));
	r = hezo_json_dump(doc, false, &text, &len, err);
	if (r >= 0)
		r = hezo_write_state_file_at(containers_dir, name, text, len, 0600, err);
	return r < 0 ? hezo_error_prefix(err, "state file") : 0;
}

/*
 * members: a state file's "members" (checked), or NULL for the registering container alone,
 * whose secrets and cgroup q holds. A state file's member is {"id","cgroup","secrets"}, or an
 * older proxyd's bare id: the registration's own then takes the secrets q's egress still holds.
 */
static int members_set(struct pd_container *c, struct hezo_ctl_request *q,
		       const struct hezo_json *members, struct hezo_error **err)
{
	size_t n = members ? members->len : 1;

	if (members && (members->type != HEZO_JSON_ARRAY || members->len == 0))
		return hezo_error_set(err, EINVAL, "members: not a non-empty array");
	c->members = calloc(n, sizeof(*c->members));
	if (!c->members)
		return hezo_error_set(err, ENOMEM, "out of memory");
	if (!members) {
		c->members[0] = member_new(c->id, q->cgroup, q, NULL, err);
		if (!c->members[0])
			return -ENOMEM;
		c->nmembers = 1;
		return 0;
	}
	HEZO_JSON_FOREACH (i, members) {
		const struct hezo_json *e = members->items[i];
		const char *id =
			hezo_json_string(e->type == HEZO_JSON_OBJECT ? hezo_json_get(e, "id") : e);
		const struct hezo_json *cg = hezo_json_get(e, "cgroup");
		uint64_t cgroup = 0;
		bool own = id && strcmp(id, c->id) == 0 && e->type != HEZO_JSON_OBJECT;

		if (!id || !hezo_id_valid(id) || member_index(c, id) >= 0 ||
		    (cg && hezo_json_get_uint64(cg, &cgroup) < 0))
			return hezo_error_set(err, EINVAL, "members[%zu]: not a new container", i);
		c->members[c->nmembers] = member_new(
			id, cgroup, own ? q : NULL,
			e->type == HEZO_JSON_OBJECT ? hezo_json_get(e, "secrets") : NULL, err);
		if (!c->members[c->nmembers])
			return hezo_error_prefix(err, "members[%zu]", i);
		c->nmembers++;
	}
	return 0;
}

/*
 * Bring up a registration that hezo_ctl_registration() accepted, moving its egress into the
 * container. persist: write the state file (false when restoring from it, whose members are
 * given; NULL: the registering container alone). Takes ownership of netns_fd in every case.
 */
static int container_up(struct hezo_ctl_request *q, int netns_fd, bool persist,
			const struct hezo_json *members, struct hezo_error **err)
{
	_cleanup_close_ int nsfd = netns_fd;
	_cleanup_error_ struct hezo_error *derr = NULL;
	const struct pd_container *o;
	struct pd_container *c;
	struct stat nst;
	int fds[6], r;

	if (nsfd < 0 || !pd_netns_is_net(nsfd))
		return hezo_error_set(err, EINVAL,
				      "no network namespace fd in SCM_RIGHTS (or not a netns)");
	/*
	 * The listener that accepts a connection is the namespace's identity, so one namespace
	 * has one registration (pd_register joins it); two state files naming one namespace
	 * would otherwise fail on a busy port.
	 */
	if (fstat(nsfd, &nst) < 0)
		return hezo_error_set_errno(err, errno, "network namespace");
	if ((o = registration_of_netns(&nst)))
		return hezo_error_set(err, EBUSY, "network namespace already registered for %s",
				      o->id);
	if (registration_named(q->id))
		return hezo_error_set(err, EBUSY,
				      "id %s names the registration of another network namespace",
				      q->id);

	c = calloc(1, sizeof(*c));
	if (!c)
		return hezo_error_set(err, ENOMEM, "out of memory");
	/* Not listening yet: 0 would be a descriptor of proxyd's own (its stdin) to close. */
	c->log_fd = c->netns_fd = c->diag_fd = c->agent.w.fd = -1;
	for (int i = 0; i < 2; i++) {
		c->tcp[i].w.fd = c->udp[i].w.fd = c->dnstcp[i].w.fd = -1;
		c->tcp[i].c = c->udp[i].c = c->dnstcp[i].c = c;
	}
	memcpy(c->id, q->id, sizeof(c->id));
	memcpy(c->project, q->project, sizeof(c->project));
	c->tokens = 2.0 * pd_cfg.dns_rate;
	c->tokens_ms = pd_now_ms();
	/* The secrets go to their member: the namespace's egress holds none. */
	r = members_set(c, q, members, err);
	if (r < 0) {
		container_free(c);
		return r;
	}
	hezo_json_remove(q->egress, "secrets");
	c->eg = q->eg;
	memset(&q->eg, 0, sizeof(q->eg));
	hezo_secrets_free(c->eg.secrets, c->eg.nsecrets);
	c->eg.secrets = NULL;
	c->eg.nsecrets = 0;
	c->reg = hezo_json_new_object();
	if (!c->reg || hezo_json_set(c->reg, "id", hezo_json_new_string(c->id)) < 0 ||
	    hezo_json_set(c->reg, "project", hezo_json_new_string(c->project)) < 0 ||
	    hezo_json_set(c->reg, "egress", TAKE_PTR(q->egress)) < 0) {
		container_free(c);
		return hezo_error_set(err, ENOMEM, "out of memory");
	}
	/* Without it a pod's connections are no member's (no secrets); the rest works. */
	c->diag_fd = pd_netns_diag(nsfd, &derr);
	if (c->diag_fd < 0) {
		pd_log("warning",
		       "registration %s: %s: secrets only for a container alone in its namespace",
		       c->id, derr ? derr->msg : "sock_diag");
		c->diag_fd = -1;
	}

	r = pd_netns_listen(nsfd, fds, err);
	if (r < 0) {
		container_free(c);
		return hezo_error_prefix(err, "listeners");
	}
	pd_watch_add(&c->tcp[0].w, fds[0], EPOLLIN, pd_tcp_accept);
	if (fds[1] >= 0)
		pd_watch_add(&c->tcp[1].w, fds[1], EPOLLIN, pd_tcp_accept);
	pd_watch_add(&c->udp[0].w, fds[2], EPOLLIN, pd_dns_udp);
	if (fds[3] >= 0)
		pd_watch_add(&c->udp[1].w, fds[3], EPOLLIN, pd_dns_udp);
	pd_watch_add(&c->dnstcp[0].w, fds[4], EPOLLIN, pd_dns_tcp_accept);
	if (fds[5] >= 0)
		pd_watch_add(&c->dnstcp[1].w, fds[5], EPOLLIN, pd_dns_tcp_accept);
	if (c->tcp[0].w.fd < 0 || c->udp[0].w.fd < 0 || c->dnstcp[0].w.fd < 0) {
		container_free(c);
		return hezo_error_set(err, EIO, "cannot watch the listeners");
	}

	r = pd_netlog_open(c, err);
	r = r ?: pd_agent_start(c, err);
	if (r < 0) {
		container_free(c);
		return r;
	}
	if (persist) {
		r = pd_netns_pin(nsfd, c->id, err);
		if (r < 0) {
			container_free(c);
			return r;
		}
		r = write_state(c, c->reg, c->members, c->nmembers, err);
		if (r < 0) {
			pd_netns_unpin(c->id);
			container_free(c);
			return r;
		}
	}
	c->netns_fd = TAKE_FD(nsfd);
	c->next = pd_containers;
	pd_containers = c;
	return 0;
}

static void container_down(struct pd_container *c);
static void forget_state(const char *id);

/*
 * id joins registration c (another container's namespace): same project, and the namespace
 * keeps the intersection of both egress sections (hezo_egress_intersect), so no joiner widens
 * what the namespace reaches. The state file is written before anything changes in memory.
 */
static int container_join(struct pd_container *c, struct hezo_ctl_request *q,
			  struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *egress = NULL, *reg = NULL;
	_cleanup_free_ struct pd_member **members = NULL;
	struct pd_member *m = NULL;
	struct hezo_egress eg = {0};
	ssize_t at = member_index(c, q->id);
	bool narrowed = false, already = at >= 0;
	size_t n = c->nmembers + (already ? 0 : 1);
	char why[200];
	int r;

	if (strcmp(c->project, q->project) != 0)
		return hezo_error_set(err, EPERM,
				      "network namespace registered for container %s of project "
				      "\"%s\": container %s of project \"%s\" cannot share it",
				      c->id, c->project, q->id, q->project);
	r = hezo_egress_intersect(hezo_json_get(c->reg, "egress"), q->egress, &egress, &narrowed,
				  err);
	if (r < 0)
		return hezo_error_prefix(err,
					 "joining the registration of %s (same network "
					 "namespace)",
					 c->id);
	if (narrowed) {
		r = hezo_egress_parse(egress, &eg, err);
		if (r < 0)
			return hezo_error_prefix(err, "the narrowed egress");
	}
	reg = hezo_json_clone(c->reg);
	members = calloc(n, sizeof(*members));
	/* The joiner's secrets are its own member's; the namespace's egress keeps none. */
	m = member_new(q->id, q->cgroup, q, NULL, err);
	if (!m) {
		hezo_egress_clear(&eg);
		return -ENOMEM;
	}
	if (!reg || !members || hezo_json_set(reg, "egress", TAKE_PTR(egress)) < 0) {
		hezo_egress_clear(&eg);
		member_free(m);
		return hezo_error_set(err, ENOMEM, "out of memory");
	}
	hezo_json_remove(hezo_json_get(reg, "egress"), "secrets");
	memcpy(members, c->members, c->nmembers * sizeof(*members));
	members[already ? (size_t)at : n - 1] = m;
	r = write_state(c, reg, members, n, err);
	if (r < 0) {
		hezo_egress_clear(&eg);
		member_free(m);
		return r;
	}

	if (narrowed) {
		hezo_secrets_free(eg.secrets, eg.nsecrets);
		eg.secrets = NULL;
		eg.nsecrets = 0;
		hezo_egress_clear(&c->eg);
		c->eg = eg;
	}
	hezo_json_free(c->reg);
	c->reg = TAKE_PTR(reg);
	/* A member registered again (a retrying hook) is replaced, its connections with it. */
	if (already) {
		pd_intercept_abort_member(c, c->members[at]);
		member_free(c->members[at]);
	}
	free(c->members);
	c->members = TAKE_PTR(members);
	c->nmembers = n;
	/*
	 * A connection read the pod's secrets at its first request: one that came before this
	 * member would neither mask its value nor refuse its placeholder. Such connections end; the
	 * box's next one reads the pod as it is now.
	 */
	pd_intercept_abort_loaded(c);
	snprintf(why, sizeof(why), "%s the registration of %s, %zu member%s",
		 already ? "again in" : "joined", c->id, n, n == 1 ? "" : "s");
	pd_netlog_member(c, "join", q->id, narrowed ? "narrowed" : "allow",
			 narrowed ? "its egress is narrower: the namespace keeps what both allow"
				  : why);
	return 0;
}

/* id leaves c; the last member to leave takes the registration down. */
static void member_leave(struct pd_container *c, const char *id)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	ssize_t i = member_index(c, id);
	char regid[PD_ID_MAX];

	if (i < 0)
		return;
	if (c->nmembers == 1) {
		memcpy(regid, c->id, sizeof(regid));
		container_down(c);
		forget_state(regid);
		return;
	}
	/* Its connections point at its secrets: they end with it. */
	pd_intercept_abort_member(c, c->members[i]);
	member_free(c->members[i]);
	memmove(c->members + i, c->members + i + 1,
		(c->nmembers - (size_t)i - 1) * sizeof(*c->members));
	c->nmembers--;
	pd_netlog_member(c, "leave", id, "allow", "left; the registration stays for the others");
	if (write_state(c, c->reg, c->members, c->nmembers, &err) < 0)
		pd_log("warning", "registration %s: %s (a restart may keep %s a member)", c->id,
		       err->msg, id);
}

/*
 * Does member id of c still run? A process in its namespace says so, or one in the cgroup the
 * hook registered for it: proxyd cannot read the namespace of a box in a user namespace of its
 * own (another uid), but anyone may read a process's cgroup.
 */
static bool member_live(const struct pd_container *c, const char *id)
{
	ssize_t i = member_index(c, id);

	if (i >= 0 && c->members[i]->cgroup && hezo_cgroup_id_in_use(c->members[i]->cgroup))
		return true;
	return pd_netns_alive(c->netns_fd);
}

int pd_register(struct hezo_ctl_request *q, int netns_fd, struct hezo_error **err)
{
	_cleanup_close_ int nsfd = netns_fd;
	struct pd_container *prev, *ns;
	struct stat nst;

	if (nsfd < 0 || !pd_netns_is_net(nsfd))
		return hezo_error_set(err, EINVAL,
				      "no network namespace fd in SCM_RIGHTS (or not a netns)");
	if (fstat(nsfd, &nst) < 0)
		return hezo_error_set_errno(err, errno, "network namespace");
	ns = registration_of_netns(&nst);
	/*
	 * A registration of an id from another namespace (a re-created container) ends its
	 * membership there first, once nothing lives in that namespace. While something does, it is
	 * another box of the same ID (another --root): taking over would hand it this one's agent,
	 * keys and netlog.
	 */
	prev = pd_container_find(q->id);
	if (prev && prev != ns && member_live(prev, q->id))
		return hezo_error_set(err, EBUSY,
				      "id %s is registered for a live box of project \"%s\" in "
				      "another network namespace: refused, not replaced",
				      q->id, prev->project);
	if (prev && prev != ns)
		member_leave(prev, q->id);
	if (ns)
		return container_join(ns, q, err);
	return container_up(q, TAKE_FD(nsfd), true, NULL, err);
}

static void container_down(struct pd_container *c)
{
	for (struct pd_container **p = &pd_containers; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	pd_conn_abort_all(c);
	pd_dns_abort_all(c);
	container_free(c);
}

static void forget_state(const char *id)
{
	char name[PD_ID_MAX + 8];

	pd_netns_unpin(id);
	state_name(id, name, sizeof(name));
	unlinkat(containers_dir, name, 0);
}

void pd_deregister(const char *id)
{
	struct pd_container *c = pd_container_find(id);

	if (c)
		member_leave(c, id);
	else if (hezo_id_valid(id) && !registration_named(id))
		forget_state(id); /* a stale file of a registration that is not up */
}

void pd_registry_restore(void)
{
	DIR *d;
	struct dirent *de;
	int dfd = dup(containers_dir);

	if (dfd < 0)
		return;
	fcntl(dfd, F_SETFD, FD_CLOEXEC);
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		_cleanup_error_ struct hezo_error *err = NULL;
		_cleanup_json_ struct hezo_json *req = NULL, *members = NULL;
		_cleanup_(hezo_ctl_request_clear) struct hezo_ctl_request q = {0};
		_cleanup_free_ char *buf = NULL;
		char id[PD_ID_MAX];
		size_t len = strlen(de->d_name), blen;
		int fd;

		if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0 || len - 5 >= sizeof(id))
			continue;
		memcpy(id, de->d_name, len - 5);
		id[len - 5] = '\0';
		if (!hezo_id_valid(id))
			continue;
		if (hezo_read_file_at(containers_dir, de->d_name, STATE_MAX, &buf, &blen, &err) <
			    0 ||
		    hezo_json_parse(buf, blen, &req, &err) < 0) {
			pd_log("warning", "state %s: %s: dropped", de->d_name, err->msg);
			forget_state(id);
			continue;
		}
		/* The members (none in a file of an older proxyd: the registration's own id), then
		 * the rest checked as a register request is, and it must be the file's own. */
		members = hezo_json_clone(hezo_json_get(req, "members"));
		hezo_json_remove(req, "members");
		if (hezo_ctl_registration(req, &q, &err) < 0 || strcmp(q.id, id) != 0) {
			pd_log("warning", "state %s: %s: dropped", de->d_name,
			       err ? err->msg : "names another id");
			forget_state(id);
			continue;
		}
		fd = pd_netns_open_pinned(id, &err);
		if (fd < 0) {
			pd_log("info", "container %s: %s: dropped", id, err->msg);
			forget_state(id);
			continue;
		}
		if (!pd_netns_alive(fd)) {
			close(fd);
			pd_log("info", "container %s: no process left in its namespace: dropped",
			       id);
			forget_state(id);
			continue;
		}
		if (container_up(&q, fd, false, members, &err) < 0) {
			pd_log("warning", "container %s: %s: dropped", id, err->msg);
			forget_state(id);
			continue;
		}
		pd_log("info", "container %s: listeners re-created (%zu member%s)", id,
		       registration_named(id)->nmembers,
		       registration_named(id)->nmembers == 1 ? "" : "s");
	}
	closedir(d);
}

void pd_registry_tick(uint64_t now)
{
	static uint64_t last_addrs, last_pins;

	if (now - last_addrs >= 30000) {
		last_addrs = now;
		pd_host_addrs_refresh();
	}
	for (struct pd_container *c = pd_containers; c; c = c->next) {
		pd_relay_tick(c, now);
		pd_dns_tick(c, now);
		if (now - last_pins >= 10000)
			hezo_pin_expire(&c->pins, now / 1000);
	}
	if (now - last_pins >= 10000)
		last_pins = now;
	pd_dns_upstreams_tick(now);
}

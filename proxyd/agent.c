/*
 * The ssh agent a box with keys gets (docs/hardening.md, "Keys"): one socket per registration,
 * in STATE/agent/ID, the directory the shim bind-mounts into that box and no other. It lists the
 * project's public keys and signs two things only: an SSHSIG blob of a namespace the key allows,
 * and an SSH user-authentication request while the box has a live SSH connection to a host the
 * key allows (and none to a host it does not). Everything else is answered SSH_AGENT_FAILURE.
 * The private key is read from its file for each signature and wiped after; every signature and
 * refusal is a netlog line.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "hezo-b64.h"
#include "hezo-cgroup.h"
#include "hezo-cleanup.h"
#include "hezo-id.h"
#include "proxyd.h"

#define AGENT_CONNS_MAX 16
#define KEY_FILE_MAX	8192
/* A client that asks for what it may not have this often is not an ssh or git that lost its way:
 * its connection goes (a new one may try again). */
#define AGENT_CONN_REFUSALS 16
/* Refusal lines per registration: a burst, then a few a second; the rest are counted and said in
 * one line when logging resumes, so a box cannot fill the host's disk through the netlog. */
#define REFUSAL_LINES_BURST 50.0
#define REFUSAL_LINES_RATE  10.0

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* asm-generic/socket.h, Linux 5.14 */
#endif

struct pd_agentconn {
	struct pd_watch w;
	struct pd_container *c;
	struct pd_agentconn *next, **pprev;
	unsigned refused;
	size_t len;
	uint8_t buf[HEZO_AGENT_MSG_MAX + 4];
};

/* What one request was, for its netlog line. */
struct verdict {
	const struct hezo_key *key;
	char fingerprint[64];
	const char *kind, *reason;
	char target[HEZO_NAME_MAX + 8];
	char hash[160];
	struct pd_tcp *conn; /* the SSH connection a userauth signature is counted against */
};

static void conn_close(struct pd_agentconn *a)
{
	*a->pprev = a->next;
	if (a->next)
		a->next->pprev = a->pprev;
	a->c->nagent--;
	pd_watch_close(&a->w);
	pd_defer_free(a);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The reply whole or not at all: a client that does not read its answers is dropped. */
static bool reply(struct pd_agentconn *a, const uint8_t *msg, size_t len)
{
	ssize_t n = send(a->w.fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);

	return n == (ssize_t)len;
}

/* The refusal answered; false (the connection goes) once it has had AGENT_CONN_REFUSALS. */
static bool failure(struct pd_agentconn *a)
{
	static const uint8_t f[] = {0, 0, 0, 1, HEZO_AGENT_FAILURE};

	return reply(a, f, sizeof(f)) && ++a->refused < AGENT_CONN_REFUSALS;
}

static bool key_blob(const struct hezo_key *k, uint8_t blob[HEZO_ED25519_BLOB_LEN])
{
	const char *b = k->public + sizeof("ssh-ed25519 ") - 1;

	return hezo_b64_decode((const uint8_t *)b, strlen(b), blob, HEZO_ED25519_BLOB_LEN + 2) ==
	       HEZO_ED25519_BLOB_LEN;
}

static void fingerprint(const uint8_t *blob, char out[64])
{
	uint8_t md[32];
	unsigned mdlen = 0;
	size_t n;

	memcpy(out, "SHA256:", 7);
	if (!EVP_Digest(blob, HEZO_ED25519_BLOB_LEN, md, &mdlen, EVP_sha256(), NULL) ||
	    mdlen != 32) {
		strcpy(out + 7, "?");
		return;
	}
	/* As ssh-keygen -l prints it: no padding. */
	n = 7 + hezo_b64_encode(md, 32, out + 7);
	while (out[n - 1] == '=')
		n--;
	out[n] = '\0';
}

static void hex(const char *alg, const uint8_t *p, size_t n, char *out, size_t size)
{
	size_t o = (size_t)snprintf(out, size, "%s:", alg);

	for (size_t i = 0; i < n && o + 3 <= size; i++)
		o += (size_t)snprintf(out + o, size - o, "%02x", p[i]);
}

/* May a refusal take a netlog line now? The first one after a pause says how many were not. */
static bool refusal_logged(struct pd_container *c)
{
	uint64_t now = pd_now_ms();
	char why[80];

	c->agent_tokens += (double)(now - c->agent_tokens_ms) * REFUSAL_LINES_RATE / 1000.0;
	c->agent_tokens_ms = now;
	if (c->agent_tokens > REFUSAL_LINES_BURST)
		c->agent_tokens = REFUSAL_LINES_BURST;
	if (c->agent_tokens < 1.0) {
		c->agent_unlogged++;
		return false;
	}
	c->agent_tokens -= 1.0;
	if (c->agent_unlogged) {
		struct pd_netlog_key l = {.key = "-",
					  .fingerprint = "-",
					  .kind = "request",
					  .target = "",
					  .hash = "-",
					  .verdict = "deny",
					  .reason = why};

		snprintf(why, sizeof(why), "%" PRIu64 " refusals not logged (rate limit)",
			 c->agent_unlogged);
		c->agent_unlogged = 0;
		pd_netlog_key(c, &l);
	}
	return true;
}

static void log_verdict(struct pd_container *c, const struct verdict *v, bool ok)
{
	struct pd_netlog_key l = {
		.key = v->key ? v->key->name : "-",
		.fingerprint = v->key ? v->fingerprint : "-",
		.kind = v->kind,
		.target = v->target,
		.hash = v->hash[0] ? v->hash : "-",
		.verdict = ok ? "allow" : "deny",
		.reason = v->reason,
	};

	if (ok)
		PD_COUNT(c, keys_signed);
	else
		PD_COUNT(c, keys_refused);
	if (!ok && !refusal_logged(c))
		return;
	pd_netlog_key(c, &l);
}

/* Read k's file as the shim checked it (root's, no group or other) and sign data with it. */
static int sign(const struct hezo_key *k, const uint8_t *data, size_t len, uint8_t sig[64])
{
	_cleanup_close_ int fd = open(k->file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	char text[KEY_FILE_MAX], line[HEZO_KEY_PUBLIC_MAX];
	struct hezo_sshkey key;
	EVP_PKEY *pkey = NULL;
	EVP_MD_CTX *md = NULL;
	struct stat st;
	const char *why;
	size_t tlen = 0, slen = 64;
	ssize_t n;
	int r = -EIO;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 077))
		return -EPERM;
	while (tlen < sizeof(text) && (n = read(fd, text + tlen, sizeof(text) - tlen)) > 0)
		tlen += (size_t)n;
	r = hezo_sshkey_parse(text, tlen, &key, &why);
	explicit_bzero(text, sizeof(text));
	if (r < 0)
		return r;
	/* The file changed since create: not the key the box was shown. */
	hezo_sshkey_public_line(key.pub, line);
	if (strcmp(line, k->public) != 0) {
		explicit_bzero(&key, sizeof(key));
		return -ESTALE;
	}
	pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, key.seed, 32);
	explicit_bzero(&key, sizeof(key));
	md = EVP_MD_CTX_new();
	r = pkey && md && EVP_DigestSignInit(md, NULL, NULL, NULL, pkey) == 1 &&
			    EVP_DigestSign(md, sig, &slen, data, len) == 1 && slen == 64
		    ? 0
		    : -EIO;
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(pkey);
	return r;
}

struct ssh_seen {
	const struct hezo_key *k;
	bool allowed, other;
	struct pd_tcp *fresh; /* one to an allowed host that has had no signature yet */
	char target[HEZO_NAME_MAX + 8];
};

static void ssh_conn(struct pd_tcp *t, void *arg)
{
	struct ssh_seen *s = arg;
	uint16_t port = t->dst.ss_family == AF_INET
				? ntohs(((const struct sockaddr_in *)&t->dst)->sin_port)
				: ntohs(((const struct sockaddr_in6 *)&t->dst)->sin6_port);

	if (hezo_key_names_host(s->k, t->name, port)) {
		s->allowed = true;
		if (s->fresh)
			return;
		snprintf(s->target, sizeof(s->target), "%s:%u", t->name, port);
		if (!t->auth_signed)
			s->fresh = t;
	} else {
		s->other = true;
	}
}

/* Is data something k may sign for c? v->reason says why not. */
static bool judge(struct pd_container *c, const struct hezo_key *k, const uint8_t *blob,
		  const uint8_t *data, size_t len, struct verdict *v)
{
	struct hezo_sshsig sg;
	struct hezo_userauth ua;

	if (hezo_sshsig_parse(data, len, &sg) == 0) {
		v->kind = "sign";
		snprintf(v->target, sizeof(v->target), "%.*s", (int)sg.nslen, (const char *)sg.ns);
		hex(sg.alg, sg.hash, sg.hashlen, v->hash, sizeof(v->hash));
		if (!hezo_key_signs(k, (const char *)sg.ns, sg.nslen))
			return (v->reason = "namespace not allowed for this key"), false;
		return (v->reason = "sshsig"), true;
	}
	if (hezo_userauth_parse(data, len, &ua) == 0) {
		struct ssh_seen s = {.k = k};

		v->kind = "ssh";
		hex("session", ua.session, ua.sessionlen, v->hash, sizeof(v->hash));
		if (ua.keylen != HEZO_ED25519_BLOB_LEN || memcmp(ua.key, blob, ua.keylen) != 0 ||
		    ua.alglen != 11 || memcmp(ua.alg, "ssh-ed25519", 11) != 0)
			return (v->reason = "userauth request for another key"), false;
		pd_relay_each_ssh(c, ssh_conn, &s);
		snprintf(v->target, sizeof(v->target), "%s", s.target);
		if (!s.allowed)
			return (v->reason = "no live SSH connection to a host this key allows"),
			       false;
		/* Which connection the signature is for cannot be told: never when it could be
		 * another host's. */
		if (s.other)
			return (v->reason = "a live SSH connection to a host this key does not "
					    "allow"),
			       false;
		/* ssh signs once per connection: more would serve sessions the box does not hold
		 * (docs/hardening.md, "Keys"). */
		if (!s.fresh)
			return (v->reason = "every live SSH connection to a host this key allows "
					    "has had its signature"),
			       false;
		v->conn = s.fresh;
		return (v->reason = "userauth"), true;
	}
	v->kind = "sign";
	return (v->reason = "neither an SSHSIG blob nor an SSH userauth request"), false;
}

static bool sign_request(struct pd_agentconn *a, const uint8_t *body, size_t blen)
{
	struct pd_container *c = a->c;
	struct hezo_agent_sign q;
	struct verdict v = {.kind = "sign", .reason = "malformed sign request"};
	uint8_t blob[HEZO_ED25519_BLOB_LEN], sig[64], out[4 + 1 + 4 + 4 + 11 + 4 + 64];

	if (hezo_agent_sign_parse(body, blen, &q) < 0)
		return log_verdict(c, &v, false), failure(a);
	for (size_t i = 0; i < c->eg.nkeys && !v.key; i++)
		if (key_blob(&c->eg.keys[i], blob) && q.keylen == sizeof(blob) &&
		    memcmp(q.key, blob, sizeof(blob)) == 0)
			v.key = &c->eg.keys[i];
	if (!v.key) {
		v.reason = "not one of the project's keys";
		return log_verdict(c, &v, false), failure(a);
	}
	fingerprint(blob, v.fingerprint);
	if (!judge(c, v.key, blob, q.data, q.datalen, &v))
		return log_verdict(c, &v, false), failure(a);
	/* Fail closed: a key file gone, opened up or changed since create signs nothing. */
	if (sign(v.key, q.data, q.datalen, sig) < 0) {
		v.reason = "the key file cannot be read, is open to others or changed";
		return log_verdict(c, &v, false), failure(a);
	}
	if (v.conn)
		v.conn->auth_signed = true;
	log_verdict(c, &v, true);
	/* uint32 length, SIGN_RESPONSE, string (string "ssh-ed25519", string signature). */
	put_u32(out, sizeof(out) - 4);
	out[4] = HEZO_AGENT_SIGN_RESPONSE;
	put_u32(out + 5, 4 + 11 + 4 + 64);
	put_u32(out + 9, 11);
	memcpy(out + 13, "ssh-ed25519", 11);
	put_u32(out + 24, 64);
	memcpy(out + 28, sig, 64);
	return reply(a, out, sizeof(out));
}

static bool identities(struct pd_agentconn *a)
{
	struct pd_container *c = a->c;
	uint8_t out[4096];
	size_t o = 9, n = 0;

	for (size_t i = 0; i < c->eg.nkeys; i++) {
		size_t nl = strlen(c->eg.keys[i].name);

		if (o + 4 + HEZO_ED25519_BLOB_LEN + 4 + nl > sizeof(out) ||
		    !key_blob(&c->eg.keys[i], out + o + 4))
			continue;
		put_u32(out + o, HEZO_ED25519_BLOB_LEN);
		o += 4 + HEZO_ED25519_BLOB_LEN;
		put_u32(out + o, (uint32_t)nl);
		memcpy(out + o + 4, c->eg.keys[i].name, nl);
		o += 4 + nl;
		n++;
	}
	put_u32(out, (uint32_t)(o - 4));
	out[4] = HEZO_AGENT_IDENTITIES_ANSWER;
	put_u32(out + 5, (uint32_t)n);
	return reply(a, out, o);
}

static const char *request_name(uint8_t type)
{
	switch (type) {
	case 17:
	case 25:
		return "add identity refused";
	case 18:
		return "remove identity refused";
	case 19:
		return "remove all identities refused";
	case 20:
	case 21:
	case 26:
		return "smartcard request refused";
	case 22:
		return "lock refused";
	case 23:
		return "unlock refused";
	case 27:
		return "extension refused";
	default:
		return "unknown request refused";
	}
}

/* One request; false when the connection must go. */
static bool handle(struct pd_agentconn *a, uint8_t type, const uint8_t *body, size_t blen)
{
	struct verdict v = {.kind = "request"};

	if (type == HEZO_AGENTC_REQUEST_IDENTITIES)
		return identities(a);
	if (type == HEZO_AGENTC_SIGN_REQUEST)
		return sign_request(a, body, blen);
	v.reason = request_name(type);
	log_verdict(a->c, &v, false);
	return failure(a);
}

static void on_read(struct pd_watch *w, uint32_t events)
{
	struct pd_agentconn *a = pd_container_of(w, struct pd_agentconn, w);
	ssize_t n = read(w->fd, a->buf + a->len, sizeof(a->buf) - a->len);
	size_t off = 0;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(a);
		return;
	}
	a->len += (size_t)n;
	for (;;) {
		const uint8_t *body;
		size_t blen;
		uint8_t type;
		long m = hezo_agent_frame(a->buf + off, a->len - off, &type, &body, &blen);

		if (m == -EAGAIN)
			break;
		if (m < 0 || !handle(a, type, body, blen)) {
			conn_close(a);
			return;
		}
		off += (size_t)m;
	}
	memmove(a->buf, a->buf + off, a->len - off);
	a->len -= off;
}

/* /proc/PID/cgroup into buf (NUL-terminated): its length, or -1. */
static ssize_t read_cgroup(pid_t pid, char *buf, size_t size)
{
	char path[64];
	_cleanup_close_ int fd = -1;
	size_t len = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return len > 0 && len < size - 1 ? (ssize_t)len : -1;
}

/* Does every cgroup of the text (lines "N:controllers:/path") but the root end with a name
 * hezo_cgroup_name_is_id gives member m, and at least one? */
static bool cgroups_named(const struct pd_member *m, const char *cgroups)
{
	char text[4096];
	bool named = false;

	snprintf(text, sizeof(text), "%s", cgroups);
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *path = strchr(line, ':') ? strchr(strchr(line, ':') + 1, ':') : NULL;
		const char *last;

		if (!path)
			return false;
		path++;
		if (strcmp(path, "/") == 0)
			continue;
		last = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		if (!hezo_cgroup_name_is_id(last, m->id))
			return false;
		named = true;
	}
	return named;
}

/* The network namespace a socket was made in (Linux 5.14); 0 when it cannot be told. */
static uint64_t netns_cookie(int fd)
{
	uint64_t v = 0;
	socklen_t len = sizeof(v);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &v, &len) < 0 || len != sizeof(v))
		return 0;
	return v;
}

/*
 * Is the peer the box? Under runc the box's processes are in its network namespace, and so is
 * every socket they make: a unix connection's accepted end belongs to the namespace the client's
 * socket was made in, which the box's listeners (made there by netns.c) name too. Its pid's
 * /proc/PID/ns/net says the same while it is readable; it is not for a box in a user namespace
 * of its own (another uid, and proxyd keeps no CAP_SYS_PTRACE). Under runsc the gofer connects
 * for the Sentry (--host-uds=open), from an empty namespace of its own but in the sandbox's
 * cgroups, which the policy names for the container (policy/cgroups.c): a peer all of whose
 * cgroups are named for a member of the registration is the box too, when its cgroup v2 is also
 * the very one the hook registered for that member (runsc's gofer shares the sandbox's). A last
 * name alone is not the box: a box of the same ID under another --root has cgroups of that name
 * under another parent (red team keys, F1). No box may move its processes.
 */
static bool in_box(const struct pd_container *c, int fd, pid_t pid)
{
	const struct pd_listener *ls[] = {&c->tcp[0], &c->tcp[1], &c->udp[0], &c->udp[1]};
	_cleanup_error_ struct hezo_error *err = NULL;
	char path[64], cg[4096];
	struct stat a, b;
	uint64_t box = 0, peer = netns_cookie(fd), v2 = 0;

	for (size_t i = 0; i < sizeof(ls) / sizeof(ls[0]) && !box; i++)
		box = netns_cookie(ls[i]->w.fd);
	if (box && peer == box)
		return true;
	if (pid <= 0 || fstat(c->netns_fd, &b) < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat(path, &a) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
		return true;
	if (read_cgroup(pid, cg, sizeof(cg)) <= 0)
		return false;
	(void)hezo_cgroup_id(pid, &v2, &err);
	for (size_t i = 0; i < c->nmembers; i++)
		if (cgroups_named(c->members[i], cg) &&
		    (c->members[i]->cgroup == 0 || c->members[i]->cgroup == v2))
			return true;
	return false;
}

static void on_accept(struct pd_watch *w, uint32_t events)
{
	struct pd_listener *l = pd_container_of(w, struct pd_listener, w);
	struct pd_container *c = l->c;

	for (int i = 0; i < 8; i++) {
		struct verdict v = {.kind = "connect"};
		struct ucred cred = {0};
		socklen_t clen = sizeof(cred);
		struct pd_agentconn *a;
		int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
		    !in_box(c, fd, cred.pid)) {
			snprintf(v.target, sizeof(v.target), "pid %d", (int)cred.pid);
			v.reason = "peer is not in the box's network namespace";
			log_verdict(c, &v, false);
			close(fd);
			continue;
		}
		a = c->nagent < AGENT_CONNS_MAX ? calloc(1, sizeof(*a)) : NULL;
		if (!a) {
			close(fd);
			continue;
		}
		a->c = c;
		if (pd_watch_add(&a->w, fd, EPOLLIN, on_read) < 0) {
			free(a);
			continue;
		}
		a->next = c->agentconns;
		a->pprev = &c->agentconns;
		if (a->next)
			a->next->pprev = &a->next;
		c->agentconns = a;
		c->nagent++;
	}
}

static int agent_dir(const char *id, bool make, struct hezo_error **err)
{
	_cleanup_close_ int top = pd_state_subdir("agent", err);
	int fd;

	if (top < 0)
		return top;
	/* The shim made it for the bind mount; a box started without the shim gets one here. */
	if (make && mkdirat(top, id, 0755) < 0 && errno != EEXIST)
		return hezo_error_set_errno(err, errno, "agent/%s", id);
	fd = openat(top, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "agent/%s", id);
	return fd;
}

int pd_agent_start(struct pd_container *c, struct hezo_error **err)
{
	_cleanup_close_ int dfd = -1, fd = -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	mode_t old;
	int r;

	c->agent.c = c;
	if (c->eg.nkeys == 0)
		return 0;
	dfd = agent_dir(c->id, true, err);
	if (dfd < 0)
		return dfd;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "agent socket");
	/* Through the directory's fd: a state dir's path plus a 64-character id may not fit in
	 * sun_path. A restart replaces the socket the last run left. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/agent.sock", dfd);
	(void)unlinkat(dfd, "agent.sock", 0);
	/* Any user of the box may connect: only this box has the directory. */
	old = umask(0111);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 16) < 0)
		return hezo_error_set_errno(err, errno, "agent socket agent/%s/agent.sock", c->id);
	if (pd_watch_add(&c->agent.w, TAKE_FD(fd), EPOLLIN, on_accept) < 0)
		return hezo_error_set(err, EIO, "agent socket: cannot watch it");
	return 0;
}

void pd_agent_stop(struct pd_container *c)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_close_ int dfd = -1;

	if (c->agent.w.fd < 0 && !c->agentconns)
		return;
	while (c->agentconns)
		conn_close(c->agentconns);
	pd_watch_close(&c->agent.w);
	dfd = agent_dir(c->id, false, &err);
	if (dfd >= 0)
		(void)unlinkat(dfd, "agent.sock", 0);
}

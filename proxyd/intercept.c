/*
 * TLS interception of a connection whose SNI names a host of one of its container's secrets
 * (issue 17). The relay hands the client socket over with the ClientHello it read; proxyd ends
 * the client's TLS with a leaf of its CA, opens its own verified TLS to the upstream, and then
 * follows the HTTP/1.1 requests (http.c's tracker, as plain HTTP) one by one: Host must be the
 * SNI and its port the connection's, placeholders become values (subst.c) in header values only,
 * bodies pass as they are with their framing followed; the answers come back with every value
 * masked (mask.c). In a namespace several containers share, a connection takes the secrets of
 * the member it came from (pd_member_of); the other members' placeholders are refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "h2.h"
#include "proxyd.h"
#include "tls.h"

#define IN_MAX	 PD_HEAD_MAX	   /* client plaintext not yet passed */
#define PEND_MAX (4 * PD_HEAD_MAX) /* plaintext on its way to the upstream */
/* Basic credentials masked back beside the secrets' values. */
#define BASIC_SLOTS (HEZO_MASK_VALUES - HEZO_SUBST_MAX)
#define DOWN_LIMIT  (256 * 1024) /* TLS bytes waiting for the client: stop reading up */
#define DOWN_BATCH  (64 * 1024)	 /* TLS bytes for the client written while reading on */
#define CIN_LIMIT   (64 * 1024)	 /* TLS bytes from the client not yet decrypted */
#define VALUE_READ  4097
/*
 * What the memory budget (pd_cfg.icpt_mem_mib, icpt_share_mib) reserves: a connection's most
 * (TLS bytes either way up to their limits, its buffers and masking) and an HTTP/2 stream's
 * (its masking, head and answer window), so that what is admitted fits whatever it does.
 */
#define CONN_CHARGE	 (384 * 1024)
#define H2_STREAM_CHARGE (160 * 1024)
/*
 * Each registration's first bytes (a connection and four streams) are its own, outside the
 * global cap: boxes that spend the cap between them (four at their default share) cannot lock
 * every other box out of its secrets (s13 red team F2). Only what a registration holds beyond
 * this is charged to --intercept-memory.
 */
#define REG_FLOOR (CONN_CHARGE + 4 * H2_STREAM_CHARGE)

enum phase { P_CLIENT_HS, P_CONNECT, P_UP_HS, P_RUN };

struct pd_icpt {
	struct pd_icpt *next, **pprev;
	struct pd_container *c;
	const struct pd_member *m; /* whose connection it is: its secrets go, the others' not */
	struct pd_watch cw, uw;
	enum phase ph;
	SSL *cs, *us;
	BIO *crb, *cwb; /* the client's TLS bytes in and out (owned by cs) */
	struct pd_tcp t;
	uint64_t deadline_ms, last_ms;
	bool c_eof, c_closed, u_eof, u_shut, u_want_write;
	uint8_t *in, *pend;
	size_t inlen, pendoff, pendlen;
	struct hezo_http_track tr; /* where the client's next request head is */
	bool opaque;		   /* a 101 answered a held Upgrade: the rest passes unread */
	bool loaded;
	size_t nsv, nown; /* sv: m's secrets [0, nown), then the other members' */
	struct hezo_subst_secret sv[HEZO_SUBST_MAX];
	/* Copies: another member's secrets may go while this connection lasts. */
	char phs[HEZO_SUBST_MAX][HEZO_PLACEHOLDER_LEN + 1];
	char names[HEZO_SUBST_MAX][HEZO_SECRET_NAME_MAX];
	uint8_t *values[HEZO_SUBST_MAX];
	struct hezo_mask_value mv[HEZO_MASK_VALUES];
	uint8_t *basic[BASIC_SLOTS];	 /* sent and written, one allocation */
	uint64_t basic_req[BASIC_SLOTS]; /* the last request (nreq) whose answer may echo it */
	unsigned nbasic;		 /* slots in use, from the first */
	struct hezo_mask *mask;		 /* the answers, while a request waits for one (~72 KiB) */
	size_t nmv;			 /* values masked: the secrets', then Basic credentials */
	uint64_t masked;		 /* masks of the answers before the current mask */
	uint16_t port;			 /* the real destination port */
	bool down_done; /* an answer ended the connection: nothing more goes down */
	uint64_t bytes_out, bytes_in;
	uint64_t nreq;
	unsigned nsubst;
	const char *reason;
	/* HTTP/2 (h2.c): the box offered h2 by ALPN, so its handshake waited for the upstream's. */
	struct pd_tls_alpn alpn;
	struct hezo_h2 *h2;
	uint8_t *uo; /* HTTP/2 bytes on their way to the upstream */
	size_t uooff, uolen, uocap;
	/* The upstream failed while the box's handshake waited: answered once it is done. */
	int fail_status;
	const char *fail_verdict, *fail_reason;
	uint64_t charged; /* of the memory budget: its own and its streams' */
};

static struct pd_icpt *all;
static uint64_t charged_all; /* every registration's reservations beyond its floor */

static uint64_t over_floor(uint64_t held)
{
	return held > REG_FLOOR ? held - REG_FLOOR : 0;
}

/* n more bytes for c from the budget: NULL, or why not (nothing taken then). */
static const char *budget_take(struct pd_container *c, uint64_t n)
{
	uint64_t g = over_floor(c->icpt_mem + n) - over_floor(c->icpt_mem);

	if (charged_all + g > (uint64_t)pd_cfg.icpt_mem_mib << 20)
		return "interception memory budget spent (all registrations)";
	if (c->icpt_mem + n > (uint64_t)pd_cfg.icpt_share_mib << 20)
		return "interception memory budget spent (this registration's share)";
	charged_all += g;
	c->icpt_mem += n;
	return NULL;
}

static void budget_give(struct pd_container *c, uint64_t n)
{
	charged_all -= over_floor(c->icpt_mem) - over_floor(c->icpt_mem - n);
	c->icpt_mem -= n;
}
static uint8_t scratch[16384];

static void icpt_free_values(struct pd_icpt *k)
{
	for (size_t i = 0; i < k->nsv; i++) {
		if (k->values[i]) {
			OPENSSL_cleanse(k->values[i], k->sv[i].value_len);
			free(k->values[i]);
		}
	}
}

static void to_client(void *ud, const uint8_t *b, size_t n);

/* The answers' state, made when a request goes up; an idle connection gives it back. */
static int mask_ready(struct pd_icpt *k)
{
	if (k->mask)
		return 0;
	k->mask = malloc(sizeof(*k->mask));
	if (!k->mask)
		return -ENOMEM;
	hezo_mask_init(k->mask, k->mv, k->nmv, to_client, k);
	return 0;
}

static void mask_drop(struct pd_icpt *k)
{
	if (!k->mask)
		return;
	k->masked += k->mask->masked;
	/* The work buffers may hold a value's first bytes. */
	OPENSSL_cleanse(k->mask, sizeof(*k->mask));
	free(k->mask);
	k->mask = NULL;
}

static void end(struct pd_icpt *k, const char *verdict, const char *reason)
{
	*k->pprev = k->next;
	if (k->next)
		k->next->pprev = k->pprev;
	k->c->nconns--;
	if (k->h2) {
		k->masked += hezo_h2_masked(k->h2);
		/* Its streams give their shares back as they go. */
		hezo_h2_free(k->h2);
		k->h2 = NULL;
	}
	budget_give(k->c, k->charged);
	k->charged = 0;
	if (k->uo)
		OPENSSL_cleanse(k->uo, k->uocap);
	free(k->uo);
	mask_drop(k);
	k->t.masks = k->masked;
	k->c->st.secrets_masked += k->t.masks;
	pd_stats.secrets_masked += k->t.masks;
	pd_tcp_end(k->c, &k->t, k->bytes_out, k->bytes_in, true, verdict, reason);
	SSL_free(k->cs);
	SSL_free(k->us);
	icpt_free_values(k);
	for (size_t i = 0; i < BASIC_SLOTS; i++)
		if (k->basic[i]) {
			OPENSSL_cleanse(k->basic[i],
					k->mv[k->nsv + i].len + k->mv[k->nsv + i].placeholder_len);
			free(k->basic[i]);
		}
	free(k->in);
	if (k->pend)
		OPENSSL_cleanse(k->pend, PEND_MAX);
	free(k->pend);
	pd_watch_drop_later(&k->cw, false);
	pd_watch_drop_later(&k->uw, false);
	pd_defer_free(k);
}

/* Everything the client's TLS has for it, as far as the socket takes it. */
static int flush_client(struct pd_icpt *k)
{
	while (BIO_ctrl_pending(k->cwb) > 0) {
		char *p;
		long n = BIO_get_mem_data(k->cwb, &p);
		ssize_t w = write(k->cw.fd, p, (size_t)n);

		if (w < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		BIO_read(k->cwb, scratch,
			 (int)((size_t)w < sizeof(scratch) ? (size_t)w : sizeof(scratch)));
		if ((size_t)w > sizeof(scratch)) {
			/* BIO_read takes at most the scratch size: drain the rest. */
			size_t left = (size_t)w - sizeof(scratch);
			while (left) {
				int m = BIO_read(
					k->cwb, scratch,
					(int)(left < sizeof(scratch) ? left : sizeof(scratch)));
				if (m <= 0)
					break;
				left -= (size_t)m;
			}
		}
	}
	return 0;
}

/* An answer of proxyd's own toward the client, inside its TLS, then the end. */
static void answer_and_end(struct pd_icpt *k, int status, const char *verdict, const char *reason)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
			 "Content-Length: %zu\r\n\r\nhezo-proxyd: %s\n",
			 status,
			 status == 403	 ? "Forbidden"
			 : status == 502 ? "Bad Gateway"
					 : "Bad Request",
			 strlen("hezo-proxyd: \n") + strlen(reason), reason);

	if (k->cs && SSL_is_init_finished(k->cs)) {
		SSL_write(k->cs, msg, n);
		SSL_shutdown(k->cs);
		(void)flush_client(k);
	}
	end(k, verdict, reason);
}

/* The masked answers go into the client's TLS (its memory BIO takes all). */
static void to_client(void *ud, const uint8_t *b, size_t n)
{
	struct pd_icpt *k = ud;

	if (n > 0)
		SSL_write(k->cs, b, (int)n);
}

/*
 * The secrets of c's members, m's first (own: how many are m's), at most max. A connection of
 * no member (m NULL) has none of its own.
 */
static size_t pod_secrets(const struct pd_container *c, const struct pd_member *m,
			  const struct hezo_secret **out, size_t max, size_t *own)
{
	size_t n = 0;

	for (size_t i = 0; m && i < m->nsecrets && n < max; i++)
		out[n++] = &m->secrets[i];
	if (own)
		*own = n;
	for (size_t j = 0; j < c->nmembers; j++) {
		const struct pd_member *o = c->members[j];

		for (size_t i = 0; o != m && i < o->nsecrets && n < max; i++)
			out[n++] = &o->secrets[i];
	}
	return n;
}

/*
 * A head the parser refused may be one whose method is a placeholder (longer than any method it
 * takes): named as such, as a placeholder in the method of a head it reads is.
 */
static bool placeholder_in_method(const struct pd_icpt *k, const uint8_t *head, size_t len)
{
	const uint8_t *sp = memchr(head, ' ', len);
	size_t mlen = sp ? (size_t)(sp - head) : len;
	const struct hezo_secret *pod[HEZO_SUBST_MAX];
	size_t n = pod_secrets(k->c, k->m, pod, HEZO_SUBST_MAX, NULL);

	for (size_t i = 0; i < n; i++) {
		const char *ph = pod[i]->placeholder;

		if (*ph && memmem(head, mlen, ph, strlen(ph)))
			return true;
	}
	return false;
}

/*
 * Read every secret's value from its file, as the shim checked it: root's, no group or other.
 * The connection's member's secrets go toward the hosts they name; the other members' are
 * refused anywhere (never "here", never passed) and their values masked in the answers too.
 */
static int load_values(struct pd_icpt *k)
{
	const struct hezo_secret *pod[HEZO_SUBST_MAX];
	size_t n_all = pod_secrets(k->c, k->m, pod, HEZO_SUBST_MAX, &k->nown);

	for (size_t i = 0; i < n_all; i++) {
		const struct hezo_secret *s = pod[i];
		bool own = i < k->nown;
		int fd = open(s->file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		struct stat st;
		uint8_t *v;
		ssize_t n;

		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
		    (st.st_mode & 077)) {
			close(fd);
			return -EPERM;
		}
		v = malloc(VALUE_READ);
		if (!v) {
			close(fd);
			return -ENOMEM;
		}
		n = read(fd, v, VALUE_READ);
		close(fd);
		/* One trailing newline (as `echo` writes it) is not part of the value. */
		if (n > 0 && v[n - 1] == '\n')
			n--;
		if (n > 0 && v[n - 1] == '\r')
			n--;
		k->values[i] = v;
		snprintf(k->phs[i], sizeof(k->phs[i]), "%s", s->placeholder);
		snprintf(k->names[i], sizeof(k->names[i]), "%s", s->name);
		/* The real destination port: an entry without one names 443 only. */
		k->sv[i] = (struct hezo_subst_secret){
			.placeholder = k->phs[i],
			.value = v,
			.value_len = n > 0 ? (size_t)n : 0,
			.here = own && hezo_secret_names_host(s, k->t.name, k->port),
			.pass = own && s->pass_elsewhere,
			.header = own && s->in_header,
			.query = own && s->in_query,
			.headers = own ? s->headers : NULL,
			.nheaders = own ? s->nheaders : 0,
		};
		/* Every value of the pod is masked, not only those that go here. */
		k->mv[i] = (struct hezo_mask_value){k->phs[i], v, k->sv[i].value_len};
		k->nsv = i + 1;
		if (n <= 0 || !hezo_subst_value_ok(v, (size_t)n))
			return -EINVAL;
	}
	k->nmv = k->nsv;
	k->loaded = true;
	return 0;
}

/* Requests whose answers are all done: a Basic credential of theirs can give its slot up. */
static uint64_t answered(const struct pd_icpt *k)
{
	return k->nreq - (k->mask ? k->mask->qn : 0);
}

/* The Basic credentials a substituted head made: (sent, written) pairs, pointers into it. */
struct basic_pairs {
	size_t n;
	bool over;
	const uint8_t *sent[BASIC_SLOTS], *written[BASIC_SLOTS];
	size_t slen[BASIC_SLOTS], wlen[BASIC_SLOTS];
};

static void note_basic(void *ud, const uint8_t *sent, size_t slen, const uint8_t *written,
		       size_t wlen)
{
	struct basic_pairs *p = ud;

	/* subst.c refuses such; a credential that cannot be masked must not go in any case. */
	if (p->n == BASIC_SLOTS || slen > HEZO_MASK_VALUE_MAX) {
		p->over = true;
		return;
	}
	p->sent[p->n] = sent;
	p->slen[p->n] = slen;
	p->written[p->n] = written;
	p->wlen[p->n] = wlen;
	p->n++;
}

/* The slot credential sent[0..slen) is masked from, or -1. */
static int basic_find(const struct pd_icpt *k, const uint8_t *sent, size_t slen)
{
	for (unsigned i = 0; i < k->nbasic; i++) {
		const struct hezo_mask_value *v = &k->mv[k->nsv + i];

		if (v->len == slen && memcmp(v->value, sent, slen) == 0)
			return (int)i;
	}
	return -1;
}

/*
 * Room for p's credentials: each new one needs a slot that is unused, or whose credential no
 * answer still due can echo. A slot is never given up earlier: that answer would pass unmasked.
 */
static bool basic_room(const struct pd_icpt *k, const struct basic_pairs *p)
{
	uint64_t done = answered(k);
	size_t need = 0, have = BASIC_SLOTS - k->nbasic;
	bool kept[BASIC_SLOTS] = {false};

	for (size_t i = 0; i < p->n; i++) {
		int at = basic_find(k, p->sent[i], p->slen[i]);

		if (at < 0)
			need++;
		else
			kept[at] = true; /* it stays, for this request's answer too */
	}
	for (unsigned i = 0; i < k->nbasic; i++)
		if (!kept[i] && k->basic_req[i] <= done)
			have++;
	return need <= have;
}

/* p's credentials masked back on every answer up to request req's (basic_room said yes). */
static int basic_add(struct pd_icpt *k, const struct basic_pairs *p, uint64_t req)
{
	uint64_t done = answered(k);

	/* Those already kept first: they must not be taken for free slots below. */
	for (size_t i = 0; i < p->n; i++) {
		int at = basic_find(k, p->sent[i], p->slen[i]);

		if (at >= 0)
			k->basic_req[at] = req;
	}
	for (size_t i = 0; i < p->n; i++) {
		unsigned slot = 0;
		uint8_t *b;

		if (basic_find(k, p->sent[i], p->slen[i]) >= 0)
			continue;
		if (k->nbasic < BASIC_SLOTS) {
			slot = k->nbasic;
		} else {
			while (slot < BASIC_SLOTS && k->basic_req[slot] > done)
				slot++;
			if (slot == BASIC_SLOTS)
				return -ENOSPC;
		}
		b = malloc(p->slen[i] + p->wlen[i]);
		if (!b)
			return -ENOMEM;
		memcpy(b, p->sent[i], p->slen[i]);
		memcpy(b + p->slen[i], p->written[i], p->wlen[i]);
		if (slot == k->nbasic) {
			k->nbasic++;
		} else {
			OPENSSL_cleanse(k->basic[slot],
					k->mv[k->nsv + slot].len +
						k->mv[k->nsv + slot].placeholder_len);
			free(k->basic[slot]);
		}
		k->basic[slot] = b;
		k->basic_req[slot] = req;
		k->mv[k->nsv + slot] = (struct hezo_mask_value){
			.placeholder = (const char *)b + p->slen[i],
			.value = b,
			.len = p->slen[i],
			.placeholder_len = p->wlen[i],
			.derived = true,
		};
	}
	k->nmv = k->nsv + k->nbasic;
	if (k->mask)
		hezo_mask_values(k->mask, k->mv, k->nmv);
	return 0;
}

static void log_request(struct pd_icpt *k, const uint8_t *head, size_t mlen,
			const struct hezo_subst_result *res, const char *verdict,
			const char *reason)
{
	char names[512] = "", method[32], path[512];
	const uint8_t *t = head + mlen + 1, *e = t;
	size_t o = 0;
	struct pd_netlog l = {
		.proto = "https",
		.src = &k->t.src,
		.dst = &k->t.dst,
		.name = k->t.name,
		.verdict = verdict,
		.reason = reason,
		.duration_ms = 0,
		.intercepted = true,
		.method = method,
		.path = path,
		.secrets = names,
		.substitutions = res->count,
	};
	uint32_t mask = strcmp(verdict, "allow") == 0 ? res->used : res->refused;

	snprintf(method, sizeof(method), "%.*s", (int)(mlen < 31 ? mlen : 31), head);
	/* The path without its query: a query may hold the value now. */
	while (*e != ' ' && *e != '?' && *e != '\r')
		e++;
	snprintf(path, sizeof(path), "%.*s", (int)((size_t)(e - t) < 511 ? (size_t)(e - t) : 511),
		 t);
	for (size_t i = 0; i < k->nsv; i++)
		if (mask >> i & 1)
			o += (size_t)snprintf(names + o, o < sizeof(names) ? sizeof(names) - o : 0,
					      "%s%s", o ? "," : "", k->names[i]);
	pd_netlog_write(k->c, &l);
}

static bool pend_add(struct pd_icpt *k, const uint8_t *b, size_t n)
{
	if (k->pendoff + k->pendlen + n > PEND_MAX) {
		memmove(k->pend, k->pend + k->pendoff, k->pendlen);
		k->pendoff = 0;
	}
	if (k->pendlen + n > PEND_MAX)
		return false;
	memcpy(k->pend + k->pendoff + k->pendlen, b, n);
	k->pendlen += n;
	return true;
}

static void consume(struct pd_icpt *k, size_t n)
{
	memmove(k->in, k->in + n, k->inlen - n);
	k->inlen -= n;
}

/* One request head: checked, substituted and queued. false: the connection has ended. */
static bool take_head(struct pd_icpt *k)
{
	struct hezo_http_request req, again;
	struct hezo_subst_result res;
	char host[HEZO_NAME_MAX];
	uint8_t *out;
	size_t olen, used;
	int r;

	/* As many requests wait for their answers as the masking follows: the next waits too. */
	if (k->mask && k->mask->qn == HEZO_MASK_QUEUE)
		return true;
	/* The plain-HTTP rules: a body on a method that takes none is refused (a server may read
	 * it as another request), and only a body-less Upgrade waits for its answer. */
	r = hezo_http_track(&k->tr, k->in, k->inlen, &used, &req);
	if (r == -EBADMSG) {
		answer_and_end(
			k, 400, "deny",
			"a body on a GET, HEAD, OPTIONS, TRACE or DELETE request (a server may "
			"read it as another request)");
		return false;
	}
	if (r == -EAGAIN) {
		if (k->inlen == IN_MAX) {
			answer_and_end(k, 400, "deny", "request head over 16 KiB");
			return false;
		}
		return true;
	}
	if (r < 0) {
		answer_and_end(k, 400, "deny",
			       placeholder_in_method(k, k->in, k->inlen)
				       ? "a secret's placeholder in the method"
				       : "not an HTTP/1.1 request with one Host "
					 "header and unambiguous framing");
		return false;
	}
	if (hezo_name_normalize(req.host, strlen(req.host), host) < 0 ||
	    strcmp(host, k->t.name) != 0 || (req.port && req.port != k->port)) {
		answer_and_end(k, 403, "deny", "Host does not match the TLS server name");
		return false;
	}
	if (!k->loaded && (r = load_values(k)) < 0) {
		/* Fail closed: never a request to a secret's host without its value. */
		answer_and_end(k, 502, "error", "a secret's file cannot be read");
		return false;
	}
	if (mask_ready(k) < 0) {
		answer_and_end(k, 502, "error", "out of memory");
		return false;
	}
	out = k->pend + k->pendoff + k->pendlen;
	if (k->pendoff + k->pendlen + req.head_len + 8 * 4096 > PEND_MAX) {
		memmove(k->pend, k->pend + k->pendoff, k->pendlen);
		k->pendoff = 0;
		out = k->pend + k->pendlen;
	}
	r = hezo_subst_head(k->in, req.head_len, k->sv, k->nsv, out,
			    PEND_MAX - k->pendoff - k->pendlen, &olen, &res);
	if (r == -EPROTO) {
		log_request(k, k->in, req.method_len, &res, "deny", res.why);
		answer_and_end(k, 400, "deny", res.why);
		return false;
	}
	if (r == -EACCES && (res.refused >> k->nown) != 0) {
		log_request(k, k->in, req.method_len, &res, "deny",
			    "another container's placeholder");
		answer_and_end(k, 403, "deny",
			       "a placeholder of another container's secret (a secret is only "
			       "its own container's)");
		return false;
	}
	if (r == -EACCES) {
		log_request(k, k->in, req.method_len, &res, "deny",
			    "placeholder toward a host its secret does not name");
		answer_and_end(k, 403, "deny",
			       "a secret's placeholder toward a host the secret does not name");
		return false;
	}
	if (r < 0) {
		answer_and_end(k, 400, "deny", "request head too long once substituted");
		return false;
	}
	if (res.count) {
		struct basic_pairs p = {0};

		hezo_subst_basic_pairs(k->in, req.head_len, out, olen, note_basic, &p);
		if (p.over) {
			OPENSSL_cleanse(out, olen);
			answer_and_end(k, 400, "deny",
				       "Basic credentials with values that cannot all be masked");
			return false;
		}
		/* Full of credentials answers may still echo: read this head again when some
		 * answers are done (the answers come in, so it ends). */
		if (!basic_room(k, &p)) {
			OPENSSL_cleanse(out, olen);
			return true;
		}
		if (basic_add(k, &p, k->nreq + 1) < 0) {
			OPENSSL_cleanse(out, olen);
			answer_and_end(k, 502, "error", "no room to mask a Basic credential");
			return false;
		}
	}
	/* Coded answers could hide a value from the masking: ask for none. */
	if (hezo_subst_identity(out, olen, PEND_MAX - (size_t)(out - k->pend), &olen) < 0) {
		OPENSSL_cleanse(out, olen);
		answer_and_end(k, 400, "deny", "request head too long once substituted");
		return false;
	}
	/* The substituted head must read as the original did: framing, Host, Upgrade. */
	if (hezo_http_parse_request(out, olen, &again) != 1 || again.head_len != olen ||
	    again.body != req.body || again.length != req.length || again.upgrade != req.upgrade) {
		OPENSSL_cleanse(out, olen);
		answer_and_end(k, 400, "deny", "request not valid once substituted");
		return false;
	}
	if (res.count)
		log_request(k, k->in, req.method_len, &res, "allow", "substituted");
	k->nsubst += res.count;
	k->c->st.secrets_substituted += res.count;
	pd_stats.secrets_substituted += res.count;
	k->nreq++;
	(void)hezo_mask_request(k->mask, req.method_len == 4 && memcmp(k->in, "HEAD", 4) == 0,
				req.minor == 0);
	k->pendlen += olen;
	consume(k, used);
	return true;
}

/* Move client plaintext from in to pend, request by request. false: the connection has ended. */
static bool feed_up(struct pd_icpt *k)
{
	while (k->inlen > 0 && k->pendlen < PEND_MAX / 2) {
		struct hezo_http_request req;
		size_t n;
		int r;

		if (k->opaque) {
			if (!pend_add(k, k->in, k->inlen))
				return true;
			consume(k, k->inlen);
			continue;
		}
		switch (k->tr.st) {
		case HEZO_HTTP_T_HEAD:
			if (k->pendlen > 0)
				return true; /* a head needs room for its values: wait */
			n = k->inlen;
			if (!take_head(k))
				return false;
			if (k->inlen == n)
				return true; /* incomplete */
			break;
		case HEZO_HTTP_T_LENGTH:
			n = k->inlen < hezo_http_track_body_left(&k->tr)
				    ? k->inlen
				    : (size_t)hezo_http_track_body_left(&k->tr);
			if (!pend_add(k, k->in, n))
				return true;
			consume(k, n);
			hezo_http_track_skip(&k->tr, n);
			break;
		case HEZO_HTTP_T_CHUNKED:
			r = hezo_http_track(&k->tr, k->in, k->inlen, &n, &req);
			if (r < 0) {
				answer_and_end(k, 400, "deny", "bad chunked framing");
				return false;
			}
			if (!pend_add(k, k->in, n)) {
				/* Scanned but not moved: scan again from a fresh state is wrong, so
				 * refuse rather than misframe (pend holds at least half its room).
				 */
				answer_and_end(k, 400, "deny", "chunked body faster than upstream");
				return false;
			}
			consume(k, n);
			break;
		default:
			return true; /* a held Upgrade: its answer decides what comes next */
		}
	}
	return true;
}

/* Drain b[*off, *off + *len) into the upstream's TLS, each byte wiped once sent. <0: it failed. */
static int drain_up(struct pd_icpt *k, uint8_t *b, size_t *off, size_t *len)
{
	k->u_want_write = false;
	while (*len > 0) {
		int n = SSL_write(k->us, b + *off, (int)*len);

		if (n <= 0) {
			int e = SSL_get_error(k->us, n);

			if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
				k->u_want_write = e == SSL_ERROR_WANT_WRITE;
				return 0;
			}
			return -EIO;
		}
		OPENSSL_cleanse(b + *off, (size_t)n);
		*off += (size_t)n;
		*len -= (size_t)n;
		k->bytes_out += (size_t)n;
	}
	*off = 0;
	return 0;
}

/* Drain pend (HTTP/1) into the upstream's TLS. */
static int flush_up(struct pd_icpt *k)
{
	return drain_up(k, k->pend, &k->pendoff, &k->pendlen);
}

/*
 * A held Upgrade: once its answer is in, a 101 makes the rest of the client's bytes opaque (as
 * plain HTTP does, nothing after it is judged); any other answer means the next bytes are a
 * request head. 1: no longer held, 0: still waiting, -1: the connection has ended.
 */
static int upgrade_answered(struct pd_icpt *k)
{
	if (k->opaque || k->tr.st != HEZO_HTTP_T_HOLD)
		return 0;
	if (k->mask && hezo_mask_switched(k->mask)) {
		/* Every request before the Upgrade took no upgrade: a 101 while it still waits
		 * answered one of those. */
		if (k->mask->qn > 0) {
			end(k, "deny",
			    "upstream switched protocols for a request that did not ask to");
			return -1;
		}
		k->opaque = true;
		return 1;
	}
	if (k->mask && hezo_mask_busy(k->mask))
		return 0;
	hezo_http_track_resume(&k->tr);
	return 1;
}

static void interest(struct pd_icpt *k)
{
	uint32_t ce = 0, ue = 0;

	if (!k->c_eof && BIO_ctrl_pending(k->crb) < CIN_LIMIT)
		ce |= EPOLLIN | EPOLLRDHUP;
	if (BIO_ctrl_pending(k->cwb) > 0)
		ce |= EPOLLOUT;
	switch (k->ph) {
	case P_CLIENT_HS:
		break;
	case P_CONNECT:
		ue = EPOLLOUT;
		break;
	case P_UP_HS:
		ue = SSL_want_write(k->us) ? EPOLLOUT : EPOLLIN;
		break;
	case P_RUN:
		if (!k->u_eof && BIO_ctrl_pending(k->cwb) < DOWN_LIMIT)
			ue |= EPOLLIN | EPOLLRDHUP;
		if ((k->pendlen > 0 || k->uolen > 0) && k->u_want_write)
			ue |= EPOLLOUT;
		break;
	}
	if (pd_watch_set(&k->cw, ce) < 0 || (k->uw.fd >= 0 && pd_watch_set(&k->uw, ue) < 0))
		end(k, "error", "epoll");
}

static void on_client(struct pd_watch *w, uint32_t events);
static void on_upstream(struct pd_watch *w, uint32_t events);

static bool client_hs(struct pd_icpt *k);

/* The box's handshake waits for the upstream (it offered h2)? */
static bool held(const struct pd_icpt *k)
{
	return k->alpn.client_h2 && !k->alpn.decided;
}

/* The upstream failed: answered at once, or once the box's held handshake is done (as
 * HTTP/1.1). */
static void up_failed(struct pd_icpt *k, int status, const char *verdict, const char *reason)
{
	if (!held(k)) {
		answer_and_end(k, status, verdict, reason);
		return;
	}
	k->fail_status = status;
	k->fail_verdict = verdict;
	k->fail_reason = reason;
	k->alpn.decided = true;
	k->alpn.h2 = false;
	k->ph = P_CLIENT_HS;
	(void)client_hs(k);
}

/* false: it failed, and k may have ended. */
static bool start_connect(struct pd_icpt *k)
{
	socklen_t len = k->t.dst.ss_family == AF_INET ? sizeof(struct sockaddr_in)
						      : sizeof(struct sockaddr_in6);
	int fd = socket(k->t.dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0) {
		up_failed(k, 502, "error", "cannot create upstream socket");
		return false;
	}
	if (connect(fd, (struct sockaddr *)&k->t.dst, len) < 0 && errno != EINPROGRESS) {
		close(fd);
		up_failed(k, 502, "error", "upstream connect failed");
		return false;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	pd_watch_init(&k->uw, fd, on_upstream);
	k->ph = P_CONNECT;
	k->deadline_ms = pd_now_ms() + (uint64_t)pd_cfg.connect_timeout_s * 1000;
	PD_COUNT(k->c, conns_allowed);
	return true;
}

static const struct hezo_h2_ops h2_ops;

/*
 * The box's TLS handshake. A box that offers h2 is held at its ClientHello while the upstream is
 * asked (the answer decides the ALPN both ways). true: done with the upstream ready, go on to
 * run; false: waiting, or k went on by another way (maybe ended).
 */
static bool client_hs(struct pd_icpt *k)
{
	const unsigned char *alpn;
	unsigned alen;
	int r = SSL_do_handshake(k->cs);
	bool box_h2;

	(void)flush_client(k);
	if (r != 1) {
		int e = SSL_get_error(k->cs, r);

		if (e == SSL_ERROR_WANT_CLIENT_HELLO_CB) {
			if (k->uw.fd < 0 && !start_connect(k))
				return false;
			interest(k);
			return false;
		}
		if (e == SSL_ERROR_WANT_READ && !k->c_eof) {
			interest(k);
			return false;
		}
		ERR_clear_error();
		end(k, "deny", "client TLS handshake failed (proxyd offers h2 or http/1.1 only)");
		return false;
	}
	if (k->fail_reason) {
		answer_and_end(k, k->fail_status, k->fail_verdict, k->fail_reason);
		return false;
	}
	if (!k->us) {
		if (start_connect(k))
			interest(k);
		return false;
	}
	SSL_get0_alpn_selected(k->cs, &alpn, &alen);
	box_h2 = alen == 2 && memcmp(alpn, "h2", 2) == 0;
	if (box_h2 != k->alpn.h2) {
		end(k, "error", "the box and the upstream took different protocols");
		return false;
	}
	if (box_h2 && hezo_h2_new(&k->h2, &h2_ops, k, k->mv, 0) < 0) {
		end(k, "error", "HTTP/2 setup failed");
		return false;
	}
	k->ph = P_RUN;
	k->deadline_ms = 0;
	return true;
}

/* Read the client's socket into its TLS. */
static int read_client(struct pd_icpt *k)
{
	while (!k->c_eof && BIO_ctrl_pending(k->crb) < CIN_LIMIT) {
		ssize_t n = read(k->cw.fd, scratch, sizeof(scratch));

		if (n == 0) {
			k->c_eof = true;
			BIO_set_mem_eof_return(k->crb, 0);
		} else if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -errno;
		} else if (BIO_write(k->crb, scratch, (int)n) != n) {
			return -ENOMEM;
		}
	}
	return 0;
}

static void run_h2(struct pd_icpt *k, uint32_t cev, uint32_t uev);

/* The upstream's next plaintext into scratch: its length, 0 when none is there yet, -1 at its
 * end (or a failure: the same to the caller). */
static int read_up(struct pd_icpt *k)
{
	int n = SSL_read(k->us, scratch, sizeof(scratch)), e;

	if (n > 0) {
		k->bytes_in += (size_t)n;
		return n;
	}
	e = SSL_get_error(k->us, n);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return 0;
	k->u_eof = true;
	ERR_clear_error();
	return -1;
}

static void run(struct pd_icpt *k, uint32_t cev, uint32_t uev)
{
	int r;

	if (read_client(k) < 0) {
		end(k, "allow", "client read error");
		return;
	}
	if (k->ph == P_CLIENT_HS && !client_hs(k))
		return;
	if (k->ph == P_CONNECT) {
		int e = 0;
		socklen_t elen = sizeof(e);

		if (!(uev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
			interest(k);
			return;
		}
		if (getsockopt(k->uw.fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0 || e) {
			up_failed(k, 502, "error",
				  e == ECONNREFUSED ? "upstream refused the connection"
						    : "upstream connect failed");
			return;
		}
		k->us = pd_tls_client_new(k->t.name, k->uw.fd, k->alpn.client_h2);
		if (!k->us) {
			up_failed(k, 502, "error", "upstream TLS setup failed");
			return;
		}
		k->ph = P_UP_HS;
		uev = EPOLLIN;
	}
	if (k->ph == P_UP_HS) {
		const unsigned char *alpn;
		unsigned alen;

		r = SSL_connect(k->us);
		if (r != 1) {
			int e = SSL_get_error(k->us, r);
			long v = SSL_get_verify_result(k->us);

			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
				interest(k);
				return;
			}
			ERR_clear_error();
			/* No byte of the client's has gone upstream: the request waits in its TLS.
			 */
			up_failed(k, 502, "deny",
				  v != X509_V_OK ? "upstream certificate not trusted for this name"
						 : "upstream TLS handshake failed");
			return;
		}
		SSL_get0_alpn_selected(k->us, &alpn, &alen);
		if (alen == 2 && memcmp(alpn, "h2", 2) == 0 && k->alpn.client_h2) {
			k->alpn.h2 = true;
		} else if (alen && (alen != 8 || memcmp(alpn, "http/1.1", 8) != 0)) {
			up_failed(k, 502, "deny",
				  "upstream chose a protocol other than h2 or http/1.1");
			return;
		}
		if (held(k)) {
			/* The box's handshake goes on, now that the upstream's protocol is known.
			 */
			k->alpn.decided = true;
			k->ph = P_CLIENT_HS;
			k->deadline_ms = pd_now_ms() + (uint64_t)pd_cfg.head_timeout_s * 1000;
			if (!client_hs(k))
				return;
		} else {
			k->ph = P_RUN;
			k->deadline_ms = 0;
		}
	}
	if (k->h2) {
		run_h2(k, cev, uev);
		return;
	}
	/* P_RUN */
	k->last_ms = pd_now_ms();
	for (int round = 0; round < 8; round++) {
		bool progress = false;

		if (flush_up(k) < 0) {
			end(k, "allow", "upstream write failed");
			return;
		}
		/* client -> upstream */
		while (k->pendlen == 0 && k->inlen < IN_MAX) {
			int n;

			if (!k->in && !(k->in = malloc(IN_MAX))) {
				end(k, "error", "out of memory");
				return;
			}
			if (!k->pend && !(k->pend = malloc(PEND_MAX))) {
				end(k, "error", "out of memory");
				return;
			}
			n = SSL_read(k->cs, k->in + k->inlen, (int)(IN_MAX - k->inlen));
			if (n <= 0) {
				int e = SSL_get_error(k->cs, n);

				/* A close_notify, an EOF or an error: the client is done sending.
				 */
				if (e != SSL_ERROR_WANT_READ || k->c_eof) {
					k->c_closed = true;
					ERR_clear_error();
				}
				break;
			}
			k->inlen += (size_t)n;
			progress = true;
			if (!feed_up(k))
				return;
		}
		if (k->inlen && k->pendlen == 0) {
			if (!feed_up(k))
				return;
		}
		if (flush_up(k) < 0) {
			end(k, "allow", "upstream write failed");
			return;
		}
		/* Requests held behind an Upgrade still go once its answer is in. */
		if (k->c_closed && k->pendlen == 0 && !k->u_shut &&
		    !(k->inlen > 0 && !k->opaque && k->tr.st == HEZO_HTTP_T_HOLD)) {
			SSL_shutdown(k->us);
			shutdown(k->uw.fd, SHUT_WR);
			k->u_shut = true;
		}
		/* upstream -> client, every value masked on the way */
		while (!k->u_eof && !k->down_done && BIO_ctrl_pending(k->cwb) < DOWN_LIMIT) {
			int n = read_up(k);

			if (n <= 0) {
				if (n < 0 && k->mask && hezo_mask_end(k->mask) < 0)
					k->reason = k->mask->why;
				break;
			}
			progress = true;
			if (!k->mask) {
				/* No request waits: nothing is owed the upstream's bytes. */
				end(k, "deny", "upstream sent bytes no request asked for");
				return;
			}
			r = hezo_mask_feed_some(k->mask, scratch, (size_t)n);
			if (r < 0) {
				/* A bad head: nothing of it went down, the client gets a 502. */
				if (k->mask->headlen > 0 || k->mask->st == 0)
					answer_and_end(k, 502, "deny", k->mask->why);
				else
					end(k, "deny", k->mask->why);
				return;
			}
			if (r == 1)
				k->down_done = true;
			/* The box decrypts the first bytes while the next are read and masked. */
			if (BIO_ctrl_pending(k->cwb) >= DOWN_BATCH && flush_client(k) < 0) {
				end(k, "allow", "client write failed");
				return;
			}
		}
		/* What the reads left staged goes now: the whole round is in full records. */
		if (k->mask)
			hezo_mask_flush(k->mask);
		r = upgrade_answered(k);
		if (r < 0)
			return;
		if (r > 0)
			progress = true;
		if (flush_client(k) < 0) {
			end(k, "allow", "client write failed");
			return;
		}
		if (!progress)
			break;
	}
	if ((k->u_eof || k->down_done) && BIO_ctrl_pending(k->cwb) == 0) {
		SSL_shutdown(k->cs);
		(void)flush_client(k);
		end(k, "allow", k->nsubst ? "intercepted: substituted" : "intercepted");
		return;
	}
	if (k->c_closed && k->u_shut && k->u_eof) {
		end(k, "allow", "intercepted");
		return;
	}
	if ((cev & EPOLLERR) || (uev & EPOLLERR)) {
		end(k, "allow", "socket error");
		return;
	}
	/* An idle connection keeps its two SSLs and nothing else. */
	if (k->inlen == 0 && k->pendlen == 0) {
		if (k->mask && !hezo_mask_busy(k->mask) && k->mask->carry == 0)
			mask_drop(k);
		free(k->in);
		free(k->pend);
		k->in = k->pend = NULL;
		k->pendoff = 0;
	}
	interest(k);
}

/* ---- HTTP/2 (h2.c does the protocol; here: the rules, the sockets, the log) ---- */

/* One stream's request as an HTTP/1.1 head: the same checks and substitution as take_head. */
static int h2_request(void *ud, const uint8_t *head, size_t len, uint8_t *out, size_t outsz,
		      size_t *outlen, struct hezo_h2_verdict *v)
{
	struct pd_icpt *k = ud;
	struct hezo_http_request req, again;
	struct hezo_subst_result res = {0};
	char host[HEZO_NAME_MAX];
	size_t olen = 0;
	int r;

	v->status = 400;
	if (hezo_http_parse_request(head, len, &req) != 1 || req.head_len != len) {
		v->why = placeholder_in_method(k, head, len)
				 ? "a secret's placeholder in the method"
				 : "not a request proxyd passes (one :authority, valid fields)";
		return -EINVAL;
	}
	if (hezo_name_normalize(req.host, strlen(req.host), host) < 0 ||
	    strcmp(host, k->t.name) != 0 || (req.port && req.port != k->port)) {
		v->status = 403;
		v->why = ":authority does not match the TLS server name";
		return -EACCES;
	}
	if (!k->loaded && load_values(k) < 0) {
		v->status = 502;
		v->why = "a secret's file cannot be read";
		return -EIO;
	}
	hezo_h2_values(k->h2, k->mv, k->nmv);
	r = hezo_subst_head(head, len, k->sv, k->nsv, out, outsz, &olen, &res);
	v->refused = res.refused | res.misplaced;
	if (r == -EPROTO) {
		v->why = res.why;
		return r;
	}
	if (r == -EACCES) {
		v->status = 403;
		v->why = (res.refused >> k->nown) != 0
				 ? "a placeholder of another container's secret"
				 : "a secret's placeholder toward a host the secret does not name";
		return r;
	}
	if (r < 0) {
		v->why = "request head too long once substituted";
		return r;
	}
	if (res.count) {
		struct basic_pairs p = {0};

		hezo_subst_basic_pairs(head, len, out, olen, note_basic, &p);
		/* Streams run side by side: a credential stays masked for the connection's life,
		 * so a fifth on one connection is refused rather than waited for. */
		if (p.over || !basic_room(k, &p) || basic_add(k, &p, UINT64_MAX) < 0) {
			OPENSSL_cleanse(out, olen);
			v->why = "Basic credentials with values that cannot all be masked";
			return -ENOSPC;
		}
		hezo_h2_values(k->h2, k->mv, k->nmv);
	}
	if (hezo_subst_identity(out, olen, outsz, &olen) < 0 ||
	    hezo_http_parse_request(out, olen, &again) != 1 || again.head_len != olen) {
		OPENSSL_cleanse(out, olen);
		v->why = "request not valid once substituted";
		return -EINVAL;
	}
	v->used = res.used;
	v->count = res.count;
	v->sensitive = res.count > 0;
	k->nsubst += res.count;
	k->c->st.secrets_substituted += res.count;
	pd_stats.secrets_substituted += res.count;
	k->nreq++;
	*outlen = olen;
	return 0;
}

static void h2_stream_end(void *ud, const struct hezo_h2_stream_log *sl)
{
	struct pd_icpt *k = ud;
	char names[512] = "";
	size_t o = 0;
	uint32_t bits = strcmp(sl->verdict, "allow") == 0 ? sl->v->used : sl->v->refused;
	struct pd_netlog l = {
		.proto = "h2",
		.src = &k->t.src,
		.dst = &k->t.dst,
		.name = k->t.name,
		.verdict = sl->verdict,
		.reason = sl->reason,
		.intercepted = true,
		.method = sl->method,
		.path = sl->path,
		.secrets = names,
		.substitutions = sl->v->count,
		.has_bytes = true,
		.bytes_out = sl->bytes_out,
		.bytes_in = sl->bytes_in,
		.masks = sl->masked,
		.duration_ms = 0,
	};

	for (size_t i = 0; i < k->nsv; i++)
		if (bits >> i & 1)
			o += (size_t)snprintf(names + o, o < sizeof(names) ? sizeof(names) - o : 0,
					      "%s%s", o ? "," : "", k->names[i]);
	PD_COUNT(k->c, h2_streams);
	pd_netlog_write(k->c, &l);
}

/* A stream's share of the budget; over it, the stream is refused and logged (no request of it
 * has been read: method and path are not known). */
static bool h2_admit(void *ud)
{
	struct pd_icpt *k = ud;
	const char *why = budget_take(k->c, H2_STREAM_CHARGE);

	if (why) {
		struct pd_netlog l = {
			.proto = "h2",
			.src = &k->t.src,
			.dst = &k->t.dst,
			.name = k->t.name,
			.verdict = "deny",
			.reason = why,
			.intercepted = true,
		};

		PD_COUNT(k->c, icpt_budget_refused);
		pd_netlog_write(k->c, &l);
		return false;
	}
	k->charged += H2_STREAM_CHARGE;
	return true;
}

static void h2_release(void *ud)
{
	struct pd_icpt *k = ud;

	budget_give(k->c, H2_STREAM_CHARGE);
	k->charged -= H2_STREAM_CHARGE;
}

static const struct hezo_h2_ops h2_ops = {h2_request, h2_stream_end, h2_admit, h2_release};

static int uo_add(struct pd_icpt *k, const uint8_t *b, size_t n)
{
	if (k->uooff + k->uolen + n > k->uocap) {
		if (k->uo)
			memmove(k->uo, k->uo + k->uooff, k->uolen);
		k->uooff = 0;
		if (k->uolen + n > k->uocap) {
			size_t cap = k->uocap ? k->uocap * 2 : PEND_MAX;
			uint8_t *p;

			while (cap < k->uolen + n)
				cap *= 2;
			p = malloc(cap);
			if (!p)
				return -ENOMEM;
			if (k->uo) {
				memcpy(p, k->uo, k->uolen);
				OPENSSL_cleanse(k->uo, k->uocap);
				free(k->uo);
			}
			k->uo = p;
			k->uocap = cap;
		}
	}
	memcpy(k->uo + k->uooff + k->uolen, b, n);
	k->uolen += n;
	return 0;
}

static void run_h2(struct pd_icpt *k, uint32_t cev, uint32_t uev)
{
	const uint8_t *p;
	ssize_t m;

	k->last_ms = pd_now_ms();
	for (int round = 0; round < 8; round++) {
		bool progress = false;

		while (!k->c_closed) {
			int n = SSL_read(k->cs, scratch, sizeof(scratch));

			if (n <= 0) {
				int e = SSL_get_error(k->cs, n);

				if (e != SSL_ERROR_WANT_READ || k->c_eof) {
					k->c_closed = true;
					ERR_clear_error();
					hezo_h2_client_gone(k->h2);
				}
				break;
			}
			progress = true;
			if (hezo_h2_from_client(k->h2, scratch, (size_t)n) < 0) {
				/* Its GOAWAY goes down before the end. */
				while ((m = hezo_h2_to_client(k->h2, &p)) > 0)
					SSL_write(k->cs, p, (int)m);
				SSL_shutdown(k->cs);
				(void)flush_client(k);
				end(k, "deny", hezo_h2_why(k->h2));
				return;
			}
		}
		while (!k->u_eof && BIO_ctrl_pending(k->cwb) < DOWN_LIMIT) {
			int n = read_up(k);

			if (n <= 0) {
				if (n < 0)
					hezo_h2_upstream_gone(k->h2);
				break;
			}
			progress = true;
			if (hezo_h2_from_upstream(k->h2, scratch, (size_t)n) < 0) {
				k->u_eof = true;
				k->reason = hezo_h2_why(k->h2);
				hezo_h2_upstream_gone(k->h2);
				break;
			}
		}
		while (BIO_ctrl_pending(k->cwb) < DOWN_LIMIT &&
		       (m = hezo_h2_to_client(k->h2, &p)) > 0) {
			SSL_write(k->cs, p, (int)m);
			progress = true;
		}
		while (!k->u_eof && k->uolen < PEND_MAX &&
		       (m = hezo_h2_to_upstream(k->h2, &p)) > 0) {
			if (uo_add(k, p, (size_t)m) < 0) {
				end(k, "error", "out of memory");
				return;
			}
			progress = true;
		}
		if (!k->u_eof && drain_up(k, k->uo, &k->uooff, &k->uolen) < 0) {
			k->u_eof = true;
			hezo_h2_upstream_gone(k->h2);
			progress = true;
		}
		if (flush_client(k) < 0) {
			end(k, "allow", "client write failed");
			return;
		}
		if (!progress)
			break;
	}
	if (k->c_closed) {
		end(k, "allow", k->nsubst ? "intercepted h2: substituted" : "intercepted h2");
		return;
	}
	if ((k->u_eof ? !hezo_h2_client_owed(k->h2) : hezo_h2_done(k->h2)) &&
	    BIO_ctrl_pending(k->cwb) == 0) {
		SSL_shutdown(k->cs);
		(void)flush_client(k);
		end(k, "allow",
		    k->reason	? k->reason
		    : k->nsubst ? "intercepted h2: substituted"
				: "intercepted h2");
		return;
	}
	if ((cev & EPOLLERR) || (uev & EPOLLERR)) {
		end(k, "allow", "socket error");
		return;
	}
	interest(k);
}

static void on_client(struct pd_watch *w, uint32_t events)
{
	run(pd_container_of(w, struct pd_icpt, cw), events, 0);
}

static void on_upstream(struct pd_watch *w, uint32_t events)
{
	run(pd_container_of(w, struct pd_icpt, uw), 0, events);
}

bool pd_intercept_plain_refused(const struct pd_container *c, const uint8_t *head, size_t len)
{
	struct hezo_subst_secret sv[HEZO_SUBST_MAX];
	const struct hezo_secret *pod[HEZO_SUBST_MAX];
	struct hezo_subst_result res;
	size_t n = pod_secrets(c, NULL, pod, HEZO_SUBST_MAX, NULL), olen;

	if (n == 0)
		return false;
	/* Whichever member sent it: a pod's placeholders are judged alike over plain HTTP. */
	for (size_t i = 0; i < n; i++)
		sv[i] = (struct hezo_subst_secret){.placeholder = pod[i]->placeholder,
						   .pass = pod[i]->pass_elsewhere};
	/* Nothing is here over plain HTTP: only the refusal matters, no output is kept. */
	return hezo_subst_head(head, len, sv, n, NULL, 0, &olen, &res) == -EACCES;
}

bool pd_intercept_wanted(const struct pd_container *c, const struct pd_member *m, const char *name,
			 uint16_t port)
{
	for (size_t j = 0; j < (m ? 1 : c->nmembers); j++) {
		const struct pd_member *o = m ? m : c->members[j];

		for (size_t i = 0; i < o->nsecrets; i++)
			if (hezo_secret_names_host(&o->secrets[i], name, port))
				return true;
	}
	return false;
}

void pd_intercept_start(struct pd_container *c, const struct pd_member *m, int fd,
			const uint8_t *hello, size_t len, const struct sockaddr_storage *src,
			const struct sockaddr_storage *dst, const char *name)
{
	struct pd_icpt *k = calloc(1, sizeof(*k));

	if (!k) {
		close(fd);
		c->nconns--;
		return;
	}
	k->c = c;
	k->m = m;
	hezo_http_track_init(&k->tr);
	k->t.src = *src;
	k->t.dst = *dst;
	k->port = ntohs(dst->ss_family == AF_INET ? ((const struct sockaddr_in *)dst)->sin_port
						  : ((const struct sockaddr_in6 *)dst)->sin6_port);
	snprintf(k->t.name, sizeof(k->t.name), "%s", name);
	k->t.start_ms = k->last_ms = pd_now_ms();
	k->deadline_ms = k->t.start_ms + (uint64_t)pd_cfg.head_timeout_s * 1000;
	k->uw.fd = -1;
	pd_watch_init(&k->cw, fd, on_client);
	k->next = all;
	k->pprev = &all;
	if (all)
		all->pprev = &k->next;
	all = k;
	{
		/* Over the budget the connection is refused before its handshake: one box's
		 * connections must not grow proxyd until the kernel kills it for every box. */
		const char *why = budget_take(c, CONN_CHARGE);

		if (why) {
			PD_COUNT(c, icpt_budget_refused);
			end(k, "deny", why);
			return;
		}
		k->charged = CONN_CHARGE;
	}
	if (!pd_tls_ready()) {
		/* Fail closed: no CA, no relay to a secret's host either. */
		end(k, "error", "proxyd has no interception CA: a secret's host is refused");
		return;
	}
	k->cs = pd_tls_server_new(name, &k->alpn);
	k->crb = BIO_new(BIO_s_mem());
	k->cwb = BIO_new(BIO_s_mem());
	if (!k->cs || !k->crb || !k->cwb) {
		BIO_free(k->crb);
		BIO_free(k->cwb);
		end(k, "error", "TLS setup failed");
		return;
	}
	SSL_set_bio(k->cs, k->crb, k->cwb);
	SSL_set_accept_state(k->cs);
	if (BIO_write(k->crb, hello, (int)len) != (int)len) {
		end(k, "error", "out of memory");
		return;
	}
	run(k, EPOLLIN, 0);
}

void pd_intercept_abort_all(struct pd_container *c)
{
	struct pd_icpt *k = all, *next;

	for (; k; k = next) {
		next = k->next;
		if (k->c == c)
			end(k, "deny", "container deregistered");
	}
}

void pd_intercept_abort_member(struct pd_container *c, const struct pd_member *m)
{
	struct pd_icpt *k = all, *next;

	for (; k; k = next) {
		next = k->next;
		if (k->c == c && k->m == m)
			end(k, "deny", "its container left the namespace");
	}
}

void pd_intercept_abort_loaded(struct pd_container *c)
{
	struct pd_icpt *k = all, *next;

	for (; k; k = next) {
		next = k->next;
		if (k->c == c && k->loaded)
			end(k, "deny",
			    "a container joined the namespace: its secrets are judged anew");
	}
}

void pd_intercept_tick(struct pd_container *c, uint64_t now)
{
	struct pd_icpt *k = all, *next;

	for (; k; k = next) {
		next = k->next;
		if (k->c != c)
			continue;
		if (k->deadline_ms && now >= k->deadline_ms)
			end(k, "deny", "TLS handshake or upstream connect timed out");
		else if (k->ph == P_RUN && now - k->last_ms >= pd_cfg.idle_timeout_s * 1000ull)
			end(k, "allow", "idle timeout");
	}
}

/*
 * proxyd's TLS material for interception (issue 17): its CA (P-256, made on first start under
 * STATE/tls, key 0600), the bundle containers trust (the host's roots and the CA), leaf
 * certificates minted per host name and cached, and the two SSL_CTXs (toward containers: ALPN
 * h2 where the upstream speaks it, http/1.1 or http/1.0; toward upstreams: verified, host name
 * checked).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "hezo-cleanup.h"
#include "hezo-file.h"
#include "proxyd.h"
#include "tls.h"

#define CACHE_SIZE 256
#define HOST_ROOTS "/etc/ssl/certs/ca-certificates.crt"

static EVP_PKEY *ca_key, *leaf_key;
static X509 *ca_cert;
static SSL_CTX *server_ctx, *client_ctx;
static struct {
	char name[HEZO_NAME_MAX];
	X509 *cert;
	uint64_t used;
} cache[CACHE_SIZE];
static uint64_t cache_clock;
struct pd_tls_stats pd_tls_stats;

static int ssl_err(struct hezo_error **err, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256];

	ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return hezo_error_set(err, EIO, "tls: %s: %s", what, e ? buf : "failed");
}

static bool add_ext(X509 *issuer, X509 *x, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	bool ok;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return false;
	ok = X509_add_ext(x, ext, -1) == 1;
	X509_EXTENSION_free(ext);
	return ok;
}

static bool set_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn;
	bool ok;

	if (RAND_bytes(b, sizeof(b)) != 1)
		return false;
	b[0] &= 0x7f; /* positive */
	bn = BN_bin2bn(b, sizeof(b), NULL);
	ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	return ok;
}

static X509 *make_ca(EVP_PKEY *key)
{
	X509 *x = X509_new();
	X509_NAME *n;

	if (!x || X509_set_version(x, 2) != 1 || !set_serial(x) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 86400) ||
	    X509_set_pubkey(x, key) != 1)
		goto fail;
	n = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"hezo", -1, -1,
					0) ||
	    !X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
					(const unsigned char *)"hezo-proxyd interception CA", -1,
					-1, 0) ||
	    X509_set_issuer_name(x, n) != 1)
		goto fail;
	if (!add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
	    !add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") ||
	    !add_ext(x, x, NID_subject_key_identifier, "hash") ||
	    X509_sign(x, key, EVP_sha256()) <= 0)
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

static int write_pem(int dfd, const char *name, mode_t mode, EVP_PKEY *key, X509 *cert,
		     const char *prefix_file, struct hezo_error **err)
{
	_cleanup_free_ char *pre = NULL;
	BIO *b = BIO_new(BIO_s_mem());
	size_t prelen = 0;
	char *data;
	long len;
	int r;

	if (!b)
		return hezo_error_set(err, ENOMEM, "tls: out of memory");
	if (prefix_file &&
	    hezo_read_file_at(AT_FDCWD, prefix_file, 16 << 20, &pre, &prelen, NULL) == 0 &&
	    BIO_write(b, pre, (int)prelen) != (int)prelen) {
		BIO_free(b);
		return hezo_error_set(err, ENOMEM, "tls: out of memory");
	}
	if (prelen && pre[prelen - 1] != '\n')
		BIO_write(b, "\n", 1);
	if ((key && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1) ||
	    (cert && PEM_write_bio_X509(b, cert) != 1)) {
		BIO_free(b);
		return ssl_err(err, name);
	}
	len = BIO_get_mem_data(b, &data);
	r = hezo_write_file_atomic_at(dfd, name, data, (size_t)len, mode, err);
	OPENSSL_cleanse(data, (size_t)len);
	BIO_free(b);
	return r < 0 ? hezo_error_prefix(err, "tls: %s", name) : 0;
}

static int load_or_create_ca(const char *dir, struct hezo_error **err)
{
	_cleanup_close_ int dfd = -1;
	_cleanup_free_ char *kp = NULL, *cp = NULL;
	struct stat st;
	FILE *f;

	if (hezo_mkdir_p(dir, 0700, 0700) < 0)
		return hezo_error_set_errno(err, errno, "tls: %s", dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || asprintf(&kp, "%s/ca.key", dir) < 0 || asprintf(&cp, "%s/ca.crt", dir) < 0)
		return hezo_error_set_errno(err, errno, "tls: %s", dir);
	if (fstatat(dfd, "ca.key", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* An existing key is believed only as proxyd writes it: root's, 0600. */
		if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077))
			return hezo_error_set(
				err, EPERM, "tls: %s: not a regular file of root's with mode 0600",
				kp);
		f = fopen(kp, "re");
		ca_key = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
		if (f)
			fclose(f);
		f = fopen(cp, "re");
		ca_cert = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
		if (f)
			fclose(f);
		if (!ca_key || !ca_cert || X509_check_private_key(ca_cert, ca_key) != 1)
			return ssl_err(err, "the CA in the state dir does not load");
		return 0;
	}
	ca_key = EVP_EC_gen("P-256");
	ca_cert = ca_key ? make_ca(ca_key) : NULL;
	if (!ca_cert)
		return ssl_err(err, "cannot make a CA");
	if (write_pem(dfd, "ca.key", 0600, ca_key, NULL, NULL, err) < 0 ||
	    write_pem(dfd, "ca.crt", 0644, NULL, ca_cert, NULL, err) < 0)
		return -EIO;
	return 0;
}

/*
 * ALPN toward containers: h2 when the box offers it and the upstream took it too (a->h2), else
 * http/1.1, http/1.0 (curl -0 offers it) or nothing (an h2-only client then gets no handshake).
 */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char h1[] = "\x08http/1.1\x08http/1.0";
	static const unsigned char h2[] = "\x02h2\x08http/1.1\x08http/1.0";
	const struct pd_tls_alpn *a = SSL_get_app_data(ssl);
	bool two = a && a->h2;
	unsigned char *o;

	(void)arg;
	if (SSL_select_next_proto(&o, outlen, two ? h2 : h1, (two ? sizeof(h2) : sizeof(h1)) - 1,
				  in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = o;
	return SSL_TLSEXT_ERR_OK;
}

/* Does the ALPN extension's list p[0..n) name h2? */
static bool offers_h2(const unsigned char *p, size_t n)
{
	size_t i = 2;

	if (n < 2 || (size_t)(p[0] << 8 | p[1]) != n - 2)
		return false;
	while (i < n) {
		size_t l = p[i];

		if (i + 1 + l > n)
			return false;
		if (l == 2 && memcmp(p + i + 1, "h2", 2) == 0)
			return true;
		i += 1 + l;
	}
	return false;
}

/* A box that offers h2 waits here until its upstream has answered whether it speaks h2. */
static int hello_cb(SSL *ssl, int *al, void *arg)
{
	struct pd_tls_alpn *a = SSL_get_app_data(ssl);
	const unsigned char *p;
	size_t n;

	(void)al;
	(void)arg;
	if (!a || a->decided)
		return SSL_CLIENT_HELLO_SUCCESS;
	if (!a->seen) {
		a->seen = true;
		a->client_h2 = SSL_client_hello_get0_ext(
				       ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &p,
				       &n) == 1 &&
			       offers_h2(p, n);
	}
	return a->client_h2 ? SSL_CLIENT_HELLO_RETRY : SSL_CLIENT_HELLO_SUCCESS;
}

int pd_tls_init(const char *state_dir, const char *upstream_ca, struct hezo_error **err)
{
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int dfd = -1;
	int r;

	if (asprintf(&dir, "%s/tls", state_dir) < 0)
		return hezo_error_set(err, ENOMEM, "tls: out of memory");
	r = load_or_create_ca(dir, err);
	if (r < 0)
		return r;
	/* What containers with secrets trust: the host's roots, then ours. Readable by all: it is
	 * public, and the runtime bind-mounts it. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return hezo_error_set_errno(err, errno, "tls: %s", dir);
	if (fchmod(dfd, 0711) < 0)
		return hezo_error_set_errno(err, errno, "tls: %s", dir);
	r = write_pem(dfd, "bundle.crt", 0644, NULL, ca_cert, HOST_ROOTS, err);
	if (r < 0)
		return r;
	leaf_key = EVP_EC_gen("P-256");
	server_ctx = SSL_CTX_new(TLS_server_method());
	client_ctx = SSL_CTX_new(TLS_client_method());
	if (!leaf_key || !server_ctx || !client_ctx)
		return ssl_err(err, "cannot set up");
	SSL_CTX_set_min_proto_version(server_ctx, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(client_ctx, TLS1_2_VERSION);
	SSL_CTX_set_alpn_select_cb(server_ctx, alpn_select, NULL);
	SSL_CTX_set_client_hello_cb(server_ctx, hello_cb, NULL);
	SSL_CTX_set_mode(server_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
					     SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
					     SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_mode(client_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
					     SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
					     SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(server_ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_options(client_ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_set_alpn_protos(client_ctx, (const unsigned char *)"\x08http/1.1", 9) != 0)
		return ssl_err(err, "ALPN");
	if (upstream_ca) {
		/* Test-only: trust exactly this CA file toward upstreams. */
		if (SSL_CTX_load_verify_locations(client_ctx, upstream_ca, NULL) != 1)
			return ssl_err(err, upstream_ca);
	} else if (SSL_CTX_load_verify_locations(client_ctx, HOST_ROOTS, NULL) != 1) {
		return ssl_err(err, HOST_ROOTS);
	}
	return 0;
}

bool pd_tls_ready(void)
{
	return server_ctx && client_ctx;
}

static X509 *mint(const char *name)
{
	X509 *x = X509_new();
	_cleanup_free_ char *san = NULL;

	if (!x || asprintf(&san, "DNS:%s", name) < 0 || X509_set_version(x, 2) != 1 ||
	    !set_serial(x) || !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), 7L * 86400) ||
	    X509_set_pubkey(x, leaf_key) != 1 ||
	    !X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
					(const unsigned char *)name, -1, -1, 0) ||
	    X509_set_issuer_name(x, X509_get_subject_name(ca_cert)) != 1 ||
	    !add_ext(ca_cert, x, NID_subject_alt_name, san) ||
	    !add_ext(ca_cert, x, NID_basic_constraints, "critical,CA:FALSE") ||
	    !add_ext(ca_cert, x, NID_key_usage, "critical,digitalSignature") ||
	    !add_ext(ca_cert, x, NID_ext_key_usage, "serverAuth") ||
	    !add_ext(ca_cert, x, NID_authority_key_identifier, "keyid") ||
	    X509_sign(x, ca_key, EVP_sha256()) <= 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* The leaf for name: from the cache (a week's validity, renewed after six days), or minted. */
static X509 *leaf_for(const char *name)
{
	size_t victim = 0;
	uint64_t now = pd_now_ms();

	for (size_t i = 0; i < CACHE_SIZE; i++) {
		if (cache[i].cert && strcmp(cache[i].name, name) == 0) {
			if (X509_cmp_time(X509_get0_notAfter(cache[i].cert), NULL) > 0 &&
			    now - cache[i].used < 6ULL * 86400 * 1000) {
				cache[i].used = now;
				pd_tls_stats.cache_hits++;
				return cache[i].cert;
			}
			victim = i;
			break;
		}
		if (!cache[i].cert || cache[i].used < cache[victim].used)
			victim = i;
		if (!cache[i].cert)
			break;
	}
	X509_free(cache[victim].cert);
	cache[victim].cert = mint(name);
	if (!cache[victim].cert)
		return NULL;
	snprintf(cache[victim].name, sizeof(cache[victim].name), "%s", name);
	cache[victim].used = now;
	cache_clock++;
	pd_tls_stats.minted++;
	return cache[victim].cert;
}

SSL *pd_tls_server_new(const char *name, struct pd_tls_alpn *a)
{
	X509 *leaf = leaf_for(name);
	SSL *s;

	if (!leaf)
		return NULL;
	s = SSL_new(server_ctx);
	if (!s || SSL_use_certificate(s, leaf) != 1 || SSL_use_PrivateKey(s, leaf_key) != 1 ||
	    SSL_set_app_data(s, a) != 1) {
		SSL_free(s);
		return NULL;
	}
	return s;
}

SSL *pd_tls_client_new(const char *name, int fd, bool h2)
{
	SSL *s = SSL_new(client_ctx);

	if (!s)
		return NULL;
	SSL_set_hostflags(s, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (SSL_set_tlsext_host_name(s, name) != 1 || SSL_set1_host(s, name) != 1 ||
	    SSL_set_fd(s, fd) != 1 ||
	    (h2 && SSL_set_alpn_protos(s, (const unsigned char *)"\x02h2\x08http/1.1", 12) != 0)) {
		SSL_free(s);
		return NULL;
	}
	return s;
}

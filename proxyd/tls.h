/* proxyd's TLS interception material (tls.c) and the intercepted connections (intercept.c). */
#ifndef HEZO_PROXYD_TLS_H
#define HEZO_PROXYD_TLS_H

#include <stdbool.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "hezo-error.h"

struct pd_tls_stats {
	uint64_t minted, cache_hits;
};
extern struct pd_tls_stats pd_tls_stats;

/*
 * Load STATE/tls/ca.key and ca.crt, or make them (P-256; the key 0600) on first start; write
 * STATE/tls/bundle.crt (the host's roots and the CA) for containers. upstream_ca (test-only):
 * trust this CA file toward upstreams instead of the host's roots.
 */
int pd_tls_init(const char *state_dir, const char *upstream_ca, struct hezo_error **err);
/* Did pd_tls_init succeed? Without it a connection to a secret's host is refused. */
bool pd_tls_ready(void);
/*
 * ALPN toward a box. A ClientHello that offers h2 is held (SSL_ERROR_WANT_CLIENT_HELLO_CB,
 * client_h2 set) until the caller has asked the upstream and set decided, and h2 when the
 * upstream took h2; only then is h2 offered back.
 */
struct pd_tls_alpn {
	bool seen, client_h2, decided, h2;
};
/* An SSL toward a container presenting a leaf for name (minted or from the cache); a stays the
 * caller's for the SSL's life. */
SSL *pd_tls_server_new(const char *name, struct pd_tls_alpn *a);
/* An SSL toward an upstream on fd: SNI name, the certificate verified and its name checked; ALPN
 * offers h2 before http/1.1 when h2. */
SSL *pd_tls_client_new(const char *name, int fd, bool h2);

#endif

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
/* An SSL toward a container presenting a leaf for name (minted or from the cache). */
SSL *pd_tls_server_new(const char *name);
/* An SSL toward an upstream on fd: SNI name, the certificate verified and its name checked. */
SSL *pd_tls_client_new(const char *name, int fd);

#endif

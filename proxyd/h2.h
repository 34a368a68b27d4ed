/* HTTP/2 between a box and a secret's host on an intercepted connection (h2.c). */
#ifndef HEZO_PROXYD_H2_H
#define HEZO_PROXYD_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proxyd-parse.h"

/* What a box may open at once, how large a header block may be (either way), and the windows
 * toward the upstream: what one connection may make proxyd hold (docs/egress.md). */
#define HEZO_H2_STREAMS	    16
#define HEZO_H2_HEADER_MAX  16384
#define HEZO_H2_FIELDS_MAX  128
#define HEZO_H2_UP_WINDOW   (128 * 1024) /* per stream, the upstream's answers */
#define HEZO_H2_UP_CONN_WIN (256 * 1024) /* per connection, the upstream's answers */

/* What became of a request, for its stream's log line. */
struct hezo_h2_verdict {
	int status;	  /* refused: 400 or 403 (502: proxyd's own failure) */
	const char *why;  /* refused: the reason, named to the box */
	uint32_t used;	  /* secrets substituted (bits, as hezo_subst_result) */
	uint32_t refused; /* secrets refused */
	unsigned count;	  /* substitutions */
	bool sensitive;	  /* values went in: never into the upstream's HPACK table */
};

/* A stream's end, for the netlog. */
struct hezo_h2_stream_log {
	const char *method, *path; /* the path without its query */
	const char *verdict, *reason;
	const struct hezo_h2_verdict *v;
	uint64_t bytes_out, bytes_in, masked;
};

struct hezo_h2_ops {
	/*
	 * The request of a stream as an HTTP/1.1 head (":authority" as Host): judged and written
	 * to out as it is to go up. 0, or <0 with v->status and v->why. The head is in the caller's
	 * hands only during the call.
	 */
	int (*request)(void *ud, const uint8_t *head, size_t len, uint8_t *out, size_t outsz,
		       size_t *outlen, struct hezo_h2_verdict *v);
	void (*stream_end)(void *ud, const struct hezo_h2_stream_log *l);
	/* A new stream of the box's may take its share of memory (false: it is refused with
	 * REFUSED_STREAM, before any of its fields is read); release gives an admitted stream's
	 * share back when it goes. Both optional. */
	bool (*admit)(void *ud);
	void (*release)(void *ud);
};

struct hezo_h2;

/* Both sessions: proxyd as the box's server and as the upstream's client. mv[0..nmv) are masked
 * in every answer (they stay the caller's; hezo_h2_values when they change). */
int hezo_h2_new(struct hezo_h2 **out, const struct hezo_h2_ops *ops, void *ud,
		const struct hezo_mask_value *mv, size_t nmv);
void hezo_h2_free(struct hezo_h2 *h);
void hezo_h2_values(struct hezo_h2 *h, const struct hezo_mask_value *mv, size_t nmv);

/* Bytes from the box / from the upstream. <0: the connection is to end (a protocol error). */
int hezo_h2_from_client(struct hezo_h2 *h, const uint8_t *b, size_t n);
int hezo_h2_from_upstream(struct hezo_h2 *h, const uint8_t *b, size_t n);
/* The next bytes toward the box / the upstream: *p valid until the next call; 0: none now. */
ssize_t hezo_h2_to_client(struct hezo_h2 *h, const uint8_t **p);
ssize_t hezo_h2_to_upstream(struct hezo_h2 *h, const uint8_t **p);
/* One side closed: every stream still open ends. */
void hezo_h2_client_gone(struct hezo_h2 *h);
void hezo_h2_upstream_gone(struct hezo_h2 *h);
/* Nothing is left to do on either side. */
bool hezo_h2_done(const struct hezo_h2 *h);
/* Frames are still due to the box (once the upstream is gone: what must go before the end). */
bool hezo_h2_client_owed(const struct hezo_h2 *h);
/* Values masked in answers so far, and bytes toward the upstream / the box. */
uint64_t hezo_h2_masked(const struct hezo_h2 *h);
/* What the last failure was (for the connection's log line). */
const char *hezo_h2_why(const struct hezo_h2 *h);

#endif

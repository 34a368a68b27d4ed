/*
 * libFuzzer target for proxyd/http.c: a found Host is printable and bounded, and a complete head
 * gives the same answer whatever follows it; an accepted head holds no CR without LF and nothing
 * outside printable ASCII but CRLF and HTAB; the chunked scanner finds the same end of a body
 * whether the bytes come at once or split at any point.
 *
 * Build and run by hand from the top of the checkout:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec -Iproxyd \
 *       tests/fuzz/fuzz-http.c proxyd/http.c -o /tmp/fuzz-http
 *   mkdir -p /tmp/fuzz-http-corpus && /tmp/fuzz-http -max_total_time=60 -max_len=16384 \
 *       -dict=tests/fuzz/http.dict /tmp/fuzz-http-corpus tests/fuzz/corpus/http
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxyd-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static int check_host(const uint8_t *data, size_t size);
static void check_request(const uint8_t *data, size_t size);
static void check_chunked(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_request(data, size);
	check_chunked(data, size);
	return check_host(data, size);
}

static int check_host(const uint8_t *data, size_t size)
{
	char host[HEZO_NAME_MAX], again[HEZO_NAME_MAX];
	uint16_t port, port2;
	uint8_t *more;
	int r = hezo_http_parse_host(data, size, host, &port), r2;

	if (r != 1 && r != -EAGAIN && r != -EINVAL)
		abort();
	if (r != 1)
		return 0;
	if (!host[0] || strlen(host) >= HEZO_NAME_MAX)
		abort();
	for (const char *p = host; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			abort();
	more = malloc(size + 8);
	if (!more)
		return 0;
	memcpy(more, data, size);
	memcpy(more + size, "\r\nHost: x", 8);
	r2 = hezo_http_parse_host(more, size + 8, again, &port2);
	if (r2 != 1 || strcmp(host, again) != 0 || port != port2)
		abort();
	free(more);
	return 0;
}

static void check_request(const uint8_t *data, size_t size)
{
	struct hezo_http_request req, again;
	int r = hezo_http_parse_request(data, size, &req);

	if (r != 1 && r != -EAGAIN && r != -EINVAL)
		abort();
	if (r != 1)
		return;
	if (req.head_len < 18 || req.head_len > size || !req.host[0] || req.method_len == 0 ||
	    req.minor > 1 || (req.body != HEZO_HTTP_BODY_LENGTH && req.length != 0))
		abort();
	for (size_t i = 0; i < req.head_len; i++) {
		uint8_t c = data[i];

		if ((c == '\r' && data[i + 1] != '\n') ||
		    (c == '\n' && (!i || data[i - 1] != '\r')) ||
		    (c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c >= 0x7f)
			abort();
	}
	if (memcmp(data + req.head_len - 4, "\r\n\r\n", 4) != 0)
		abort();
	/* what follows the head does not change it */
	if (hezo_http_parse_request(data, req.head_len, &again) != 1 ||
	    memcmp(&req, &again, sizeof(req)) != 0)
		abort();
}

/* The bytes after the head as a chunked body: one scan, or two at a split, agree. */
static void check_chunked(const uint8_t *data, size_t size)
{
	struct hezo_http_chunked a, b;
	size_t used_a = 0, used_b1 = 0, used_b2 = 0, cut;
	int ra, rb;

	if (size < 2)
		return;
	cut = data[0] % size;
	data++;
	size--;
	if (cut > size)
		cut = size;
	hezo_http_chunked_init(&a);
	ra = hezo_http_chunked_scan(&a, data, size, &used_a);
	hezo_http_chunked_init(&b);
	rb = hezo_http_chunked_scan(&b, data, cut, &used_b1);
	if (rb == 0)
		rb = hezo_http_chunked_scan(&b, data + cut, size - cut, &used_b2);
	else
		used_b2 = 0;
	if (ra != rb || (ra >= 0 && used_a != used_b1 + used_b2) || used_a > size)
		abort();
}

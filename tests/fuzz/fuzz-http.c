/*
 * libFuzzer target for proxyd/http.c: a found Host is printable and bounded, and a complete head
 * gives the same answer whatever follows it.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
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

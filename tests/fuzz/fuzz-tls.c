/*
 * libFuzzer target for proxyd/sni.c: a found name is printable and bounded, and no prefix of an
 * input that holds a ClientHello claims a different name.
 *
 * Build and run by hand from the top of the checkout:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec -Iproxyd \
 *       tests/fuzz/fuzz-tls.c proxyd/sni.c -o /tmp/fuzz-tls
 *   mkdir -p /tmp/fuzz-tls-corpus && /tmp/fuzz-tls -max_total_time=60 -max_len=20000 \
 *       /tmp/fuzz-tls-corpus tests/fuzz/corpus/tls
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxyd-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[HEZO_NAME_MAX], shorter[HEZO_NAME_MAX];
	int r = hezo_sni_parse(data, size, name), r2;

	if (r != 1 && r != 0 && r != -EAGAIN && r != -EINVAL && r != -EPROTO && r != -E2BIG)
		abort();
	if (r != 1)
		return 0;
	if (!name[0] || strlen(name) >= HEZO_NAME_MAX)
		abort();
	for (const char *p = name; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			abort();
	/* Bytes after the ClientHello never change the answer; fewer bytes never invent one. */
	r2 = hezo_sni_parse(data, size / 2, shorter);
	if (r2 == 1 && strcmp(name, shorter) != 0)
		abort();
	return 0;
}

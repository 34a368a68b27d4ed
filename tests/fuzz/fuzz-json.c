/*
 * libFuzzer target for spec/json.c: whatever parses must dump, parse again to an equal tree, and
 * dump to the same bytes.
 *
 * Build and run by hand from the top of the checkout:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec \
 *       tests/fuzz/fuzz-json.c spec/json.c base/error.c -lyajl -o /tmp/fuzz-json
 *   mkdir -p /tmp/fuzz-json-corpus && /tmp/fuzz-json -max_total_time=60 -max_len=65536 \
 *       /tmp/fuzz-json-corpus tests/data
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_json_ struct hezo_json *a = NULL, *b = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *one = NULL, *two = NULL;
	size_t one_len = 0, two_len = 0;
	bool pretty = size > 0 && (data[0] & 1);

	if (hezo_json_parse((const char *)data, size, &a, &err) < 0) {
		/* Every refusal carries a one-line message. */
		if (!err || !err->msg || strchr(err->msg, '\n'))
			abort();
		return 0;
	}
	if (hezo_json_dump(a, pretty, &one, &one_len, &err) < 0)
		abort();
	if (hezo_json_parse(one, one_len, &b, &err) < 0)
		abort();
	if (!hezo_json_equal(a, b))
		abort();
	if (hezo_json_dump(b, pretty, &two, &two_len, &err) < 0)
		abort();
	if (one_len != two_len || memcmp(one, two, one_len) != 0)
		abort();
	return 0;
}

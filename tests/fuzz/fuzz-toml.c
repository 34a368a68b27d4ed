/*
 * libFuzzer target for admin/toml.c, the text edits of containerd's config.toml and podman's
 * containers.conf. The first byte picks the engine, the rest is the file. Whatever an install
 * adds, removing it gives back the input byte for byte; installing twice changes nothing; a
 * refusal is one line.
 *
 * Build and run by hand (or through tests/fuzz/smoke.sh, which builds every fuzz-* target):
 *   meson setup /tmp/fz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
 *       -Dc_args=-fsanitize=fuzzer-no-link && ninja -C /tmp/fz tests/fuzz/fuzz-toml
 *   /tmp/fz/tests/fuzz/fuzz-toml -max_total_time=60 tests/fuzz/corpus/toml
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-install.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef int (*add_fn)(const char *old, size_t len, bool exists, const char *shim, char **out,
		      size_t *outlen, bool *changed, struct hezo_error **err);

static void check_refusal(const struct hezo_error *e)
{
	if (!e || !e->msg || !e->msg[0] || strchr(e->msg, '\n'))
		abort();
}

static void check(add_fn add, const char *in, size_t len, bool exists)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *base = NULL, *out = NULL, *again = NULL, *back = NULL;
	size_t base_len = len, out_len = 0, again_len = 0, back_len = 0;
	bool changed = false, del = false, had_blocks = hezo_install_blocks_present(in, len);
	int r;

	/* An input that holds our blocks already: what install starts from is the input without. */
	if (had_blocks) {
		if (hezo_install_blocks_remove(in, len, &base, &base_len, &changed, &del, &e) < 0) {
			check_refusal(e);
			return;
		}
	}
	r = add(in, len, exists, "/usr/bin/hezo-shim", &out, &out_len, &changed, &e);
	if (r < 0) {
		if (out)
			abort();
		check_refusal(e);
		return;
	}
	if (!out || !hezo_install_blocks_present(out, out_len))
		abort();
	/* Install is idempotent. */
	if (add(out, out_len, true, "/usr/bin/hezo-shim", &again, &again_len, &changed, &e) < 0 ||
	    changed || again_len != out_len || memcmp(again, out, out_len) != 0)
		abort();
	/* Uninstall gives back the bytes install started from. */
	if (hezo_install_blocks_remove(out, out_len, &back, &back_len, &changed, &del, &e) < 0 ||
	    !changed)
		abort();
	if (had_blocks) {
		if (back_len != base_len || memcmp(back, base, base_len) != 0)
			abort();
		return;
	}
	if (back_len != len || (len && memcmp(back, in, len) != 0) || del != !exists)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *in = NULL;
	add_fn add;

	if (size == 0)
		return 0;
	add = (data[0] & 1) ? hezo_install_podman_add : hezo_install_containerd_add;
	in = malloc(size);
	if (!in)
		return 0;
	memcpy(in, data + 1, size - 1);
	in[size - 1] = '\0';
	check(add, in, size - 1, true);
	if (size == 1)
		check(add, in, 0, false);
	return 0;
}

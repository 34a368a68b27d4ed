/*
 * libFuzzer target for the mount table parser and lookup (base/mountinfo.c): the input is
 * mountinfo text. A table is taken whole or not at all; every mount point taken is absolute;
 * locating any of them (and a path below it) ends, and gives a path inside the filesystem that
 * starts at that mount's root; overlap is symmetric.
 *
 * Build and run by hand (or through tests/fuzz/smoke.sh, which builds every fuzz-* target):
 *   meson setup /tmp/fz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
 *       -Dc_args=-fsanitize=fuzzer-no-link && ninja -C /tmp/fz tests/fuzz/fuzz-mountinfo
 *   /tmp/fz/tests/fuzz/fuzz-mountinfo -max_total_time=60 tests/fuzz/corpus/mountinfo
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-mountinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t lines(const uint8_t *data, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < size; i++)
		if (data[i] == '\n')
			n++;
	return n + (size && data[size - 1] != '\n');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hezo_mounts m;
	char rel[PATH_MAX], below[PATH_MAX];
	int r = hezo_mounts_parse((const char *)data, size, &m);

	if (r < 0) {
		if ((r != -EINVAL && r != -ENOMEM) || m.n || m.v || m.text)
			abort();
		return 0;
	}
	/* Each line is one mount (an empty line ends the table, as none is written). */
	if (m.n > lines(data, size))
		abort();
	for (size_t i = 0; i < m.n; i++) {
		const struct hezo_mount *mnt = &m.v[i], *got;
		size_t rl;

		if (mnt->point[0] != '/' || !mnt->root[0])
			abort();
		got = hezo_mounts_locate(&m, mnt->point, rel, sizeof(rel));
		if (!got)
			continue;
		rl = strlen(got->root);
		if (strcmp(got->root, "/") != 0 && strncmp(rel, got->root, rl) != 0)
			abort();
		if (snprintf(below, sizeof(below), "%s/x", mnt->point) < (int)sizeof(below)) {
			const struct hezo_mount *under =
				hezo_mounts_locate(&m, below, rel, sizeof(rel));
			if (under && rel[0] == '\0')
				abort();
		}
	}
	if (m.n >= 2) {
		struct hezo_place a[HEZO_PLACES_MAX], b[HEZO_PLACES_MAX];
		int na = hezo_mounts_places(&m, m.v[0].point, a, HEZO_PLACES_MAX);
		int nb = hezo_mounts_places(&m, m.v[m.n - 1].point, b, HEZO_PLACES_MAX);
		if (na > 0 && nb > 0 &&
		    hezo_places_overlap(a, (size_t)na, b, (size_t)nb) !=
			    hezo_places_overlap(b, (size_t)nb, a, (size_t)na))
			abort();
	}
	hezo_mounts_free(&m);
	return 0;
}

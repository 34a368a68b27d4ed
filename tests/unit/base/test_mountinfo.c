/*
 * Unit tests for base/mountinfo.c: the mount table's lines, where a path lives in it (the mount on
 * top, bind mounts of a subdirectory, overlays' upper directories), and bad lines refused whole.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "hezo-mountinfo.h"

/* A host: ext4 root, /run a tmpfs, /srv/share on the root fs bound (as its subdir sub) at
 * /mnt/alias, an overlay whose upper is on the root fs, and /mnt/hide over an earlier mount. */
static const char table[] =
	"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
	"25 22 0:23 / /run rw,nosuid,nodev shared:5 - tmpfs tmpfs rw,size=400000k,mode=755\n"
	"30 22 8:1 /srv/share/sub /mnt/alias rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	"31 22 0:40 / /var/lib/ovl/merged rw,relatime - overlay overlay "
	"rw,lowerdir=/var/lib/ovl/l1:/var/lib/ovl/l2,upperdir=/var/lib/ovl/up\\054per,"
	"workdir=/var/lib/ovl/work\n"
	"32 22 0:41 / /mnt/hide/deep rw - tmpfs t1 rw\n"
	"33 22 0:42 / /mnt/hide rw - tmpfs t2 rw\n"
	"34 33 0:43 / /mnt/hide/deep rw - tmpfs t3 rw\n"
	"35 25 0:4 net:[4026532281] /run/netns/x rw - nsfs nsfs rw\n"
	"36 22 8:1 /with\\040space /mnt/sp\\134ace rw - ext4 /dev/sda1 rw\n"
	"37 25 0:44 / /run rw - tmpfs over rw\n";

static struct hezo_mounts m;

static int setup(void **state)
{
	(void)state;
	return hezo_mounts_parse(table, sizeof(table) - 1, &m) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	hezo_mounts_free(&m);
	return 0;
}

static void at(const char *path, unsigned int id, const char *rel)
{
	char got[PATH_MAX];
	const struct hezo_mount *mnt = hezo_mounts_locate(&m, path, got, sizeof(got));

	assert_non_null(mnt);
	assert_int_equal(mnt->id, id);
	assert_string_equal(got, rel);
}

static void test_parse(void **state)
{
	(void)state;
	assert_int_equal(m.n, 10);
	assert_int_equal(m.v[1].major, 0);
	assert_int_equal(m.v[1].minor, 23);
	assert_string_equal(m.v[1].fstype, "tmpfs");
	assert_null(m.v[0].upper);
	/* \054 is a comma inside the option's value, not the next option */
	assert_string_equal(m.v[3].upper, "/var/lib/ovl/up,per");
	assert_string_equal(m.v[8].root, "/with space");
	assert_string_equal(m.v[8].point, "/mnt/sp\\ace");
	assert_string_equal(m.v[7].root, "net:[4026532281]");
}

static void test_locate(void **state)
{
	(void)state;
	at("/", 22, "/");
	at("/etc/passwd", 22, "/etc/passwd");
	/* /run is overmounted (37 on 25): what is under it is the new tmpfs's */
	at("/run", 37, "/");
	at("/run/hezo", 37, "/hezo");
	/* a mount made on 25 before 37 covered it is hidden */
	at("/run/netns/x", 37, "/netns/x");
	/* a bind of a subdirectory: the path inside the filesystem is the original's */
	at("/mnt/alias", 30, "/srv/share/sub");
	at("/mnt/alias/r/x", 30, "/srv/share/sub/r/x");
	at("/mnt/aliased", 22, "/mnt/aliased");
	/* 33 on /mnt/hide hides 32 below it; 34 is on 33 */
	at("/mnt/hide/deep/f", 34, "/f");
	at("/mnt/hide/other", 33, "/other");
	at("/mnt/sp\\ace/a", 36, "/with space/a");
	at("/var/lib/ovl/merged/etc", 31, "/etc");
	assert_null(hezo_mounts_locate(&m, "relative", (char[8]){0}, 8));
	/* the path inside the filesystem must fit */
	assert_null(hezo_mounts_locate(&m, "/mnt/alias/xyz", (char[8]){0}, 8));
}

static void test_bad_lines(void **state)
{
	static const char *const bad[] = {
		"22 1 8:1 / / rw shared:1 ext4 /dev/sda1 rw\n", /* no separator */
		"22 1 8:1 / /\n",
		"x 1 8:1 / / rw - ext4 /dev/sda1 rw\n",
		"22 1 8 / / rw - ext4 /dev/sda1 rw\n",
		"22 1 8:1x / / rw - ext4 /dev/sda1 rw\n",
		"22 1 8:1 / relative rw - ext4 /dev/sda1 rw\n",
		"22 1 8:1 /a\\000b / rw - ext4 /dev/sda1 rw\n",
		"22 1 8:1 / / rw -\n",
		"99999999999 1 8:1 / / rw - ext4 /dev/sda1 rw\n",
		"22 1 8:1 / / rw - ext4 /dev/sda1 rw\ngarbage\n",
	};
	struct hezo_mounts b;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b.n = 7;
		assert_int_equal(hezo_mounts_parse(bad[i], strlen(bad[i]), &b), -EINVAL);
		assert_int_equal(b.n, 0);
		assert_null(b.v);
	}
	/* a NUL inside the text */
	assert_int_equal(hezo_mounts_parse("22 1 8:1 / / rw - ext4 x rw\0\n", 29, &b), -EINVAL);
	/* no table at all: nowhere to locate */
	assert_int_equal(hezo_mounts_parse("", 0, &b), 0);
	assert_null(hezo_mounts_locate(&b, "/", (char[8]){0}, 8));
	hezo_mounts_free(&b);
}

static void test_places(void **state)
{
	char dir[] = "/tmp/hezo-mi-XXXXXX", sub[PATH_MAX + 16], real[PATH_MAX];
	struct hezo_place a[HEZO_PLACES_MAX], b[HEZO_PLACES_MAX];
	int na, nb;

	(void)state;
	/* Resolution of what exists: /tmp is on the real root here, and the table says "/" is
	 * all one ext4; a link resolves to its target, a missing tail is kept. */
	assert_non_null(mkdtemp(dir));
	assert_non_null(realpath(dir, real));
	snprintf(sub, sizeof(sub), "%s/link", dir);
	assert_int_equal(symlink(real, sub), 0);
	snprintf(sub, sizeof(sub), "%s/link/not/yet", dir);
	na = hezo_mounts_places(&m, sub, a, HEZO_PLACES_MAX);
	assert_int_equal(na, 1);
	assert_int_equal(a[0].major, 8);
	snprintf(sub, sizeof(sub), "%s/not/yet", real);
	assert_string_equal(a[0].rel, sub);

	/* The alias and the directory it is a bind of are the same place. */
	na = hezo_mounts_places(&m, "/mnt/alias/r", a, HEZO_PLACES_MAX);
	nb = hezo_mounts_places(&m, "/srv/share", b, HEZO_PLACES_MAX);
	assert_int_equal(na, 1);
	assert_int_equal(nb, 1);
	assert_true(hezo_places_overlap(a, 1, b, 1));
	assert_true(hezo_places_overlap(b, 1, a, 1));
	nb = hezo_mounts_places(&m, "/srv/shared", b, HEZO_PLACES_MAX);
	assert_false(hezo_places_overlap(a, 1, b, (size_t)nb));
	/* The same path text on another filesystem is another place. */
	nb = hezo_mounts_places(&m, "/run/srv/share/sub/r", b, HEZO_PLACES_MAX);
	assert_false(hezo_places_overlap(a, 1, b, (size_t)nb));

	/* Writes into an overlay land in its upper directory. */
	na = hezo_mounts_places(&m, "/var/lib/ovl/merged", a, HEZO_PLACES_MAX);
	assert_int_equal(na, 2);
	assert_int_equal(a[0].major, 0);
	assert_int_equal(a[0].minor, 40);
	assert_string_equal(a[1].rel, "/var/lib/ovl/up,per");
	nb = hezo_mounts_places(&m, "/var/lib/ovl/up,per/r", b, HEZO_PLACES_MAX);
	assert_true(hezo_places_overlap(a, (size_t)na, b, (size_t)nb));
	nb = hezo_mounts_places(&m, "/var/lib/ovl/l1/r", b, HEZO_PLACES_MAX);
	assert_false(hezo_places_overlap(a, (size_t)na, b, (size_t)nb));
	/* one place only asked for: the overlay's upper does not fit */
	assert_int_equal(hezo_mounts_places(&m, "/var/lib/ovl/merged", a, 1), -EXDEV);

	snprintf(sub, sizeof(sub), "%s/link", dir);
	unlink(sub);
	rmdir(dir);
}

static void test_relative_upper(void **state)
{
	static const char t[] =
		"1 0 8:1 / / rw - ext4 x rw\n"
		"2 1 0:9 / /o rw - overlay overlay rw,lowerdir=l,upperdir=up,workdir=w\n";
	struct hezo_mounts r;
	struct hezo_place p[HEZO_PLACES_MAX];

	(void)state;
	assert_int_equal(hezo_mounts_parse(t, sizeof(t) - 1, &r), 0);
	/* relative to a working directory nobody knows now: not placed */
	assert_int_equal(hezo_mounts_places(&r, "/o/x", p, HEZO_PLACES_MAX), -EXDEV);
	hezo_mounts_free(&r);
}

static void test_real_table(void **state)
{
	struct hezo_mounts r;
	struct hezo_place p[HEZO_PLACES_MAX];
	struct stat st;

	(void)state;
	/* This machine's own table parses, and / is where stat says it is. */
	assert_int_equal(hezo_mounts_read(&r), 0);
	assert_true(r.n > 0);
	assert_int_equal(hezo_mounts_places(&r, "/", p, HEZO_PLACES_MAX) > 0, 1);
	assert_int_equal(stat("/", &st), 0);
	assert_string_equal(p[0].rel, "/");
	hezo_mounts_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),	       cmocka_unit_test(test_locate),
		cmocka_unit_test(test_bad_lines),      cmocka_unit_test(test_places),
		cmocka_unit_test(test_relative_upper), cmocka_unit_test(test_real_table),
	};
	return cmocka_run_group_tests_name("mountinfo", tests, setup, teardown);
}

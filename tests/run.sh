#!/bin/bash
# The test command (tests/run.sh, as root): set the machine up, build with -Werror and ASan/UBSan in
# build-ci, run every meson test suite (unit, integration on runc and on runsc, style), check that
# the engines' files, /etc/hezo and dockerd's runtimes are as before, and end with one line
# "N passed, N failed, N skipped" counting meson tests (one more failed if the machine changed).
set -euo pipefail
# The tests read nothing from the terminal, and the shim refuses a closed stdin for create, run
# and exec (runc would hand the box a descriptor of its own in that slot): whatever stdin the
# caller left, the tests get /dev/null.
exec </dev/null

cd "$(dirname "${BASH_SOURCE[0]}")/.."
src=$(pwd)
build=${HEZO_BUILD_DIR:-$src/build-ci}

if [ "$(id -u)" != 0 ]; then
	echo "run.sh: must run as root (as root: tests/run.sh; or sudo tests/run.sh): the integration tests drive runc and dockerd" >&2
	exit 1
fi

bash tests/setup.sh

# The machine as the user has it: the engines' files, /etc/hezo and dockerd's runtimes must read
# the same after the run, whatever happens (each test restores what it touched; this is the check,
# and the last resort when a test was killed before it could).
# shellcheck source=tests/lib/docker.sh
. tests/lib/docker.sh
HEZO_ENGINE_EXTRA=/etc/hezo
HEZO_ENGINE_SNAPSHOT=/run/hezo-engine-snapshot.run.$$
machine_state()
{
	hezo_engine_sums
	echo "dockerd runtimes: $(_hezo_engine_runtimes)"
}
rm -rf "$HEZO_ENGINE_SNAPSHOT"
hezo_engine_snapshot
state_before=$(machine_state)
echo "run.sh: the machine before the tests:"
printf '%s\n' "$state_before" | sed 's/^/  /'
# machine_verify: 0 when the machine reads as before; otherwise say what changed, put it back.
machine_verify()
{
	local state_after
	state_after=$(machine_state)
	if [ "$state_after" = "$state_before" ]; then
		echo "run.sh: the engines' files, /etc/hezo and dockerd's runtimes are as before"
		rm -rf "$HEZO_ENGINE_SNAPSHOT"
		return 0
	fi
	echo "run.sh: FAIL: the tests changed the machine:" >&2
	diff <(printf '%s\n' "$state_before") <(printf '%s\n' "$state_after") | sed 's/^/  /' >&2
	if hezo_engine_restore && [ "$(machine_state)" = "$state_before" ]; then
		echo "run.sh: put back as it was" >&2
	else
		echo "run.sh: could not put everything back; the originals are in $HEZO_ENGINE_SNAPSHOT" >&2
	fi
	return 1
}
# The tests' shared directory (tests/lib/common.sh) goes when the run made it; a mount left below
# it is a change to the machine.
test_dir=${HEZO_TEST_DIR:-/run/hezo-test}
test_dir_made=no
[ -e "$test_dir" ] || test_dir_made=yes
# The parent cgroups the tests' containers live in (cgroupsPath /hezo-test/ID, and containerd
# namespaces hezo-test and hezo-engines): the backends make them and remove only their own leaf.
test_cgroups()
{
	local d
	for d in /sys/fs/cgroup/*/hezo-test /sys/fs/cgroup/*/hezo-engines; do
		[ -d "$d" ] && echo "$d"
	done
	return 0
}
cgroups_before=$(test_cgroups)
tidy_test_dir()
{
	local left d rc=0
	left=$(findmnt -rn -o TARGET | grep -F "$test_dir/" || true)
	if [ -n "$left" ]; then
		echo "run.sh: FAIL: mounts left under $test_dir:" >&2
		printf '  %s\n' $left >&2
		return 1
	fi
	[ "$test_dir_made" = no ] || rm -rf --one-file-system "$test_dir"
	# Those the run made go again; one that cannot (a process still in it) is a leftover.
	while read -r d; do
		[ -n "$d" ] || continue
		grep -qxF "$d" <<<"$cgroups_before" && continue
		if ! find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; then
			echo "run.sh: FAIL: cgroup $d could not be removed (a process left in it?)" >&2
			rc=1
		fi
	done < <(test_cgroups)
	return $rc
}
machine_verified=0
# An interrupted or failed run still gets the check (and the restore).
on_exit()
{
	local rc=$?
	trap - EXIT
	if [ "$machine_verified" = 0 ]; then
		machine_verify || { [ "$rc" -ne 0 ] || rc=1; }
		tidy_test_dir || { [ "$rc" -ne 0 ] || rc=1; }
	fi
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM HUP

# shellcheck disable=SC2054 # the commas belong to the option values
opts=(-Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false)
if [ -f "$build/meson-private/coredata.dat" ]; then
	meson setup --reconfigure "$build" "${opts[@]}"
else
	meson setup "$build" "${opts[@]}"
fi
ninja -C "$build"

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export HEZO_REQUIRE_INTEGRATION=1
rc=0
meson test -C "$build" --print-errorlogs "$@" || rc=$?

# One line over all suites, counted per meson test (a TAP file is one test, whatever its subtests).
log=$build/meson-logs/testlog.json
if [ ! -s "$log" ]; then
	echo "run.sh: no $log: meson ran no test" >&2
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
read -r passed failed skipped < <(jq -rs '
	[.[] | .result] as $r
	| [($r | map(select(. == "OK" or . == "EXPECTEDFAIL")) | length),
	   ($r | map(select(. == "FAIL" or . == "ERROR" or . == "TIMEOUT" or . == "UNEXPECTEDPASS")) | length),
	   ($r | map(select(. == "SKIP")) | length)]
	| @tsv' "$log")
machine_verified=1
if ! machine_verify || ! tidy_test_dir; then
	# A run that changed the user's machine fails, whatever the tests said.
	failed=$((failed + 1))
fi
if [ "$((passed + failed + skipped))" -eq 0 ]; then
	echo "run.sh: meson ran no test" >&2
	failed=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$failed" -ne 0 ] || [ "$rc" -ne 0 ]; then
	exit 1
fi

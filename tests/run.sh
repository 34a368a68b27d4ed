#!/bin/bash
# The test command (sudo tests/run.sh): set the machine up, build with -Werror and ASan/UBSan in
# build-ci, run every meson test suite (unit, integration on runc and on runsc, style) and end with
# one line "N passed, N failed, N skipped" counting meson tests.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
src=$(pwd)
build=${HEZO_BUILD_DIR:-$src/build-ci}

if [ "$(id -u)" != 0 ]; then
	echo "run.sh: must run as root (sudo tests/run.sh): the integration tests drive runc and dockerd" >&2
	exit 1
fi

bash tests/setup.sh

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
if [ "$((passed + failed + skipped))" -eq 0 ]; then
	echo "run.sh: meson ran no test" >&2
	failed=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$failed" -ne 0 ] || [ "$rc" -ne 0 ]; then
	exit 1
fi

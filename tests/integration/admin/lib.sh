# Shared TAP helpers for tests/integration/admin/*.sh (sourced, not run).
# shellcheck shell=sh disable=SC2034 # T and SRC are for the scripts that source this file
set -u
T=${HEZO_INSTALL_TEST:?set HEZO_INSTALL_TEST to the hezo-install-test binary}
SRC=${HEZO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../../.." && pwd)}
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n - # SKIP $*"; }
# check DESCRIPTION COMMAND...: one TAP line from the command's status; output shown on failure.
check() {
	desc=$1
	shift
	if out=$("$@" 2>&1); then
		ok "$desc"
	else
		not_ok "$desc"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
}
same() { cmp -s "$1" "$2"; }
finish() {
	echo "1..$n"
	[ "$failed" -eq 0 ]
}
need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "1..0 # SKIP needs root"
		exit 0
	fi
}

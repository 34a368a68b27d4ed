#!/bin/bash
# Benchmark (issue 26): `docker run --rm` of a runc box with its own user namespace (idmapped
# root, the namespace made by the shim) against the same box without one, in one run, alternating
# the two so the machine's load falls on both alike. Prints the medians and their ratio (target
# <= 1.05). "Without" is a hezo-shim that predates the user namespace (a build of main before it):
#
#   tests/bench/userns.sh WITHOUT_SHIM [WITH_SHIM]   (WITH: build/shim/hezo-shim)
#
# Needs root, dockerd and the busybox test image; takes /run/hezo-engines.lock itself around its
# runtime registration. Nothing here fails on a figure.
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WITHOUT=${1:?usage: userns.sh WITHOUT_SHIM [WITH_SHIM]}
WITH=${2:-$SRC/build/shim/hezo-shim}
N=${BENCH_N:-20}
export HEZO_SOURCE_DIR=$SRC HEZO_BUILD_DIR=${HEZO_BUILD_DIR:-$SRC/build} HEZO_TEST_BACKEND=runc
export HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-bench-userns}
# shellcheck source=tests/lib/common.sh
. "$SRC/tests/lib/common.sh"
# shellcheck source=tests/lib/docker.sh
. "$SRC/tests/lib/docker.sh"
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }
[ "${HEZO_BENCH_LOCKED:-}" = 1 ] || exec env HEZO_BENCH_LOCKED=1 flock /run/hezo-engines.lock "$0" "$@"

# The bench's own directory goes at exit when it made it (wrappers, policy, the shims' state).
[ -e "$HEZO_TEST_DIR" ] || tap_cleanup "rm -rf '$HEZO_TEST_DIR'"
hezo_dockerd_start || { echo "dockerd does not start" >&2; exit 2; }
hezo_image_docker || { echo "cannot import $HEZO_TEST_IMAGE" >&2; exit 2; }
hezo_write_policy docker
for side in with without; do
	bin=$WITH
	[ $side = without ] && bin=$WITHOUT
	HEZO_SHIM_BIN=$bin HEZO_TEST_WRAPPER=$HEZO_TEST_DIR/shim-$side hezo_make_wrapper
	hezo_docker_register_runtime "hezo-bench-$side" "$HEZO_TEST_DIR/shim-$side" ||
		{ echo "cannot register hezo-bench-$side" >&2; exit 2; }
done

# one RUNTIME: wall time of one docker run --rm, in ms.
one()
{
	local a b
	a=$(date +%s%N)
	"$HEZO_DOCKER" run --rm --runtime="$1" --network=none "$HEZO_TEST_IMAGE" true >/dev/null 2>&1 ||
		{ echo "docker run --runtime=$1 failed" >&2; exit 1; }
	b=$(date +%s%N)
	echo $(((b - a) / 1000000))
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

one hezo-bench-with >/dev/null && one hezo-bench-without >/dev/null # warm both
: >"$HEZO_TEST_DIR/with.ms"
: >"$HEZO_TEST_DIR/without.ms"
for _ in $(seq "$N"); do
	one hezo-bench-with >>"$HEZO_TEST_DIR/with.ms"
	one hezo-bench-without >>"$HEZO_TEST_DIR/without.ms"
done
w=$(median <"$HEZO_TEST_DIR/with.ms")
wo=$(median <"$HEZO_TEST_DIR/without.ms")
echo "| docker run --rm (runc box, $N runs each, alternating) | median ms |"
echo "|---|---|"
echo "| with its own user namespace | $w |"
echo "| without (host's user namespace) | $wo |"
echo "| ratio | $(awk -v a="$w" -v b="$wo" 'BEGIN { printf "%.3f", a / b }') (target <= 1.05) |"

#!/bin/bash
# The instructions hezo-shim's create executes before it execs the backend (callgrind), on
# Docker's config.json and Docker's seccomp profile (tests/data/config-docker.json), backend
# /bin/true. Prints "create instructions: N" (N plain digits), the line tests/bench/run.sh reads.
#
#   tests/bench/create-cg.sh BUILD [LIVE] [PROFILE-OUT]
#
# BUILD: a build of the tree with -Dstatic_deps=false (the count runs under valgrind, which knows
# no open_tree/mount_setattr/move_mount: tests/bench/cg-mountapi.c stands in for them through
# LD_PRELOAD, which a static binary does not read). LIVE: that many records of other live boxes
# (one sleeping process in their cgroup) are present. Exits non-zero, naming the error, when the
# create fails or nothing was counted. Needs root, valgrind, jq, cc, busybox-static.
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:?usage: create-cg.sh BUILD [LIVE] [PROFILE-OUT]}
LIVE=${2:-0}
PROF=${3:-}
die() { echo "create-cg: error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root"
for t in valgrind callgrind_annotate jq cc; do
	command -v "$t" >/dev/null 2>&1 || die "missing tool $t"
done
SHIM=$BUILD/shim/hezo-shim
[ -x "$SHIM" ] || die "no $SHIM"
[ -x "$BUILD/init/hezo-init" ] || die "no $BUILD/init/hezo-init (build all of $BUILD)"

T=$(mktemp -d /tmp/hezo-create-cg.XXXXXX)
SLEEPER=""
CG=/sys/fs/cgroup/pids/hezo-create-cg-$$
cleanup()
{
	[ -n "$SLEEPER" ] && kill "$SLEEPER" 2>/dev/null && wait "$SLEEPER" 2>/dev/null
	rmdir "$CG" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# shellcheck source=tests/lib/image.sh
. "$SRC/tests/lib/image.sh"
cc -O2 -shared -fPIC -o "$T/cg-mountapi.so" "$SRC/tests/bench/cg-mountapi.c" ||
	die "cannot build cg-mountapi.so"
ID=bench-alone
eng=$T/engine/$ID
b=$T/engine/io.containerd.runtime.v2.task/moby/$ID
mkdir -p "$eng" "$b" "$T/state" "$T/root" || die "cannot make $T"
touch "$eng/resolv.conf" "$eng/hostname" "$eng/hosts"
hezo_busybox_rootfs "$b/rootfs" >/dev/null || die "no busybox rootfs"
jq --arg e "$eng" --arg id "$ID" \
	'(.mounts[] | select(.source | startswith("/var/lib/docker/containers/")) | .source) |=
	($e + "/" + (split("/") | last)) | .root.path = "rootfs" | .linux.cgroupsPath = ("/docker/" + $id)
	| del(.hooks)' "$SRC/tests/data/config-docker.json" >"$T/docker.json" || die "jq failed"
jq -n --arg e "$T/engine" '{version: 1, mode: "dev", backend: "runc", allowBackends: ["runc"],
	egress: {mode: "off"}, backends: {runc: {path: "/bin/true"}}, mounts: {engineRoots: [$e]}}' \
	>"$T/policy.json" || die "jq failed"
shim() { env HEZO_POLICY="$T/policy.json" HEZO_STATE_DIR="$T/state" "$@"; }

if [ "$LIVE" -gt 0 ]; then
	# A first create gives a record to copy; the copies are other IDs and projects, alive by
	# the one sleeper in the cgroup they all name, each with a uid range of its own.
	cp "$T/docker.json" "$b/config.json"
	shim "$SHIM" --root "$T/root" create -b "$b" "$ID" >/dev/null 2>"$T/first.err" ||
		die "create failed: $(cat "$T/first.err")"
	rec=$(ls "$T"/state/*/"$ID".json 2>/dev/null) || die "no record of $ID"
	mkdir -p "$CG" || die "cannot make $CG"
	sleep 3600 &
	SLEEPER=$!
	echo "$SLEEPER" >"$CG/cgroup.procs" || die "cannot move a sleeper into $CG"
	for ((i = 0; i < LIVE; i++)); do
		jq --arg id "other-$i" --arg p "p$i" --arg cg "/hezo-create-cg-$$" --argjson k "$i" \
			'.id = $id | .project = $p | .cgroupsPath = $cg | .handed = []
			| .userns.base = (.userns.base + 65536 * ($k + 1))' "$rec" \
			>"$(dirname "$rec")/other-$i.json" || die "cannot write record $i"
	done
	rm -f "$rec" "$b/.hezo-config.json" 2>/dev/null
fi
cp "$T/docker.json" "$b/config.json"
shim env LD_PRELOAD="$T/cg-mountapi.so" valgrind --tool=callgrind --dump-before=execve \
	--callgrind-out-file="$T/cg.out" "$SHIM" --root "$T/root" create -b "$b" "$ID" \
	>/dev/null 2>"$T/cg.err" || die "create under callgrind failed: $(grep -v '^[=-][=-]' "$T/cg.err" | tail -n 3)"
cg=$(for f in "$T"/cg.out*; do [ -s "$f" ] && echo "$f"; done | head -n 1)
[ -n "$cg" ] || die "callgrind wrote no profile"
ir=$(callgrind_annotate "$cg" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
[ -n "$ir" ] && [ "$ir" -gt 0 ] 2>/dev/null || die "no instruction count in $cg"
[ -n "$PROF" ] && cp "$cg" "$PROF.raw" && callgrind_annotate --inclusive=yes "$cg" 2>/dev/null | head -n 60 >"$PROF"
echo "create instructions: $ir"

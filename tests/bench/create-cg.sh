#!/bin/bash
# What one hezo-shim create costs before it execs the backend, on Docker's config.json and
# Docker's seccomp profile (tests/data/config-docker.json), backend /bin/true.
#
#   tests/bench/create-cg.sh --build DIR [--live N] [--tasks N] [--profile FILE] [--time RUNS]
#                            [--against DIR2]
#
# Prints "create instructions: N" (plain digits; callgrind, user mode), the line
# tests/bench/run.sh and scripts read, for a create with --live records of other live boxes (one
# sleeping process in their cgroup) and --tasks host tasks (threads of one sleeping process)
# present. With --time, also the CPU time (user+sys, wait4) of creates with the live boxes against
# creates with none, the tasks present for both, interleaved in 5 rounds of RUNS each:
#   create cpu: none MS (MIN-MAX), loaded MS (MIN-MAX), ratio R (MIN-MAX)
# and with --against, creates with none by DIR's shim against DIR2's (another build of the same
# kind, e.g. main's), interleaved the same way:
#   create cpu against DIR2: theirs MS (MIN-MAX), ours MS (MIN-MAX), ratio R (MIN-MAX)
# DIR: a build of the tree with -Dstatic_deps=false: valgrind knows no open_tree, mount_setattr
# or move_mount, and tests/bench/cg-mountapi.c stands in for them through LD_PRELOAD, which a
# static binary does not read. Exits non-zero, naming the error, when a create fails or nothing
# was counted. Needs root, valgrind, jq, cc, busybox-static.
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD="" LIVE=0 TASKS=0 PROF="" RUNS=0 ROUNDS=5 AGAINST=""
die() { echo "create-cg: error: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift ;;
	--live) LIVE=$2; shift ;;
	--tasks) TASKS=$2; shift ;;
	--profile) PROF=$2; shift ;;
	--time) RUNS=$2; shift ;;
	--against) AGAINST=$2; shift ;;
	*) die "unknown argument $1 (see the head of $0)" ;;
	esac
	shift
done
[ -n "$BUILD" ] || die "--build DIR is needed"

[ "$(id -u)" = 0 ] || die "needs root"
for t in valgrind callgrind_annotate jq cc; do
	command -v "$t" >/dev/null 2>&1 || die "missing tool $t"
done
SHIM=$(realpath "$BUILD")/shim/hezo-shim
[ -x "$SHIM" ] || die "no $SHIM"
THEIRS=""
if [ -n "$AGAINST" ]; then
	THEIRS=$(realpath "$AGAINST")/shim/hezo-shim
	[ -x "$THEIRS" ] || die "no $THEIRS"
	[ -x "$AGAINST/init/hezo-init" ] || die "no $AGAINST/init/hezo-init (build all of $AGAINST)"
fi
[ -x "$BUILD/init/hezo-init" ] || die "no $BUILD/init/hezo-init (build all of $BUILD)"

T=$(mktemp -d /tmp/hezo-create-cg.XXXXXX)
SLEEPER="" TASKS_PID=""
CG=/sys/fs/cgroup/pids/hezo-create-cg-$$
tasks_stop()
{
	[ -n "$TASKS_PID" ] || return 0
	exec 8>&-
	kill "$TASKS_PID" 2>/dev/null
	wait "$TASKS_PID" 2>/dev/null
	TASKS_PID=""
}
cleanup()
{
	tasks_stop
	[ -n "$SLEEPER" ] && kill "$SLEEPER" 2>/dev/null && wait "$SLEEPER" 2>/dev/null
	rmdir "$CG" 2>/dev/null
	# The backend is /bin/true: the memory cgroup the shim makes for TCP accounting stays.
	[ -n "${ID:-}" ] && rmdir /sys/fs/cgroup/*/docker/"$ID" 2>/dev/null
	[ -n "${HEZO_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

# tasks_start: TASKS threads asleep in one process, until tasks_stop closes its stdin.
tasks_start()
{
	[ "$TASKS" -gt 0 ] || return 0
	# A fresh file: the last round's "ready" must not count for this one.
	rm -f "$T/tasks.out"
	exec 8> >(exec "$T/tasks" "$TASKS" >"$T/tasks.out" 2>&1)
	TASKS_PID=$!
	for _ in $(seq 300); do
		grep -q '^ready' "$T/tasks.out" 2>/dev/null && return 0
		kill -0 "$TASKS_PID" 2>/dev/null || break
		sleep 0.1
	done
	die "cannot hold $TASKS host tasks: $(cat "$T/tasks.out")"
}

# shellcheck source=tests/lib/image.sh
. "$SRC/tests/lib/image.sh"
cc -O2 -shared -fPIC -o "$T/cg-mountapi.so" "$SRC/tests/bench/cg-mountapi.c" ||
	die "cannot build cg-mountapi.so"
cc -O2 -pthread -o "$T/tasks" "$SRC/tests/bench/tasks.c" || die "cannot build tasks"
cc -O2 -o "$T/rusage-run" "$SRC/tests/bench/rusage-run.c" || die "cannot build rusage-run"
ID=bench-alone
eng=$T/engine/$ID
b=$T/engine/io.containerd.runtime.v2.task/moby/$ID
mkdir -p "$eng" "$b" "$T/state" "$T/none" "$T/root" || die "cannot make $T"
touch "$eng/resolv.conf" "$eng/hostname" "$eng/hosts"
hezo_busybox_rootfs "$b/rootfs" >/dev/null || die "no busybox rootfs"
jq --arg e "$eng" --arg id "$ID" \
	'(.mounts[] | select(.source | startswith("/var/lib/docker/containers/")) | .source) |=
	($e + "/" + (split("/") | last)) | .root.path = "rootfs" | .linux.cgroupsPath = ("/docker/" + $id)
	| del(.hooks)' "$SRC/tests/data/config-docker.json" >"$T/docker.json" || die "jq failed"
jq -n --arg e "$T/engine" '{version: 1, mode: "dev", backend: "runc", allowBackends: ["runc"],
	egress: {mode: "off"}, backends: {runc: {path: "/bin/true"}}, mounts: {engineRoots: [$e]}}' \
	>"$T/policy.json" || die "jq failed"
# shim STATE CMD...: with the policy and the given state directory.
shim() { local s=$1; shift; env HEZO_POLICY="$T/policy.json" HEZO_STATE_DIR="$s" "$@"; }

if [ "$LIVE" -gt 0 ]; then
	# A first create gives a record to copy; the copies are other IDs and projects, alive by
	# the one sleeper in the cgroup they all name, each with a uid range of its own.
	cp "$T/docker.json" "$b/config.json"
	shim "$T/state" "$SHIM" --root "$T/root" create -b "$b" "$ID" >/dev/null 2>"$T/first.err" ||
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
	rm -f "$rec" "$b/.hezo-config.json"
	# Records the shim wrote itself are in its index (STATE/.records.index) when the next create
	# looks; these copies are not until a create has walked them: one create, not counted.
	cp "$T/docker.json" "$b/config.json"
	shim "$T/state" "$SHIM" --root "$T/root" create -b "$b" "$ID" >/dev/null 2>"$T/first.err" ||
		die "create failed: $(cat "$T/first.err")"
	rm -f "$rec" "$b/.hezo-config.json"
fi

tasks_start
cp "$T/docker.json" "$b/config.json"
# The shim's user-namespace helper is a fork that drops to the box's host uid and exits: callgrind
# writes its profile too, as that uid, so the files go to a directory it can write, one per pid.
# create runs the backend in a child (and a helper or two before it): each child's profile dumped
# before its execve (".1") holds the shim's count up to its fork, and the backend's, forked last,
# holds the most.
mkdir -p "$T/cg" && chmod 0711 "$T" && chmod 1777 "$T/cg" || die "cannot make $T/cg"
shim "$T/state" env LD_PRELOAD="$T/cg-mountapi.so" valgrind --tool=callgrind \
	--dump-before=execve --callgrind-out-file="$T/cg/cg.out.%p" "$SHIM" --root "$T/root" create \
	-b "$b" "$ID" >/dev/null 2>"$T/cg.err" ||
	die "create under callgrind failed: $(grep -v '^[=-][=-]' "$T/cg.err" | tail -n 3)"
tasks_stop
cg="" ir=""
for f in "$T"/cg/cg.out.*.1; do
	[ -s "$f" ] || continue
	n=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
	[ -n "$n" ] && { [ -z "$ir" ] || [ "$n" -gt "$ir" ]; } && cg=$f ir=$n
done
[ -n "$cg" ] || die "callgrind wrote no profile"
[ -n "$ir" ] && [ "$ir" -gt 0 ] 2>/dev/null || die "no instruction count in $cg"
if [ -n "$PROF" ]; then
	cp "$cg" "$PROF.raw"
	callgrind_annotate --inclusive=yes "$cg" 2>/dev/null | head -n 60 >"$PROF"
fi
echo "create instructions: $ir"

[ "$RUNS" -gt 0 ] || exit 0
# CPU per create, interleaved: RUNS with no other box recorded, then RUNS with the LIVE ones,
# ROUNDS times. The host tasks are there for both: each start of 10,000 threads takes 10,000
# pids, and once the pids wrap around (pid_max 32768 here) every process the shim makes costs
# the kernel most of a second; the count above shows the tasks do not enter create's own work
# for this config.json. The shim execs /bin/true, which both pay alike.
tasks_start
for ((r = 1; r <= ROUNDS; r++)); do
	for mode in none loaded; do
		state=$T/none
		[ "$mode" = loaded ] && state=$T/state
		shim "$state" "$T/rusage-run" "$RUNS" --copy "$T/docker.json" "$b/config.json" -- \
			"$SHIM" --root "$T/root" create -b "$b" "$ID" >"$T/$mode-$r.txt" 2>"$T/$mode.err"
		awk '$5 != 0 { bad = 1 } END { exit bad }' "$T/$mode-$r.txt" ||
			die "create ($mode) failed: $(tail -n 1 "$T/$mode.err")"
	done
done
tasks_stop
# Per round the median of each; over rounds the median and range of those and of their ratio.
med() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
for ((r = 1; r <= ROUNDS; r++)); do
	n=$(awk '{ print ($1 + $2) / 1000 }' "$T/none-$r.txt" | med)
	l=$(awk '{ print ($1 + $2) / 1000 }' "$T/loaded-$r.txt" | med)
	echo "$n $l"
done >"$T/rounds.txt"
echo "create cpu per round (none loaded, ms): $(tr '\n' ';' <"$T/rounds.txt")" >&2
summary() { sort -g | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.3f (%.3f-%.3f)", m, a[1], a[NR] }'; }
echo "create cpu: none $(awk '{ print $1 }' "$T/rounds.txt" | summary) ms," \
	"loaded $(awk '{ print $2 }' "$T/rounds.txt" | summary) ms," \
	"ratio $(awk '$1 > 0 { print $2 / $1 }' "$T/rounds.txt" | summary)"

[ -n "$THEIRS" ] || exit 0
# The other build's shim against this one's, no other box, interleaved; each its own state.
mkdir -p "$T/none-theirs" "$T/none-ours"
for ((r = 1; r <= ROUNDS; r++)); do
	for who in theirs ours; do
		bin=$SHIM
		[ "$who" = theirs ] && bin=$THEIRS
		shim "$T/none-$who" "$T/rusage-run" "$RUNS" --copy "$T/docker.json" "$b/config.json" -- \
			"$bin" --root "$T/root" create -b "$b" "$ID" >"$T/$who-$r.txt" 2>"$T/$who.err"
		awk '$5 != 0 { bad = 1 } END { exit bad }' "$T/$who-$r.txt" ||
			die "create ($who) failed: $(tail -n 1 "$T/$who.err")"
	done
	echo "$(awk '{ print ($1 + $2) / 1000 }' "$T/theirs-$r.txt" | med)" \
		"$(awk '{ print ($1 + $2) / 1000 }' "$T/ours-$r.txt" | med)" >>"$T/against.txt"
done
echo "create cpu against $AGAINST: theirs $(awk '{ print $1 }' "$T/against.txt" | summary) ms," \
	"ours $(awk '{ print $2 }' "$T/against.txt" | summary) ms," \
	"ratio $(awk '$1 > 0 { print $2 / $1 }' "$T/against.txt" | summary)"

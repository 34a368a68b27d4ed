#!/bin/bash
# Integration: admission (policy "admission", issue 18.2) on the backend HEZO_TEST_BACKEND: a
# create past maxActive waits first come first served and starts when a slot frees, is refused
# past "wait" with the reason, never lets more than maxActive run at once, keeps no slot for a
# killed create or a dead container, and lets an exempt project through at once. Bundles, then
# Docker.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"

hezo_require_root
hezo_require_tools jq runc timeout dockerd "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-adm-$HEZO_TEST_BACKEND
WORK=$(mktemp -d "$HEZO_TEST_DIR/adm.XXXXXX")
tap_cleanup "rm -rf '$WORK'"
PROJ=$WORK/projects
mkdir -p "$PROJ"
echo '{"admission": {"exempt": true}}' >"$PROJ/assistant.json"
echo '{}' >"$PROJ/batch.json"
# A fresh state directory: no record of an earlier run may count (they would not: see below).
rm -rf "${HEZO_TEST_STATE:?}"

# policy MAX WAIT [CONTEXT]
policy()
{
	hezo_write_policy "${3:-bundle}" ".admission = {maxActive: $1, wait: $2} | .projectsDir = \"$PROJ\""
}

IDS=()
# bundle ID ARGV_JSON [JQ]: a bundle for container ID under $WORK/ID.
bundle()
{
	IDS+=("$1")
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$1'"
	hezo_make_bundle "$WORK/$1" "$1" "$2" "${3:-.}" >/dev/null 2>&1 || bail_out "cannot make bundle $1"
}

# stdout and stderr are pipes (runc would hand a regular file to the box, which the shim
# refuses); a refused create leaves no box holding them, so its stderr's copy ends: waited for.
shim_create()
{
	local rc
	hezo_shim --root "$ROOT" create -b "$WORK/$1" "$1" </dev/null > >(cat >"$WORK/$1.out") \
		2> >(cat >"$WORK/$1.err") && rc=0 || rc=$?
	[ "$rc" = 0 ] || wait "$!" 2>/dev/null
	return "$rc"
}

# live: how many of our containers' cgroups hold a process now.
live()
{
	local id n=0 f
	for id in "${IDS[@]}"; do
		f=/sys/fs/cgroup/pids/hezo-test/$id/cgroup.procs
		# cgroup files have no size: read them.
		grep -q . "$f" 2>/dev/null && n=$((n + 1))
	done
	echo "$n"
}

P=ah$$
# --- maxActive 2: the third waits, then starts when one is deleted ------------------------------
policy 2 60
for i in 1 2 3; do bundle "$P-w$i" '["sleep", "1000"]'; done
shim_create "$P-w1" && shim_create "$P-w2"
expect_eq "$?" 0 "[2 slots] two creates pass" || diag "$(cat "$WORK/$P-w1.err" "$WORK/$P-w2.err")"
shim_create "$P-w3" &
w3=$!
sleep 2
kill -0 "$w3" 2>/dev/null && ok "[2 slots] the third create waits" || not_ok "[2 slots] the third create waits"
expect_eq "$(hezo_backend_status "$ROOT" "$P-w3")" absent "[2 slots] ... and its container does not exist yet"
expect_eq "$(ls "$HEZO_TEST_STATE/admission-queue" | wc -l)" 1 "[2 slots] ... one ticket in the queue"
t0=$(date +%s%N)
hezo_shim --root "$ROOT" delete --force "$P-w1" >/dev/null 2>&1
wait "$w3" && rc=0 || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "$rc" 0 "[2 slots] the third starts once the first is deleted" || diag "$(cat "$WORK/$P-w3.err")"
diag "the third create finished ${ms} ms after the delete"
expect_eq "$(hezo_backend_status "$ROOT" "$P-w3")" created "[2 slots] ... its container is created"
expect_eq "$(jq -r .admission.state "$HEZO_TEST_STATE"/*/"$P-w3.json")" active "[2 slots] ... its record says active"

# --- past wait: refused with the reason, bundle untouched ------------------------------------------
policy 2 1
bundle "$P-late" '["sleep", "1000"]'
cp "$WORK/$P-late/config.json" "$WORK/late.orig"
shim_create "$P-late" && rc=0 || rc=$?
expect_ne "$rc" 0 "[wait 1] a create past the wait is refused"
expect_eq "$(cat "$WORK/$P-late.err")" \
	"hezo-shim: admission: 2 of 2 boxes active (maxActive 2 from policy); no slot freed in 1 s (admission.wait), refused" \
	"[wait 1] ... with one line saying the limit, how it was set and how many are active"
cmp -s "$WORK/$P-late/config.json" "$WORK/late.orig" && ok "[wait 1] ... config.json untouched" ||
	not_ok "[wait 1] ... config.json untouched"
expect_eq "$(ls "$HEZO_TEST_STATE/admission-queue" | wc -l)" 0 "[wait 1] ... and its ticket is gone"

# --- exempt: starts at once though every slot is taken ---------------------------------------------
bundle "$P-ex" '["sleep", "1000"]' '.annotations["org.hezo.project"] = "assistant"'
t0=$(date +%s%N)
shim_create "$P-ex" && rc=0 || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "$rc" 0 "[exempt] an exempt project's create passes with every slot taken" || diag "$(cat "$WORK/$P-ex.err")"
[ "$ms" -lt 1000 ] && ok "[exempt] ... at once ($ms ms)" || not_ok "[exempt] ... at once ($ms ms)"
bundle "$P-nex" '["sleep", "1000"]' '.annotations["org.hezo.project"] = "batch"'
shim_create "$P-nex" && rc=0 || rc=$?
expect_ne "$rc" 0 "[exempt] another project's create still waits and is refused"
for id in "$P-w2" "$P-w3" "$P-ex"; do hezo_shim --root "$ROOT" delete --force "$id" >/dev/null 2>&1; done

# --- a killed create and a dead container hold no slot ---------------------------------------------
policy 1 60
bundle "$P-k1" '["sleep", "1000"]'
bundle "$P-k2" '["sleep", "1000"]'
bundle "$P-k3" '["sleep", "1000"]'
shim_create "$P-k1" || not_ok "[killed] first create" 
# The shim itself in the background (not a function or timeout around it): $! is its PID.
env HEZO_POLICY="$HEZO_TEST_POLICY" HEZO_STATE_DIR="$HEZO_TEST_STATE" HEZO_HOOK_PATH="$HEZO_HOOK_BIN" \
	"$HEZO_SHIM_BIN" --root "$ROOT" create -b "$WORK/$P-k2" "$P-k2" </dev/null >/dev/null 2>&1 &
k2=$!
sleep 1
kill -KILL "$k2"
wait "$k2" 2>/dev/null
shim_create "$P-k3" &
k3=$!
sleep 1
# The dead create's ticket is first in line: it must not block the live one behind it.
hezo_shim --root "$ROOT" delete --force "$P-k1" >/dev/null 2>&1
timeout 10 tail --pid="$k3" -f /dev/null
wait "$k3" && rc=0 || rc=$?
expect_eq "$rc" 0 "[killed] a create killed while it waited keeps no place in the queue" || diag "$(cat "$WORK/$P-k3.err")"
expect_eq "$(hezo_backend_status "$ROOT" "$P-k2")" absent "[killed] ... the killed create made nothing"
# The container's processes die without a delete: its record stays, its slot does not.
for p in $(cat "/sys/fs/cgroup/pids/hezo-test/$P-k3/cgroup.procs" 2>/dev/null); do kill -KILL "$p"; done
sleep 1
policy 1 5
bundle "$P-k4" '["sleep", "1000"]'
shim_create "$P-k4" && rc=0 || rc=$?
expect_eq "$rc" 0 "[killed] a container whose processes died holds no slot (record still there)" || diag "$(cat "$WORK/$P-k4.err")"
ls "$HEZO_TEST_STATE"/*/"$P-k3.json" >/dev/null 2>&1 && ok "[killed] ... its record is still there" ||
	not_ok "[killed] ... its record is still there"
for id in "$P-k3" "$P-k4"; do hezo_shim --root "$ROOT" delete --force "$id" >/dev/null 2>&1; done

# --- a record with no cgroup (no cgroupsPath; a foreground run that ended) holds no slot ---------------
# Nothing deletes after a foreground run, and without a cgroup only the backend's own state can
# say the container is gone (runc's state.json, runsc's state file).
policy 1 2
bundle "$P-fg" '["true"]' 'del(.linux.cgroupsPath)'
bundle "$P-fg2" '["sleep", "1000"]'
hezo_shim --root "$ROOT" run -b "$WORK/$P-fg" "$P-fg" </dev/null >/dev/null 2>"$WORK/$P-fg.err"
expect_eq "$?" 0 "[no cgroup] a foreground run without cgroupsPath ends" || diag "$(cat "$WORK/$P-fg.err")"
ls "$HEZO_TEST_STATE"/*/"$P-fg.json" >/dev/null 2>&1 && not_ok "[no cgroup] ... its record goes when the run ends" ||
	ok "[no cgroup] ... its record goes when the run ends"
# A record can still outlive its container (a shim killed mid-way, a backend's delete behind the
# shim's back): made here by deleting a created box with the backend itself.
shim_create "$P-fg" || diag "$(cat "$WORK/$P-fg.err")"
"$HEZO_TEST_BACKEND" --root "$ROOT" delete --force "$P-fg" >/dev/null 2>&1
ls "$HEZO_TEST_STATE"/*/"$P-fg.json" >/dev/null 2>&1 && ok "[no cgroup] a record whose container the backend removed stays" ||
	not_ok "[no cgroup] a record whose container the backend removed stays"
shim_create "$P-fg2" && rc=0 || rc=$?
expect_eq "$rc" 0 "[no cgroup] ... and holds no slot: the next create passes" || diag "$(cat "$WORK/$P-fg2.err")"
for id in "$P-fg" "$P-fg2"; do hezo_shim --root "$ROOT" delete --force "$id" >/dev/null 2>&1; done

# --- 20 concurrent creates against 5 slots: never more than 5 running ---------------------------------
policy 5 120
IDS=()
for i in $(seq 20); do bundle "$P-c$i" '["sleep", "2"]'; done
max=0
pids=()
for i in $(seq 20); do
	hezo_shim --root "$ROOT" run -d -b "$WORK/$P-c$i" "$P-c$i" </dev/null >/dev/null 2> >(cat >"$WORK/$P-c$i.err") &
	pids+=($!)
done
while :; do
	n=$(live)
	[ "$n" -gt "$max" ] && max=$n
	running=0
	for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && running=$((running + 1)); done
	[ "$running" = 0 ] && [ "$n" = 0 ] && break
	sleep 0.1
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
expect_eq "$fails" 0 "[20 on 5] all 20 creates pass in the end" ||
	for i in $(seq 20); do [ -s "$WORK/$P-c$i.err" ] && diag "$(cat "$WORK/$P-c$i.err")"; done
diag "most running at once: $max"
[ "$max" -le 5 ] && [ "$max" -ge 2 ] && ok "[20 on 5] never more than 5 running at once (at most $max)" ||
	not_ok "[20 on 5] never more than 5 running at once (at most $max)"

for id in "${IDS[@]}"; do hezo_bundle_cleanup "$ROOT" "$id"; done

# --- Docker: the third docker run -d waits, then starts; past the wait it says why ----------------------
hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
hezo_image_docker || bail_out "cannot import $HEZO_TEST_IMAGE"
IMG=$HEZO_TEST_IMAGE
RT=hezo-test-ah-admission
hezo_make_wrapper
policy 2 60 docker
hezo_docker_register_runtime "$RT" "$HEZO_TEST_WRAPPER" || bail_out "cannot register runtime $RT"
NAMES=()
for i in 1 2 3 4; do
	NAMES+=("hezo-ah-adm$i-$P")
	tap_cleanup "hezo_docker rm -f 'hezo-ah-adm$i-$P'"
done
drun()
{
	timeout 120 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$1" "$IMG" sleep 1000 </dev/null
}
out=$(drun "${NAMES[0]}" 2>&1 && drun "${NAMES[1]}" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[docker] two docker run -d pass" || diag "$out"
drun "${NAMES[2]}" >"$WORK/d3.out" 2>&1 &
d3=$!
sleep 3
kill -0 "$d3" 2>/dev/null && ok "[docker] the third docker run -d waits" || not_ok "[docker] the third docker run -d waits"
# Not `docker inspect`: dockerd holds the container's lock through create, so it would wait too.
expect_eq "$(timeout 10 "$HEZO_DOCKER" ps -a --filter name="${NAMES[2]}" --format '{{.Status}}' 2>&1)" Created \
	"[docker] ... docker ps shows it Created, not running"
timeout 2 "$HEZO_DOCKER" inspect "${NAMES[2]}" >/dev/null 2>&1
diag "docker inspect of the waiting container: exit $? (124: it blocks until the create ends)"
hezo_docker rm -f "${NAMES[0]}" >/dev/null 2>&1
wait "$d3" && rc=0 || rc=$?
expect_eq "$rc" 0 "[docker] ... and starts when one of the first two is removed" || diag "$(cat "$WORK/d3.out")"
expect_eq "$(hezo_docker inspect -f '{{.State.Running}}' "${NAMES[2]}" 2>&1)" true "[docker] ... running"
policy 2 2 docker
out=$(drun "${NAMES[3]}" 2>&1) && rc=0 || rc=$?
expect_ne "$rc" 0 "[docker] past the wait docker run -d fails"
expect_match "$out" "admission: 2 of 2 boxes active \(maxActive 2 from policy\); no slot freed in 2 s" \
	"[docker] ... and docker shows the reason" || diag "$out"
for n in "${NAMES[@]}"; do hezo_docker rm -f "$n" >/dev/null 2>&1; done

reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done
tap_done

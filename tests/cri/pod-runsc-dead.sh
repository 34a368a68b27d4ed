#!/bin/bash
# A runsc pod whose sandbox dies between an app container's create and its start (the Sentry
# SIGKILLed, as the host's OOM killer at the pod's memory cap does): the app containers' waiters
# end (containerd's shim waits for them), StartContainer fails, and the pod can be removed with
# nothing of it left. Then a pod app container's own limit annotations: refused, since the
# sandbox's limits are the pod's.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=runsc
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}/cri-pod-runsc-dead.$$
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/cri/cri-lib.sh
. "$here/cri-lib.sh"

cri_setup
hezo_write_policy docker "$(cri_policy_filter)"
diag "runsc $("$(hezo_backend_bin)" --version 2>&1 | head -n 1)"

waiters() { pgrep -f -- "hezo-pod-wait .*$CRI_DIR" | wc -l; }
# no_waiters: 0 once no waiter of this run is left, polled up to 20 s (a waiter left forever fails).
no_waiters()
{
	for _ in $(seq 80); do
		[ "$(waiters)" = 0 ] && return 0
		sleep 0.25
	done
	return 1
}

# start_within ID: StartContainer with 40 s for an answer (124: none came), where a hang lasted for
# the CRI client's deadline (60 s) before the fix.
start_within()
{
	timeout -k 5 40 "$CRI_PY" "$CRI_LIB_DIR/cri.py" --socket "$CRI_DIR/containerd.sock" \
		--gen "$CRI_DIR/gen" StartContainer <<<"{\"container_id\":\"$1\"}"
}

# === the sandbox dies between create and start ======================================================
# CRI's StartContainer is the runtime's create and start in one: to stand between them, the shim
# is driven directly with a bundle made from running app container a's as containerd wrote it (its
# input, kept beside it), in containerd's task directory beside the sandbox's, as a task of this pod.
PODCFG=$(cri_pod_config gv-f1 "$(cri_uid)" default)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") || diag "$(cat "$CRI_DIR/err")"
[ -n "$POD" ] || bail_out "no pod"
A=$(cri_create "$POD" "$PODCFG" "$(cri_container_config a 'exec sleep 100000')") && cri_start_container "$A" ||
	diag "app container a did not start"
TASKS=$CRI_DIR/state/io.containerd.runtime.v2.task/k8s.io
ROOT=$CRI_DIR/hezo-runc/k8s.io
B=$(printf 'f1%062x' 1)
mkdir -p "$TASKS/$B/rootfs" && hezo_busybox_rootfs "$TASKS/$B/rootfs" >/dev/null 2>&1
jq --arg id "$B" '.original | .root.path = "rootfs" | .linux.cgroupsPath |= sub("[^/]*$"; $id)' \
	"$TASKS/$A/.hezo-config.json" >"$TASKS/$B/config.json"
# Its stdio to a file: the waiter keeps create's for the container until start, as with containerd.
hezo_shim --root "$ROOT" create --bundle "$TASKS/$B" --pid-file "$TASKS/$B/pid" "$B" </dev/null >"$CRI_DIR/b.out" 2>&1 && rc=0 || rc=$?
expect_eq "$rc" 0 "[f1] hezo-shim create of an app container of the pod" || diag "$(cat "$CRI_DIR/b.out")"
W=$(cat "$TASKS/$B/pid" 2>/dev/null)
expect_match "$(tr '\0' ' ' <"/proc/$W/cmdline" 2>&1)" "^[^ ]*hezo-pod-wait .*$B" "[f1] ... its waiter's pid is in the pid file"
SPID=$(cri_sandbox_pid "$POD")
kill -KILL "$SPID"
for _ in $(seq 50); do
	kill -0 "$SPID" 2>/dev/null || break
	sleep 0.1
done
# waiter_gone: polled up to 20 s; a waiter that stays blocked for ever fails.
waiter_gone()
{
	for _ in $(seq 80); do
		pgrep -f -- "hezo-pod-wait .*$B" >/dev/null || return 0
		sleep 0.25
	done
	return 1
}
check "[f1] the created, never started container's waiter ends once the sandbox is gone" waiter_gone
out=$(hezo_shim --root "$ROOT" start "$B" 2>&1) && rc=0 || rc=$?
expect_match "$out" "^hezo-shim: start $B: its pod's sandbox $POD is not running" \
	"[f1] start after the sandbox died fails, saying so" || diag "rc=$rc $out"
expect_eq "$(wc -l <<<"$out")" 1 "[f1] ... in one line"
out=$(hezo_shim --root "$ROOT" kill "$B" 9 2>&1)
diag "kill: $out"
check "[f1] delete of it" hezo_shim --root "$ROOT" delete --force "$B"
rm -rf "${TASKS:?}/$B"
expect_eq "$(cri_leftovers "$B")" "" "[f1] nothing of it is left (waiter, runsc state, record)"
check "[f1] StopPodSandbox" cri StopPodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
check "[f1] RemovePodSandbox" cri RemovePodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
sleep 1
expect_eq "$(cri_leftovers "$POD")" "" "[f1] nothing of the pod is left"
expect_eq "$(cri_leftovers "$A")" "" "[f1] nothing of app container a is left"

# === the sandbox dies while app containers start (the red team's race) ============================
PODCFG=$(cri_pod_config gv-f1b "$(cri_uid)" default)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") || diag "$(cat "$CRI_DIR/err")"
ids=()
for c in x y; do
	ids+=("$(cri_create "$POD" "$PODCFG" "$(cri_container_config $c 'exec sleep 100000')")")
done
SPID=$(cri_sandbox_pid "$POD")
starts=()
for id in "${ids[@]}"; do
	(start_within "$id" >/dev/null 2>&1; echo $? >"$CRI_DIR/start.$id") &
	starts+=($!)
done
# While the runtime's create or start of them runs (the shim's own calls take longer than this).
sleep 0.5
kill -KILL "$SPID"
wait "${starts[@]}"
for id in "${ids[@]}"; do
	expect_ne "$(cat "$CRI_DIR/start.$id")" 124 "[f1 race] StartContainer of ${id:0:12} answered before the deadline"
done
check "[f1 race] the waiters end" no_waiters
check "[f1 race] StopPodSandbox" cri StopPodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
check "[f1 race] RemovePodSandbox" cri RemovePodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
sleep 1
expect_eq "$(cri_leftovers "$POD")" "" "[f1 race] nothing of the pod is left"

# === an app container's own limits ==================================================================
# One Sentry runs the pod in the sandbox's host cgroup: an app container's own org.hezo.memory,
# .pids or .cpus would be recorded and hold nothing, so they are refused; the engine's own
# linux.resources (kubelet sends them for every container) are taken, and the record, inspect and
# ps say the limit that holds, the pod's.
PODCFG=$(cri_pod_config gv-f3 "$(cri_uid)" default)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") || diag "$(cat "$CRI_DIR/err")"
for a in memory:64m pids:20 cpus:0.5; do
	id=$(cri_create "$POD" "$PODCFG" "$(cri_container_config "l${a%%:*}" 'exec sleep 100000' \
		"{\"annotations\": {\"org.hezo.${a%%:*}\": \"${a#*:}\"}}")")
	out=$(cri_start_container "$id" 2>&1) && rc=0 || rc=$?
	expect_match "$out" "annotation org.hezo.${a%%:*} cannot hold in a runsc pod's app container: the pod's limits are its sandbox's \\($POD\\)" \
		"[f3] org.hezo.${a%%:*} on an app container is refused, saying why" || diag "rc=$rc $out"
	cri RemoveContainer "{\"container_id\":\"$id\"}" >/dev/null 2>&1
done
E=$(cri_create "$POD" "$PODCFG" "$(cri_container_config eng 'exec sleep 100000' '{"linux": {"resources": {"memory_limit_in_bytes": 67108864}}}')") &&
	cri_start_container "$E" 2>"$CRI_DIR/err" && rc=0 || rc=$?
expect_eq "$rc" 0 "[f3] an app container with the engine's own 64 MiB memory limit starts" || diag "$(cat "$CRI_DIR/err")"
ROOT=$CRI_DIR/hezo-runc/k8s.io
rec=$(hezo_shim --root "$ROOT" inspect "$E" 2>&1)
srec=$(hezo_shim --root "$ROOT" inspect "$POD" 2>&1)
expect_eq "$(jq -c '.box | [.memory, .pids, .cpuQuota, .limitsOf]' <<<"$rec")" \
	"$(jq -c --arg p "$POD" '.box | [.memory, .pids, .cpuQuota, $p]' <<<"$srec")" \
	"[f3] its record says the pod's limits (memory, pids, cpu) and whose they are" || diag "$(jq -c .box <<<"$rec")"
expect_ne "$(jq -r .box.memory <<<"$rec")" 67108864 "[f3] ... not its own 64 MiB, which does not hold"
expect_eq "$(jq -r '.live["memory.limit_in_bytes"]' <<<"$rec")" "$(jq -r '.live["memory.limit_in_bytes"]' <<<"$srec")" \
	"[f3] inspect's live memory limit is the sandbox's cgroup's"
# exec asks RLIMIT_NPROC of the record's box.pids; runsc gives an exec in a subcontainer the pod's.
out=$(cri_exec "$E" 'grep "^Max processes" /proc/self/limits' | awk '{print $3, $4}')
expect_eq "$out" "$(jq -r '"\(.box.pids) \(.box.pids)"' <<<"$srec")" "[f3] an exec in it has the pod's RLIMIT_NPROC, as its record says"
ps=$(hezo_shim --root "$ROOT" ps --json 2>&1)
pick() { jq -c --arg id "$1" '[.. | objects | select(.id? == $id)][0] | [.memoryCap, .pidsCap]' <<<"$ps"; }
expect_eq "$(pick "$E")" "$(pick "$POD")" "[f3] ps shows the pod's memory and pids caps for it" || diag "$(head -c 600 <<<"$ps")"
expect_eq "$(jq -r --arg id "$E" '[.. | objects | select(.id? == $id)][0].limitsOf' <<<"$ps")" "$POD" "[f3] ... and whose they are"
check "[f3] the pod goes" cri_remove_pod "$POD"
sleep 1
expect_eq "$(cri_leftovers "$POD")" "" "[f3] nothing of the pod is left"

expect_eq "$(cri ListPodSandbox | jq '.items | length')" 0 "no pod left in containerd"
expect_eq "$(find "$HEZO_TEST_STATE" -name '*.json' -not -path "$HEZO_TEST_STATE/ended/*" 2>/dev/null)" "" "no shim record left"
hezo_expect_no_sanitizer_reports
tap_done

#!/bin/bash
# A Kubernetes pod under a runsc project through containerd 1.6's CRI plugin, with Debian's runsc
# (no containerd-shim-runsc-v1): the sandbox runs, the app container is refused with one line and
# the refusal does not harm the sandbox; StopPodSandbox and RemovePodSandbox succeed, also for a
# pod whose sandbox died under containerd (killed from outside); nothing is left: runsc
# processes, runsc state, shim records, mounts.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=runsc
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}/cri-pod-runsc.$$
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/cri/cri-lib.sh
. "$here/cri-lib.sh"

cri_setup
hezo_write_policy docker "$(cri_policy_filter)"
diag "runsc $("$(hezo_backend_bin)" --version 2>&1 | head -n 1)"

# What a pod leaves: runsc processes naming it, runsc state under the shim's root, records, mounts.
leftovers()
{
	pgrep -af "runsc.*$1" | cut -c1-160
	find "$CRI_DIR/hezo-runc" -maxdepth 2 -name "*$1*" 2>/dev/null
	find "$HEZO_TEST_STATE" -name "*$1*" 2>/dev/null
	grep -F "$1" /proc/mounts | cut -d' ' -f1-3
}
# (proto3 JSON leaves out an enum at its default: SANDBOX_READY is 0.)
sandbox_ready()
{
	[ "$(cri PodSandboxStatus "{\"pod_sandbox_id\":\"$1\"}" |
		jq -r --arg id "$1" 'select(.status.id == $id) | .status.state // "SANDBOX_READY"')" = SANDBOX_READY ]
}
sandbox_pid()
{
	cri PodSandboxStatus "{\"pod_sandbox_id\":\"$1\",\"verbose\":true}" | jq -r '.info.info | fromjson | .pid'
}

# === the app container is refused; the sandbox keeps running =====================================
PODCFG=$(cri_pod_config gv "$(cri_uid)" default)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[runsc] RunPodSandbox under a runsc project" || diag "$(cat "$CRI_DIR/err")"
[ -n "$POD" ] || bail_out "no pod"
SPID=$(sandbox_pid "$POD")
expect_match "$(tr '\0' ' ' <"/proc/$SPID/cmdline" 2>&1)" '^runsc-sandbox ' \
	"[runsc] the pod's sandbox is a gVisor sandbox"
out=
APP=$(cri_create "$POD" "$PODCFG" "$(cri_container_config app 'exec sleep 100000')" 2>&1) &&
	out=$(cri_start_container "$APP" 2>&1) && rc=0 || rc=$?
[ "$rc" = 0 ] || out="$APP $out"
expect_ne "$rc" 0 "[runsc] the app container is refused"
expect_match "$out" "hezo-shim: runsc cannot run a pod's app container" "[runsc] ... saying why"
expect_eq "$(grep -o 'hezo-shim: ' <<<"$out" | wc -l)" 1 "[runsc] ... in one line"
sleep 2
check "[runsc] the sandbox still runs after the refusal" kill -0 "$SPID"
check "[runsc] ... and containerd still has the pod ready" sandbox_ready "$POD"
check "[runsc] StopPodSandbox" cri StopPodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
check "[runsc] RemovePodSandbox" cri RemovePodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
sleep 1
expect_eq "$(leftovers "$POD")" "" "[runsc] nothing of the pod is left (processes, runsc state, records, mounts)"

# === a sandbox that died under containerd =========================================================
PODCFG=$(cri_pod_config gv-dead "$(cri_uid)" default)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") || diag "$(cat "$CRI_DIR/err")"
SPID=$(sandbox_pid "$POD")
kill -KILL "$SPID"
for _ in $(seq 50); do
	kill -0 "$SPID" 2>/dev/null || break
	sleep 0.1
done
check "[dead] StopPodSandbox of a pod whose sandbox was killed" \
	cri StopPodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
check "[dead] RemovePodSandbox" cri RemovePodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
sleep 1
expect_eq "$(leftovers "$POD")" "" "[dead] nothing of the pod is left"

expect_eq "$(cri ListPodSandbox | jq '.items | length')" 0 "no pod left in containerd"
expect_eq "$(find "$HEZO_TEST_STATE" -name '*.json' 2>/dev/null)" "" "no shim record left"
reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done
tap_done

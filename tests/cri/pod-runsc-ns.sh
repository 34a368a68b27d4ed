#!/bin/bash
# A gVisor pod's PID namespaces and terminals, through containerd 1.6's CRI plugin (runsc
# project, docs/runsc.md "Pods"). PID namespace CONTAINER (kubelet's default): each app container
# sees its own processes only. POD (shareProcessNamespace): the app containers and the pause
# container share the sandbox's PID namespace of the Sentry and see each other's processes. A
# terminal: an app container with tty is refused at create in one line (runsc hands its console
# over at start, containerd's shim waits for it at create); exec -t into a running one works.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=runsc
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}/cri-pod-runsc-ns.$$
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/cri/cri-lib.sh
. "$here/cri-lib.sh"

hezo_require_tools script
cri_setup
hezo_write_policy docker "$(cri_policy_filter)"
diag "runsc $("$(hezo_backend_bin)" --version 2>&1 | head -n 1)"

# ns_config MODE: a filter setting the PID namespace option of a Pod or ContainerConfig on stdin.
ns_config() { jq -c --arg m "$1" '.linux.security_context.namespace_options.pid = $m'; }
# procs ID: PID=COMMAND LINE of each process app container ID sees, on one line ("|" apart).
procs()
{
	cri_exec "$1" 'for p in /proc/[0-9]*; do echo "${p#/proc/}=$(tr "\0" " " <$p/cmdline)"; done' |
		tr '\n' '|'
}

# two_apps MODE: a pod with PID namespace option MODE (POD) and app containers c1 and c2
# (sleep 100001, sleep 100002; ID[1], ID[2]) in it, started.
declare -A ID=()
two_apps()
{
	local c
	PODCFG=$(cri_pod_config "pid-${1,,}" "$(cri_uid)" default | ns_config "$1")
	POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
	expect_eq "$rc" 0 "[pid $1] RunPodSandbox" || diag "$(cat "$CRI_DIR/err")"
	[ -n "$POD" ] || bail_out "no pod"
	for c in 1 2; do
		ID[$c]=$(cri_create "$POD" "$PODCFG" \
			"$(cri_container_config "c$c" "exec sleep 10000$c" | ns_config "$1")" \
			2>"$CRI_DIR/err") && cri_start_container "${ID[$c]}" 2>>"$CRI_DIR/err" &&
			rc=0 || rc=$?
		expect_eq "$rc" 0 "[pid $1] app container c$c created and started" ||
			diag "$(cat "$CRI_DIR/err")"
	done
}

# ---- PID namespace CONTAINER (kubelet's default): each app container its own ----
two_apps CONTAINER
out=$(procs "${ID[1]}")
expect_match "$out" "=[^|]*sleep 100001" "[pid CONTAINER] c1 sees its own process" || diag "$out"
check "[pid CONTAINER] ... and not c2's" test "$(grep -c "sleep 100002" <<<"$out")" = 0
out=$(procs "${ID[2]}")
expect_match "$out" "=[^|]*sleep 100002" "[pid CONTAINER] c2 sees its own process" || diag "$out"
check "[pid CONTAINER] ... and not c1's" test "$(grep -c "sleep 100001" <<<"$out")" = 0
check "[pid CONTAINER] StopPodSandbox and RemovePodSandbox" cri_remove_pod "$POD"

# ---- PID namespace POD (shareProcessNamespace): the sandbox's, in the Sentry ----
# containerd names the sandbox's /proc/PID/ns/pid, the runsc-sandbox process's (in the host's PID
# namespace): runsc alone gets it, and reads it as the name of the sandbox's PID namespace.
two_apps POD
out=$(procs "${ID[1]}")
expect_match "$out" "=[^|]*sleep 100002" "[pid POD] c1 sees c2's process" || diag "$out"
expect_match "$out" "=[^|]*sleep 2147483647" "[pid POD] ... and the pause container's" || diag "$out"
out=$(procs "${ID[2]}")
expect_match "$out" "=[^|]*sleep 100001" "[pid POD] c2 sees c1's process" || diag "$out"
expect_eq "$(pgrep -f -- "^runsc-sandbox .*$CRI_DIR" | wc -l)" 1 "[pid POD] ... all in the pod's one runsc-sandbox"
check "[pid POD] StopPodSandbox and RemovePodSandbox" cri_remove_pod "$POD"

# ---- terminals ----
PODCFG=$(cri_pod_config tty "$(cri_uid)" default)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[tty] RunPodSandbox" || diag "$(cat "$CRI_DIR/err")"
# (The CRI plugin calls the runtime's create at StartContainer; a hang would end at 60 s.)
T=$(cri_create "$POD" "$PODCFG" "$(cri_container_config t 'exec sleep 100000' \
	'{"tty": true, "stdin": true}')" 2>"$CRI_DIR/err") &&
	timeout 60 "$CRI_PY" "$CRI_LIB_DIR/cri.py" --socket "$CRI_DIR/containerd.sock" \
		--gen "$CRI_DIR/gen" --timeout 50 StartContainer <<<"{\"container_id\":\"$T\"}" \
		>/dev/null 2>>"$CRI_DIR/err" && rc=0 || rc=$?
expect_eq "$rc $(grep -c DEADLINE_EXCEEDED "$CRI_DIR/err")" "1 0" \
	"[tty] an app container with tty: true is refused, not left hanging past the call's deadline"
expect_match "$(cat "$CRI_DIR/err")" "terminal.*runsc pod.*at start.*at create" \
	"[tty] ... in one line saying why" || diag "$(cat "$CRI_DIR/err")"
[ -n "$T" ] && cri RemoveContainer "{\"container_id\":\"$T\"}" >/dev/null
APP=$(cri_create "$POD" "$PODCFG" "$(cri_container_config a 'exec sleep 100000')" 2>"$CRI_DIR/err") &&
	cri_start_container "$APP" 2>>"$CRI_DIR/err" && rc=0 || rc=$?
expect_eq "$rc" 0 "[tty] an app container without a terminal starts" || diag "$(cat "$CRI_DIR/err")"
# exec -t through containerd's task API (what the CRI's streaming Exec with tty does), in a pty.
out=$(timeout 60 script -qec "ctr --address '$CRI_DIR/containerd.sock' -n $CRI_NS tasks exec -t \
	--exec-id tty1 '$APP' /bin/sh -c 'test -t 0 && test -t 1 && echo tty-ok'" /dev/null 2>&1 </dev/null |
	tr -d '\r')
expect_match "$out" "tty-ok" "[tty] exec -t into a running app container gets a terminal" ||
	diag "$out"
check "[tty] StopPodSandbox and RemovePodSandbox" cri_remove_pod "$POD"
expect_eq "$(pgrep -f -- "runsc.*$CRI_DIR" | wc -l)" 0 "[tty] no runsc process left"

hezo_expect_no_sanitizer_reports
tap_done

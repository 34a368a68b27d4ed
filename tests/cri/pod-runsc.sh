#!/bin/bash
# Kubernetes pods under a runsc project through containerd 1.6's CRI plugin and its runc v2 shim
# (BinaryName hezo-shim; Debian's runsc has no containerd-shim-runsc-v1): a pod is one gVisor
# sandbox and its app containers run inside it, each followed on the host by its hezo-pod-wait.
# Three app containers: one runsc-sandbox for the pod, each reaching the others on 127.0.0.1,
# CapEff 0 and a read-only root, exec and logs of each; an exit code, a stop of one, kubelet's
# restart of one 5 times, the pod's memory cap; containers of another pod or bundle refused the
# sandbox (annotation, ID, path); then a pod whose sandbox died under containerd. After each: no
# runsc process, runsc state, shim record, mount or waiter of the pod left.
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

# (proto3 JSON leaves out an enum at its default: SANDBOX_READY is 0.)
sandbox_ready()
{
	[ "$(cri PodSandboxStatus "{\"pod_sandbox_id\":\"$1\"}" |
		jq -r --arg id "$1" 'select(.status.id == $id) | .status.state // "SANDBOX_READY"')" = SANDBOX_READY ]
}

# The app containers' waiters and the pod's runsc-sandbox processes of this run.
waiters() { pgrep -f -- "hezo-pod-wait .*$CRI_DIR" | wc -l; }
sandboxes() { pgrep -f -- "^runsc-sandbox .*$CRI_DIR" | wc -l; }
cstatus() { cri ContainerStatus "{\"container_id\":\"$1\"}" | jq -c '.status | {state: (.state // "CONTAINER_CREATED"), exit_code: (.exit_code // 0), reason}'; }
# wait_exited ID: until ContainerStatus says EXITED (up to 60 s); prints the status.
wait_exited()
{
	local st i
	for ((i = 0; i < 240; i++)); do
		st=$(cstatus "$1")
		[ "$(jq -r .state <<<"$st")" = CONTAINER_EXITED ] && break
		sleep 0.25
	done
	echo "$st"
}
app()
{
	# app NAME PORT: an httpd of its own on 127.0.0.1:PORT, saying hello to its log first.
	cri_container_config "$1" "echo hello-$1; mkdir -p /tmp/www && echo from-$1 >/tmp/www/index.html &&
		exec httpd -f -p 127.0.0.1:$2 -h /tmp/www" "${3:-{\}}"
}

# === a pod of three app containers in one sandbox ================================================
PODUID=$(cri_uid)
PODCFG=$(cri_pod_config gv "$PODUID" default)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[pod] RunPodSandbox under a runsc project" || diag "$(cat "$CRI_DIR/err")"
[ -n "$POD" ] || bail_out "no pod"
SPID=$(cri_sandbox_pid "$POD")
expect_match "$(tr '\0' ' ' <"/proc/$SPID/cmdline" 2>&1)" '^runsc-sandbox ' \
	"[pod] the pod's sandbox is a gVisor sandbox"
declare -A ID PORT=([a]=8081 [b]=8082 [c]=8083)
for c in a b c; do
	ID[$c]=$(cri_create "$POD" "$PODCFG" "$(app $c "${PORT[$c]}")" 2>"$CRI_DIR/err") &&
		cri_start_container "${ID[$c]}" 2>>"$CRI_DIR/err" && rc=0 || rc=$?
	expect_eq "$rc" 0 "[pod] app container $c created and started" || diag "$(cat "$CRI_DIR/err")"
	expect_eq "$(cstatus "${ID[$c]}" | jq -r .state)" CONTAINER_RUNNING "[pod] ... and running"
done
expect_eq "$(sandboxes)" 1 "[pod] one runsc-sandbox process on the host for the pod of three"
expect_eq "$(waiters)" 3 "[pod] one hezo-pod-wait per app container"
SHIMPID=$(ps -o ppid= -p "$SPID" | tr -d ' ')
for w in $(pgrep -f -- "hezo-pod-wait .*$CRI_DIR"); do
	expect_eq "$(ps -o ppid= -p "$w" | tr -d ' ')" "$SHIMPID" "[pod] waiter $w is a child of the pod's containerd shim (its reaper)"
done
for c in a b c; do
	for peer in a b c; do
		[ "$peer" = "$c" ] && continue
		out=$(cri_exec "${ID[$c]}" "timeout 10 wget -q -O - http://127.0.0.1:${PORT[$peer]}/") && rc=0 || rc=$?
		expect_eq "$out" "from-$peer" "[pod] $c reaches $peer on 127.0.0.1:${PORT[$peer]}" || diag "rc=$rc"
	done
	out=$(cri_exec "${ID[$c]}" 'grep ^CapEff /proc/self/status; if touch /rootfile 2>/dev/null; then echo rw; else echo ro; fi; cat /proc/1/cmdline | tr "\0\n" "  "')
	expect_eq "$(sed -n 1p <<<"$out" | tr -d '\t ')" "CapEff:0000000000000000" "[exec $c] CapEff 0"
	expect_eq "$(sed -n 2p <<<"$out")" ro "[exec $c] the root is read-only"
	expect_match "$(sed -n 3p <<<"$out")" "127.0.0.1:${PORT[$c]} " "[exec $c] exec runs in $c's own container (its pid 1 is its own)"
	expect_match "$(cat "$CRI_DIR/logs/default_gv_$PODUID/$c/0.log" 2>&1)" "stdout F hello-$c\$" "[logs $c] the container's own output is in its log"
done
out=$(hezo_shim --root "$CRI_DIR/hezo-runc/k8s.io" ps --json 2>&1)
for c in a b c; do
	expect_eq "$(jq --arg id "${ID[$c]}" '[.. | objects | select(.id? == $id)] | length' <<<"$out" 2>/dev/null)" 1 \
		"[ps] hezo-shim ps shows app container $c" || diag "$(head -c 600 <<<"$out")"
done

# === exit codes, a stop, kubelet's restarts =======================================================
EX=$(cri_create "$POD" "$PODCFG" "$(cri_container_config ex 'sleep 1; exit 3')") && cri_start_container "$EX"
st=$(wait_exited "$EX")
expect_eq "$(jq -r '"\(.state) \(.exit_code)"' <<<"$st")" "CONTAINER_EXITED 3" "[exit] a container that exits 3 is EXITED with code 3 ($st)"
check "[exit] ... and is removed" cri RemoveContainer "{\"container_id\":\"$EX\"}"
check "[stop] StopContainer b" cri StopContainer "{\"container_id\":\"${ID[b]}\",\"timeout\":5}"
expect_eq "$(cstatus "${ID[b]}" | jq -r .state)" CONTAINER_EXITED "[stop] b exited"
for c in a c; do
	expect_eq "$(cstatus "${ID[$c]}" | jq -r .state)" CONTAINER_RUNNING "[stop] $c still runs"
done
out=$(cri_exec "${ID[c]}" "timeout 10 wget -q -O - http://127.0.0.1:${PORT[a]}/")
expect_eq "$out" from-a "[stop] c still reaches a"
expect_eq "$(waiters)" 2 "[stop] b's waiter has ended with it"
ok=0
prev=
for ((i = 0; i < 5; i++)); do
	# kubelet: the old one exited; a new one of the same name, attempt i, in the same pod.
	id=$(cri_create "$POD" "$PODCFG" "$(cri_container_config r "echo attempt-$i; exit 1" "{\"metadata\": {\"attempt\": $i}, \"log_path\": \"r/$i.log\"}")") &&
		cri_start_container "$id" && st=$(wait_exited "$id") &&
		[ "$(jq -r .exit_code <<<"$st")" = 1 ] && ok=$((ok + 1))
	[ -n "$prev" ] && cri RemoveContainer "{\"container_id\":\"$prev\"}" >/dev/null
	prev=$id
done
expect_eq "$ok" 5 "[restart] 5 restarts of container r in the pod, each ran and exited 1"
expect_match "$(cat "$CRI_DIR/logs/default_gv_$PODUID/r/4.log" 2>&1)" 'stdout F attempt-4$' "[restart] ... the fifth wrote its own log"

# === another pod's container, another bundle: not in this sandbox ===================================
OUID=$(cri_uid)
OCFG=$(cri_pod_config other "$OUID" default)
OPOD=$(cri_run_pod hezo "$OCFG" 2>"$CRI_DIR/err") || diag "$(cat "$CRI_DIR/err")"
TASKS=$CRI_DIR/state/io.containerd.runtime.v2.task/k8s.io
# thief DIR ANN_FILTER: a bundle at DIR made from app container a's as containerd wrote it (its
# input, kept beside it), with a jq filter on its annotations; hezo-shim create of it, output.
ORIG=.original
thief()
{
	local d=$1 id
	id=$(basename "$d")
	rm -rf "$d" && mkdir -p "$d/rootfs" && hezo_busybox_rootfs "$d/rootfs" >/dev/null 2>&1
	jq "$ORIG | .annotations |= ($2) | .root.path = \"rootfs\"" "$TASKS/${ID[a]}/.hezo-config.json" >"$d/config.json"
	hezo_shim --root "$CRI_DIR/hezo-runc/k8s.io" create --bundle "$d" --pid-file "$d/pid" "$id" 2>&1
	hezo_shim --root "$CRI_DIR/hezo-runc/k8s.io" delete --force "$id" >/dev/null 2>&1
	rm -rf "$d"
}
T1=$(printf 'aa%062x' 1)
out=$(thief "$TASKS/$T1" ". + {\"io.kubernetes.cri.sandbox-name\": \"other\", \"io.kubernetes.pod.name\": \"other\"}")
expect_match "$out" "may not join runsc sandbox $POD: its pod annotations are another pod's" \
	"[join] by annotation: another pod's container naming this pod's sandbox is refused" || diag "$out"
out=$(thief "$TASKS/$(printf 'ab%062x' 2)" ". + {\"io.kubernetes.cri.sandbox-id\": \"$OPOD\", \"io.kubernetes.cri.sandbox-uid\": \"$OUID\", \"io.kubernetes.cri.sandbox-name\": \"other\", \"io.kubernetes.cri-o.SandboxID\": \"$POD\"}")
expect_match "$out" "io.kubernetes.cri.sandbox-id .* and io.kubernetes.cri-o.SandboxID .* disagree" \
	"[join] by ID: its own pod's ID in one key and this pod's in the other is refused" || diag "$out"
out=$(thief "$HEZO_TEST_DIR/$(printf 'ac%062x' 3)" ".")
expect_match "$out" "may not join runsc sandbox $POD: this container's bundle is not the engine's task beside the sandbox's" \
	"[join] by path: this pod's own annotations from a bundle that is not containerd's task beside the sandbox are refused" || diag "$out"
expect_eq "$(waiters)" 2 "[join] no waiter was started for any of them"
check "[join] the other pod goes" cri_remove_pod "$OPOD"

# === teardown ======================================================================================
check "[pod] StopPodSandbox" cri StopPodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
expect_eq "$(waiters)" 0 "[pod] every waiter has ended"
check "[pod] RemovePodSandbox" cri RemovePodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
sleep 1
expect_eq "$(cri_leftovers "$POD")" "" "[pod] nothing of the pod is left (processes, runsc state, records, mounts)"
for c in a b c; do
	expect_eq "$(cri_leftovers "${ID[$c]}")" "" "[pod] nothing of app container $c is left"
done

# === the pod's memory cap ===========================================================================
# The box's memory cap is the sandbox's, so the pod's: 256 MiB here, and a container that takes
# 400 MiB. The host's OOM killer ends the Sentry, and with it the pod.
hezo_write_policy docker "$(cri_policy_filter) | .resources.memory = \"256m\""
MUID=$(cri_uid)
MCFG=$(cri_pod_config mem "$MUID" default)
MPOD=$(cri_run_pod hezo "$MCFG" 2>"$CRI_DIR/err") || diag "$(cat "$CRI_DIR/err")"
IDLE=$(cri_create "$MPOD" "$MCFG" "$(cri_container_config idle 'exec sleep 100000')") && cri_start_container "$IDLE"
# One 400 MiB read buffer that /dev/zero fills at once: a shell growing a string took over a
# minute to reach the cap on a loaded machine (2.5 MB/s under runsc).
HOG=$(cri_create "$MPOD" "$MCFG" "$(cri_container_config hog 'sleep 2; dd if=/dev/zero of=/dev/null bs=400M count=1; echo survived')") &&
	cri_start_container "$HOG"
st=$(wait_exited "$HOG")
expect_eq "$(jq -r .reason <<<"$st")" OOMKilled "[oom] a container past the pod's memory cap is OOMKilled ($st)"
st=$(wait_exited "$IDLE")
expect_eq "$(jq -r '"\(.state) \(.reason)"' <<<"$st")" "CONTAINER_EXITED OOMKilled" "[oom] ... and so is the other container of the pod: one sandbox ($st)"
check "[oom] the pod goes" cri_remove_pod "$MPOD"
sleep 1
expect_eq "$(cri_leftovers "$MPOD")" "" "[oom] nothing of the pod is left"
expect_eq "$(waiters)" 0 "[oom] no waiter is left"
hezo_write_policy docker "$(cri_policy_filter)"

# === a sandbox that died under containerd =========================================================
PODCFG=$(cri_pod_config gv-dead "$(cri_uid)" default)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") || diag "$(cat "$CRI_DIR/err")"
SPID=$(cri_sandbox_pid "$POD")
kill -KILL "$SPID"
for _ in $(seq 50); do
	kill -0 "$SPID" 2>/dev/null || break
	sleep 0.1
done
check "[dead] StopPodSandbox of a pod whose sandbox was killed" \
	cri StopPodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
check "[dead] RemovePodSandbox" cri RemovePodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
sleep 1
expect_eq "$(cri_leftovers "$POD")" "" "[dead] nothing of the pod is left"

expect_eq "$(cri ListPodSandbox | jq '.items | length')" 0 "no pod left in containerd"
# (STATE/ended keeps why a container ended, e.g. the OOM pod's, by design: not a record.)
expect_eq "$(find "$HEZO_TEST_STATE" -name '*.json' -not -path "$HEZO_TEST_STATE/ended/*" 2>/dev/null)" "" "no shim record left"
reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done
tap_done

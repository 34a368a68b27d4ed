#!/bin/bash
# Secrets in a gVisor pod (runsc project, egress proxy) through containerd 1.6's CRI plugin. The
# pod is one Sentry and one network stack: every connection of the pod reaches the host from the
# sandbox's own host sockets, so proxyd cannot tell its containers apart (docs/runsc.md, "Pods").
# Its secrets are the pod's: every app container must hold the sandbox's set, and takes the
# sandbox's placeholders. Toward a TLS echo upstream in a test namespace, a's and b's placeholder
# becomes the value and comes back masked; a container declaring another set is refused at create
# in one line; a process in the pod's namespace outside the sandbox gets no value; one container's
# removal leaves the other's secret working; the pod's removal leaves nothing.
# The test world: an "internet" namespace with api.test (python3 https-upstream.py, a test CA
# that proxyd trusts by --test-upstream-ca), dnsmasq on a host loopback port as the upstream
# resolver. Only loopback and namespaces made here are contacted.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=runsc
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}/cri-pod-secrets-runsc.$$
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/image.sh
. "$here/../lib/image.sh"
# shellcheck source=tests/lib/tls.sh
. "$here/../lib/tls.sh"
# shellcheck source=tests/cri/cri-lib.sh
. "$here/cri-lib.sh"
# shellcheck source=tests/cri/egress-lib.sh
. "$here/egress-lib.sh"
# shellcheck source=tests/cri/secrets-lib.sh
. "$here/secrets-lib.sh"

cri_secrets_world
cri_setup egress
diag "runsc $("$(hezo_backend_bin)" --version 2>&1 | head -n 1)"
cri_secrets_up

# ---- a gVisor pod: the sandbox, a and b (the pod's set, TOKA and TOKB, as the policy gives) ----
PODCFG=$(cri_pod_config gsec "$(cri_uid)" default | cri_egress_dns)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[secrets] RunPodSandbox under runsc and egress proxy" || diag "$(cat "$CRI_DIR/err")"
[ -n "$POD" ] || bail_out "no pod"
SPID=$(cri PodSandboxStatus "{\"pod_sandbox_id\":\"$POD\",\"verbose\":true}" |
	jq -r '.info.info | fromjson | .pid')
expect_match "$(tr '\0' ' ' <"/proc/$SPID/cmdline" 2>&1)" '^runsc-sandbox ' \
	"[secrets] the pod's sandbox is a gVisor sandbox"
declare -A ID PH
for c in a b; do
	id=$(cri_create "$POD" "$PODCFG" "$(cri_container_config "$c" 'exec sleep 100000')" \
		2>"$CRI_DIR/err") && cri_start_container "$id" 2>>"$CRI_DIR/err" && rc=0 || rc=$?
	expect_eq "$rc" 0 "[secrets] CreateContainer and StartContainer $c, declaring the pod's set" ||
		diag "$(cat "$CRI_DIR/err")"
	ID[$c]=$id
	PH[$c]=$(cri_exec "$id" 'echo $TOKA')
	expect_match "${PH[$c]}" '^hzph[a-z0-9]{40}$' "[secrets] $c's environment holds a placeholder for TOKA"
done
expect_eq "${PH[b]}" "${PH[a]}" "[secrets] a and b hold the pod's one placeholder for TOKA"
expect_eq "$(cri_exec "${ID[a]}" 'echo $TOKB')" "$(cri_exec "${ID[b]}" 'echo $TOKB')" \
	"[secrets] ... and for TOKB"
expect_eq "$(cri_proxyd_list | jq -c '[.containers[] | .members | length]')" "[3]" \
	"[secrets] one registration for the pod, three members"
# On this cgroup v1 host runsc leaves the Sentry in its caller's cgroup v2 (the root here), which
# proxyd would take for the pod's: the shim gives it one of its own, as runc does.
CG2=$(sed -n 's/^0:://p' "/proc/$SPID/cgroup")
expect_match "$CG2" "/$POD\$" "[secrets] the sandbox's cgroup v2 is its own, not its caller's" ||
	diag "$CG2"

# up C HEADER_VALUE: C's GET of https://api.test/C carrying X-Token (cri_secrets_get).
up() { cri_secrets_get "${ID[$1]}" "$1" "$2"; }

for c in a b; do
	out=$(up "$c" "${PH[$c]}")
	expect_match "$out" "x=${PH[$c]} .* status=200" \
		"[secrets] $c's placeholder: 200, the echo masked back to the placeholder" || diag "$out"
	expect_match "$(grep " /$c " "$UPLOG" | tail -n 1)" "x=$VALUE_A " \
		"[secrets] ... the upstream received TOKA's value" || diag "$(tail -n 3 "$UPLOG")"
	check "[secrets] ... no value in a byte $c received" \
		test "$(grep -c -e "$VALUE_A" -e "$VALUE_B" <<<"$out")" = 0
done

# ---- a container declaring another set: refused at the runtime's create, in one line ----
# (The CRI plugin makes the task, and so calls the runtime's create, at StartContainer.)
C=$(cri_create "$POD" "$PODCFG" "$(cri_container_config c 'exec sleep 100000' \
	'{"annotations": {"org.hezo.secrets": "TOKA"}}')" 2>"$CRI_DIR/err") &&
	cri_start_container "$C" 2>>"$CRI_DIR/err" && rc=0 || rc=$?
expect_eq "$rc" 1 "[secrets] container c declaring TOKA alone (the pod holds TOKA, TOKB) is refused"
expect_match "$(cat "$CRI_DIR/err")" "secrets TOKA are not its pod's \(TOKA, TOKB, .*one sandbox.*one network identity" \
	"[secrets] ... saying why" || diag "$(cat "$CRI_DIR/err")"
[ -n "$C" ] && cri RemoveContainer "{\"container_id\":\"$C\"}" >/dev/null
expect_eq "$(cri_proxyd_list | jq -c '[.containers[] | .members | length]')" "[3]" \
	"[secrets] ... and never joined the registration"

# ---- a process in the pod's namespace but outside the sandbox (the host's, by nsenter) ----
NETNS=$(cri_pod_netns "$POD")
out=$(cri_secrets_host_get "$NETNS" host "${PH[a]}")
expect_match "$(grep " /host " "$UPLOG" | tail -n 1)" "x=${PH[a]} " \
	"[secrets] a socket in the pod's namespace outside the sandbox's cgroup: the placeholder goes up as it is" ||
	diag "$out"
check "[secrets] ... no value of the pod's went up from outside it" \
	test "$(grep " /host " "$UPLOG" | grep -c -e "$VALUE_A" -e "$VALUE_B")" = 0

# ---- a leaves: b's secret still works ----
cri StopContainer "{\"container_id\":\"${ID[a]}\",\"timeout\":1}" >/dev/null &&
	cri RemoveContainer "{\"container_id\":\"${ID[a]}\"}" >/dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[secrets] StopContainer and RemoveContainer a"
sleep 0.3
expect_eq "$(cri_proxyd_list | jq -c '[.containers[].members[]]')" "[\"$POD\",\"${ID[b]}\"]" \
	"[secrets] the registration keeps the sandbox and b"
out=$(up b "${PH[b]}")
expect_match "$out" "x=${PH[b]} .* status=200" "[secrets] b's secret still works" || diag "$out"
expect_match "$(grep " /b " "$UPLOG" | tail -n 1)" "x=$VALUE_A " "[secrets] ... its value went up"

check "[secrets] StopPodSandbox and RemovePodSandbox" cri_remove_pod "$POD"
sleep 0.5
expect_eq "$(cri_proxyd_list | jq -c '.containers')" "[]" "[secrets] the pod's removal took its registration down"
expect_eq "$(ls "$CRI_EGRESS/proxyd/containers")" "" "[secrets] no proxyd state file left"
expect_eq "$(pgrep -f -- "runsc.*$POD" | wc -l)" 0 "[secrets] no runsc process of the pod left"
expect_eq "$(find /sys/fs/cgroup/unified -name "*$POD*" 2>/dev/null)" "" "[secrets] ... and no cgroup v2 of the sandbox"

hezo_expect_no_sanitizer_reports
tap_done

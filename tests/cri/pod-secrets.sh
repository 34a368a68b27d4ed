#!/bin/bash
# Secrets in a Kubernetes pod (runc handler, egress proxy) through containerd 1.6's CRI plugin:
# two app containers share the pod's network namespace and its one proxyd registration, each with
# a secret of its own (org.hezo.secrets). Toward a TLS echo upstream in a test namespace, each
# container's placeholder becomes its own value and comes back masked; a placeholder of the other
# container's secret is refused (403) and nothing of that request leaves; neither value appears
# in a byte the containers receive. Removing one container takes its secret out of the
# registration (the other's still works); the pod's removal leaves nothing.
# The test world: an "internet" namespace with api.test (python3 https-upstream.py, a test CA
# that proxyd trusts by --test-upstream-ca), dnsmasq on a host loopback port as the upstream
# resolver. Only loopback and namespaces made here are contacted.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=runc
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}/cri-pod-secrets.$$
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
cri_secrets_up

# ---- a pod: sandbox, a (TOKA only) and b (TOKB only) ----
PODCFG=$(cri_pod_config web "$(cri_uid)" default | cri_egress_dns)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[secrets] RunPodSandbox under egress proxy" || diag "$(cat "$CRI_DIR/err")"
[ -n "$POD" ] || bail_out "no pod"
declare -A ID PH
for c in a b; do
	s=TOK${c^^}
	id=$(cri_create "$POD" "$PODCFG" "$(cri_container_config "$c" 'exec sleep 100000' \
		"{\"annotations\": {\"org.hezo.secrets\": \"$s\"}}")" 2>"$CRI_DIR/err") &&
		cri_start_container "$id" 2>>"$CRI_DIR/err" && rc=0 || rc=$?
	expect_eq "$rc" 0 "[secrets] CreateContainer and StartContainer $c with secret $s only" ||
		diag "$(cat "$CRI_DIR/err")"
	ID[$c]=$id
	PH[$c]=$(cri_exec "$id" "echo \$$s")
	expect_match "${PH[$c]}" '^hzph[a-z0-9]{40}$' "[secrets] $c's environment holds its placeholder"
done
expect_eq "$(cri_exec "${ID[a]}" 'echo ${TOKB:-none}')" none "[secrets] a has no TOKB"
expect_eq "$(cri_proxyd_list | jq -c '[.containers[] | .members | length]')" "[3]" \
	"[secrets] one registration for the pod, three members"

# up C HEADER_VALUE: C's GET of https://api.test/C carrying X-Token (cri_secrets_get).
up() { cri_secrets_get "${ID[$1]}" "$1" "$2"; }

for c in a b; do
	other=$([ "$c" = a ] && echo b || echo a)
	val=VALUE_${c^^}
	oval=VALUE_${other^^}
	out=$(up "$c" "${PH[$c]}")
	expect_match "$out" "x=${PH[$c]} .* status=200" \
		"[secrets] $c's own placeholder: 200, the echo masked back to its placeholder" ||
		diag "$out"
	expect_match "$(grep " /$c " "$UPLOG" | tail -n 1)" "x=${!val} " \
		"[secrets] ... the upstream received $c's value" || diag "$(tail -n 3 "$UPLOG")"
	check "[secrets] ... neither value in a byte $c received" \
		test "$(grep -c -e "${!val}" -e "${!oval}" <<<"$out")" = 0
	n0=$(wc -l <"$UPLOG")
	out=$(up "$c" "${PH[$other]}")
	expect_match "$out" "another container's secret.*status=403" \
		"[secrets] $c sending $other's placeholder: 403 naming the reason" || diag "$out"
	expect_eq "$(wc -l <"$UPLOG")" "$n0" "[secrets] ... and that request never reached the upstream"
	check "[secrets] ... $other's value is nowhere upstream in $c's requests" \
		test "$(grep " /$c " "$UPLOG" | grep -c -e "${!oval}")" = 0
done
# ---- a process in the pod's namespace but in no member's cgroup (the host's, by nsenter) ----
# It sends the sandbox's own placeholder (read from the pause process's environment): the
# namespace is the pod's, the socket is not the sandbox's, so no value goes.
PAUSE_PID=$(cri PodSandboxStatus "{\"pod_sandbox_id\":\"$POD\",\"verbose\":true}" |
	jq -r '.info.info | fromjson | .pid')
PH_POD=$(tr '\0' '\n' <"/proc/$PAUSE_PID/environ" | sed -n 's/^TOKB=//p')
expect_match "$PH_POD" '^hzph[a-z0-9]{40}$' "[secrets] the sandbox has a placeholder of its own for TOKB"
NETNS=$(cri_pod_netns "$POD")
# host_up HEADER_VALUE: a GET of https://api.test/host from the pod's namespace, outside the pod.
host_up() { cri_secrets_host_get "$NETNS" host "$1"; }
out=$(host_up "$PH_POD")
expect_match "$(grep " /host " "$UPLOG" | tail -n 1)" "x=$PH_POD " \
	"[secrets] a socket of no member's cgroup in the pod's namespace: the sandbox's placeholder goes up as it is" ||
	diag "$out"

LOG=$CRI_EGRESS/netlog/$POD.jsonl
sleep 0.3
expect_match "$(cat "$LOG")" '"verdict":"deny".*another container' \
	"[secrets] the pod's netlog records the refusal"
check "[secrets] no value in the netlog" test "$(grep -c -e "$VALUE_A" -e "$VALUE_B" "$LOG")" = 0

# ---- a leaves: its secret goes with it, b's stays ----
STATE=$CRI_EGRESS/proxyd/containers/$POD.json
check "[secrets] proxyd's state keeps a's placeholder while a runs" grep -q "${PH[a]}" "$STATE"
cri StopContainer "{\"container_id\":\"${ID[a]}\",\"timeout\":1}" >/dev/null &&
	cri RemoveContainer "{\"container_id\":\"${ID[a]}\"}" >/dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[secrets] StopContainer and RemoveContainer a"
sleep 0.3
expect_eq "$(cri_proxyd_list | jq -c '[.containers[].members[]]')" "[\"$POD\",\"${ID[b]}\"]" \
	"[secrets] the registration keeps the sandbox and b"
check "[secrets] ... and a's placeholder is gone from proxyd's state" \
	test "$(grep -c "${PH[a]}" "$STATE")" = 0
out=$(up b "${PH[b]}")
expect_match "$out" "x=${PH[b]} .* status=200" "[secrets] b's secret still works" || diag "$out"
expect_match "$(grep " /b " "$UPLOG" | tail -n 1)" "x=$VALUE_B " "[secrets] ... its value went up"

# ---- proxyd restarts: the members, their cgroups and secrets come back from its state ----
# (Not under check, whose subshell would keep the new proxyd's pid from the exit trap.)
cri_egress_proxyd_restart && rc=0 || rc=$?
expect_eq "$rc" 0 "[secrets] hezo-proxyd restarts on its state"
expect_eq "$(cri_proxyd_list | jq -c '[.containers[].members[]]')" "[\"$POD\",\"${ID[b]}\"]" \
	"[secrets] ... with the sandbox and b as members"
out=$(up b "${PH[b]}")
expect_match "$out" "x=${PH[b]} .* status=200" "[secrets] ... b's secret works after the restart" ||
	diag "$out"
expect_match "$(grep " /b " "$UPLOG" | tail -n 1)" "x=$VALUE_B " "[secrets] ... its value went up"
out=$(up b "${PH[a]}")
expect_match "$(grep " /b " "$UPLOG" | tail -n 1)" "x=${PH[a]} " \
	"[secrets] ... a's placeholder, now no member's, goes up as it is" || diag "$out"
check "[secrets] ... a's value never went up in b's requests" \
	test "$(grep " /b " "$UPLOG" | grep -c -e "$VALUE_A")" = 0

# ---- b leaves too: the sandbox alone, whose cgroup is still checked ----
cri StopContainer "{\"container_id\":\"${ID[b]}\",\"timeout\":1}" >/dev/null &&
	cri RemoveContainer "{\"container_id\":\"${ID[b]}\"}" >/dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[secrets] StopContainer and RemoveContainer b"
sleep 0.3
expect_eq "$(cri_proxyd_list | jq -c '[.containers[].members[]]')" "[\"$POD\"]" \
	"[secrets] the sandbox is the registration's only member"
n0=$(grep -c " /host " "$UPLOG")
out=$(host_up "$PH_POD")
expect_match "$(grep " /host " "$UPLOG" | tail -n 1)" "x=$PH_POD " \
	"[secrets] a socket outside the sole member's cgroup: its placeholder goes up as it is" ||
	diag "$out"
expect_eq "$(grep -c " /host " "$UPLOG")" "$((n0 + 1))" "[secrets] ... (that request reached the upstream)"
check "[secrets] ... no value of the pod's went up from outside it" \
	test "$(grep " /host " "$UPLOG" | grep -c -e "$VALUE_A" -e "$VALUE_B")" = 0

check "[secrets] StopPodSandbox and RemovePodSandbox" cri_remove_pod "$POD"
sleep 0.5
expect_eq "$(cri_proxyd_list | jq -c '.containers')" "[]" "[secrets] the pod's removal took its registration down"
expect_eq "$(ls "$CRI_EGRESS/proxyd/containers")" "" "[secrets] no proxyd state file left"
expect_eq "$(grep -c "$CRI_EGRESS/proxyd/netns" /proc/mounts)" 0 "[secrets] no pinned namespace left"

reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done
tap_done

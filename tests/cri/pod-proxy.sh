#!/bin/bash
# A Kubernetes pod under egress proxy through containerd 1.6's CRI plugin: the sandbox and two app
# containers share one network namespace, so they are one egress identity, the sandbox's
# registration with hezo-proxyd, whose members they are. An allowed test host is reachable from
# both app containers and a denied one from neither, the netlog records both containers'
# connections under the pod's registration, and the pod's removal takes the registration down.
# The test world: an "internet" namespace with two HTTP servers, dnsmasq on a host loopback port
# as the upstream resolver. Only loopback and namespaces made here are contacted.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=${HEZO_TEST_BACKEND:-runc}
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}/cri-pod-proxy.$$
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/cri/cri-lib.sh
. "$here/cri-lib.sh"
# shellcheck source=tests/cri/egress-lib.sh
. "$here/egress-lib.sh"

cri_setup egress
hezo_write_policy docker "$(cri_policy_filter) | $(cri_egress_filter)"

# ---- a pod: sandbox, a and b ----
PODCFG=$(cri_pod_config web "$(cri_uid)" default | cri_egress_dns)
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[proxy] RunPodSandbox under egress proxy" || diag "$(cat "$CRI_DIR/err")"
[ -n "$POD" ] || bail_out "no pod"
expect_eq "$(cri_proxyd_list | jq -c '[.containers[].id]')" "[\"$POD\"]" \
	"[proxy] the sandbox registered the pod's network namespace with proxyd"
APPS=()
for c in a b; do
	id=$(cri_create "$POD" "$PODCFG" "$(cri_container_config "$c" 'exec sleep 100000')" \
		2>"$CRI_DIR/err") && cri_start_container "$id" 2>>"$CRI_DIR/err" && rc=0 || rc=$?
	expect_eq "$rc" 0 "[proxy] CreateContainer and StartContainer $c (it joins the registration)" ||
		diag "$(cat "$CRI_DIR/err")"
	APPS+=("$id")
done
expect_eq "$(cri_proxyd_list | jq -c '[.containers[] | {id, members}]')" \
	"[{\"id\":\"$POD\",\"members\":[\"$POD\",\"${APPS[0]}\",\"${APPS[1]}\"]}]" \
	"[proxy] one registration for the pod, the sandbox and both app containers its members"

LOG=$CRI_EGRESS/netlog/$POD.jsonl
lines() { sleep 0.2; wc -l <"$LOG" 2>/dev/null || echo 0; }
for i in 0 1; do
	c=$([ "$i" = 0 ] && echo a || echo b)
	n0=$(lines)
	out=$(cri_exec "${APPS[$i]}" 'timeout 10 wget -q -O - http://allowed.test/index.html') && rc=0 || rc=$?
	expect_eq "$out" hello-pod "[proxy] $c reaches allowed.test" || diag "rc=$rc"
	expect_match "$(tail -n +$((n0 + 1)) "$LOG")" '"proto":"tcp".*"name":"allowed.test".*"verdict":"allow"' \
		"[proxy] ... its connection is in the pod's netlog (registration $POD)"
	before=$(cri_egress_arrived)
	out=$(cri_exec "${APPS[$i]}" 'timeout 10 wget -q -O - http://denied.test/index.html; echo __ran__') || true
	expect_eq "$out" __ran__ "[proxy] $c cannot reach denied.test"
	out=$(cri_exec "${APPS[$i]}" "timeout 10 wget -q -O - http://$CRI_DENIED_IP/index.html; echo __ran__") || true
	expect_eq "$out" __ran__ "[proxy] $c cannot reach denied.test's address directly"
	expect_eq "$(cri_egress_arrived)" "$before" "[proxy] ... and not one packet of $c's reached the denied host"
done
expect_match "$(cat "$LOG")" "\"event\":\"join\",\"member\":\"${APPS[0]}\".*" "[proxy] the netlog says a joined"
expect_match "$(cat "$LOG")" "\"event\":\"join\",\"member\":\"${APPS[1]}\".*" "[proxy] the netlog says b joined"
check "[proxy] both containers' refusals of denied.test are in the pod's netlog" \
	test "$(grep -c '"name":"denied.test".*"verdict":"deny"' "$LOG")" -ge 2

check "[proxy] StopPodSandbox and RemovePodSandbox" cri_remove_pod "$POD"
sleep 0.5
expect_eq "$(cri_proxyd_list | jq -c '.containers')" "[]" "[proxy] the pod's removal took its registration down"
expect_eq "$(ls "$CRI_EGRESS/proxyd/containers")" "" "[proxy] no proxyd state file left"
expect_eq "$(grep -c "$CRI_EGRESS/proxyd/netns" /proc/mounts)" 0 "[proxy] no pinned namespace left"
expect_eq "$(find "$HEZO_TEST_STATE" -name '*.json' 2>/dev/null)" "" "[proxy] no shim record left"

reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done
tap_done

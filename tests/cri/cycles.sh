#!/bin/bash
# Pod cycles through containerd 1.6's CRI plugin: RunPodSandbox, two app containers created and
# started, StopPodSandbox and RemovePodSandbox, CRI_CYCLES times (3 in the suite; the bench,
# tests/bench/pod-cycles.sh, runs 20) under egress deny and under egress proxy. Before and after
# each series: the pods' network namespaces, proxyd's registrations and pinned namespaces, the
# shim's records, containerd shims and mounts of this run; all must be back where they started.
# The same cycles through plain runc (the handler "runc") are timed in the same run, and the time
# per cycle of each is printed, with hezo-shim's against runc's as a ratio.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=runc
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}/cri-cycles.$$
CYCLES=${CRI_CYCLES:-3}
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/cri/cri-lib.sh
. "$here/cri-lib.sh"
# shellcheck source=tests/cri/egress-lib.sh
. "$here/egress-lib.sh"

cri_setup egress

# counts: what a pod can leave behind, as one line.
counts()
{
	local netns pins regs recs shims mounts
	netns=$(awk -v d="$CRI_DIR" '$3 == "nsfs" && index($2, d) == 1' /proc/mounts | wc -l)
	pins=$(awk -v d="$CRI_EGRESS/proxyd" '$3 == "nsfs" && index($2, d) == 1' /proc/mounts | wc -l)
	regs=$(cri_proxyd_list | jq '.containers | length')
	recs=$(find "$HEZO_TEST_STATE" -name '*.json' 2>/dev/null | wc -l)
	shims=$(pgrep -f -- "containerd-shim-runc-v2 .*$CRI_DIR" | wc -l)
	mounts=$(grep -c -e "$CRI_DIR" -e "$HEZO_TEST_DIR" /proc/mounts)
	echo "netns=$netns proxyd-registrations=$regs proxyd-pins=$pins shim-records=$recs" \
		"containerd-shims=$shims mounts=$mounts"
}

# cycle HANDLER LABEL: one pod with two app containers, and its removal; 1 on any failure.
# UP gets the counts while the pod runs.
cycle()
{
	local pcfg pod id c
	pcfg=$(cri_pod_config "$2" "$(cri_uid)" default | cri_egress_dns)
	pod=$(cri_run_pod "$1" "$pcfg" 2>>"$CRI_DIR/cycle.err") || return 1
	for c in a b; do
		id=$(cri_create "$pod" "$pcfg" "$(cri_container_config "$c" 'exec sleep 100000')" \
			2>>"$CRI_DIR/cycle.err") && cri_start_container "$id" 2>>"$CRI_DIR/cycle.err" ||
			{ cri_remove_pod "$pod"; return 1; }
	done
	[ -n "${WANT_UP:-}" ] && UP=$(counts)
	cri_remove_pod "$pod" 2>>"$CRI_DIR/cycle.err"
}

declare -A PER_CYCLE
for mode in deny proxy; do
	hezo_write_policy docker "$(cri_policy_filter) | $(cri_egress_filter "$mode")"
	# One pod first, so the image and the CNI are warm for the timed series; while it runs the
	# counts must see it (or they could not see a leak either).
	UP=
	WANT_UP=1 cycle hezo "warm-$mode" >/dev/null 2>&1
	before=$(counts)
	want='netns=1 proxyd-registrations=0 proxyd-pins=0 .* containerd-shims=1 mounts=[1-9]'
	[ "$mode" = proxy ] && want='netns=1 proxyd-registrations=1 proxyd-pins=1 .* containerd-shims=1 mounts=[1-9]'
	expect_match "$UP" "$want" "[$mode] the counts see a running pod ($UP)"
	cri_series "$mode" hezo
	sleep 1
	after=$(counts)
	expect_eq "$FAILED" 0 "[$mode] $CYCLES pod cycles through hezo-shim, each one succeeds" ||
		diag "$(tail -n 5 "$CRI_DIR/cycle.err")"
	expect_eq "$after" "$before" "[$mode] nothing leaked after $CYCLES cycles ($before)"
	PER_CYCLE[$mode]=$MS
done
before=$(counts)
cri_series runc runc
after=$(counts)
expect_eq "$FAILED" 0 "[runc] $CYCLES pod cycles through plain runc, each one succeeds"
expect_eq "$after" "$before" "[runc] nothing leaked after $CYCLES cycles"
PER_CYCLE[runc]=$MS
for mode in deny proxy; do
	diag "time per pod cycle (run, 2 containers, stop, remove) over $CYCLES: hezo-shim egress" \
		"$mode ${PER_CYCLE[$mode]} ms, plain runc ${PER_CYCLE[runc]} ms, ratio" \
		"$(cri_ratio "${PER_CYCLE[$mode]}" "${PER_CYCLE[runc]}")"
done

hezo_expect_no_sanitizer_reports
tap_done

#!/bin/bash
# gVisor pod cycles through containerd 1.6's CRI plugin: RunPodSandbox, three app containers
# created and started in the pod's one runsc sandbox, StopPodSandbox and RemovePodSandbox,
# CRI_CYCLES times (3 in the suite; tests/bench/pod-cycles-runsc.sh runs 20). Before and after
# the series: the pods' network namespaces, the shim's records, containerd shims, runsc
# sandboxes and gofers, pod waiters and mounts of this run; all must be back where they started.
# The same cycles with the project's backend runc are timed in the same run (time per cycle,
# runsc against runc), and the host memory (PSS) of one pod's processes is set against three
# single-container runsc sandboxes running the same command.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=runsc
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}/cri-cycles-runsc.$$
CYCLES=${CRI_CYCLES:-3}
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/cri/cri-lib.sh
. "$here/cri-lib.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"

cri_setup

# counts: what a pod can leave behind, as one line.
counts()
{
	local netns recs shims sandboxes gofers waiters mounts
	netns=$(awk -v d="$CRI_DIR" '$3 == "nsfs" && index($2, d) == 1' /proc/mounts | wc -l)
	recs=$(find "$HEZO_TEST_STATE" -mindepth 2 -maxdepth 2 -name '*.json' -not -path "$HEZO_TEST_STATE/ended/*" 2>/dev/null | wc -l)
	shims=$(pgrep -f -- "containerd-shim-runc-v2 .*$CRI_DIR" | wc -l)
	sandboxes=$(pgrep -f -- "^runsc-sandbox .*$CRI_DIR" | wc -l)
	gofers=$(pgrep -f -- "^runsc-gofer .*$CRI_DIR" | wc -l)
	waiters=$(pgrep -f -- "hezo-pod-wait .*$CRI_DIR" | wc -l)
	mounts=$(grep -c -e "$CRI_DIR" -e "$HEZO_TEST_DIR" /proc/mounts)
	echo "netns=$netns shim-records=$recs containerd-shims=$shims runsc-sandboxes=$sandboxes" \
		"runsc-gofers=$gofers pod-waiters=$waiters mounts=$mounts"
}

# pss PID...: the PSS in KiB of these processes and all their descendants.
pss()
{
	local all p sum=0 kb
	all=$(ps -eo pid=,ppid=)
	local -a todo=("$@") seen=()
	while [ ${#todo[@]} -gt 0 ]; do
		p=${todo[0]}
		todo=("${todo[@]:1}")
		seen+=("$p")
		mapfile -t -O ${#todo[@]} todo < <(awk -v p="$p" '$2 == p { print $1 }' <<<"$all")
	done
	for p in "${seen[@]}"; do
		kb=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null)
		sum=$((sum + ${kb:-0}))
	done
	echo "$sum"
}

# cycle LABEL: one pod with three app containers, and its removal; 1 on any failure. With
# MEASURE set, POD_PSS gets the pod's host processes' PSS while it runs.
cycle()
{
	local pcfg pod id c shim
	pcfg=$(cri_pod_config "$1" "$(cri_uid)" default)
	pod=$(cri_run_pod hezo "$pcfg" 2>>"$CRI_DIR/cycle.err") || return 1
	for c in a b c; do
		id=$(cri_create "$pod" "$pcfg" "$(cri_container_config "$c" 'exec sleep 100000')" \
			2>>"$CRI_DIR/cycle.err") && cri_start_container "$id" 2>>"$CRI_DIR/cycle.err" ||
			{ cri_remove_pod "$pod"; return 1; }
	done
	[ -n "${WANT_UP:-}" ] && UP=$(counts)
	if [ -n "${MEASURE:-}" ]; then
		sleep 2
		shim=$(pgrep -f -- "containerd-shim-runc-v2 .*-id $pod")
		# The shim's children: the sandbox, the gofers, the waiters (and their runsc wait).
		POD_PSS=$(pss $(pgrep -P "$shim"))
		WAIT_PSS=$(pss $(pgrep -f -- "hezo-pod-wait .*$CRI_DIR"))
	fi
	cri_remove_pod "$pod" 2>>"$CRI_DIR/cycle.err"
}

declare -A PER_CYCLE
hezo_write_policy docker "$(cri_policy_filter)"
UP=
WANT_UP=1 MEASURE=1 cycle warm >/dev/null 2>&1
expect_match "$UP" 'netns=1 shim-records=4 containerd-shims=1 runsc-sandboxes=1 runsc-gofers=4 pod-waiters=3 mounts=[1-9]' \
	"[runsc] the counts see a running pod of three in one sandbox ($UP)"
before=$(counts)
cri_series runsc
sleep 1
after=$(counts)
expect_eq "$FAILED" 0 "[runsc] $CYCLES pod cycles (pause + 3 containers) under runsc, each one succeeds" ||
	diag "$(tail -n 5 "$CRI_DIR/cycle.err")"
expect_eq "$after" "$before" "[runsc] nothing leaked after $CYCLES cycles ($before)"
PER_CYCLE[runsc]=$MS

hezo_write_policy docker "$(cri_policy_filter) | .backend = \"runc\""
cycle warm-runc >/dev/null 2>&1
before=$(counts)
cri_series runc
sleep 1
after=$(counts)
expect_eq "$FAILED" 0 "[runc] $CYCLES pod cycles (pause + 3 containers) with the backend runc, each one succeeds" ||
	diag "$(tail -n 5 "$CRI_DIR/cycle.err")"
expect_eq "$after" "$before" "[runc] nothing leaked after $CYCLES cycles"
PER_CYCLE[runc]=$MS
diag "time per pod cycle (run, 3 containers, stop, remove) over $CYCLES: runsc-in-box" \
	"${PER_CYCLE[runsc]} ms, runc-in-box ${PER_CYCLE[runc]} ms, ratio" \
	"$(cri_ratio "${PER_CYCLE[runsc]}" "${PER_CYCLE[runc]}")"

# Memory: one pod of three against three single-container runsc sandboxes (hezo-shim's own
# bundles, the same command), PSS of all their host processes.
hezo_write_policy bundle
BROOT=$HEZO_TEST_DIR/singles
SINGLE_PSS=0
ids=()
for n in 1 2 3; do
	id=hezo-cyc-single-$n-$$
	ids+=("$id")
	tap_cleanup "hezo_bundle_cleanup '$BROOT' '$id'"
	hezo_make_bundle "$HEZO_TEST_DIR/b$n" "$id" '["sleep", "100000"]' >/dev/null 2>&1 &&
		hezo_shim --root "$BROOT" create --bundle "$HEZO_TEST_DIR/b$n" "$id" >/dev/null 2>"$HEZO_TEST_DIR/single.err" </dev/null &&
		hezo_shim --root "$BROOT" start "$id" >/dev/null 2>>"$HEZO_TEST_DIR/single.err" </dev/null ||
		diag "single $n did not start: $(tail -n 3 "$HEZO_TEST_DIR/single.err")"
done
sleep 2
singles=$(pgrep -f -- "^runsc-(sandbox|gofer) .*$BROOT")
SINGLE_PSS=$(pss $singles)
for id in "${ids[@]}"; do
	hezo_shim --root "$BROOT" delete --force "$id" >/dev/null 2>&1
done
expect_ne "${POD_PSS:-0}" 0 "[memory] the pod's host processes were measured"
expect_ne "$SINGLE_PSS" 0 "[memory] the three single sandboxes were measured"
diag "host memory (PSS) of one pod of three app containers (sandbox, gofers, waiters): ${POD_PSS:-0} KiB;" \
	"three single-container sandboxes: $SINGLE_PSS KiB; ratio" \
	"$(awk -v a="${POD_PSS:-0}" -v b="$SINGLE_PSS" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')"
diag "... of which the three waiters with their runsc wait: ${WAIT_PSS:-0} KiB"

hezo_expect_no_sanitizer_reports
tap_done

#!/bin/bash
# A hezo pod's uid is anchored in what containerd shows (issue 12, docs/hardening.md pass 3):
# through containerd 1.6's CRI plugin, a pod P of the runtime handler "runc" (another RuntimeClass)
# and hezo sandboxes that claim P's uid. A hezo sandbox made while P's sandbox runs is refused at
# its create; a hezo sandbox made first keeps P's volume only until P's sandbox starts: its app
# container created after that is refused and mounts nothing. A pod annotation cannot set
# io.kubernetes.cri.sandbox-uid. A hezo pod restarting (sandbox removed, a new one with the same
# uid, as kubelet does) keeps its volumes. HEZO_TEST_BACKEND: runc (default) or runsc (the
# sandbox-side rows; the app-container rows run under runc only, tests/cri/pod-runsc.sh has runsc's).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=${HEZO_TEST_BACKEND:-runc}
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}/cri-pod-anchor.$$
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/cri/cri-lib.sh
. "$here/cri-lib.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"

cri_setup
KROOT=$CRI_DIR/kubelet
hezo_write_policy docker "$(cri_policy_filter) | .mounts.kubeletRoot = \"$KROOT\""
TASKS=$CRI_DIR/state/io.containerd.runtime.v2.task/$CRI_NS
diag "backend $HEZO_TEST_BACKEND, containerd $(containerd --version 2>&1 | awk '{ print $3 }'), dir $CRI_DIR"

# kubelet_pod UID: the pod directory kubelet makes before the sandbox, with a Secret volume.
kubelet_pod()
{
	local d=$KROOT/pods/$1/volumes/kubernetes.io~secret/db
	mkdir -p "$d" && echo "secret-of-$1" >"$d/password"
}
# thief POD PODCONFIG NAME UID: create and start an app container of POD binding pod UID's
# Secret and printing it; OUT gets what it printed or the refusal, RC the status.
thief()
{
	local id src=$KROOT/pods/$4/volumes/kubernetes.io~secret/db
	OUT=
	id=$(cri_create "$1" "$2" "$(cri_container_config "$3" 'cat /s/password; exec sleep 100000' \
		"$(jq -cn --arg s "$src" '{mounts: [{container_path: "/s", host_path: $s, readonly: true}]}')")" 2>&1) &&
		OUT=$(cri_start_container "$id" 2>&1) && RC=0 || RC=$?
	[ -z "$OUT" ] && OUT=$id
	if [ "$RC" = 0 ]; then
		for _ in $(seq 40); do
			OUT=$(cri_exec "$id" 'cat /s/password' 2>&1) && [ -n "$OUT" ] && break
			sleep 0.25
		done
	fi
	if [ -n "$id" ] && [ "${id#cri }" = "$id" ]; then
		cri StopContainer "{\"container_id\":\"$id\",\"timeout\":0}" >/dev/null 2>&1
		cri RemoveContainer "{\"container_id\":\"$id\"}" >/dev/null 2>&1
	fi
	return 0
}
ready_named()
{
	cri ListPodSandbox | jq --arg n "$1" '[.items[]? | select(.metadata.name == $n and (.state // "SANDBOX_READY") == "SANDBOX_READY")] | length'
}
one_line() { expect_eq "$(grep -o 'hezo-shim: ' <<<"$1" | wc -l)" 1 "$2"; }
APP_ROWS=yes
[ "$HEZO_TEST_BACKEND" = runsc ] && APP_ROWS=

# === P's runc sandbox first, then a hezo sandbox claiming its uid =================================
UP=$(cri_uid)
kubelet_pod "$UP"
PCFG=$(cri_pod_config real "$UP" default)
P=$(cri_run_pod runc "$PCFG" 2>"$CRI_DIR/err") || bail_out "RunPodSandbox under runc: $(cat "$CRI_DIR/err")"
expect_eq "$(jq -r '.annotations["io.kubernetes.cri.sandbox-uid"]' "$TASKS/$P/config.json")" "$UP" \
	"[runc first] P's runc sandbox is a live containerd task whose config.json names its uid"
TCFG=$(cri_pod_config twin "$UP" default)
H=$(cri_run_pod hezo "$TCFG" 2>&1) && rc=0 || rc=$?
expect_ne "$rc" 0 "[runc first] a hezo sandbox claiming the uid of runc pod P is refused at its create"
expect_match "$H" "hezo-shim: annotation io\\.kubernetes\\.cri\\.sandbox-uid: pod $UP is also sandbox $P's, a live task at $TASKS/$P" \
	"[runc first] ... in a line naming the annotation and P's sandbox"
one_line "$H" "[runc first] ... one line"
expect_eq "$(ready_named twin)" 0 "[runc first] no ready hezo sandbox claims P's uid"
if [ "$rc" = 0 ]; then
	if [ -n "$APP_ROWS" ]; then
		thief "$H" "$TCFG" loot "$UP"
		diag "the claimant's app container: rc=$RC: $OUT"
		expect_ne "$OUT" "secret-of-$UP" "[runc first] no app container of the claimant reads P's Secret"
	fi
	cri_remove_pod "$H"
fi

# A pod annotation naming P's uid: containerd sets its own io.kubernetes.cri.* keys over pod
# annotations (and pod_annotations passes only org.hezo.*), so the sandbox is its own pod's.
UE=$(cri_uid)
kubelet_pod "$UE"
ECFG=$(cri_pod_config annotated "$UE" default "{\"io.kubernetes.cri.sandbox-uid\":\"$UP\"}")
E=$(cri_run_pod hezo "$ECFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[annotation] a hezo pod annotated io.kubernetes.cri.sandbox-uid=P's uid starts (as its own pod)" ||
	diag "$(cat "$CRI_DIR/err")"
expect_eq "$(jq -r '.annotations["io.kubernetes.cri.sandbox-uid"]' "$TASKS/$E/config.json" 2>&1)" "$UE" \
	"[annotation] its config.json names its own uid, not the annotation's"
if [ -n "$APP_ROWS" ]; then
	thief "$E" "$ECFG" loot "$UP"
	expect_ne "$RC" 0 "[annotation] its app container binding P's Secret is refused"
	expect_match "$OUT" "hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/s\\): bind source .* is pod $UP's, not this container's pod $UE" \
		"[annotation] ... naming the mount and its own pod"
	one_line "$OUT" "[annotation] ... one line"
fi
[ -n "$E" ] && cri_remove_pod "$E"
check "[runc first] P removed" cri_remove_pod "$P"

# === the hezo sandbox first, P's runc sandbox after ===============================================
UB=$(cri_uid)
kubelet_pod "$UB"
HCFG=$(cri_pod_config early "$UB" default)
H=$(cri_run_pod hezo "$HCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[hezo first] a hezo sandbox claiming a uid no live sandbox has starts" || diag "$(cat "$CRI_DIR/err")"
if [ -n "$APP_ROWS" ]; then
	thief "$H" "$HCFG" before "$UB"
	expect_eq "$OUT" "secret-of-$UB" "[hezo first] while it is the only claimant its app container gets the pod's volume" ||
		diag "rc=$RC: $OUT"
fi
P=$(cri_run_pod runc "$(cri_pod_config late "$UB" default)" 2>"$CRI_DIR/err") ||
	bail_out "RunPodSandbox under runc: $(cat "$CRI_DIR/err")"
thief "$H" "$HCFG" after "$UB"
expect_ne "$RC" 0 "[hezo first] after P's runc sandbox started, the hezo app container is refused"
expect_match "$OUT" "hezo-shim: annotation io\\.kubernetes\\.cri\\.sandbox-uid: pod $UB is also sandbox $P's, a live task at $TASKS/$P" \
	"[hezo first] ... in a line naming the annotation and P's sandbox"
one_line "$OUT" "[hezo first] ... one line"
expect_ne "$OUT" "secret-of-$UB" "[hezo first] ... and reads no volume of P"
check "[hezo first] P removed" cri_remove_pod "$P"
check "[hezo first] the hezo pod removed" cri_remove_pod "$H"

# === a raw create copying a running hezo pod's CRI keys (red team pass 5, F6) =====================
# Its own bundle, outside containerd's task directory or under another --root, joining the pod's
# namespaces: only the engine's own app container, a task beside the sandbox's under the sandbox's
# --root, gets the pod's volumes.
if [ -n "$APP_ROWS" ]; then
	UM=$(cri_uid)
	kubelet_pod "$UM"
	MCFG=$(cri_pod_config mimicked "$UM" default)
	M=$(cri_run_pod hezo "$MCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
	expect_eq "$rc" 0 "[mimic] a hezo pod starts" || diag "$(cat "$CRI_DIR/err")"
	MREC=$(hezo_state_records "$M" | head -n 1)
	MROOT=$(jq -r '.root // empty' "$MREC" 2>/dev/null)
	MPID=$(cat "$TASKS/$M/init.pid" 2>/dev/null)
	# mimic LABEL ROOT BUNDLE: the pod's annotations as an app container's, its net and ipc joined,
	# its Secret bound; RC, and the refusal in $CRI_DIR/LABEL.err.
	mimic()
	{
		local id=hezo-mimic-$1-$$
		hezo_make_bundle "$3" "$id" '["cat", "/s/password"]' \
			".annotations = ($(jq -c '.annotations' "$TASKS/$M/config.json") | .[\"io.kubernetes.cri.container-type\"] = \"container\")
			| .linux.namespaces |= map(if (.type | IN(\"ipc\", \"network\")) then .path = \"/proc/$MPID/ns/\" + (if .type == \"network\" then \"net\" else .type end) else . end)
			| .mounts += [{destination: \"/s\", type: \"bind\", source: \"$KROOT/pods/$UM/volumes/kubernetes.io~secret/db\", options: [\"rbind\", \"ro\"]}]" ||
			bail_out "cannot make bundle"
		hezo_shim --root "$2" create -b "$3" "$id" >"$CRI_DIR/$1.out" 2>"$CRI_DIR/$1.err" </dev/null && RC=0 || RC=$?
		[ "$RC" = 0 ] && hezo_shim --root "$2" delete --force "$id" >/dev/null 2>&1
		hezo_bundle_cleanup "$2" "$id"
	}
	if [ -n "$MROOT" ] && [ -n "$MPID" ]; then
		for c in "elsewhere $CRI_DIR/mimic-root $CRI_DIR/mimic-b" \
			"sameroot $MROOT $CRI_DIR/mimic-b2" \
			"beside $CRI_DIR/mimic-root $TASKS/hezo-mimic-beside-$$"; do
			read -r label root b <<<"$c"
			mimic "$label" "$root" "$b"
			expect_ne "$RC" 0 "[mimic $label] a raw create with the pod's CRI keys gets no pod volume"
			expect_match "$(cat "$CRI_DIR/$label.err")" "^hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/s\\): bind source .* is a pod's and this container is no app container of a running pod sandbox\$" \
				"[mimic $label] ... in one line naming the mount"
			expect_eq "$(wc -l <"$CRI_DIR/$label.err" | tr -d ' ')" 1 "[mimic $label] ... exactly one line" ||
				diag "$(cat "$CRI_DIR/$label.err")"
			rm -rf "$b"
		done
		rm -rf "$CRI_DIR/mimic-root"
	else
		expect_eq "$MROOT $MPID" "(the pod's --root and pid)" "[mimic] the pod's record and init.pid"
	fi
	# The engine's own app container of that pod still gets it.
	thief "$M" "$MCFG" own "$UM"
	expect_eq "$OUT" "secret-of-$UM" "[mimic] the pod's own app container reads its Secret" || diag "rc=$RC: $OUT"
	check "[mimic] the pod removed" cri_remove_pod "$M"
fi

# === a hezo sandbox made before kubelet made the pod's directory (the pod not on this node yet) ===
if [ -n "$APP_ROWS" ]; then
	UA=$(cri_uid)
	ACFG=$(cri_pod_config ahead "$UA" default)
	A=$(cri_run_pod hezo "$ACFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
	expect_eq "$rc" 0 "[ahead] a hezo sandbox whose pod has no kubelet directory yet starts" ||
		diag "$(cat "$CRI_DIR/err")"
	sleep 0.1
	kubelet_pod "$UA"
	thief "$A" "$ACFG" loot "$UA"
	expect_ne "$RC" 0 "[ahead] its app container binding the pod's Secret kubelet made later is refused"
	expect_match "$OUT" "hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/s\\): bind source .* is a pod's and this container is no app container of a running pod sandbox" \
		"[ahead] ... naming the mount"
	one_line "$OUT" "[ahead] ... one line"
	expect_ne "$OUT" "secret-of-$UA" "[ahead] ... and reads no Secret"
	check "[ahead] the pod removed" cri_remove_pod "$A"
fi

# === a hezo pod restarting: the sandbox removed, a new one with the same uid ======================
# kubelet stops the old sandbox, runs the next attempt and removes the old one later (its garbage
# collection); the last attempt here follows a removal.
UR=$(cri_uid)
kubelet_pod "$UR"
OLD=
for attempt in 0 1 2; do
	RCFG=$(cri_pod_config again "$UR" default | jq -c --argjson a $attempt '.metadata.attempt = $a')
	R=$(cri_run_pod hezo "$RCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
	expect_eq "$rc" 0 "[restart] sandbox attempt $attempt of the same pod starts" || diag "$(cat "$CRI_DIR/err")"
	if [ -n "$APP_ROWS" ]; then
		thief "$R" "$RCFG" "app$attempt" "$UR"
		expect_eq "$OUT" "secret-of-$UR" "[restart] attempt $attempt: its app container reads its own pod's Secret" ||
			diag "rc=$RC: $OUT"
	fi
	[ -n "$OLD" ] && check "[restart] attempt $((attempt - 1)) removed" cri RemovePodSandbox "{\"pod_sandbox_id\":\"$OLD\"}"
	OLD=
	if [ $attempt = 0 ]; then
		check "[restart] attempt $attempt stopped" cri StopPodSandbox "{\"pod_sandbox_id\":\"$R\"}"
		OLD=$R
	else
		check "[restart] attempt $attempt stopped and removed" cri_remove_pod "$R"
	fi
done

expect_eq "$(cri ListPodSandbox | jq '.items | length')" 0 "no pod left in containerd"
expect_eq "$(find "$HEZO_TEST_STATE" -name '*.json' 2>/dev/null)" "" "no shim record left"
hezo_expect_no_sanitizer_reports
tap_done

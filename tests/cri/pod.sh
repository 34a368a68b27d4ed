#!/bin/bash
# Kubernetes pods through containerd 1.6's CRI plugin (the calls kubelet makes, from cri.py):
# a sandbox and two app containers under the runtime "hezo" with a runc policy and egress deny, in
# namespace "default" that has no project file (the global box). Each app container is in the box
# (caps, no-new-privileges, read-only root, limits) and the two reach each other over the pod's
# 127.0.0.1, and get kubelet's volumes of their own pod (token, configMap, emptyDir, etc-hosts,
# termination-log, with kubelet's paths and options); another pod's or the kubelet root are
# refused in one line. Then projects: a namespace's own file is used; a pod annotation (passed
# through by the pod_annotations that install --containerd writes) may repeat the namespace's
# project, and naming any other one is refused.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=runc
# A directory of its own below the caller's, removed at exit whatever else lives there.
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}/cri-pod.$$
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/box.sh
. "$here/../lib/box.sh"
# shellcheck source=tests/cri/cri-lib.sh
. "$here/cri-lib.sh"

MEM=$((2048 * 1048576))
cri_setup
PROJECTS=$HEZO_TEST_DIR/projects
mkdir -p "$PROJECTS"
KROOT=$CRI_DIR/kubelet
hezo_write_policy docker "$(cri_policy_filter) | .projectsDir = \"$PROJECTS\" | .mounts.kubeletRoot = \"$KROOT\""
diag "containerd $(containerd --version 2>&1 | awk '{ print $3 }'), CRI $(cri Version | jq -r .runtime_api_version), dir $CRI_DIR"

# record_of ID: the shim's record of container ID.
record_of()
{
	find "$HEZO_TEST_STATE" -name "$1.json" 2>/dev/null | head -n 1
}

# === a pod: sandbox, a server and a client ===========================================================
UID1=$(cri_uid)
PODCFG=$(cri_pod_config web "$UID1" default)
expect_eq "$(ls "$PROJECTS")" "" "[pod] there is no project file for namespace default"
POD=$(cri_run_pod hezo "$PODCFG" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[pod] RunPodSandbox with runtime_handler hezo succeeds" || diag "$(cat "$CRI_DIR/err")"
[ -n "$POD" ] || bail_out "no pod"
expect_ne "$(record_of "$POD")" "" "[pod] hezo-shim recorded the sandbox container"

SERVER=$(cri_create "$POD" "$PODCFG" "$(cri_container_config server \
	'mkdir -p /tmp/www && echo pod-peer-ok >/tmp/www/index.html && exec httpd -f -p 127.0.0.1:8080 -h /tmp/www')" \
	2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[pod] CreateContainer server" || diag "$(cat "$CRI_DIR/err")"
check "[pod] StartContainer server" cri_start_container "$SERVER"
# The client probes its own init process's box and keeps it for us to read.
CLIENT=$(cri_create "$POD" "$PODCFG" "$(cri_container_config client \
	"{ $HEZO_BOX_PROBE } >/tmp/init.probe 2>&1; exec sleep 100000")" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[pod] CreateContainer client" || diag "$(cat "$CRI_DIR/err")"
check "[pod] StartContainer client" cri_start_container "$CLIENT"

for c in server client; do
	id=$SERVER
	[ "$c" = client ] && id=$CLIENT
	out=$(cri_exec "$id" "$HEZO_BOX_PROBE") && rc=0 || rc=$?
	expect_eq "$rc" 0 "[$c] ExecSync of the probe exits 0"
	hezo_assert_box "$c exec" "$out"
	hezo_assert_box_engine "$c exec" "$out"
	hezo_assert_backend "$c exec" "$out"
	rec=$(record_of "$id")
	expect_ne "$rec" "" "[$c] hezo-shim recorded the container"
	hezo_assert_cgroup "$c" "$(jq -r '.cgroupsPath // empty' "$rec" 2>/dev/null)" "$MEM" 256
	bundle=$(jq -r '.bundle // empty' "$rec" 2>/dev/null)
	hezo_assert_spec "$c" "$bundle/config.json"
	[ "$c" = client ] && diag "annotations containerd passes: $(jq -c .annotations "$bundle/config.json")"
done
for ((i = 0; i < 20; i++)); do
	out=$(cri_exec "$CLIENT" 'cat /tmp/init.probe') && grep -q '^probe=done' <<<"$out" && break
	sleep 0.25
done
hezo_assert_box "client init" "$out"

out=$(cri_exec "$CLIENT" 'timeout 10 wget -q -O - http://127.0.0.1:8080/') && rc=0 || rc=$?
expect_eq "$out" pod-peer-ok "[pod] the client reaches the server over 127.0.0.1:8080" || diag "rc=$rc"
NETNS=$(cri_pod_netns "$POD")
expect_match "$NETNS" "^$CRI_DIR/state/" "[pod] the pod's netns is under our state dir ($NETNS)"
expect_match "$(nsenter --net="$NETNS" nft list ruleset 2>&1)" 'hezo' \
	"[pod] the egress hook's table is in the pod's network namespace (egress deny)"

# === kubelet's volumes ================================================================================
# kubelet_pod UID CONTAINER: the directories kubelet makes for a pod (--root-dir KROOT); prints the
# termination-log file's path.
kubelet_pod()
{
	local d=$KROOT/pods/$1 t
	mkdir -p "$d/volumes/kubernetes.io~projected/kube-api-access-q8xkz" \
		"$d/volumes/kubernetes.io~configmap/settings" "$d/volumes/kubernetes.io~empty-dir/scratch" \
		"$d/containers/$2"
	printf 'eyJhbGciOi.token.of-%s' "$1" >"$d/volumes/kubernetes.io~projected/kube-api-access-q8xkz/token"
	echo hezo-test >"$d/volumes/kubernetes.io~projected/kube-api-access-q8xkz/namespace"
	echo "colour=blue" >"$d/volumes/kubernetes.io~configmap/settings/app.conf"
	printf '127.0.0.1\tlocalhost\n10.0.0.9\tkubelet-wrote-this\n' >"$d/etc-hosts"
	t=$d/containers/$2/$(printf '%08x' $((RANDOM * RANDOM)))
	: >"$t"
	echo "$t"
}
# kubelet_mounts UID TERMLOG: CRI mounts as kubelet sends them (its makeMounts order and flags).
kubelet_mounts()
{
	local d=$KROOT/pods/$1
	jq -cn --arg d "$d" --arg t "$2" '{mounts: [
		{container_path: "/etc/config", host_path: ($d + "/volumes/kubernetes.io~configmap/settings"), readonly: true},
		{container_path: "/scratch", host_path: ($d + "/volumes/kubernetes.io~empty-dir/scratch")},
		{container_path: "/var/run/secrets/kubernetes.io/serviceaccount",
		 host_path: ($d + "/volumes/kubernetes.io~projected/kube-api-access-q8xkz"), readonly: true},
		{container_path: "/etc/hosts", host_path: ($d + "/etc-hosts")},
		{container_path: "/dev/termination-log", host_path: $t}]}'
}
VUID=$(cri_uid)
VCFG=$(cri_pod_config vols "$VUID" default)
# kubelet makes the pod's directory and volumes before it asks for the sandbox.
TLOG=$(kubelet_pod "$VUID" app)
VPOD=$(cri_run_pod hezo "$VCFG" 2>"$CRI_DIR/err") || diag "$(cat "$CRI_DIR/err")"
VAPP=$(cri_create "$VPOD" "$VCFG" "$(cri_container_config app 'exec sleep 100000' \
	"$(kubelet_mounts "$VUID" "$TLOG")")" 2>"$CRI_DIR/err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[volumes] CreateContainer with kubelet's mounts of its own pod" || diag "$(cat "$CRI_DIR/err")"
check "[volumes] StartContainer" cri_start_container "$VAPP"
out=$(cri_exec "$VAPP" 'cat /etc/config/app.conf; grep -c kubelet-wrote-this /etc/hosts;
	echo data >/scratch/f && cat /scratch/f; echo bye >/dev/termination-log && echo written;
	if echo x >/etc/config/y 2>/dev/null; then echo cfgrw; else echo cfgro; fi
	cat /var/run/secrets/kubernetes.io/serviceaccount/namespace 2>/dev/null || echo no-token
	if touch /var/run/secrets/kubernetes.io/serviceaccount/x 2>/dev/null; then echo tokrw; else echo tokro; fi')
diag "$(tr '\n' ' ' <<<"$out")"
expect_eq "$(sed -n 1p <<<"$out")" colour=blue "[volumes] the configMap is there"
expect_eq "$(sed -n 3p <<<"$out")" data "[volumes] the emptyDir is writable"
expect_eq "$(sed -n 4p <<<"$out")" written "[volumes] the termination log is writable"
expect_eq "$(cat "$TLOG")" bye "[volumes] kubelet reads the termination message on the host"
expect_eq "$(sed -n 5p <<<"$out")" cfgro "[volumes] the configMap is read-only"
expect_eq "$(sed -n 2p <<<"$out")" 1 "[volumes] /etc/hosts is kubelet's etc-hosts"
TOKEN=$(sed -n 6,7p <<<"$out" | tr '\n' ' ')

# Another pod's volume, the pod directory and the kubelet root: refused, naming the mount.
OUID=$(cri_uid)
kubelet_pod "$OUID" app >/dev/null
for bad in "$KROOT/pods/$OUID/volumes/kubernetes.io~configmap/settings|is pod $OUID's, not this container's pod $VUID" \
	"$KROOT/pods/$VUID|is in the kubelet's directory \\($KROOT\\) and is not a pod's volume" "$KROOT|is in the kubelet's directory"; do
	src=${bad%%|*}
	want=${bad#*|}
	# CRI's CreateContainer only records it; the runtime sees it at StartContainer.
	n=$((${n:-0} + 1))
	id=$(cri_create "$VPOD" "$VCFG" "$(cri_container_config thief 'exec sleep 100000' \
		"$(jq -cn --arg s "$src" --argjson n "$n" '{metadata: {attempt: $n},
		mounts: [{container_path: "/loot", host_path: $s, readonly: true}]}')")" 2>&1) &&
		out=$(cri_start_container "$id" 2>&1) && rc=0 || rc=$?
	expect_ne "$rc" 0 "[volumes] StartContainer binding ${src#"$CRI_DIR"/} is refused"
	expect_match "$out" "hezo-shim: config.json: mounts\[[0-9]+\] \(/loot\): bind source $src $want" \
		"[volumes] the refusal names the mount and why (${want%% *}...)"
	expect_eq "$(grep -o 'hezo-shim: ' <<<"$out" | wc -l)" 1 "[volumes] in one line"
	cri RemoveContainer "{\"container_id\":\"$id\"}" >/dev/null
done
# kubelet's PodSandboxConfig travels with every CreateContainer, and containerd copies its uid into
# the container's io.kubernetes.cri.sandbox-uid: a CreateContainer in this pod carrying another
# pod's uid claims that pod. The uid is the sandbox's own (the shim's record of it), so the claim is
# refused in one line, and the other pod's configMap is not mounted.
OCFG=$(cri_pod_config vols "$OUID" default)
src=$KROOT/pods/$OUID/volumes/kubernetes.io~configmap/settings
id=$(cri_create "$VPOD" "$OCFG" "$(cri_container_config claimer 'exec sleep 100000' \
	"$(jq -cn --arg s "$src" '{mounts: [{container_path: "/loot", host_path: $s, readonly: true}]}')")" 2>&1) &&
	out=$(cri_start_container "$id" 2>&1) && rc=0 || rc=$?
expect_ne "$rc" 0 "[volumes] StartContainer of a container whose sandbox config claims pod $OUID, binding its configMap, is refused"
expect_match "$out" "hezo-shim: annotation io\\.kubernetes\\.cri\\.sandbox-uid: $OUID is not the uid of this container's sandbox $VPOD \\(pod $VUID\\)" \
	"[volumes] the refusal names the annotation, the sandbox and its pod"
expect_eq "$(grep -o 'hezo-shim: ' <<<"$out" | wc -l)" 1 "[volumes] in one line"
cri RemoveContainer "{\"container_id\":\"$id\"}" >/dev/null
# The shipped tmpfs list has /var/run; kubelet's token below it is kept and mounted on the tmpfs.
expect_eq "$TOKEN" "hezo-test tokro " "[volumes] the service-account token is there, read-only"
check "[volumes] StopPodSandbox and RemovePodSandbox" cri_remove_pod "$VPOD"

# === projects =========================================================================================
echo '{"resources":{"pids":64,"memory":1073741824}}' >"$PROJECTS/strict.json"
echo '{"resources":{"pids":128}}' >"$PROJECTS/team-a.json"
# project_pod LABEL NAMESPACE ANNOTATIONS PIDS MEMORY: a pod and a container; both get the limits.
project_pod()
{
	local label=$1 pcfg pod ctr rec
	pcfg=$(cri_pod_config "$label" "$(cri_uid)" "$2" "$3")
	pod=$(cri_run_pod hezo "$pcfg" 2>"$CRI_DIR/err") ||
		{ not_ok "[$label] RunPodSandbox"; diag "$(cat "$CRI_DIR/err")"; return 1; }
	if ! ctr=$(cri_create "$pod" "$pcfg" "$(cri_container_config app 'exec sleep 100000')" 2>"$CRI_DIR/err") ||
		! cri_start_container "$ctr" 2>>"$CRI_DIR/err"; then
		not_ok "[$label] CreateContainer and StartContainer"
		diag "$(cat "$CRI_DIR/err")"
	fi
	for id in "$pod" "$ctr"; do
		rec=$(record_of "$id")
		hezo_assert_cgroup "$label $([ "$id" = "$pod" ] && echo sandbox || echo app)" \
			"$(jq -r '.cgroupsPath // empty' "$rec" 2>/dev/null)" "$5" "$4"
	done
	out=$(cri_exec "$ctr" 'cat /sys/fs/cgroup/pids/pids.max')
	expect_eq "$out" "$4" "[$label] the app container reads pids.max $4 inside"
	check "[$label] StopPodSandbox and RemovePodSandbox" cri_remove_pod "$pod"
}
project_pod namespaced team-a '{}' 128 "$MEM"
project_pod repeated team-a '{"org.hezo.project":"team-a"}' 128 "$MEM"

# The namespace names the project; a pod's annotation may repeat it, never choose another project
# (whose namespaces, volumes and secrets it would reach: red team pass 4, F7).
# refused_pod LABEL NAMESPACE ANNOTATIONS WANT: RunPodSandbox refused in one line matching WANT.
refused_pod()
{
	local label=$1 pcfg out rc
	pcfg=$(cri_pod_config "$label" "$(cri_uid)" "$2" "$3")
	out=$(cri_run_pod hezo "$pcfg" 2>&1) && rc=0 || rc=$?
	expect_ne "$rc" 0 "[$label] RunPodSandbox is refused"
	expect_match "$out" "$4" "[$label] RunPodSandbox says why"
	expect_eq "$(grep -o 'hezo-shim: ' <<<"$out" | wc -l)" 1 "[$label] in one line"
	expect_eq "$(cri ListPodSandbox | jq --arg n "$label" '[.items[]? | select(.metadata.name == $n and .state == "SANDBOX_READY")] | length')" 0 \
		"[$label] no ready sandbox of it"
}
refused_pod annotated default '{"org.hezo.project":"strict"}' \
	'hezo-shim: annotation "org.hezo.project"="strict": this container.s project is "default" \(from annotation "io.kubernetes.cri.sandbox-namespace"\); the annotation may repeat it, not choose another'
refused_pod both team-a '{"org.hezo.project":"strict"}' 'this container.s project is "team-a"'
refused_pod missing default '{"org.hezo.project":"nosuch"}' 'this container.s project is "default"'

check "[pod] StopPodSandbox" cri StopPodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
check "[pod] RemovePodSandbox" cri RemovePodSandbox "{\"pod_sandbox_id\":\"$POD\"}"
for id in $(cri ListPodSandbox | jq -r '.items[]?.id'); do
	cri_remove_pod "$id"
done
expect_eq "$(cri ListPodSandbox | jq '.items | length')" 0 "[pod] no pod left in containerd"
expect_eq "$(find "$HEZO_TEST_STATE" -name '*.json' 2>/dev/null)" "" "[pod] no shim record left"
expect_eq "$(pgrep -f -- "$CRI_DIR/hezo-runc" | wc -l)" 0 "[pod] no shim process of the pod left"

reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done
tap_done

# The CRI harness: a private containerd 1.6 with its CRI plugin (own root, state, sockets, CNI
# configuration and pod network namespaces, all under CRI_DIR), a busybox image built here, a CNI
# bridge from Debian's plugins, and cri.py for the calls kubelet makes. Nothing of the system's
# containerd, /etc/containerd or /etc/cni is read or written; what libcni writes to the
# hard-coded /var/lib/cni is taken out again, and the bridge goes with the cleanup.
# Source tests/lib/common.sh (and tap.sh through it) first; call cri_start, then cri_pod_* calls.

# shellcheck shell=bash

CRI_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CRI_PY=${CRI_PY:-/usr/bin/python3}
CRI_IMAGE=localhost/hezo-cri/busybox:1
CRI_NS=k8s.io
CRI_DIR=
CRI_PID=
# Our bridge and pod subnet: a name and a /24 in 10.0.0.0/8 of this run's own.
CRI_BRIDGE=hzcri$(printf '%04x' $(($$ % 65536)))
CRI_SUBNET=10.$((200 + $$ % 50)).$(($$ / 50 % 250)).0/24
CRI_NET=hezo-cri-$$
CRI_CNI_CACHE=/var/lib/cni
CRI_CNI_CACHE_MADE=

cri_require()
{
	hezo_require_tools containerd ctr jq timeout ip nsenter "$CRI_PY" /usr/lib/cni/bridge \
		/usr/lib/cni/host-local /usr/lib/cni/loopback
	"$CRI_PY" -c 'import grpc, grpc_tools' 2>/dev/null ||
		hezo_cannot_run "$CRI_PY lacks grpc (Debian packages python3-grpcio python3-grpc-tools)"
}

# cri METHOD [JSON]: one CRI call on our containerd; response JSON on stdout.
cri()
{
	local method=$1 req=${2:-'{}'}
	timeout -k 5 150 "$CRI_PY" "$CRI_LIB_DIR/cri.py" --socket "$CRI_DIR/containerd.sock" \
		--gen "$CRI_DIR/gen" "$method" <<<"$req"
}

# _cri_image DIR: an OCI image layout tar of a busybox root at DIR/image.tar, named CRI_IMAGE.
_cri_image()
{
	local d=$1 cfg man ldig lsize cdig csize mdig msize
	mkdir -p "$d/oci/blobs/sha256" || return 1
	hezo_busybox_rootfs "$d/rootfs" || return 1
	# A test may add to the image (cri_image_extra ROOTFS, defined before cri_setup).
	if declare -F cri_image_extra >/dev/null; then
		cri_image_extra "$d/rootfs" || return 1
	fi
	tar -C "$d/rootfs" --numeric-owner -cf "$d/layer.tar" . || return 1
	ldig=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
	lsize=$(stat -c %s "$d/layer.tar")
	mv "$d/layer.tar" "$d/oci/blobs/sha256/$ldig"
	cfg=$(jq -cn --arg l "sha256:$ldig" '{architecture: "amd64", os: "linux",
		config: {Cmd: ["/bin/sleep", "2147483647"], WorkingDir: "/"},
		rootfs: {type: "layers", diff_ids: [$l]}}')
	printf '%s' "$cfg" >"$d/cfg"
	cdig=$(sha256sum "$d/cfg" | cut -d' ' -f1)
	csize=$(stat -c %s "$d/cfg")
	mv "$d/cfg" "$d/oci/blobs/sha256/$cdig"
	man=$(jq -cn --arg c "sha256:$cdig" --argjson cs "$csize" --arg l "sha256:$ldig" \
		--argjson ls "$lsize" '{schemaVersion: 2,
		mediaType: "application/vnd.oci.image.manifest.v1+json",
		config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
		layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}')
	printf '%s' "$man" >"$d/man"
	mdig=$(sha256sum "$d/man" | cut -d' ' -f1)
	msize=$(stat -c %s "$d/man")
	mv "$d/man" "$d/oci/blobs/sha256/$mdig"
	jq -cn --arg m "sha256:$mdig" --argjson ms "$msize" --arg n "$CRI_IMAGE" '{schemaVersion: 2,
		manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $m,
		size: $ms, platform: {architecture: "amd64", os: "linux"},
		annotations: {"io.containerd.image.name": $n, "org.opencontainers.image.ref.name": "1"}}]}' \
		>"$d/oci/index.json"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$d/oci/oci-layout"
	tar -C "$d/oci" -cf "$d/image.tar" . && rm -rf "$d/oci" "$d/rootfs"
}

# _cri_config: containerd's config.toml for CRI_DIR; the runtime "hezo" comes from
# `hezo-shim install --containerd` (SHIM is the binary it names), "runc" is plain runc.
_cri_config()
{
	local shim=$1 conf=$CRI_DIR/config.toml
	cat >"$conf" <<-EOF
		version = 2
		root = "$CRI_DIR/root"
		state = "$CRI_DIR/state"
		temp = "$CRI_DIR/tmp"
		[grpc]
		  address = "$CRI_DIR/containerd.sock"
		[ttrpc]
		  address = "$CRI_DIR/containerd.sock.ttrpc"
		[debug]
		  address = ""
		[metrics]
		  address = ""
		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "$CRI_IMAGE"
		  restrict_oom_score_adj = true
		  disable_apparmor = true
		  disable_hugetlb_controller = true
		  tolerate_missing_hugetlb_controller = true
		  netns_mounts_under_state_dir = true
		  stream_server_address = "127.0.0.1"
		  stream_server_port = "0"
		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    snapshotter = "overlayfs"
		    default_runtime_name = "runc"
		  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		    runtime_type = "io.containerd.runc.v2"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		      BinaryName = "$(command -v runc)"
		      Root = "$CRI_DIR/runc"
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "/usr/lib/cni"
		    conf_dir = "$CRI_DIR/cni"
		    max_conf_num = 1
	EOF
	"$HEZO_SHIM_BIN" install --containerd --config "$conf" --shim "$shim" --no-reload \
		>"$CRI_DIR/install.log" 2>&1 || return 1
	# The shipped Root is the node's; ours lives with this containerd.
	sed -i "s#^\( *\)Root = \"/run/hezo-shim/containerd-runc\"#\1Root = \"$CRI_DIR/hezo-runc\"#" "$conf"
	mkdir -p "$CRI_DIR/cni"
	jq -n --arg n "$CRI_NET" --arg b "$CRI_BRIDGE" --arg s "$CRI_SUBNET" --arg d "$CRI_DIR/ipam" \
		'{cniVersion: "1.0.0", name: $n, plugins: [{type: "bridge", bridge: $b,
		isGateway: true, ipMasq: false, hairpinMode: false,
		ipam: {type: "host-local", dataDir: $d, ranges: [[{subnet: $s}]],
		routes: [{dst: "0.0.0.0/0"}]}}]}' >"$CRI_DIR/cni/10-hezo.conflist"
}

# cri_setup [egress]: how every CRI test begins, after it has sourced common.sh and this file (and
# egress-lib.sh for "egress"): skip without root, the backend, the shim, containerd's CRI (and
# the egress world's tools); a fresh $HEZO_TEST_DIR, removed at exit; with "egress" the test
# world and proxyd (egress-lib.sh); the wrapper (told proxyd's socket) and the docker policy; a
# private containerd on the wrapper (cri_start). Refused starts bail out; cleanups are registered
# before each part starts.
cri_setup()
{
	local egress=${1:-}
	hezo_require_root
	hezo_require_backend
	hezo_require_shim
	cri_require
	if [ "$egress" = egress ]; then
		cri_egress_require
	fi
	[ -e "$HEZO_TEST_DIR" ] && bail_out "$HEZO_TEST_DIR exists already"
	tap_cleanup "rm -rf '$HEZO_TEST_DIR'"
	if [ "$egress" = egress ]; then
		cri_egress_world
	fi
	hezo_make_wrapper
	if [ "$egress" = egress ]; then
		cri_egress_wrapper
	fi
	hezo_write_policy docker
	cri_start "$HEZO_TEST_WRAPPER"
}

# cri_start SHIM: start the private containerd with the runtime "hezo" pointing at SHIM (an
# executable path, e.g. the test wrapper) and import the image. The exit trap undoes it all.
cri_start()
{
	local shim=$1 i
	CRI_DIR=$(mktemp -d /tmp/hezo-cri.XXXXXX) || bail_out "mktemp failed"
	[ -d "$CRI_CNI_CACHE" ] || CRI_CNI_CACHE_MADE=yes
	[ -d /sys/fs/cgroup/memory/kubepods ] || CRI_KUBEPODS_MADE=yes
	tap_cleanup cri_stop
	_cri_config "$shim" || bail_out "cannot write containerd's config: $(cat "$CRI_DIR/install.log")"
	_cri_image "$CRI_DIR/img" || bail_out "cannot build the image"
	# Not holding the caller's descriptors (the engines lock's, when run under flock).
	setsid containerd --config "$CRI_DIR/config.toml" >"$CRI_DIR/containerd.log" 2>&1 </dev/null \
		3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	CRI_PID=$!
	for ((i = 0; i < 120; i++)); do
		cri Version >/dev/null 2>&1 && break
		kill -0 "$CRI_PID" 2>/dev/null || break
		sleep 0.25
	done
	cri Version >/dev/null 2>&1 || bail_out "our containerd did not start: $(tail -n 5 "$CRI_DIR/containerd.log")"
	timeout 120 ctr --address "$CRI_DIR/containerd.sock" -n "$CRI_NS" images import \
		--snapshotter overlayfs "$CRI_DIR/img/image.tar" >"$CRI_DIR/import.log" 2>&1 ||
		bail_out "ctr images import failed: $(cat "$CRI_DIR/import.log")"
	rm -rf "$CRI_DIR/img"
}

# Pods first (their shims outlive containerd), then containerd, leftovers of this run by pid,
# mounts, the bridge, libcni's cache entries, cgroups, files.
cri_stop()
{
	local id p i
	[ -n "$CRI_DIR" ] || return 0
	if [ -n "$CRI_PID" ] && kill -0 "$CRI_PID" 2>/dev/null; then
		for id in $(cri ListPodSandbox 2>/dev/null | jq -r '.items[]?.id'); do
			cri StopPodSandbox "{\"pod_sandbox_id\":\"$id\"}" >/dev/null 2>&1
			cri RemovePodSandbox "{\"pod_sandbox_id\":\"$id\"}" >/dev/null 2>&1
		done
		kill -TERM "$CRI_PID"
		for ((i = 0; i < 40; i++)); do
			kill -0 "$CRI_PID" 2>/dev/null || break
			sleep 0.25
		done
		kill -0 "$CRI_PID" 2>/dev/null && kill -KILL "$CRI_PID"
	fi
	CRI_PID=
	# Shims and containers still running from this run (their command lines name CRI_DIR).
	for p in $(pgrep -f -- "$CRI_DIR"); do
		kill -KILL "$p" 2>/dev/null
	done
	awk -v t="$CRI_DIR" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount -l
	ip link del "$CRI_BRIDGE" 2>/dev/null
	rm -f "$CRI_CNI_CACHE/results/$CRI_NET"-* 2>/dev/null
	if [ -n "$CRI_CNI_CACHE_MADE" ]; then
		rmdir "$CRI_CNI_CACHE/results" "$CRI_CNI_CACHE" 2>/dev/null
	fi
	cri_cgroups_remove
	rm -rf "$CRI_DIR"
	CRI_DIR=
}

# The pod cgroups this run made under /kubepods/besteffort (pod UIDs start with CRI_UID_PREFIX).
CRI_UID_PREFIX=$(printf '%08x' $$)
CRI_KUBEPODS_MADE=
cri_cgroups_remove()
{
	local d
	find /sys/fs/cgroup/*/kubepods/besteffort -depth -type d -path "*/pod$CRI_UID_PREFIX-*" \
		-exec rmdir {} + 2>/dev/null
	[ -n "$CRI_KUBEPODS_MADE" ] || return 0
	for d in /sys/fs/cgroup/*/kubepods; do
		rmdir "$d/besteffort" "$d" 2>/dev/null
	done
}

# cri_uid: a fresh pod UID of this run.
cri_uid()
{
	printf '%s-%04x-4%03x-8%03x-%012x' "$CRI_UID_PREFIX" "$RANDOM" $((RANDOM % 4096)) \
		$((RANDOM % 4096)) $((RANDOM * RANDOM))
}

# cri_pod_config NAME UID NAMESPACE [ANNOTATIONS_JSON]: a PodSandboxConfig as kubelet sends it
# (pod network, container PID namespace, cgroupfs parent under /kubepods/besteffort).
cri_pod_config()
{
	jq -cn --arg name "$1" --arg uid "$2" --arg ns "$3" --argjson ann "${4:-{\}}" \
		--arg logs "$CRI_DIR/logs/$3_$1_$2" '{
		metadata: {name: $name, uid: $uid, namespace: $ns, attempt: 0},
		hostname: $name, log_directory: $logs,
		dns_config: {servers: ["127.0.0.1"]},
		labels: {"io.kubernetes.pod.name": $name, "io.kubernetes.pod.namespace": $ns,
			"io.kubernetes.pod.uid": $uid},
		annotations: ({"kubernetes.io/config.source": "api"} + $ann),
		linux: {cgroup_parent: ("/kubepods/besteffort/pod" + $uid),
			security_context: {namespace_options: {network: "POD", pid: "CONTAINER", ipc: "POD"}}}}'
}

# cri_run_pod HANDLER PODCONFIG: RunPodSandbox; prints the sandbox id.
cri_run_pod()
{
	local out
	mkdir -p "$(jq -r .log_directory <<<"$2")"
	out=$(cri RunPodSandbox "$(jq -cn --argjson c "$2" --arg h "$1" '{config: $c, runtime_handler: $h}')") ||
		return 1
	jq -r .pod_sandbox_id <<<"$out"
}

# cri_container_config NAME COMMAND [EXTRA_JSON]: a ContainerConfig (COMMAND for sh -c), EXTRA
# merged over it (mounts, annotations, resources...).
cri_container_config()
{
	jq -cn --arg name "$1" --arg cmd "$2" --arg img "$CRI_IMAGE" --argjson extra "${3:-{\}}" '{
		metadata: {name: $name, attempt: 0}, image: {image: $img},
		command: ["/bin/sh", "-c", $cmd], log_path: ($name + "/0.log"),
		labels: {"io.kubernetes.container.name": $name},
		linux: {resources: {cpu_shares: 2, oom_score_adj: 1000},
			security_context: {namespace_options: {network: "POD", pid: "CONTAINER", ipc: "POD"}}}
		} * $extra'
}

# cri_create POD_ID PODCONFIG CONTAINERCONFIG: CreateContainer; prints the container id.
cri_create()
{
	local out
	out=$(cri CreateContainer "$(jq -cn --arg p "$1" --argjson s "$2" --argjson c "$3" \
		'{pod_sandbox_id: $p, config: $c, sandbox_config: $s}')") || return 1
	jq -r .container_id <<<"$out"
}

cri_start_container()
{
	cri StartContainer "{\"container_id\":\"$1\"}" >/dev/null
}

# cri_exec ID SCRIPT: ExecSync sh -c SCRIPT (30 s); stdout on stdout, returns its exit code.
cri_exec()
{
	local out rc
	out=$(cri ExecSync "$(jq -cn --arg id "$1" --arg s "$2" '{container_id: $id,
		cmd: ["/bin/sh", "-c", $s], timeout: 30}')") || return 255
	printf '%s' "$(jq -r .stdout <<<"$out")"
	rc=$(jq -r .exit_code <<<"$out")
	return "$rc"
}

# cri_remove_pod ID: StopPodSandbox then RemovePodSandbox (kubelet's order); both must succeed.
cri_remove_pod()
{
	cri StopPodSandbox "{\"pod_sandbox_id\":\"$1\"}" >/dev/null &&
		cri RemovePodSandbox "{\"pod_sandbox_id\":\"$1\"}" >/dev/null
}

# cri_pod_netns ID: the pod's network namespace path (from PodSandboxStatus verbose info).
cri_pod_netns()
{
	cri PodSandboxStatus "{\"pod_sandbox_id\":\"$1\",\"verbose\":true}" |
		jq -r '.info.info | fromjson | .runtimeSpec.linux.namespaces[] | select(.type == "network") | .path'
}

# A jq filter for hezo_write_policy: our containerd's root and state are engine roots, as
# /var/lib/containerd and /run/containerd are on a node (call after cri_start).
cri_policy_filter()
{
	printf '.mounts.engineRoots = ["/var/lib/docker/containers", "/var/lib/containers/storage",
		"/run/containers/storage", "/var/run/containers/storage", "/var/lib/containerd",
		"/run/containerd", "%s/root", "%s/state"]' "$CRI_DIR" "$CRI_DIR"
}

# Timing pod cycles (cycles.sh, cycles-runsc.sh). cri_now_ms: the wall clock in milliseconds.
cri_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# cri_series NAME [ARG...]: CYCLES runs of the caller's `cycle ARG... cyc-NAME-I`; sets MS (time
# per cycle) and FAILED (cycles that returned non-zero).
cri_series()
{
	local name=$1 t0 i
	shift
	FAILED=0
	t0=$(cri_now_ms)
	for ((i = 0; i < CYCLES; i++)); do
		cycle "$@" "cyc-$name-$i" || FAILED=$((FAILED + 1))
	done
	# shellcheck disable=SC2034 # the caller reads it
	MS=$((($(cri_now_ms) - t0) / CYCLES))
}

# cri_ratio A B: A / B with two decimals.
cri_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# cri_leftovers ID: what a pod or container of a runsc handler leaves: runsc processes and waiters
# naming it, runsc state under the shim's root, records, mounts (nothing printed: nothing left).
cri_leftovers()
{
	pgrep -af "runsc.*$1" | cut -c1-160
	pgrep -af "hezo-pod-wait.*$1" | cut -c1-160
	find "$CRI_DIR/hezo-runc" -maxdepth 2 -name "*$1*" 2>/dev/null
	find "$HEZO_TEST_STATE" -name "*$1*" -not -path "$HEZO_TEST_STATE/ended/*" 2>/dev/null
	grep -F "$1" /proc/mounts | cut -d' ' -f1-3
}

# cri_sandbox_pid POD: the pid containerd knows for the pod's sandbox (its verbose status).
cri_sandbox_pid()
{
	cri PodSandboxStatus "{\"pod_sandbox_id\":\"$1\",\"verbose\":true}" | jq -r '.info.info | fromjson | .pid'
}

#!/bin/bash
# Engines: containerd 1.6 drives hezo-shim through its runc v2 shim (BinaryName), the path a
# Kubernetes RuntimeClass takes: `ctr run --runc-binary` on the system containerd, then a private
# containerd loading the CRI runtime handler `hezo-shim install --containerd` writes; and the
# RuntimeClass manifest checked offline with kubectl.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_BACKEND=runc
HEZO_TEST_DIR=${HEZO_ENGINES_DIR:-/run/hezo-engines-containerd.$$}
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/box.sh
. "$here/../lib/box.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"

# The containerd dockerd runs; docker save feeds its image store.
SYS_SOCK=${HEZO_CONTAINERD_SOCKET:-/run/docker/containerd/containerd.sock}
NS=hezo-engines
MANIFEST=$HEZO_SOURCE_DIR/packaging/kubernetes/runtimeclass.yaml
EXAMPLE_POD=$HEZO_SOURCE_DIR/packaging/kubernetes/example-pod.yaml

hezo_require_root
hezo_require_tools ctr containerd jq timeout "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim
[ -S "$SYS_SOCK" ] || hezo_cannot_run "no containerd socket at $SYS_SOCK"
hezo_docker info >/dev/null 2>&1 || hezo_cannot_run "dockerd does not answer (needed for docker save)"

[ -e "$HEZO_TEST_DIR" ] && bail_out "$HEZO_TEST_DIR exists already"
tap_cleanup "rm -rf '$HEZO_TEST_DIR'"
hezo_make_wrapper
hezo_write_policy bundle
WRAPPER=$HEZO_TEST_DIR/hezo-shim-logged
CALLS=$HEZO_TEST_DIR/calls.log
cat >"$WRAPPER" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >>'$CALLS'
exec '$HEZO_TEST_WRAPPER' "\$@"
EOF
chmod 0755 "$WRAPPER"
: >"$CALLS"
MEM=$((2048 * 1048576))
IMG=docker.io/$HEZO_TEST_IMAGE

if ! hezo_docker image inspect "$HEZO_TEST_IMAGE" >/dev/null 2>&1; then
	hezo_image_docker || bail_out "cannot import $HEZO_TEST_IMAGE into docker"
	tap_cleanup "hezo_docker rmi '$HEZO_TEST_IMAGE'"
fi

# c ADDRESS ARGS...: ctr on that containerd in our namespace, never longer than 120 s.
c()
{
	local addr=$1
	shift
	timeout -k 5 120 ctr --address "$addr" -n "$NS" "$@"
}

# ctr_import ADDRESS: make $IMG available in $NS there; the cleanup undoes what it had to add.
ctr_import()
{
	local addr=$1
	if ! ctr --address "$addr" namespaces ls -q 2>/dev/null | grep -qxF "$NS"; then
		tap_cleanup "ctr --address '$addr' namespaces rm '$NS'"
	fi
	if ! c "$addr" images ls -q 2>/dev/null | grep -qxF "$IMG"; then
		tap_cleanup "ctr --address '$addr' -n '$NS' images rm --sync '$IMG'"
		hezo_docker save "$HEZO_TEST_IMAGE" | c "$addr" images import - >/dev/null
	fi
	c "$addr" images ls -q 2>/dev/null | grep -qxF "$IMG"
}

# new_ctr ADDRESS LABEL: sets CID, a fresh container id the exit trap removes.
new_ctr()
{
	CID="hezo-eng-$2-$(hezo_rand)"
	tap_cleanup "ctr --address '$1' -n '$NS' tasks rm -f '$CID'; ctr --address '$1' -n '$NS' containers rm '$CID'"
}

# record_of ID: the shim's record of container ID (STATE_DIR/<root key>/ID.json), if any.
record_of()
{
	find "$HEZO_TEST_STATE" -name "$1.json" 2>/dev/null
}

diag "containerd $(containerd --version 2>&1), runtime $WRAPPER -> $HEZO_SHIM_BIN"

# === ctr run --runc-binary on the system containerd =================================================
ctr_import "$SYS_SOCK" || bail_out "cannot import $IMG into namespace $NS of $SYS_SOCK"

new_ctr "$SYS_SOCK" rm
out=$(c "$SYS_SOCK" run --runc-binary "$WRAPPER" --rm "$IMG" "$CID" sh -c "$HEZO_BOX_PROBE" 2>&1 </dev/null) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[ctr run] exits 0" || diag "$out"
hezo_assert_box "ctr run" "$out"
hezo_assert_box_engine "ctr run" "$out"
hezo_assert_backend "ctr run" "$out"
# ctr's default spec mounts no cgroupfs in the container: the limits are checked from the host.
expect_match "$(grep -F -- "$CID" "$CALLS" | head -n 1)" "--log-format json create .*$CID\$" \
	"[ctr run] containerd's runc shim called hezo-shim create with --log-format json"
expect_eq "$(c "$SYS_SOCK" containers ls -q | grep -cxF "$CID")" 0 "[ctr run] --rm removed the container"

# A privileged container: the stored spec asks for every capability, and `ctr task exec` builds
# the exec's process from it, so exec must be clamped by the shim.
new_ctr "$SYS_SOCK" life
L=$CID
out=$(c "$SYS_SOCK" run -d --privileged --runc-binary "$WRAPPER" "$IMG" "$L" sleep 300 2>&1 </dev/null) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[ctr run -d --privileged] exits 0" || diag "$out"
expect_match "$(c "$SYS_SOCK" tasks ls 2>&1 | awk -v id="$L" '$1 == id { print $3 }')" '^RUNNING$' \
	"[ctr run -d] task is running"
ncaps=$(c "$SYS_SOCK" containers info "$L" 2>/dev/null | jq -r '.Spec.process.capabilities.effective | length')
expect_match "$ncaps" '^[1-9][0-9]*$' "[ctr run -d] containerd's stored spec asks for capabilities ($ncaps)"
expect_ne "$(record_of "$L")" "" "[ctr run -d] the shim recorded the container"
BUNDLE=/run/docker/containerd/daemon/io.containerd.runtime.v2.task/$NS/$L
hezo_assert_spec "ctr run -d" "$BUNDLE/config.json"
cg=$(jq -r '.linux.cgroupsPath // empty' "$BUNDLE/config.json" 2>/dev/null)
diag "container $L cgroupsPath $cg"
hezo_assert_cgroup "ctr run -d" "$cg" "$MEM" 256

out=$(c "$SYS_SOCK" tasks exec --exec-id probe1 "$L" sh -c "$HEZO_BOX_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[ctr task exec] exits 0" || diag "$out"
hezo_assert_box "ctr task exec" "$out"
expect_match "$(grep -F -- "$L" "$CALLS")" '(^| )exec .*--process ' "[ctr task exec] went through the shim's exec"
out=$(c "$SYS_SOCK" tasks exec --exec-id probe2 "$L" sh -c 'echo exec-ok' 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[ctr task exec] a second exec exits 0" || diag "$out"
expect_match "$out" '^exec-ok' "[ctr task exec] its output reaches ctr"

check "[ctr task kill] SIGKILL" c "$SYS_SOCK" tasks kill -s SIGKILL "$L"
for ((i = 0; i < 20; i++)); do
	st=$(c "$SYS_SOCK" tasks ls 2>/dev/null | awk -v id="$L" '$1 == id { print $3 }')
	[ "$st" = STOPPED ] && break
	sleep 0.5
done
expect_eq "$st" STOPPED "[ctr task kill] task is stopped"
check "[ctr task rm] exits 0" c "$SYS_SOCK" tasks rm "$L"
check "[ctr container rm] exits 0" c "$SYS_SOCK" containers rm "$L"
expect_eq "$(record_of "$L")" "" "[ctr rm] the shim's record is gone"
expect_eq "$(hezo_backend_ids "/run/containerd/runc/$NS" | grep -cxF "$L")" 0 "[ctr rm] runc has no container $L"

# A host bind mount is refused with the shim's reason.
new_ctr "$SYS_SOCK" refused
out=$(c "$SYS_SOCK" run --runc-binary "$WRAPPER" --rm --mount type=bind,src=/,dst=/host,options=rbind \
	"$IMG" "$CID" true 2>&1 </dev/null) && rc=0 || rc=$?
diag "[refused] ctr said: $out"
expect_ne "$rc" 0 "[refused] ctr run --mount src=/,dst=/host fails"
expect_match "$out" 'hezo-shim: .*/host.*not under an allowed root' "[refused] ctr shows the shim's reason, naming /host"
expect_eq "$(grep -c 'hezo-shim: ' <<<"$out")" 1 "[refused] the reason is one line"
expect_eq "$(c "$SYS_SOCK" containers ls -q | grep -cxF "$CID")" 0 "[refused] no container left"
expect_eq "$(record_of "$CID")" "" "[refused] no record left"

# === a private containerd with the CRI runtime handler from `hezo-shim install --containerd` =======
T=$(mktemp -d /tmp/hezo-engines-ctrd.XXXXXX) || bail_out "mktemp failed"
CTRD_PID=
# Stop our containerd, then make sure nothing of it stays mounted before removing its files.
stop_ctrd()
{
	local i
	if [ -n "$CTRD_PID" ] && kill -0 "$CTRD_PID" 2>/dev/null; then
		kill -TERM "$CTRD_PID"
		for ((i = 0; i < 40; i++)); do
			kill -0 "$CTRD_PID" 2>/dev/null || break
			sleep 0.25
		done
		kill -0 "$CTRD_PID" 2>/dev/null && kill -KILL "$CTRD_PID"
	fi
	CTRD_PID=
	awk -v t="$T" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount -l
}
tap_cleanup "stop_ctrd; rm -rf '$T'"
CONF=$T/config.toml
SOCK=$T/containerd.sock
containerd config default >"$T/default.toml" 2>/dev/null
cp "$T/default.toml" "$CONF"
out=$("$HEZO_SHIM_BIN" install --containerd --config "$CONF" --shim "$WRAPPER" --no-reload 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[cri] hezo-shim install --containerd on \`containerd config default\` exits 0" || diag "$out"
cp "$CONF" "$T/roundtrip.toml"
out=$("$HEZO_SHIM_BIN" uninstall --containerd --config "$T/roundtrip.toml" 2>&1) && rc=0 || rc=$?
check "[cri] uninstall restores the default config byte for byte" cmp "$T/default.toml" "$T/roundtrip.toml" ||
	diag "$out"
# Everything of this containerd lives under T: root, state, sockets and the runtime's Root.
sed -i -e "s#^root = .*#root = \"$T/root\"#" -e "s#^state = .*#state = \"$T/state\"#" \
	-e "/^\[grpc\]/,/^\[/ s#^  address = .*#  address = \"$SOCK\"#" \
	-e "s#^\( *\)Root = \"/run/hezo-shim/containerd-runc\"#\1Root = \"$T/hezo-runc\"#" "$CONF"
expect_eq "$(grep -c "$T" "$CONF")" 4 "[cri] config relocated under $T (root, state, grpc address, runtime Root)" ||
	diag "$(grep -nE '^(root|state) =|address =|Root =' "$CONF")"

dump=$(timeout 60 containerd --config "$CONF" config dump 2>"$T/dump.err") && rc=0 || rc=$?
expect_eq "$rc" 0 "[cri] containerd --config config dump exits 0" || diag "$(cat "$T/dump.err")"
# The hezo table and its options table, as containerd itself resolved them.
hezo_tbl=$(awk '/^ *\[/ { on = ($0 ~ /runtimes\.hezo(\.options)?\]$/) } on' <<<"$dump")
diag "$hezo_tbl"
expect_match "$hezo_tbl" 'runtime_type = "io\.containerd\.runc\.v2"' "[cri] config dump: runtimes.hezo has runtime_type io.containerd.runc.v2"
expect_match "$hezo_tbl" "BinaryName = \"$WRAPPER\"" "[cri] config dump: runtimes.hezo.options.BinaryName is the shim"
expect_match "$hezo_tbl" "Root = \"$T/hezo-runc\"" "[cri] config dump: runtimes.hezo.options.Root is its own"

setsid containerd --config "$CONF" >"$T/containerd.log" 2>&1 </dev/null &
CTRD_PID=$!
up=no
for ((i = 0; i < 60; i++)); do
	if timeout 5 ctr --address "$SOCK" version >/dev/null 2>&1; then
		up=yes
		break
	fi
	kill -0 "$CTRD_PID" 2>/dev/null || break
	sleep 0.5
done
expect_eq "$up" yes "[cri] our containerd answers on $SOCK" || diag "$(tail -n 20 "$T/containerd.log")"
if [ "$up" != yes ]; then
	stop_ctrd
	bail_out "private containerd did not start"
fi
expect_match "$(timeout 30 ctr --address "$SOCK" plugins ls 2>&1 | awk '$2 == "cri" { print $1, $4 }')" \
	'^io\.containerd\.grpc\.v1 ok$' "[cri] the CRI plugin loaded"
# The CRI plugin prints the configuration it runs with: the handler "hezo" must be in it.
expect_match "$(grep -o 'Runtimes:map\[.*' "$T/containerd.log" | head -n 1)" \
	"hezo:\\{Type:io\\.containerd\\.runc\\.v2 [^}]*Options:map\\[BinaryName:$WRAPPER Root:$T/hezo-runc\\]" \
	"[cri] the CRI plugin runs with handler hezo -> $WRAPPER"
expect_no_match "$(grep 'level=error' "$T/containerd.log")" . "[cri] containerd logged no error"
if command -v crictl >/dev/null 2>&1; then
	skip "[cri] a pod with runtime handler hezo" "crictl is here, but this test does not drive CRI yet"
else
	skip "[cri] a pod with runtime handler hezo" "no CRI client (crictl is not packaged in Debian 12); ctr drives the same runc v2 shim below"
fi

ctr_import "$SOCK" || bail_out "cannot import $IMG into our containerd"
new_ctr "$SOCK" cri
K=$CID
out=$(c "$SOCK" run -d --runtime io.containerd.runc.v2 --runc-binary "$WRAPPER" --runc-root "$T/hezo-runc" \
	"$IMG" "$K" sleep 300 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[cri ctr run] our containerd runs a container with the runc v2 shim" || diag "$out"
rec=$(record_of "$K")
expect_ne "$rec" "" "[cri ctr run] hezo-shim recorded it in HEZO_STATE_DIR"
[ -n "$rec" ] && diag "record: $(cat "$rec")"
expect_eq "$(jq -r '.bundle' "$rec" 2>/dev/null)" "$T/state/io.containerd.runtime.v2.task/$NS/$K" \
	"[cri ctr run] the record's bundle is under our containerd's state"
expect_match "$(grep -F -- "$K" "$CALLS" | head -n 1)" "^--root $T/hezo-runc/$NS .*create " \
	"[cri ctr run] the shim got --root under our own directory (ctr --runc-root)"
out=$(c "$SOCK" tasks exec --exec-id probe "$K" sh -c "$HEZO_BOX_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[cri ctr task exec] exits 0" || diag "$out"
hezo_assert_creds "cri ctr task exec" "$out"
hezo_assert_cgroup "cri ctr run" "$(jq -r '.cgroupsPath // empty' "$rec" 2>/dev/null)" "$MEM" 256
check "[cri] ctr task rm -f" c "$SOCK" tasks rm -f "$K"
check "[cri] ctr container rm" c "$SOCK" containers rm "$K"
expect_eq "$(record_of "$K")" "" "[cri] the shim's record is gone"
c "$SOCK" images rm --sync "$IMG" >/dev/null 2>&1
stop_ctrd
expect_eq "$(pgrep -f -- "$T" | tr '\n' ' ')" "" "[cri] no process of our containerd is left"
expect_eq "$(awk -v t="$T" 'index($2, t) == 1' /proc/mounts)" "" "[cri] nothing is mounted under $T"

# === the RuntimeClass manifest, client side =========================================================
# `kubectl create --dry-run=client` still asks a server for its API list; `label --local` parses
# and prints the object without one. kubectl checks syntax only, so jq checks the RuntimeClass
# fields (node.k8s.io/v1) and that the handler is the runtime name containerd got above.
# shellcheck disable=SC2016
RC_CHECK='
def dns_label: type == "string" and length <= 63 and test("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
def dns_subdomain: type == "string" and length <= 253 and
	test("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
def quantity: (type == "number") or
	(type == "string" and test("^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"));
[ (if .apiVersion != "node.k8s.io/v1" then "apiVersion is not node.k8s.io/v1" else empty end),
  (if .kind != "RuntimeClass" then "kind is not RuntimeClass" else empty end),
  ((keys - ["apiVersion", "kind", "metadata", "handler", "overhead", "scheduling"])[] | "unknown field \(.)"),
  (if (.handler | dns_label) then empty else "handler is not a DNS label" end),
  (if (.metadata.name | dns_subdomain) then empty else "metadata.name is not a DNS subdomain" end),
  (((.overhead // {}) | keys - ["podFixed"])[] | "unknown field overhead.\(.)"),
  ((.overhead.podFixed // {}) | to_entries[] | select(.value | quantity | not) |
	"overhead.podFixed.\(.key) is not a quantity"),
  (((.scheduling // {}) | keys - ["nodeSelector", "tolerations"])[] | "unknown field scheduling.\(.)")
] | .[]'
if command -v kubectl >/dev/null 2>&1; then
	KCFG=$T.kubeconfig
	: >"$KCFG"
	tap_cleanup "rm -f '$KCFG'"
	# kubectl_local FILE: the manifest as kubectl parsed it, as JSON; with an empty kubeconfig.
	kubectl_local()
	{
		KUBECONFIG=$KCFG timeout 60 kubectl label --local -f "$1" hezo.test/checked=yes -o json
	}
	rcj=$(kubectl_local "$MANIFEST" 2>"$T.kerr") && rc=0 || rc=$?
	expect_eq "$rc" 0 "[kubectl] label --local parses $(basename "$MANIFEST")" || diag "$(cat "$T.kerr")"
	rm -f "$T.kerr"
	errs=$(jq -r "$RC_CHECK" <<<"$rcj" 2>&1)
	expect_eq "$errs" "" "[kubectl] the RuntimeClass fields are valid node.k8s.io/v1"
	expect_eq "$(jq -r .handler <<<"$rcj")" hezo "[kubectl] handler is hezo, the runtime containerd loaded above"
	# The checker must be able to fail.
	bad=$(jq '.handlr = .handler | del(.handler) | .apiVersion = "node.k8s.io/v1beta1"' <<<"$rcj")
	expect_match "$(jq -r "$RC_CHECK" <<<"$bad" 2>&1)" 'unknown field handlr' "[kubectl] the field check rejects a misspelt handler"
	printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: x\n handler: [\n' >"$T.bad.yaml"
	check_fails "[kubectl] label --local rejects a manifest that is not YAML" kubectl_local "$T.bad.yaml"
	rm -f "$T.bad.yaml"
	if [ -r "$EXAMPLE_POD" ]; then
		pod=$(kubectl_local "$EXAMPLE_POD" 2>&1)
		expect_eq "$(jq -r '.spec.runtimeClassName' <<<"$pod" 2>&1)" "$(jq -r .metadata.name <<<"$rcj")" \
			"[kubectl] the example pod names the RuntimeClass"
	fi
else
	skip "[kubectl] RuntimeClass manifest checked client-side" "kubectl missing (Debian package kubernetes-client)"
fi

# === nothing left behind ==============================================================================
expect_eq "$(c "$SYS_SOCK" containers ls -q 2>&1 | grep -c '^hezo-eng-')" 0 "no test container left in namespace $NS"
expect_eq "$(find "$HEZO_TEST_STATE" -name '*.json' 2>/dev/null)" "" "no record left in the shim's state directory"
reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done

tap_done

#!/bin/bash
# Integration (red team rt12d pass 4, F4): a namespace that only a THREAD of a host process is in
# is not "empty", and an empty namespace is joined only where engines pin the ones they make for a
# container. Network, IPC, UTS, cgroup and time namespaces are per thread (setns from one thread:
# libnetwork's netns.Do, CNI plugins, LockOSThread), so a host daemon's main thread can sit in
# the host's namespaces while one of its threads serves inside another. Run on HEZO_TEST_BACKEND.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"

hezo_require_root
hezo_require_tools jq runc timeout ip unshare mount umount python3 "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

diag "backend $HEZO_TEST_BACKEND ($(hezo_backend_bin)), shim $HEZO_SHIM_BIN"
mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-nsthread-$HEZO_TEST_BACKEND
WORK=$(mktemp -d "$HEZO_TEST_DIR/nsthread.XXXXXX")
tap_cleanup "rm -rf '$WORK'"
hezo_write_policy bundle
HELPER=$here/ns-thread.py
NS=hezo-test-nsthread-net-$(hezo_rand)
KIND_NS=hezo-test-nsthread-kind-$(hezo_rand)
PORT=$((20000 + $$ % 20000))
SHM_KEY=0x4e535448 # "NSTH"

# new_id NAME: sets ID to a fresh container ID that the exit trap cleans up.
new_id()
{
	ID="hezo-it-nsthread-$1-$(hezo_rand)"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$ID'"
}

# helper NAME ARGS...: start ns-thread.py ARGS... READY in the background, wait for its thread to
# be in place, set HPID and HTID (the process and the thread that is elsewhere).
helper()
{
	local name=$1 i
	shift
	python3 "$HELPER" "$@" "$WORK/$name.ready" >"$WORK/$name.log" 2>&1 &
	tap_cleanup "kill $! 2>/dev/null"
	for ((i = 0; i < 100; i++)); do
		[ -s "$WORK/$name.ready" ] && break
		sleep 0.1
	done
	read -r HPID HTID <"$WORK/$name.ready" 2>/dev/null ||
		bail_out "helper $name did not start: $(cat "$WORK/$name.log")"
}

# ino PATH: the inode of the namespace PATH names.
ino() { stat -L -c %i "$1" 2>/dev/null || echo "<no $1>"; }

# attempt NAME ARGV_JSON JQ_FILTER: `run` a bundle through the shim; rc in RC, stdout in OUT,
# stderr in ERR.
attempt()
{
	local name=$1 argv=$2 filter=$3
	new_id "$name"
	hezo_make_bundle "$WORK/$name" "$ID" "$argv" "$filter" || bail_out "cannot make bundle $name"
	hezo_shim --root "$ROOT" run -b "$WORK/$name" "$ID" >"$WORK/$name.out" 2>"$WORK/$name.err" \
		</dev/null && RC=0 || RC=$?
	OUT=$(cat "$WORK/$name.out")
	ERR=$(cat "$WORK/$name.err")
	hezo_bundle_cleanup "$ROOT" "$ID"
}

# refused NAME REGEX: the run was refused with exactly one line on stderr, matching REGEX.
refused()
{
	expect_ne "$RC" 0 "[$1] refused (non-zero exit)" || diag "stdout: $OUT"
	expect_match "$(wc -l <<<"$ERR"):$ERR" "^1:hezo-shim: config\\.json: $2" "[$1] one line naming the file, the field and why"
}

# setns_filter TYPE PATH: a jq filter naming PATH for the namespace of TYPE.
setns_filter()
{
	printf '.linux.namespaces |= map(if .type == "%s" then .path = "%s" else . end)' "$1" "$2"
}

# --- F4: a host daemon's thread in a named netns, its main thread in the host's ---------------------
ip netns add "$NS" || bail_out "cannot create $NS"
tap_cleanup "ip netns del '$NS'"
ip -n "$NS" link set lo up || bail_out "cannot bring up lo in $NS"
helper net net "/run/netns/$NS" "$PORT"
[ "$(ino "/proc/$HPID/ns/net")" = "$(ino /proc/self/ns/net)" ] &&
	[ "$(ino "/proc/$HPID/task/$HTID/ns/net")" = "$(ino "/run/netns/$NS")" ] ||
	bail_out "the helper is not as planned: leader $(readlink "/proc/$HPID/ns/net"), thread $(readlink "/proc/$HPID/task/$HTID/ns/net")"
diag "daemon $HPID in the host's netns, its thread $HTID in $NS (net:[$(ino "/run/netns/$NS")])"
attempt threadnet '["sh", "-c", "nc -w 3 127.0.0.1 '"$PORT"' </dev/null; echo nc=$?"]' \
	"$(setns_filter network "/run/netns/$NS")"
refused "thread net" "linux\\.namespaces\\[[0-9]+\\] \\(network\\): path /run/netns/$NS is a namespace that processes of no hezo-shim container are in \\(thread $HTID of process $HPID [^)]* is in it\\)\$"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	expect_no_match "$OUT" HOST-DAEMON-THREAD "[thread net] inside, nothing reached the daemon's thread on 127.0.0.1:$PORT"
else
	skip "[thread net] inside, nothing reached the daemon's thread on 127.0.0.1:$PORT" \
		"runsc bundles here run with network none (shared/ENVIRONMENT.md)"
fi

# --- the same for IPC: a thread's own IPC namespace, by /proc/PID/task/TID/ns/ipc --------------------
helper ipc ipc "$SHM_KEY"
[ "$(ino "/proc/$HPID/ns/ipc")" = "$(ino /proc/self/ns/ipc)" ] &&
	[ "$(ino "/proc/$HPID/task/$HTID/ns/ipc")" != "$(ino /proc/self/ns/ipc)" ] ||
	bail_out "the IPC helper is not as planned"
attempt threadipc '["sh", "-c", "cat /proc/sysvipc/shm; true"]' \
	"$(setns_filter ipc "/proc/$HPID/task/$HTID/ns/ipc")"
refused "thread ipc" "linux\\.namespaces\\[[0-9]+\\] \\(ipc\\): path /proc/$HPID/task/$HTID/ns/ipc is a namespace that processes of no hezo-shim container are in \\(thread $HTID of process $HPID [^)]* is in it\\)\$"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	expect_no_match "$OUT" "^ *$((SHM_KEY)) " "[thread ipc] inside, the daemon's shared memory segment is not there"
else
	skip "[thread ipc] inside, the daemon's shared memory segment is not there" \
		"gVisor keeps System V IPC in the Sentry: a host IPC namespace is never seen inside"
fi

# --- empty namespaces pinned where no engine pins a container's ----------------------------------
# As hezo-proxyd's own pins (/run/hezo-proxyd/netns, root 0700): a directory only root may write.
PINS=$WORK/pins
NET_PINS="cni-UUID, netns-UUID or UUID in /run/netns or /var/run/netns, cni-UUID in an engine root's io\\.containerd\\.grpc\\.v1\\.cri/netns"
mkdir -m 0700 "$PINS" || bail_out "cannot make $PINS"
tap_cleanup "umount '$PINS/net0' '$PINS/ipc0'"
touch "$PINS/net0" "$PINS/ipc0" && unshare --net="$PINS/net0" true && unshare --ipc="$PINS/ipc0" true ||
	bail_out "cannot pin namespaces in $PINS"
attempt pinnet '["true"]' "$(setns_filter network "$PINS/net0")"
refused "pinned net" "linux\\.namespaces\\[[0-9]+\\] \\(network\\): path $PINS/net0: no process is in this namespace, and it is not a pin an engine makes for a container \\($NET_PINS\\)\$"
attempt pinipc '["true"]' "$(setns_filter ipc "$PINS/ipc0")"
refused "pinned ipc" "linux\\.namespaces\\[[0-9]+\\] \\(ipc\\): path $PINS/ipc0: no process is in this namespace, and it is not a pin an engine makes for a container \\(UUID in /var/run/ipcns\\)\$"
# containerd's CRI form and name, but in a directory that is no engine root (mounts.engineRoots).
CRI_LIKE=$WORK/io.containerd.grpc.v1.cri/netns
CRI_PIN=cni-$(cat /proc/sys/kernel/random/uuid)
tap_cleanup "umount '$CRI_LIKE/$CRI_PIN'"
mkdir -p "$CRI_LIKE" && touch "$CRI_LIKE/$CRI_PIN" && unshare --net="$CRI_LIKE/$CRI_PIN" true ||
	bail_out "cannot pin a namespace in $CRI_LIKE"
attempt crilike '["true"]' "$(setns_filter network "$CRI_LIKE/$CRI_PIN")"
refused "CRI look-alike" "linux\\.namespaces\\[[0-9]+\\] \\(network\\): path $CRI_LIKE/$CRI_PIN: no process is in this namespace, and it is not a pin an engine makes for a container \\($NET_PINS\\)\$"
# An admin's own empty pin in ip-netns's directory (`ip netns add vpn`): not a name an engine gives
# the pins it makes for a container (red team pass 7 left this; the lead's follow-up).
ADMIN_PIN=hezo-test-admin-pin-$(hezo_rand)
ip netns add "$ADMIN_PIN" || bail_out "cannot create $ADMIN_PIN"
tap_cleanup "ip netns del '$ADMIN_PIN'"
attempt adminpin '["true"]' "$(setns_filter network "/run/netns/$ADMIN_PIN")"
refused "admin pin" "linux\\.namespaces\\[[0-9]+\\] \\(network\\): path /run/netns/$ADMIN_PIN: no process is in this namespace, and it is not a pin an engine makes for a container \\($NET_PINS\\)\$"

# --- a pin another project's container was handed and left (red team pass 6, F1) ------------------
# CNI, podman and CRI-O leave a pod's pinned netns in place while its containers are stopped; the
# pin stays the stopped container's project's for as long as the shim records that container.
# Named as containerd CRI names the pins it makes (cni-UUID).
PIN=cni-$(cat /proc/sys/kernel/random/uuid)
ip netns add "$PIN" || bail_out "cannot create $PIN"
tap_cleanup "ip netns del '$PIN'"
PROJ=$WORK/projects
mkdir -p "$PROJ" && echo '{}' >"$PROJ/alpha.json" && echo '{}' >"$PROJ/beta.json"
jq --arg d "$PROJ" '.projectsDir = $d' "$HEZO_TEST_POLICY" >"$WORK/policy-projects.json" ||
	bail_out "cannot write the projects policy"
# pin_create NAME PROJECT: create (and start) a container of PROJECT handed the pin; rc in RC.
pin_create()
{
	new_id "$1"
	hezo_make_bundle "$WORK/$1" "$ID" '["true"]' "$(setns_filter network "/run/netns/$PIN")" ||
		bail_out "cannot make bundle $1"
	HEZO_TEST_POLICY=$WORK/policy-projects.json hezo_shim --hezo-project "$2" --root "$ROOT" \
		create -b "$WORK/$1" "$ID" > >(cat >"$WORK/$1.out") 2> >(cat >"$WORK/$1.err") </dev/null &&
		RC=0 || RC=$?
	# Pipes (runc hands stdio on); a refusal leaves no box holding them: its copy is waited for.
	[ "$RC" = 0 ] || wait "$!" 2>/dev/null
	ERR=$(cat "$WORK/$1.err")
	OUT=""
}
pin_create pinalpha alpha
ALPHA=$ID
expect_eq "$RC" 0 "[pin] a container of project alpha is handed the empty pin" || diag "$ERR"
hezo_shim --root "$ROOT" start "$ALPHA" >/dev/null 2>&1
for ((i = 0; i < 50; i++)); do
	[ "$(hezo_backend --root "$ROOT" state "$ALPHA" 2>/dev/null | jq -r .status)" = stopped ] && break
	sleep 0.1
done
pin_create pinbeta beta
refused "pin" "linux\\.namespaces\\[[0-9]+\\] \\(network\\): path /run/netns/$PIN: no process is in it, but container $ALPHA of project alpha was handed it and is still recorded; this container's project is beta\$"
expect_eq "$(hezo_backend_ids "$ROOT" | grep -cxF "$ID")" 0 "[pin] no container of beta's was made"
hezo_bundle_cleanup "$ROOT" "$ID"
pin_create pinalpha2 alpha
expect_eq "$RC" 0 "[pin] a second container of alpha is handed alpha's pin" || diag "$ERR"
hezo_bundle_cleanup "$ROOT" "$ID"

# --- the pin goes, and the kernel gives its inode to the next namespace (red team pass 8, F1) ----
# nsfs numbers come from an allocator that hands out the lowest free one: the next namespace made
# anywhere gets the gone pin's. alpha's stopped container still records (dev, ino); a claim holds
# only for the path it was handed, and never makes an empty namespace elsewhere joinable.
PIN_INO=$(ino "/run/netns/$PIN")
ip netns del "$PIN"
# reuse_ino FILE: pin new empty network namespaces at FILE until one has the gone pin's inode.
reuse_ino()
{
	for _ in $(seq 50); do
		touch "$1" && unshare --net="$1" true || return 1
		[ "$(ino "$1")" = "$PIN_INO" ] && return 0
		umount "$1" && rm -f "$1" || return 1
		sleep 0.2
	done
	return 1
}
# A root service's private pin (a 0700 directory only root writes): refused for alpha as before.
tap_cleanup "umount '$PINS/reused' 2>/dev/null; rm -f '$PINS/reused'"
if reuse_ino "$PINS/reused"; then
	pin_path=$PINS/reused
	new_id pinreuse
	hezo_make_bundle "$WORK/pinreuse" "$ID" '["true"]' "$(setns_filter network "$pin_path")" ||
		bail_out "cannot make bundle pinreuse"
	HEZO_TEST_POLICY=$WORK/policy-projects.json hezo_shim --hezo-project alpha --root "$ROOT" \
		run -b "$WORK/pinreuse" "$ID" >"$WORK/pinreuse.out" 2>"$WORK/pinreuse.err" </dev/null && RC=0 || RC=$?
	ERR=$(cat "$WORK/pinreuse.err")
	OUT=""
	refused "inode reused, private pin" "linux\\.namespaces\\[[0-9]+\\] \\(network\\): path $PINS/reused: no process is in this namespace, and it is not a pin an engine makes for a container \\($NET_PINS\\)\$"
	hezo_bundle_cleanup "$ROOT" "$ID"
	umount "$PINS/reused" && rm -f "$PINS/reused"
else
	skip "[inode reused, private pin] refused" "no namespace made here got inode $PIN_INO back"
	skip "[inode reused, private pin] one line naming the field and why" "as above"
fi
# An engine's new pin (another name) that got the number: beta's pod is not refused for alpha's.
PIN2=cni-$(cat /proc/sys/kernel/random/uuid)
tap_cleanup "ip netns del '$PIN2' 2>/dev/null"
if reuse_ino "/run/netns/$PIN2"; then
	PIN_SAVED=$PIN
	PIN=$PIN2
	pin_create pinreuse2 beta
	PIN=$PIN_SAVED
	expect_eq "$RC" 0 "[inode reused, engine pin] beta's container is handed a new pin that got alpha's gone pin's inode" || diag "$ERR"
	hezo_bundle_cleanup "$ROOT" "$ID"
else
	skip "[inode reused, engine pin] beta's container is handed a new pin that got alpha's gone pin's inode" \
		"no namespace made here got inode $PIN_INO back"
fi
hezo_bundle_cleanup "$ROOT" "$ALPHA"

# --- a runc box in a runsc container's host-side namespace (red team pass 6, F4) ------------------
# The sandbox's host processes (sentry, gofer) sit in the container's cgroup; their pid namespace
# holds a procfs of the host's pids and is runsc's own, never the workload's.
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	new_id gofer
	GOFER=$ID
	hezo_make_bundle "$WORK/gofer" "$GOFER" '["sleep", "600"]' || bail_out "cannot make bundle gofer"
	hezo_shim --root "$ROOT" create -b "$WORK/gofer" "$GOFER" >/dev/null 2> >(cat >"$WORK/gofer.err") </dev/null ||
		bail_out "cannot create the runsc container: $(cat "$WORK/gofer.err")"
	GPID=
	for p in $(cat "/sys/fs/cgroup/pids/hezo-test/$GOFER/cgroup.procs" 2>/dev/null); do
		[ "$(ino "/proc/$p/ns/pid")" != "$(ino /proc/self/ns/pid)" ] && { GPID=$p; break; }
	done
	[ -n "$GPID" ] || bail_out "no host-side process of $GOFER in a pid namespace of its own"
	new_id gofer-join
	hezo_make_bundle "$WORK/gofer-join" "$ID" '["true"]' \
		"$(setns_filter pid "/proc/$GPID/ns/pid") | .annotations[\"org.hezo.backend\"] = \"runc\"" ||
		bail_out "cannot make bundle gofer-join"
	hezo_shim --root "$ROOT" run -b "$WORK/gofer-join" "$ID" >"$WORK/gofer-join.out" 2>"$WORK/gofer-join.err" \
		</dev/null && RC=0 || RC=$?
	OUT=$(cat "$WORK/gofer-join.out")
	ERR=$(cat "$WORK/gofer-join.err")
	refused "runsc host-side pid" "linux\\.namespaces\\[[0-9]+\\] \\(pid\\): path /proc/$GPID/ns/pid: it is runsc's own pid namespace for container $GOFER on the host \\(only a runsc container's network namespace is the workload's\\)\$"
	hezo_bundle_cleanup "$ROOT" "$ID"
	hezo_bundle_cleanup "$ROOT" "$GOFER"
else
	skip "[runsc host-side pid] refused (non-zero exit)" "a runsc container's host side: the runsc run"
	skip "[runsc host-side pid] one line naming the field and why" "a runsc container's host side: the runsc run"
fi

# --- one pin, two projects queued together (red team pass 10, note to H1) ---------------------
# The pin's claims are read when a create is judged; a create that then waits for an admission
# slot must be judged again once it holds the records lock, or two projects' creates queued side
# by side each see the pin unclaimed and share one network namespace.
WSTATE=$WORK/state-wait
PIN3=cni-$(cat /proc/sys/kernel/random/uuid)
ip netns add "$PIN3" || bail_out "cannot create $PIN3"
tap_cleanup "ip netns del '$PIN3' 2>/dev/null"
jq '.admission = {maxActive: 2, wait: 30}' "$WORK/policy-projects.json" >"$WORK/policy-wait.json" ||
	bail_out "cannot write the admission policy"
# waited PROJECT ARGS...: the shim with the admission policy and its own state directory.
waited()
{
	local proj=$1
	shift
	HEZO_TEST_STATE=$WSTATE HEZO_TEST_POLICY=$WORK/policy-wait.json hezo_shim --hezo-project "$proj" "$@"
}
hezo_fill_slots "$ROOT" "$WSTATE" "$WORK" hezo-it-nsthread waited alpha ||
	bail_out "cannot create the filler boxes"
for who in alpha beta; do
	new_id "wait$who"
	tap_cleanup "HEZO_TEST_STATE='$WSTATE' hezo_bundle_cleanup '$ROOT' '$ID'"
	hezo_make_bundle "$WORK/wait$who" "$ID" '["sleep", "600"]' \
		"$(setns_filter network "/run/netns/$PIN3")" || bail_out "cannot make bundle wait$who"
	printf -v "WAIT_${who^^}" %s "$ID"
done
waited alpha --root "$ROOT" create -b "$WORK/waitalpha" "$WAIT_ALPHA" </dev/null >/dev/null \
	2> >(cat >"$WORK/waitalpha.err") &
APID=$!
sleep 1
waited beta --root "$ROOT" create -b "$WORK/waitbeta" "$WAIT_BETA" </dev/null >/dev/null \
	2> >(cat >"$WORK/waitbeta.err") &
BPID=$!
sleep 1
for f in "${FILLERS[@]}"; do hezo_backend --root "$ROOT" delete --force "$f" >/dev/null 2>&1; done
wait "$APID" && RC=0 || RC=$?
expect_eq "$RC" 0 "[pin after the wait] alpha's box is made once the fillers go" ||
	diag "$(cat "$WORK/waitalpha.err")"
wait "$BPID" && RC=0 || RC=$?
sleep 0.5
ERR=$(cat "$WORK/waitbeta.err")
expect_ne "$RC" 0 "[pin after the wait] beta's box, queued beside it, is refused"
expect_match "$ERR" "path /run/netns/$PIN3: .*container $WAIT_ALPHA('s,)? of project alpha" \
	"[pin after the wait] ... for the pin alpha's box now holds"
expect_eq "$(hezo_backend_status "$ROOT" "$WAIT_BETA")" absent "[pin after the wait] no box of beta's"
HEZO_TEST_STATE=$WSTATE hezo_bundle_cleanup "$ROOT" "$WAIT_ALPHA"
HEZO_TEST_STATE=$WSTATE hezo_bundle_cleanup "$ROOT" "$WAIT_BETA"
ip netns del "$PIN3"

# --- a namespace of another kind than the entry's type -------------------------------------------
touch "/run/netns/$KIND_NS" && tap_cleanup "rm -f '/run/netns/$KIND_NS'" &&
	unshare --ipc="/run/netns/$KIND_NS" true && tap_cleanup "umount '/run/netns/$KIND_NS'" ||
	bail_out "cannot pin an IPC namespace at /run/netns/$KIND_NS"
attempt kind '["true"]' "$(setns_filter network "/run/netns/$KIND_NS")"
expect_match "$(wc -l <<<"$ERR"):$ERR" "^1:hezo-shim: config.json: linux\\.namespaces\\[[0-9]+\\] \\(network\\): path /run/netns/$KIND_NS is a namespace of kind ipc, not network\$" \
	"[kind] an IPC namespace named as the network one is refused in one line"

# --- a path that is no namespace: judged without opening it (a device could act on an open) --------
mkfifo -m 0600 "$WORK/fifo" || bail_out "cannot make a FIFO"
HEZO_SHIM_TIMEOUT=20 attempt fifo '["true"]' "$(setns_filter network "$WORK/fifo")"
expect_match "$RC:$(wc -l <<<"$ERR"):$ERR" "^[1-9][0-9]*:1:hezo-shim: config.json: linux\\.namespaces\\[[0-9]+\\] \\(network\\): path $WORK/fifo is not a namespace\$" \
	"[fifo] a FIFO named as a namespace is refused at the check, in one line"

tap_done

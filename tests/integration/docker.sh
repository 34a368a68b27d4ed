#!/bin/bash
# Integration: Docker end to end. hezo-shim registered as runtime hezo-test-docker-BACKEND in
# daemon.json, the backend HEZO_TEST_BACKEND chosen by the test policy; no hardening flag given by
# the user, and the privileged ones must not open the box.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/box.sh
. "$here/../lib/box.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"

hezo_require_root
hezo_require_tools jq script timeout dockerd "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
hezo_image_docker || bail_out "cannot import $HEZO_TEST_IMAGE"
# Another test may have broken dockerd's default bridge (see hezo_docker_bridge_repair).
out=$(hezo_docker_bridge_repair 2>&1) || bail_out "docker0 is missing and cannot be recreated: $out"
[ -n "$out" ] && diag "$out"
IMG=$HEZO_TEST_IMAGE
RT=hezo-test-docker-$HEZO_TEST_BACKEND
# dockerd hands every runtime the same --root.
DROOT=/run/docker/runtime-runc/moby
MIB=1048576
MEM=$((2048 * MIB))

hezo_make_wrapper
rm -rf "${HEZO_TEST_SANITIZER_DIR:?}"/*
hezo_write_policy docker
hezo_docker_register_runtime "$RT" "$HEZO_TEST_WRAPPER" || bail_out "cannot register runtime $RT"
diag "backend $HEZO_TEST_BACKEND, runtime $RT -> $HEZO_TEST_WRAPPER -> $HEZO_SHIM_BIN"

NAMES=()
# new_name LABEL: sets NAME to a fresh container name that the exit trap removes.
new_name()
{
	NAME="hezo-it-$1-$(hezo_rand)"
	NAMES+=("$NAME")
	tap_cleanup "hezo_docker rm -f '$NAME'"
}

# drun LABEL [DOCKER RUN OPTIONS...]: run the probe in a fresh container; sets OUT and RC.
drun()
{
	local label=$1
	shift
	new_name "$label"
	OUT=$(timeout -k 5 120 "$HEZO_DOCKER" run --rm --runtime="$RT" --name "$NAME" "$@" "$IMG" \
		sh -c "$HEZO_BOX_PROBE" 2>&1 </dev/null) && RC=0 || RC=$?
}

# container_cgroup NAME: its cgroupsPath, as the backend got it.
container_cgroup()
{
	hezo_docker_cgroups_path "$1" 2>/dev/null || echo "<no cgroupsPath for $1>"
}

# --- docker info --------------------------------------------------------------------------------
expect_match "$(hezo_docker info --format '{{json .Runtimes}}' 2>&1)" "\"$RT\"" "docker info lists runtime $RT"
expect_match "$(jq -r --arg n "$RT" '.runtimes[$n].path' "$HEZO_DAEMON_JSON")" "^$HEZO_TEST_WRAPPER\$" \
	"daemon.json has the runtime"

# --- the box with no hardening flags --------------------------------------------------------------
drun plain
expect_eq "$RC" 0 "[plain] docker run exits 0" || diag "$OUT"
hezo_assert_box plain "$OUT"
hezo_assert_box_engine plain "$OUT"
hezo_assert_backend plain "$OUT"
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	skip "[plain] pids.max inside is the policy's" "gVisor mounts no cgroupfs; checked from the host below"
else
	expect_eq "$(hezo_probe_get "$OUT" pidsmax)" "$(hezo_expected_pids 256)" "[plain] pids.max inside is the policy's"
fi

# --- privileged options do not open it ----------------------------------------------------------------
for opts in "--privileged" "--cap-add ALL" "--security-opt seccomp=unconfined" \
	"--privileged --cap-add ALL --security-opt seccomp=unconfined --security-opt apparmor=unconfined"; do
	label=${opts//--/}
	label=${label// /,}
	# shellcheck disable=SC2086 # the options are meant to split
	drun "flags" $opts
	expect_eq "$RC" 0 "[$label] docker run exits 0" || diag "$OUT"
	hezo_assert_box "$label" "$OUT"
	hezo_assert_box_engine "$label" "$OUT"
done

# --- memory: the stricter wins ---------------------------------------------------------------------
for req in 8g 512m; do
	new_name "mem$req"
	out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$NAME" --memory "$req" "$IMG" sleep 600 2>&1) &&
		rc=0 || rc=$?
	expect_eq "$rc" 0 "[--memory $req] docker run -d exits 0" || diag "$out"
	want=$MEM
	[ "$req" = 512m ] && want=$((512 * MIB))
	hezo_assert_cgroup "--memory $req" "$(container_cgroup "$NAME")" "$want"
	hezo_docker rm -f "$NAME" >/dev/null 2>&1
done

# --- host mounts are refused with the shim's reason ----------------------------------------------------
for vol in "/:/host" "/var/run/docker.sock:/s" "/var/lib/docker/containers:/dev/shm"; do
	new_name refused
	out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT" --name "$NAME" -v "$vol" "$IMG" true 2>&1 </dev/null) &&
		rc=0 || rc=$?
	expect_ne "$rc" 0 "[-v $vol] docker run fails"
	expect_match "$out" 'hezo-shim: ' "[-v $vol] docker run prints the shim's reason"
	if [ "$vol" = "/:/host" ]; then
		expect_match "$out" 'hezo-shim: .*/host' "[-v $vol] the reason names the mount"
	elif [ "${vol#*:}" = /dev/shm ]; then
		# Every container's config.v2.json, hostconfig.json and logs, read-write.
		expect_match "$out" "hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/dev/shm\\): bind source /var/lib/docker/containers is in an engine's state" \
			"[-v $vol] the reason names the mount and the engine's state"
	else
		expect_match "$out" 'hezo-shim: .*(docker\.sock|[" ]/s([" :,]|$))' "[-v $vol] the reason names the mount"
	fi
	expect_eq "$(grep -c 'hezo-shim: ' <<<"$out")" 1 "[-v $vol] the reason is one line"
	sleep 1
	expect_eq "$(hezo_docker ps -aq --filter "name=^$NAME\$")" "" "[-v $vol] no container left"
done

# --- kernel filesystems and limits -----------------------------------------------------------------------
# A plain run: each kernel filesystem once, /sys read-only, core_pattern closed to writing.
new_name mounts
OUT=$(timeout -k 5 120 "$HEZO_DOCKER" run --rm --runtime="$RT" --name "$NAME" "$IMG" \
	sh -c "$HEZO_MOUNT_PROBE" 2>&1 </dev/null) && RC=0 || RC=$?
expect_eq "$RC" 0 "[mounts] docker run exits 0" || diag "$OUT"
expect_eq "$(hezo_probe_get "$OUT" procmounts)" 1 "[mounts] inside: one proc mount"
expect_eq "$(hezo_probe_get "$OUT" sysfsmounts)" 1 "[mounts] inside: one sysfs mount"
expect_match "$(hezo_probe_get "$OUT" sysopts)" '^ro(,|$)' "[mounts] inside: /sys is read-only"
expect_ne "$(hezo_probe_get "$OUT" corepattern)" rw "[mounts] inside: core_pattern cannot be opened for writing"

# --ulimit rtprio=99 --ulimit nice=40 --oom-score-adj=-1000: clamped in what the backend got.
new_name limits
out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$NAME" --ulimit rtprio=99 --ulimit nice=40 \
	--oom-score-adj=-1000 "$IMG" sleep 600 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[limits] docker run -d --ulimit rtprio=99 --oom-score-adj=-1000 exits 0" || diag "$out"
cfg=$(hezo_docker_bundle "$NAME" 2>/dev/null)/config.json
expect_eq "$(jq -c '[.process.rlimits[] | select(.type == "RLIMIT_RTPRIO" or .type == "RLIMIT_NICE")
	| [.type, .hard, .soft]] | sort' "$cfg" 2>&1)" '[["RLIMIT_NICE",0,0],["RLIMIT_RTPRIO",0,0]]' \
	"[limits] saved config.json: RTPRIO and NICE clamped to 0"
expect_eq "$(jq -r '.process.oomScoreAdj' "$cfg" 2>&1)" 0 "[limits] saved config.json: oomScoreAdj 0"
out=$(timeout 60 "$HEZO_DOCKER" exec "$NAME" sh -c "$HEZO_MOUNT_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[limits] docker exec exits 0" || diag "$out"
expect_eq "$(hezo_probe_get "$out" rtprio)" 0,0 "[limits] inside: RLIMIT_RTPRIO 0,0"
expect_eq "$(hezo_probe_get "$out" nicelimit)" 0,0 "[limits] inside: RLIMIT_NICE 0,0"
expect_eq "$(hezo_probe_get "$out" oomscoreadj)" 0 "[limits] inside: oom_score_adj 0"
hezo_docker rm -f "$NAME" >/dev/null 2>&1

# --- sharing a namespace between two hezo containers --------------------------------------------------
# The joiner gets the owner's hosts, resolv.conf and hostname (network) and shm (ipc).
new_name owner
X=$NAME
out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$X" --ipc=shareable "$IMG" sleep 600 2>&1) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[share] docker run -d --ipc=shareable exits 0" || diag "$out"
for share in "--network=container:$X" "--ipc=container:$X" "--network=container:$X --ipc=container:$X"; do
	label="share ${share//:$X/:X}"
	new_name joiner
	# shellcheck disable=SC2086 # the options are meant to split
	out=$(timeout -k 5 120 "$HEZO_DOCKER" run --rm --runtime="$RT" --name "$NAME" $share "$IMG" \
		sh -c 'cat /etc/hostname >/dev/null && echo x >/dev/shm/hezo-probe && echo joined=yes' 2>&1 </dev/null) &&
		rc=0 || rc=$?
	expect_eq "$rc" 0 "[$label] docker run exits 0" || diag "$out"
	expect_match "$out" '^joined=yes' "[$label] the joiner runs with the owner's files"
done
hezo_docker rm -f "$X" >/dev/null 2>&1

# --- a running container: exec, top, logs, update, pause, stop ----------------------------------------
new_name life
C=$NAME
out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$C" "$IMG" \
	sh -c 'echo hello-from-the-box; exec sleep 600' 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[life] docker run -d exits 0" || diag "$out"
CID=$(hezo_docker inspect -f '{{.Id}}' "$C" 2>/dev/null)
cg=$(container_cgroup "$C")
diag "container $C id $CID cgroup $cg"
hezo_assert_cgroup life "$cg" "$MEM"
hezo_assert_spec life "$(hezo_docker_bundle "$C")/config.json"

# hezo-shim inspect: the box as applied, found by Docker's short id, limits read live.
out=$(hezo_shim inspect "${CID:0:12}" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[inspect] hezo-shim inspect SHORT-ID exits 0" || diag "$out"
expect_eq "$(jq -r .id <<<"$out" 2>&1)" "$CID" "[inspect] finds the container by its short id"
expect_eq "$(jq -r .backend <<<"$out" 2>&1)" "$HEZO_TEST_BACKEND" "[inspect] names the backend"
expect_eq "$(jq -r '.live["pids.max"]' <<<"$out" 2>&1)" "$(hezo_expected_pids)" \
	"[inspect] live pids.max"
expect_eq "$(jq -r '.live["memory.memsw.limit_in_bytes"]' <<<"$out" 2>&1)" \
	"$(jq -r '.live["memory.limit_in_bytes"]' <<<"$out" 2>&1)" "[inspect] live: no swap"
expect_eq "$(jq -c '.applied.capabilities.bounding' <<<"$out" 2>&1)" "[]" \
	"[inspect] applied: no bounding capabilities"
expect_eq "$(jq -r '.applied.seccomp.defaultAction' <<<"$out" 2>&1)" "SCMP_ACT_ERRNO" \
	"[inspect] applied: a seccomp profile"
out=$(hezo_shim inspect no-such-container 2>&1) && rc=0 || rc=$?
expect_ne "$rc" 0 "[inspect] an unknown container fails"
expect_match "$out" '^hezo-shim: no container "no-such-container"' "[inspect] and says so in one line"

out=$(timeout 60 "$HEZO_DOCKER" exec "$C" sh -c "$HEZO_BOX_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[exec] docker exec exits 0" || diag "$out"
hezo_assert_box exec "$out"

out=$(timeout 60 "$HEZO_DOCKER" exec --privileged "$C" sh -c "$HEZO_BOX_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[exec --privileged] docker exec exits 0" || diag "$out"
hezo_assert_creds "exec --privileged" "$out"

out=$(timeout 60 "$HEZO_DOCKER" exec -t "$C" sh -c '[ -t 1 ] && echo isatty=yes; grep CapEff /proc/self/status' 2>&1 </dev/null) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[exec -t] docker exec -t exits 0" || diag "$out"
expect_match "$out" 'isatty=yes' "[exec -t] the process has a tty"
expect_match "$out" 'CapEff:[[:space:]]+0{16}' "[exec -t] CapEff is 0"

out=$(timeout 60 script -qec "$HEZO_DOCKER exec -it $C sh -c '[ -t 1 ] && echo isatty=yes; grep CapEff /proc/self/status'" /dev/null \
	2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[exec -it] docker exec -it under script exits 0" || diag "$out"
expect_match "$out" 'isatty=yes' "[exec -it] the process has a tty"
expect_match "$out" 'CapEff:[[:space:]]+0{16}' "[exec -it] CapEff is 0"

out=$(timeout 60 "$HEZO_DOCKER" top "$C" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[top] docker top exits 0" || diag "$out"
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	# gVisor's workload processes are not host processes: docker top lists the sandbox's own
	# host processes instead (docs/runsc.md).
	expect_match "$out" 'runsc' "[top] shows the sandbox's host processes (runsc)"
else
	expect_match "$out" 'sleep 600' "[top] shows the container's process"
fi

out=$(timeout 60 "$HEZO_DOCKER" logs "$C" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[logs] docker logs exits 0"
expect_match "$out" '^hello-from-the-box$' "[logs] shows the container's output"

# Without --memory-swap docker itself refuses to raise memory over the swap limit it recorded.
out=$(timeout 60 "$HEZO_DOCKER" update --memory 8g --memory-swap 8g "$C" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[update 8g] docker update exits 0" || diag "$out"
expect_eq "$(hezo_read "$(hezo_cgroup_dir memory "$cg")/memory.limit_in_bytes")" "$MEM" \
	"[update 8g] memory.limit_in_bytes still 2 GiB"
expect_eq "$(hezo_read "$(hezo_cgroup_dir memory "$cg")/memory.memsw.limit_in_bytes")" "$MEM" \
	"[update 8g] memory.memsw.limit_in_bytes still 2 GiB"
out=$(timeout 60 "$HEZO_DOCKER" update --memory 256m --memory-swap 256m "$C" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[update 256m] docker update exits 0" || diag "$out"
expect_eq "$(hezo_read "$(hezo_cgroup_dir memory "$cg")/memory.limit_in_bytes")" $((256 * MIB)) \
	"[update 256m] a tighter limit is applied"
expect_match "$(hezo_docker inspect -f '{{.State.Status}}' "$C" 2>&1)" '^running$' "[update] container still running"

check "[pause] docker pause" timeout 60 "$HEZO_DOCKER" pause "$C"
expect_eq "$(hezo_docker inspect -f '{{.State.Status}}' "$C" 2>&1)" paused "[pause] status is paused"
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	skip "[pause] freezer cgroup is FROZEN" "runsc pauses inside the sandbox, not through the freezer cgroup"
else
	expect_eq "$(hezo_read "$(hezo_cgroup_dir freezer "$cg")/freezer.state")" FROZEN "[pause] freezer cgroup is FROZEN"
fi
check "[unpause] docker unpause" timeout 60 "$HEZO_DOCKER" unpause "$C"
expect_eq "$(hezo_docker inspect -f '{{.State.Status}}' "$C" 2>&1)" running "[unpause] status is running"

# A restart is a create of the same ID in the same cgroup (/docker/ID): its own earlier record
# and a leaf runc may leave are this container's, not another's (red team pass 8, F2 rule).
check "[restart] docker restart" timeout 60 "$HEZO_DOCKER" restart -t 2 "$C"
expect_eq "$(hezo_docker inspect -f '{{.State.Status}}' "$C" 2>&1)" running "[restart] status is running"
expect_eq "$(container_cgroup "$C")" "$cg" "[restart] in the same cgroup"
check "[restart] docker stop" timeout 60 "$HEZO_DOCKER" stop -t 2 "$C"
check "[restart] docker start of the stopped container" timeout 60 "$HEZO_DOCKER" start "$C"
expect_eq "$(hezo_docker inspect -f '{{.State.Status}}' "$C" 2>&1)" running "[restart] running again after start"

check "[stop] docker stop" timeout 60 "$HEZO_DOCKER" stop -t 2 "$C"
expect_eq "$(hezo_docker inspect -f '{{.State.Status}}' "$C" 2>&1)" exited "[stop] status is exited"
check "[stop] docker rm" hezo_docker rm "$C"
expect_eq "$(hezo_backend_ids "$DROOT" | grep -cxF "$CID")" 0 "[stop] backend has no container $CID"

# --- rm -f of a running container ------------------------------------------------------------------
new_name rmf
out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$NAME" "$IMG" sleep 600 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[rm -f] docker run -d exits 0" || diag "$out"
CID=$(hezo_docker inspect -f '{{.Id}}' "$NAME" 2>/dev/null)
check "[rm -f] docker rm -f" timeout 60 "$HEZO_DOCKER" rm -f "$NAME"
expect_eq "$(hezo_docker ps -aq --filter "name=^$NAME\$")" "" "[rm -f] container gone"
expect_eq "$(hezo_backend_ids "$DROOT" | grep -cxF "$CID")" 0 "[rm -f] backend has no container $CID"

# --- Docker's own hook, and the namespaces of another hezo container ---------------------------------
# ns_ino PID KIND: the namespace inode of a host process, from the host.
ns_ino() { stat -L -c %i "/proc/$1/ns/$2" 2>/dev/null || echo "<no /proc/$1/ns/$2>"; }
new_name nsa
NA=$NAME
out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$RT" --ipc=shareable --name "$NA" "$IMG" sleep 600 2>&1) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[ns] docker run -d on the default bridge exits 0" || diag "$out"
b=$(hezo_docker_bundle "$NA" 2>/dev/null)
expect_eq "$(jq -r '[.hooks.prestart[]? | select(.args[0] == "libnetwork-setkey")] | length' "$b/config.json" 2>&1)" 1 \
	"[ns] Docker's libnetwork-setkey prestart hook is kept"
expect_match "$(hezo_docker inspect -f '{{.NetworkSettings.IPAddress}}' "$NA" 2>&1)" '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$' \
	"[ns] the default bridge gave it an address (the hook ran)"
new_name nsb
NB=$NAME
out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$RT" --network="container:$NA" --ipc="container:$NA" \
	--name "$NB" "$IMG" sleep 600 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[ns] docker run --network=container:X --ipc=container:X of another hezo container exits 0" ||
	diag "$out"
PA=$(hezo_docker inspect -f '{{.State.Pid}}' "$NA" 2>/dev/null)
PB=$(hezo_docker inspect -f '{{.State.Pid}}' "$NB" 2>/dev/null)
expect_eq "$(ns_ino "$PB" net)" "$(ns_ino "$PA" net)" "[ns] from the host: the second container is in the first one's netns"
expect_ne "$(ns_ino "$PB" net)" "$(ns_ino $$ net)" "[ns] from the host: that netns is not the host's"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	expect_eq "$(ns_ino "$PB" ipc)" "$(ns_ino "$PA" ipc)" "[ns] from the host: the second container is in the first one's IPC namespace"
else
	skip "[ns] from the host: the second container is in the first one's IPC namespace" \
		"runsc keeps host IPC namespaces of its own per sandbox"
fi
hezo_docker rm -f "$NB" "$NA" >/dev/null 2>&1

# --- a running container's ID reused under another --root, for its rootfs (red team rt12 pass 2, F4) ---
# A raw caller of the shim names a running Docker container's ID and its merged overlay as root.path:
# the layerdb agrees, but Docker already runs that ID, so the rootfs is not handed over.
RAWROOT=$HEZO_TEST_DIR/raw-root.$$
RAWB=$(mktemp -d "$HEZO_TEST_DIR/raw-bundle.XXXXXX")
tap_cleanup "rm -rf '$RAWB' '$RAWROOT'"
for rt in "$RT" runc; do
	new_name "reuse-$rt"
	out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$rt" --name "$NAME" "$IMG" sleep 600 2>&1) && rc=0 || rc=$?
	expect_eq "$rc" 0 "[reuse $rt] docker run -d exits 0" || diag "$out"
	CID=$(hezo_docker inspect -f '{{.Id}}' "$NAME" 2>/dev/null)
	MERGED=$(hezo_docker inspect -f '{{.GraphDriver.Data.MergedDir}}' "$NAME" 2>/dev/null)
	tap_cleanup "hezo_bundle_cleanup '$RAWROOT' '$CID'"
	hezo_make_bundle "$RAWB/$rt" "$CID" '["true"]' ".root.path = \"$MERGED\"" || bail_out "cannot make bundle"
	hezo_shim --root "$RAWROOT" create -b "$RAWB/$rt" "$CID" >"$RAWB/$rt.out" 2>"$RAWB/$rt.err" </dev/null && rc=0 || rc=$?
	expect_ne "$rc" 0 "[reuse $rt] create of the running container's ID under another --root, on its merged dir, is refused"
	if [ "$rt" = runc ]; then
		where="the backend's state under /run/docker/runtime-runc/moby"
	else
		where="a container of hezo-shim's under --root /(var/)?run/docker/runtime-runc/moby"
	fi
	expect_match "$(cat "$RAWB/$rt.err")" "^hezo-shim: config.json: root\\.path $MERGED: it is Docker's root filesystem for container $CID, which already runs \\($where\\)\$" \
		"[reuse $rt] one line naming root.path, the container and where it runs"
	expect_eq "$(wc -l <"$RAWB/$rt.err" | tr -d ' ')" 1 "[reuse $rt] exactly one line on stderr" || diag "$(cat "$RAWB/$rt.err")"
	expect_eq "$(hezo_backend_ids "$RAWROOT" | grep -cxF "$CID")" 0 "[reuse $rt] no container under the other --root"
	hezo_bundle_cleanup "$RAWROOT" "$CID"
	# Its engine files and Docker's setkey hook under the same reused ID (red team pass 4, F6):
	# the ID is the caller's word, so the files are that running container's, not this one's.
	CROOT=$(hezo_docker info -f '{{.DockerRootDir}}')/containers/$CID
	hezo_make_bundle "$RAWB/$rt-files" "$CID" '["true"]' \
		".mounts += [{destination: \"/etc/hosts\", type: \"bind\", source: \"$CROOT/hosts\", options: [\"rbind\", \"rw\"]}]" ||
		bail_out "cannot make bundle"
	hezo_shim --root "$RAWROOT" create -b "$RAWB/$rt-files" "$CID" >"$RAWB/$rt-files.out" 2>"$RAWB/$rt-files.err" </dev/null && rc=0 || rc=$?
	expect_ne "$rc" 0 "[reuse $rt] its /etc/hosts under its reused ID is refused"
	expect_match "$(cat "$RAWB/$rt-files.err")" "^hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/etc/hosts\\): bind source is container $CID's file for /etc/hosts, and that container already runs \\(" \
		"[reuse $rt] one line naming the mount, the container and where it runs"
	expect_eq "$(hezo_backend_ids "$RAWROOT" | grep -cxF "$CID")" 0 "[reuse $rt] no container made for its files"
	hezo_bundle_cleanup "$RAWROOT" "$CID"
	hezo_make_bundle "$RAWB/$rt-setkey" "$CID" '["true"]' \
		".hooks.prestart = [{path: \"/proc/$(hezo_dockerd_pid)/exe\", args: [\"libnetwork-setkey\", \"-exec-root=/var/run/docker\", \"$CID\", \"8d713b06a5d8\"]}]" ||
		bail_out "cannot make bundle"
	hezo_shim --root "$RAWROOT" create -b "$RAWB/$rt-setkey" "$CID" >"$RAWB/$rt-setkey.out" 2>"$RAWB/$rt-setkey.err" </dev/null && rc=0 || rc=$?
	expect_ne "$rc" 0 "[reuse $rt] Docker's setkey hook under its reused ID is refused"
	expect_match "$(cat "$RAWB/$rt-setkey.err")" '^hezo-shim: config.json: hooks\.prestart\[0\]' "[reuse $rt] one line naming the hook"
	expect_eq "$(hezo_backend_ids "$RAWROOT" | grep -cxF "$CID")" 0 "[reuse $rt] no container made for the hook"
	hezo_bundle_cleanup "$RAWROOT" "$CID"
	hezo_docker rm -f "$NAME" >/dev/null 2>&1
done
# A STOPPED container's engine files under its ID (red team pass 5, F7): what is written there is
# what it gets at its next `docker start`, so only Docker's own bundle for that ID has them.
new_name stopped
out=$(timeout 60 "$HEZO_DOCKER" run --runtime="$RT" --name "$NAME" "$IMG" sh -c 'head -c 0 /etc/hosts' 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[stopped] docker run of a container that exits at once exits 0" || diag "$out"
CID=$(hezo_docker inspect -f '{{.Id}}' "$NAME" 2>/dev/null)
CROOT=$(hezo_docker info -f '{{.DockerRootDir}}')/containers/$CID
tap_cleanup "hezo_bundle_cleanup '$RAWROOT' '$CID'"
before=$(md5sum <"$CROOT/hosts")
for f in hosts resolv.conf hostname; do
	hezo_make_bundle "$RAWB/stopped-$f" "$CID" '["true"]' \
		".mounts += [{destination: \"/etc/$f\", type: \"bind\", source: \"$CROOT/$f\", options: [\"rbind\", \"rw\"]}]" ||
		bail_out "cannot make bundle"
	hezo_shim --root "$RAWROOT" create -b "$RAWB/stopped-$f" "$CID" >"$RAWB/stopped-$f.out" 2>"$RAWB/stopped-$f.err" </dev/null && rc=0 || rc=$?
	expect_ne "$rc" 0 "[stopped] its /etc/$f under its ID, from a bundle of the caller's, is refused"
	expect_eq "$(cat "$RAWB/stopped-$f.err")" \
		"hezo-shim: config.json: mounts[$(jq '.mounts | length - 1' "$RAWB/stopped-$f/config.json")] (/etc/$f): bind source is container $CID's file for /etc/$f, and this bundle ($RAWB/stopped-$f) is not an engine's own bundle for $CID" \
		"[stopped] one line naming the mount, the container and the bundle ($f)"
	expect_eq "$(hezo_backend_ids "$RAWROOT" | grep -cxF "$CID")" 0 "[stopped] no container made for its $f"
	hezo_bundle_cleanup "$RAWROOT" "$CID"
done
expect_eq "$(md5sum <"$CROOT/hosts")" "$before" "[stopped] its hosts file is as Docker left it"
out=$(timeout 60 "$HEZO_DOCKER" start -a "$NAME" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[stopped] docker start of it (Docker's own bundle) still gets its files and exits 0" || diag "$out"
hezo_docker rm -f "$NAME" >/dev/null 2>&1

# --- run -it ---------------------------------------------------------------------------------------------
new_name tty
out=$(timeout 60 script -qec "$HEZO_DOCKER run --rm -it --runtime=$RT --name $NAME $IMG sh -c '[ -t 1 ] && echo isatty=yes; grep -E \"^(CapEff|NoNewPrivs)\" /proc/self/status'" \
	/dev/null 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[run -it] docker run -it under script exits 0" || diag "$out"
expect_match "$out" 'isatty=yes' "[run -it] the process has a tty"
expect_match "$out" 'CapEff:[[:space:]]+0{16}' "[run -it] CapEff is 0"
v=$(sed -n 's/^NoNewPrivs:[[:space:]]*//p' <<<"$out" | tr -d '\r')
gvisor_hides "$v" "[run -it] NoNewPrivs is 1" NoNewPrivs || expect_eq "$v" 1 "[run -it] NoNewPrivs is 1"

# --- a bind source turned into a symlink to / by a container (red team rt12 pass 2, F1) --------------
# Holder H has the allowed root bound read-write and fills the one admission slot; B's create of
# -v ALLOWED/x:/mnt passes its checks and waits for the slot; H then turns /w/x into a symlink to /
# and is removed. runc and runsc looked the source up again: B got the host's / writable. Now B's
# create is judged again once it has the slot, and refused there for the host's /.
ALLOWED=$(mktemp -d "$HEZO_TEST_DIR/docker-allowed.XXXXXX")
tap_cleanup "rm -rf '$ALLOWED'"
mkdir "$ALLOWED/x" && echo checked >"$ALLOWED/x/marker"
hezo_write_policy docker '.admission = {maxActive: 1, wait: 60} | .mounts.allowedSources = ["'"$ALLOWED"'"]'
new_name bindhold
NH=$NAME
out=$(hezo_docker run -d --runtime="$RT" --name "$NH" -v "$ALLOWED:/w" "$IMG" sleep 600 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[bind swap] the holder with the allowed root bound rw starts" || diag "$out"
new_name bindswap
NB=$NAME
timeout -k 5 120 "$HEZO_DOCKER" run --runtime="$RT" --name "$NB" -v "$ALLOWED/x:/mnt" "$IMG" \
	sh -c 'test -d /mnt/etc && echo HOSTROOT; cat /mnt/marker; echo end' >"$ALLOWED.out" 2>&1 </dev/null &
bpid=$!
tap_cleanup "rm -f '$ALLOWED.out'"
for ((w = 0; w < 300; w++)); do
	find "$HEZO_TEST_STATE/admission-queue" -regex '.*/[0-9]+' 2>/dev/null | grep -q . && break
	sleep 0.1
done
out=$(hezo_docker exec "$NH" sh -c 'mv /w/x /w/x.old && ln -s / /w/x && readlink /w/x' 2>&1)
expect_eq "$out" / "[bind swap] the holder turned /w/x into a symlink to / while B's create waited"
hezo_docker rm -f "$NH" >/dev/null 2>&1
wait "$bpid" && rc=0 || rc=$?
expect_match "$rc:$(tr '\n' ' ' <"$ALLOWED.out")" \
	"^[1-9][0-9]*:.*bind source $ALLOWED/x \\(resolves to /\\) is not under an allowed root" \
	"[bind swap] B's create, judged again after the wait, is refused for the host's /"
hezo_docker rm -f "$NB" >/dev/null 2>&1
hezo_write_policy docker

# --- threads and curl under Docker's own default profile ------------------------------------------------
# Docker's default profile allows ptrace, so on its own it would stop shim/runsc-seccomp.c from turning
# ERRNO(ENOSYS) into SCMP_ACT_TRACE, and under runsc every glibc pthread_create would then fail
# (clone3 EPERM). The box's floor (policy/seccomp-floor.c) is intersected with it first: the profile
# the backend gets lets nobody become a tracer, so the rewrite applies. Measured through Docker here.
THREADS=$HEZO_BUILD_DIR/tests/tools/hezo-threads
TIMG=hezo-test/threads-curl:$$
if [ -x "$THREADS" ] && [ -x /usr/bin/curl ]; then
	T=$(mktemp -d "$HEZO_TEST_DIR/docker-threads.XXXXXX")
	tap_cleanup "rm -rf '$T'"
	tap_cleanup "hezo_docker rmi -f '$TIMG'"
	hezo_busybox_rootfs "$T/rootfs" && install -m 0755 "$THREADS" "$T/rootfs/bin/hezo-threads" &&
		hezo_copy_bin "$T/rootfs" /usr/bin/curl && printf 'hosts: files\n' >"$T/rootfs/etc/nsswitch.conf" &&
		tar -C "$T/rootfs" --numeric-owner -c . | hezo_docker import - "$TIMG" >/dev/null ||
		bail_out "cannot make the image $TIMG"
	new_name threads
	NT=$NAME
	out=$(hezo_docker run -d --runtime="$RT" --name "$NT" --network none \
		--add-host threads.hezo.test:127.0.0.1 "$TIMG" sleep 600 2>&1) && rc=0 || rc=$?
	expect_eq "$rc" 0 "[threads] a container of the threads image starts with Docker's default profile" || diag "$out"
	prof=$(jq -c '.linux.seccomp' "$(hezo_docker_bundle "$NT")/config.json" 2>&1)
	expect_eq "$(jq -c '[.syscalls[] | select(.names | index("ptrace")) | select(.action != "SCMP_ACT_ERRNO")] | length' <<<"$prof" 2>&1):$(jq -r .defaultAction <<<"$prof" 2>&1)" \
		"0:SCMP_ACT_ERRNO" "[threads] the profile the backend got lets nobody call ptrace (Docker's allows it)"
	if [ "$HEZO_TEST_BACKEND" = runsc ]; then
		expect_eq "$(jq -r '[.syscalls[] | select(.names | index("clone3")) | .action] | join(",")' <<<"$prof" 2>&1)" \
			SCMP_ACT_TRACE "[threads] runsc: clone3's ERRNO(ENOSYS) became SCMP_ACT_TRACE"
	else
		expect_eq "$(jq -r '[.syscalls[] | select(.names | index("clone3")) | "\(.action)/\(.errnoRet)"] | join(",")' <<<"$prof" 2>&1)" \
			SCMP_ACT_ERRNO/38 "[threads] runc: clone3 stays ERRNO(ENOSYS)"
	fi
	for how in run exec; do
		if [ "$how" = run ]; then
			new_name "threads-$how"
			out=$(timeout -k 5 120 "$HEZO_DOCKER" run --rm --runtime="$RT" --name "$NAME" --network none \
				--add-host threads.hezo.test:127.0.0.1 "$TIMG" sh -c \
				'hezo-threads 20; curl -sS --max-time 10 http://threads.hezo.test:9/ 2>&1; echo curl=$?' 2>&1 </dev/null)
		else
			out=$(timeout -k 5 120 "$HEZO_DOCKER" exec "$NT" sh -c \
				'hezo-threads 20; curl -sS --max-time 10 http://threads.hezo.test:9/ 2>&1; echo curl=$?' 2>&1 </dev/null)
		fi
		expect_match "$out" '^threads 20$' "[threads] docker $how: 20 threads alive at once" || diag "$out"
		expect_match "$out" '^clone3 ENOSYS$' "[threads] docker $how: clone3 answered ENOSYS (glibc falls back to clone)" || diag "$out"
		expect_match "$out" '^curl=7$' "[threads] docker $how: curl resolved the name on its resolver thread (then: refused)" || diag "$out"
		expect_no_match "$out" 'getaddrinfo|Could not resolve' "[threads] docker $how: no resolver failure" || diag "$out"
	done
	hezo_docker rm -f "$NT" >/dev/null 2>&1
else
	skip "[threads] threads and curl under Docker's default profile" "no hezo-threads or no /usr/bin/curl"
fi

# --- nothing left behind ---------------------------------------------------------------------------------
for n in "${NAMES[@]}"; do
	hezo_docker rm -f "$n" >/dev/null 2>&1
done
sleep 1
left=$(hezo_docker ps -aq --filter name=hezo-it-)
expect_eq "$left" "" "no test container left in docker"
expect_eq "$(grep -c " $HEZO_TEST_STATE/" /proc/self/mountinfo)" 0 "no staged mount of the shim's left in the mount table"
reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done

tap_done

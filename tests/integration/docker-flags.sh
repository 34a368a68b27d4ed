#!/bin/bash
# Integration: engine flags that used to loosen the box (issue 15), through Docker with
# hezo-shim as its runtime on HEZO_TEST_BACKEND: --tmpfs options and sizes, --oom-kill-disable,
# --sysctl, --cpu-shares.
# Checked in the config.json the backend got, from inside, and (runc) in the host's cgroup files.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/box.sh
. "$here/../lib/box.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"

hezo_require_root
hezo_require_tools jq timeout dockerd "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
hezo_image_docker || bail_out "cannot import $HEZO_TEST_IMAGE"
IMG=$HEZO_TEST_IMAGE
RT=hezo-test-flags-$HEZO_TEST_BACKEND
MIB=1048576

hezo_make_wrapper
rm -rf "${HEZO_TEST_SANITIZER_DIR:?}"/*
hezo_write_policy docker
hezo_docker_register_runtime "$RT" "$HEZO_TEST_WRAPPER" || bail_out "cannot register runtime $RT"
diag "backend $HEZO_TEST_BACKEND, runtime $RT -> $HEZO_TEST_WRAPPER -> $HEZO_SHIM_BIN"

NAMES=()
new_name()
{
	NAME="hezo-it-flags-$1-$(hezo_rand)"
	NAMES+=("$NAME")
	tap_cleanup "hezo_docker rm -f '$NAME'"
}

# What a tmpfs at /x and /dev look like from inside (key=value lines).
# shellcheck disable=SC2016
TMPFS_PROBE='
awk "\$2 == \"/x\" { print \"xopts=\" \$4 }" /proc/mounts | tail -n 1
awk "\$2 == \"/dev\" { print \"devopts=\" \$4 }" /proc/mounts | tail -n 1
echo "xsize=$(df -k /x | awk "NR == 2 { print \$2 }")"
if cp /bin/busybox /x/busybox 2>/dev/null; then echo xwrite=yes; else echo xwrite=no; fi
if /x/busybox true 2>/dev/null; then echo xexec=yes; else echo xexec=no; fi
if echo hi >/dev/null 2>&1; then echo devnull=yes; else echo devnull=no; fi
echo probe=done
'

# has_opts OPTS WORD...: every WORD is one of the comma-separated OPTS.
has_opts()
{
	local o=",$1," w
	shift
	for w in "$@"; do
		[[ $o == *",$w,"* ]] || { echo "no $w in $1"; return; }
	done
	echo yes
}

# --- --tmpfs: its place, not its loosening options or its size ------------------------------------
for spec in "rw,exec,size=8m" "rw,suid,dev" "rw,exec,size=1g"; do
	label="--tmpfs /x:$spec"
	new_name tmpfs
	out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$NAME" --tmpfs "/x:$spec" "$IMG" \
		sleep 600 2>&1) && rc=0 || rc=$?
	expect_eq "$rc" 0 "[$label] docker run -d exits 0" || diag "$out"
	cfg=$(hezo_docker_bundle "$NAME" 2>/dev/null)/config.json
	want=$((64 * MIB))
	[ "$spec" = "rw,exec,size=8m" ] && want=$((8 * MIB))
	opts=$(jq -r '[.mounts[] | select(.destination == "/x") | .options[]] | join(",")' "$cfg" 2>&1)
	expect_eq "$(has_opts "$opts" nosuid noexec nodev "size=$want")" yes \
		"[$label] saved config.json: /x nosuid,noexec,nodev,size=$want"
	expect_no_match "$opts" '(^|,)(exec|suid|dev)(,|$)' "[$label] saved config.json: no exec, suid or dev"
	opts=$(jq -r '[.mounts[] | select(.destination == "/dev") | .options[]] | join(",")' "$cfg" 2>&1)
	expect_eq "$(has_opts "$opts" nosuid noexec "size=$((64 * MIB))")" yes \
		"[$label] saved config.json: /dev nosuid,noexec,size=64m"
	expect_no_match "$opts" '(^|,)nodev(,|$)' "[$label] saved config.json: /dev not nodev (device nodes)"
	out=$(timeout 60 "$HEZO_DOCKER" exec "$NAME" sh -c "$TMPFS_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
	expect_eq "$rc" 0 "[$label] docker exec exits 0" || diag "$out"
	expect_eq "$(hezo_probe_get "$out" xwrite)" yes "[$label] inside: /x is writable"
	expect_eq "$(hezo_probe_get "$out" xexec)" no "[$label] inside: a binary copied to /x does not run"
	expect_eq "$(hezo_probe_get "$out" devnull)" yes "[$label] inside: /dev/null opens for writing"
	expect_eq "$(hezo_probe_get "$out" xsize)" $((want / 1024)) "[$label] inside: /x holds $((want / 1024)) KiB"
	if [ "$HEZO_TEST_BACKEND" = runsc ]; then
		# gVisor's /proc/mounts lists noexec but never nosuid or nodev; its own /dev is no tmpfs.
		expect_eq "$(has_opts "$(hezo_probe_get "$out" xopts)" noexec)" yes "[$label] inside: /x mounted noexec"
	else
		expect_eq "$(has_opts "$(hezo_probe_get "$out" xopts)" nosuid nodev noexec)" yes \
			"[$label] inside: /x mounted nosuid,nodev,noexec"
		expect_eq "$(has_opts "$(hezo_probe_get "$out" devopts)" nosuid noexec)" yes \
			"[$label] inside: /dev mounted nosuid,noexec"
	fi
	hezo_docker rm -f "$NAME" >/dev/null 2>&1
done

# --- --oom-kill-disable: the killer stays --------------------------------------------------------
label="--oom-kill-disable --memory 64m"
new_name oom
out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$NAME" --oom-kill-disable --memory 64m \
	"$IMG" sleep 600 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[$label] docker run -d exits 0" || diag "$out"
cfg=$(hezo_docker_bundle "$NAME" 2>/dev/null)/config.json
expect_eq "$(jq -r '.linux.resources.memory.disableOOMKiller' "$cfg" 2>&1)" false \
	"[$label] saved config.json: disableOOMKiller false"
expect_eq "$(jq -r '.linux.resources.memory.limit' "$cfg" 2>&1)" $((64 * MIB)) \
	"[$label] saved config.json: memory limit 64m"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	d=$(hezo_cgroup_dir memory "$(hezo_docker_cgroups_path "$NAME")")
	expect_match "$(hezo_read "$d/memory.oom_control")" 'oom_kill_disable 0' "[$label] host: oom_control oom_kill_disable 0"
	expect_eq "$(hezo_read "$d/memory.limit_in_bytes")" $((64 * MIB)) "[$label] host: memory.limit_in_bytes 64m"
fi
# At its cap: dd's 256 MiB buffer cannot fit. It must end (killed), not hang.
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	out=$(timeout 60 "$HEZO_DOCKER" exec "$NAME" dd if=/dev/zero of=/dev/null bs=256M count=1 2>&1 </dev/null) &&
		rc=0 || rc=$?
	diag "[$label] exec dd of 256 MiB at a 64 MiB cap: exit $rc: $out"
	expect_eq "$rc" 137 "[$label] runc: exec at its cap is killed by the kernel's OOM killer (SIGKILL, 137)"
	expect_match "$(hezo_read "$d/memory.oom_control")" 'oom_kill [1-9]' "[$label] host: oom_control counts the kill"
	# Only the process that went over dies; the container goes on.
	expect_eq "$(hezo_docker inspect -f '{{.State.Status}} oomkilled={{.State.OOMKilled}}' "$NAME" 2>&1)" \
		"running oomkilled=false" "[$label] runc: the container itself runs on"
fi
hezo_docker rm -f "$NAME" >/dev/null 2>&1
# The same as the container's own process.
new_name oomrun
start=$(date +%s)
out=$(timeout 90 "$HEZO_DOCKER" run --runtime="$RT" --name "$NAME" --oom-kill-disable --memory 64m "$IMG" \
	dd if=/dev/zero of=/dev/null bs=256M count=1 2>&1 </dev/null) && rc=0 || rc=$?
took=$(($(date +%s) - start))
state=$(hezo_docker inspect -f '{{.State.Status}} oomkilled={{.State.OOMKilled}} exit={{.State.ExitCode}}' "$NAME" 2>&1)
diag "[$label] run dd of 256 MiB at a 64 MiB cap: exit $rc after ${took}s ($state): $out"
expect_eq "$rc" 137 "[$label] run at its cap ends with SIGKILL (137), it does not hang"
# runc: the kernel kills dd; runsc: the host kernel kills in the sandbox's cgroup, the Sentry
# with it, so the whole sandbox goes.
expect_eq "$state" "exited oomkilled=true exit=137" "[$label] docker sees an OOM kill"
hezo_docker rm -f "$NAME" >/dev/null 2>&1

# --- --sysctl: only the policy's list, values within its bounds ------------------------------------
for sc in "net.ipv4.conf.all.route_localnet=1" "net.ipv4.ip_local_port_range=80 90" "kernel.shm_rmid_forced=2"; do
	new_name sysctl
	out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT" --name "$NAME" --sysctl "$sc" "$IMG" true 2>&1 </dev/null) &&
		rc=0 || rc=$?
	expect_ne "$rc" 0 "[--sysctl $sc] docker run fails"
	key=${sc%%=*}
	expect_match "$out" "hezo-shim: linux.sysctl: \"${key//./\\.}\"" "[--sysctl $sc] the shim's reason names the sysctl" || diag "$out"
	expect_eq "$(grep -c 'hezo-shim: ' <<<"$out")" 1 "[--sysctl $sc] the reason is one line"
done
new_name sysctlok
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT" --name "$NAME" --sysctl kernel.shm_rmid_forced=1 \
	--sysctl "net.ipv4.ip_local_port_range=20000 30000" "$IMG" \
	sh -c 'echo "rmid=$(cat /proc/sys/kernel/shm_rmid_forced)"; echo "ports=$(cat /proc/sys/net/ipv4/ip_local_port_range | tr "\t" " ")"; echo "localnet=$(cat /proc/sys/net/ipv4/conf/all/route_localnet 2>/dev/null || echo absent)"' \
	2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[--sysctl kernel.shm_rmid_forced=1 ip_local_port_range] docker run exits 0" || diag "$out"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	expect_eq "$(hezo_probe_get "$out" rmid)" 1 "[--sysctl] inside: kernel.shm_rmid_forced 1"
	expect_eq "$(hezo_probe_get "$out" ports)" "20000 30000" "[--sysctl] inside: ip_local_port_range 20000 30000"
	expect_eq "$(hezo_probe_get "$out" localnet)" 0 "[--sysctl] inside: route_localnet stays 0"
else
	# gVisor keeps its own /proc/sys and sets none of these.
	diag "[--sysctl] runsc inside: $(tr '\n' ' ' <<<"$out")"
fi

# --- --cpu-shares: the stricter of the engine's and the policy's ---------------------------------
for req in 262144 512; do
	label="--cpu-shares $req"
	new_name shares
	out=$(timeout 60 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$NAME" --cpu-shares "$req" "$IMG" sleep 600 2>&1) &&
		rc=0 || rc=$?
	expect_eq "$rc" 0 "[$label] docker run -d exits 0" || diag "$out"
	want=1024
	[ "$req" = 512 ] && want=512
	cfg=$(hezo_docker_bundle "$NAME" 2>/dev/null)/config.json
	expect_eq "$(jq -r '.linux.resources.cpu.shares' "$cfg" 2>&1)" "$want" "[$label] saved config.json: cpu.shares $want"
	d=$(hezo_cgroup_dir cpu "$(hezo_docker_cgroups_path "$NAME")")
	expect_eq "$(hezo_read "$d/cpu.shares")" "$want" "[$label] host: cpu.shares $want"
	hezo_docker rm -f "$NAME" >/dev/null 2>&1
done

# --- nothing left behind ---------------------------------------------------------------------------------
for n in "${NAMES[@]}"; do
	hezo_docker rm -f "$n" >/dev/null 2>&1
done
sleep 1
expect_eq "$(hezo_docker ps -aq --filter name=hezo-it-flags-)" "" "no test container left in docker"
reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done

tap_done

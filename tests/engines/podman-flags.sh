#!/bin/bash
# Engines: the flags of issue 15 that podman 4.3 has, through podman with hezo-shim as its
# runtime (by path, `--runtime WRAPPER`; no podman configuration is written) on HEZO_TEST_BACKEND:
# --tmpfs options and sizes, --oom-kill-disable with --memory, --sysctl (one allowed, one refused),
# --cpu-shares above the policy's, --security-opt seccomp (allow-all and stricter profiles), and
# podman's named volumes (a project's own kept across two containers, another project's refused).
# Each row is checked in the config.json podman handed the shim (rewritten in place), from inside
# the container and, where it applies, in the host's cgroup files. The podman rows of
# docs/policy.md's "Every field" table. Every container and volume it makes is removed.
#
# HEZO_PODFLAGS_RUNTIME names another runtime for podman instead of the shim (e.g. `runc`): only
# for seeing that the rows fail when nothing narrows the engine's request.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_TEST_DIR=${HEZO_ENGINES_DIR:-${HEZO_TEST_DIR:-/run/hezo-engines-podman-flags.$$}}
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/box.sh
. "$here/../lib/box.sh"

hezo_require_root
hezo_require_tools podman jq timeout "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

[ -e "$HEZO_TEST_DIR" ] && bail_out "$HEZO_TEST_DIR exists already"
tap_cleanup "rm -rf '$HEZO_TEST_DIR'"
TAG=hzp$(hezo_rand | tr -dc 'a-z0-9' | head -c 6)
PA=${TAG}a
PB=${TAG}b
mkdir -p "$HEZO_TEST_DIR/projects" "$HEZO_TEST_DIR/seccomp"
# podman 4.3 (conmon) leaves an empty file "oom" in its caller's working directory when a
# process is OOM-killed, with plain runc too: work in the test's own directory.
cd "$HEZO_TEST_DIR" || bail_out "cannot cd to $HEZO_TEST_DIR"
echo '{}' >"$HEZO_TEST_DIR/projects/$PA.json"
echo '{}' >"$HEZO_TEST_DIR/projects/$PB.json"
hezo_make_wrapper
# runsc: the container keeps podman's (--network none) namespace through runsc's host mode.
hezo_write_policy docker ". + {projectsDir: \"$HEZO_TEST_DIR/projects\"}"
# One wrapper per project, for the named volumes.
for p in a b; do
	sed "s|^exec \(.*\) \"\\\$@\"\$|exec \1 --hezo-project $TAG$p \"\\\$@\"|" "$HEZO_TEST_WRAPPER" \
		>"$HEZO_TEST_DIR/hezo-shim-$p"
	chmod 0755 "$HEZO_TEST_DIR/hezo-shim-$p"
	grep -q -- "--hezo-project $TAG$p" "$HEZO_TEST_DIR/hezo-shim-$p" || bail_out "cannot write the project $p wrapper"
done
HEZO_PODFLAGS_RUNTIME=${HEZO_PODFLAGS_RUNTIME:-}
RT=${HEZO_PODFLAGS_RUNTIME:-$HEZO_TEST_WRAPPER}
RT_A=${HEZO_PODFLAGS_RUNTIME:-$HEZO_TEST_DIR/hezo-shim-a}
RT_B=${HEZO_PODFLAGS_RUNTIME:-$HEZO_TEST_DIR/hezo-shim-b}

IMG=localhost/$HEZO_TEST_IMAGE
if ! podman image exists "$IMG" 2>/dev/null; then
	hezo_image_podman "$HEZO_TEST_IMAGE" || bail_out "cannot import $HEZO_TEST_IMAGE into podman"
	tap_cleanup "podman rmi -f '$IMG' >/dev/null 2>&1"
fi
GRAPHROOT=$(podman info --format '{{.Store.GraphRoot}}' 2>/dev/null)
[ -d "$GRAPHROOT" ] || bail_out "podman info names no graph root"
MIB=1048576
# As in podman.sh: this machine's hard RLIMIT_NOFILE is below podman's default, so ask for one that
# fits. --network none: nothing here needs a network (and runsc's netstack mode fails here).
RUNFLAGS=(--network none --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
diag "podman $(podman --version 2>&1), backend $HEZO_TEST_BACKEND, runtime $RT, policy $(jq -c . "$HEZO_TEST_POLICY")"

pm()
{
	timeout -k 5 120 podman --cgroup-manager cgroupfs "$@"
}

new_name()
{
	NAME="hezo-pf-$1-$(hezo_rand)"
	tap_cleanup "podman --cgroup-manager cgroupfs rm -f -t 0 '$NAME' >/dev/null 2>&1"
}

# cfg_of NAME: the config.json podman gave the runtime (the shim rewrites it in place).
cfg_of()
{
	echo "$GRAPHROOT/overlay-containers/$(pm inspect -f '{{.Id}}' "$1" 2>/dev/null)/userdata/config.json"
}

# cg_of NAME: the container's linux.cgroupsPath.
cg_of()
{
	jq -r '.linux.cgroupsPath // empty' "$(cfg_of "$1")" 2>/dev/null
}

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

# shellcheck disable=SC2016 # expanded by the container's shell
TMPFS_PROBE='
awk "\$2 == \"/x\" { print \"xopts=\" \$4 }" /proc/mounts | tail -n 1
echo "xsize=$(df -k /x | awk "NR == 2 { print \$2 }")"
if cp /bin/busybox /x/busybox 2>/dev/null; then echo xwrite=yes; else echo xwrite=no; fi
if /x/busybox true 2>/dev/null; then echo xexec=yes; else echo xexec=no; fi
if mknod /x/null c 1 3 2>/dev/null && echo hi >/x/null 2>/dev/null; then echo xdev=yes; else echo xdev=no; fi
echo probe=done
'

# --- --tmpfs: its place, not its loosening options or its size ------------------------------------
for spec in "rw,exec,size=8m" "rw,suid,dev" "rw,exec,size=1g"; do
	label="--tmpfs /x:$spec"
	new_name tmpfs
	out=$(pm --runtime "$RT" run -d --name "$NAME" "${RUNFLAGS[@]}" --tmpfs "/x:$spec" "$IMG" sleep 600 \
		2>&1 </dev/null) && rc=0 || rc=$?
	expect_eq "$rc" 0 "[$label] podman run -d exits 0" || diag "$out"
	want=$((64 * MIB))
	[ "$spec" = "rw,exec,size=8m" ] && want=$((8 * MIB))
	opts=$(jq -r '[.mounts[] | select(.destination == "/x") | .options[]] | join(",")' "$(cfg_of "$NAME")" 2>&1)
	expect_eq "$(has_opts "$opts" nosuid noexec nodev "size=$want")" yes \
		"[$label] config.json: /x nosuid,noexec,nodev,size=$want"
	expect_no_match "$opts" '(^|,)(exec|suid|dev)(,|$)' "[$label] config.json: no exec, suid or dev"
	out=$(pm exec "$NAME" sh -c "$TMPFS_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
	expect_eq "$(hezo_probe_get "$out" probe)" "done" "[$label] podman exec: the probe ran" || diag "$out"
	expect_eq "$(hezo_probe_get "$out" xwrite)" yes "[$label] inside: /x is writable"
	expect_eq "$(hezo_probe_get "$out" xexec)" no "[$label] inside: a binary copied to /x does not run"
	expect_eq "$(hezo_probe_get "$out" xsize)" $((want / 1024)) "[$label] inside: /x holds $((want / 1024)) KiB"
	if [ "$HEZO_TEST_BACKEND" = runsc ]; then
		# gVisor's /proc/mounts lists noexec but never nosuid or nodev. Its Sentry lets a process
		# without CAP_MKNOD make a character device on any tmpfs (the policy's /tmp too) and use
		# it: the Sentry's own emulated device, never a host one (measured, not asserted).
		expect_eq "$(has_opts "$(hezo_probe_get "$out" xopts)" noexec)" yes "[$label] inside: /x mounted noexec"
		diag "[$label] runsc inside: mknod c 1 3 on /x and write to it: $(hezo_probe_get "$out" xdev)"
	else
		expect_eq "$(hezo_probe_get "$out" xdev)" no "[$label] inside: no usable device node on /x"
		expect_eq "$(has_opts "$(hezo_probe_get "$out" xopts)" nosuid nodev noexec)" yes \
			"[$label] inside: /x mounted nosuid,nodev,noexec"
	fi
	pm rm -f -t 0 "$NAME" >/dev/null 2>&1
done

# --- --oom-kill-disable --memory 64m: the killer stays --------------------------------------------
label="--oom-kill-disable --memory 64m"
new_name oom
out=$(pm --runtime "$RT" run -d --name "$NAME" "${RUNFLAGS[@]}" --oom-kill-disable --memory 64m "$IMG" \
	sleep 600 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[$label] podman run -d exits 0" || diag "$out"
cfg=$(cfg_of "$NAME")
expect_eq "$(jq -r '.linux.resources.memory.disableOOMKiller' "$cfg" 2>&1)" false \
	"[$label] config.json: disableOOMKiller false"
expect_eq "$(jq -r '.linux.resources.memory.limit' "$cfg" 2>&1)" $((64 * MIB)) "[$label] config.json: memory limit 64m"
d=$(hezo_cgroup_dir memory "$(cg_of "$NAME")")
expect_match "$(hezo_read "$d/memory.oom_control")" 'oom_kill_disable 0' "[$label] host: oom_control oom_kill_disable 0"
expect_eq "$(hezo_read "$d/memory.limit_in_bytes")" $((64 * MIB)) "[$label] host: memory.limit_in_bytes 64m"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	out=$(timeout -k 5 60 podman exec "$NAME" dd if=/dev/zero of=/dev/null bs=256M count=1 2>&1 </dev/null) &&
		rc=0 || rc=$?
	diag "[$label] exec dd of 256 MiB at a 64 MiB cap: exit $rc: $out"
	expect_eq "$rc" 137 "[$label] runc: exec at its cap is killed by the kernel's OOM killer (SIGKILL, 137)"
	expect_match "$(hezo_read "$d/memory.oom_control")" 'oom_kill [1-9]' "[$label] host: oom_control counts the kill"
fi
pm rm -f -t 0 "$NAME" >/dev/null 2>&1
# The same as the container's own process: it ends, it does not hang.
new_name oomrun
start=$(date +%s)
out=$(timeout -k 5 90 podman --cgroup-manager cgroupfs --runtime "$RT" run --name "$NAME" "${RUNFLAGS[@]}" \
	--oom-kill-disable --memory 64m "$IMG" dd if=/dev/zero of=/dev/null bs=256M count=1 2>&1 </dev/null) &&
	rc=0 || rc=$?
took=$(($(date +%s) - start))
state=$(pm inspect -f '{{.State.Status}} exit={{.State.ExitCode}} oomkilled={{.State.OOMKilled}}' "$NAME" 2>&1)
diag "[$label] run dd of 256 MiB at a 64 MiB cap: exit $rc after ${took}s ($state): $out"
expect_eq "$rc" 137 "[$label] run at its cap ends with SIGKILL (137), it does not hang"
expect_match "$state" '^exited exit=137' "[$label] podman sees it exited 137"
# The shim's note of why it ended (docs/runsc.md, "A fork bomb, memory, /tmp").
id=$(pm inspect -f '{{.Id}}' "$NAME" 2>/dev/null)
[ -n "$HEZO_PODFLAGS_RUNTIME" ] ||
	expect_match "$(cat "$HEZO_TEST_STATE/ended/$id.json" 2>&1)" "\"oomKills\":[1-9]" \
		"[$label] the shim's note in STATE_DIR/ended counts the OOM kill (oomKills)"
pm rm -f -t 0 "$NAME" >/dev/null 2>&1

# --- --sysctl: one the policy allows, one it refuses with one line ---------------------------------
label="--sysctl net.ipv4.conf.all.route_localnet=1"
new_name sysctl
err=$(pm --runtime "$RT" run --rm --name "$NAME" "${RUNFLAGS[@]}" --sysctl net.ipv4.conf.all.route_localnet=1 \
	"$IMG" cat /proc/sys/net/ipv4/conf/all/route_localnet 2>&1 >/dev/null </dev/null) && rc=0 || rc=$?
diag "[$label] podman said: $err"
expect_ne "$rc" 0 "[$label] podman run fails"
expect_match "$err" 'hezo-shim: config.json: linux\.sysctl: "net\.ipv4\.conf\.all\.route_localnet"' "[$label] the shim's reason names the sysctl"
expect_eq "$(grep -c . <<<"$err")" 1 "[$label] podman's error output is one line"
expect_eq "$(pm ps -aq --filter "name=^$NAME\$" 2>&1)" "" "[$label] no container left"
label="--sysctl kernel.shm_rmid_forced=1"
new_name sysctlok
# shellcheck disable=SC2016
out=$(pm --runtime "$RT" run --rm --name "$NAME" "${RUNFLAGS[@]}" --sysctl kernel.shm_rmid_forced=1 "$IMG" \
	sh -c 'echo "rmid=$(cat /proc/sys/kernel/shm_rmid_forced)"' 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[$label] podman run exits 0" || diag "$out"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	expect_eq "$(hezo_probe_get "$out" rmid)" 1 "[$label] inside: kernel.shm_rmid_forced 1"
else
	# gVisor keeps its own /proc/sys and sets none of these.
	diag "[$label] runsc inside: $out"
fi

# --- --cpu-shares above the policy's: the policy's --------------------------------------------------
label="--cpu-shares 262144"
new_name shares
out=$(pm --runtime "$RT" run -d --name "$NAME" "${RUNFLAGS[@]}" --cpu-shares 262144 "$IMG" sleep 600 2>&1 </dev/null) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[$label] podman run -d exits 0" || diag "$out"
expect_eq "$(jq -r '.linux.resources.cpu.shares' "$(cfg_of "$NAME")" 2>&1)" 1024 "[$label] config.json: cpu.shares 1024"
d=$(hezo_cgroup_dir cpu "$(cg_of "$NAME")")
expect_eq "$(hezo_read "$d/cpu.shares")" 1024 "[$label] host: cpu.shares 1024"
pm rm -f -t 0 "$NAME" >/dev/null 2>&1

# --- --security-opt seccomp: the box's profile is a floor ---------------------------------------
# (busybox's uname ignores a failing uname(2): it prints an empty name and exits 0.)
# shellcheck disable=SC2016
SECCOMP_PROBE='
echo "status=$(awk "/^Seccomp:/ { print \$2 }" /proc/self/status)"
if unshare -U true 2>/dev/null; then echo unshare=allowed; else echo unshare=refused; fi
if mkdir /tmp/d.$$ 2>/dev/null; then echo mkdir=allowed; else echo mkdir=refused; fi
if [ "$(uname -s 2>/dev/null)" = Linux ]; then echo uname=allowed; else echo uname=refused; fi
echo probe=done
'
ALLOW_JSON=$HEZO_TEST_DIR/seccomp/allow.json
STRICT_JSON=$HEZO_TEST_DIR/seccomp/strict.json
echo '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}' >"$ALLOW_JSON"
echo '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO","errnoRet":13},{"names":["uname"],"action":"SCMP_ACT_ERRNO","errnoRet":1}]}' >"$STRICT_JSON"
for prof in allow strict; do
	label="seccomp $prof"
	json=$ALLOW_JSON
	[ "$prof" = strict ] && json=$STRICT_JSON
	new_name seccomp
	out=$(pm --runtime "$RT" run -d --name "$NAME" "${RUNFLAGS[@]}" --security-opt "seccomp=$json" "$IMG" sleep 600 \
		2>&1 </dev/null) && rc=0 || rc=$?
	expect_eq "$rc" 0 "[$label] podman run -d exits 0" || diag "$out"
	cfg=$(cfg_of "$NAME")
	expect_eq "$(jq -r '.linux.seccomp.defaultAction' "$cfg" 2>&1)" SCMP_ACT_ERRNO \
		"[$label] config.json: default action SCMP_ACT_ERRNO"
	expect_eq "$(jq -r '[.linux.seccomp.syscalls[] | select(.action == "SCMP_ACT_ALLOW") | .names[]] | map(select(. == "unshare" or . == "mount" or . == "ptrace")) | length' "$cfg" 2>&1)" 0 \
		"[$label] config.json: unshare, mount and ptrace are not allowed"
	want=allowed
	[ "$prof" = strict ] && want=refused
	for how in run exec; do
		if [ "$how" = run ]; then
			out=$(pm --runtime "$RT" run --rm "${RUNFLAGS[@]}" --security-opt "seccomp=$json" "$IMG" \
				sh -c "$SECCOMP_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
		else
			out=$(pm exec "$NAME" sh -c "$SECCOMP_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
		fi
		expect_eq "$(hezo_probe_get "$out" probe)" "done" "[$label] $how: the probe ran" || diag "$out"
		expect_eq "$(hezo_probe_get "$out" status)" 2 "[$label] $how: Seccomp 2 (a filter is installed)"
		expect_eq "$(hezo_probe_get "$out" unshare)" refused "[$label] $how: unshare -U is refused"
		expect_eq "$(hezo_probe_get "$out" mkdir)" "$want" "[$label] $how: mkdir $want"
		expect_eq "$(hezo_probe_get "$out" uname)" "$want" "[$label] $how: uname $want"
	done
	pm rm -f -t 0 "$NAME" >/dev/null 2>&1
done

# --- podman's named volumes: a project's own, and never another project's -------------------------
VA=${PA}_data
VB=${PB}_data
for v in "$VA" "$VB"; do
	tap_cleanup "podman volume rm -f '$v' >/dev/null 2>&1"
done
label="own volume"
new_name volw
out=$(pm --runtime "$RT_A" run --rm --name "$NAME" "${RUNFLAGS[@]}" -v "$VA:/data" "$IMG" \
	sh -c 'echo kept-across >/data/f && echo written' 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[$label] podman run -v $VA:/data (project $PA) exits 0" || diag "$out"
expect_match "$out" written "[$label] the first container wrote to it"
mp=$(pm volume inspect -f '{{.Mountpoint}}' "$VA" 2>/dev/null)
expect_eq "$mp" "$GRAPHROOT/volumes/$VA/_data" "[$label] podman keeps it in its graphroot's volumes/NAME/_data"
new_name volr
out=$(pm --runtime "$RT_A" run --rm --name "$NAME" "${RUNFLAGS[@]}" -v "$VA:/data" "$IMG" cat /data/f 2>&1 </dev/null) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[$label] a second container mounts it" || diag "$out"
expect_eq "$out" kept-across "[$label] and reads what the first wrote"
expect_eq "$(cat "$mp/f" 2>&1)" kept-across "[$label] host: the file is in the volume's _data"

label="other project's volume"
new_name volx
err=$(pm --runtime "$RT_B" run --rm --name "$NAME" "${RUNFLAGS[@]}" -v "$VA:/data" "$IMG" cat /data/f \
	2>&1 >"$HEZO_TEST_DIR/volx.out" </dev/null) && rc=0 || rc=$?
diag "[$label] podman said: $err"
expect_ne "$rc" 0 "[$label] podman run -v $VA:/data (project $PB) fails"
expect_no_match "$(cat "$HEZO_TEST_DIR/volx.out")" kept-across "[$label] nothing of it was read"
expect_match "$err" "hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/data\\): volume $VA belongs to project $PA; this container's project is $PB" \
	"[$label] the shim's reason names the volume and both projects"
expect_eq "$(grep -c . <<<"$err")" 1 "[$label] podman's error output is one line"
new_name voly
out=$(pm --runtime "$RT_B" run --rm --name "$NAME" "${RUNFLAGS[@]}" -v "$VB:/data" "$IMG" \
	sh -c 'echo b >/data/f && cat /data/f' 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc:$out" "0:b" "[own volume] project $PB mounts $VB"
for v in "$VA" "$VB"; do
	pm volume rm -f "$v" >/dev/null 2>&1
done

# --- nothing left behind --------------------------------------------------------------------------
expect_eq "$(podman --cgroup-manager cgroupfs ps -aq --filter name=hezo-pf- 2>&1)" "" "no test container left in podman"
expect_eq "$(podman volume ls -q --filter "name=$TAG" 2>&1)" "" "no test volume left in podman"
# (STATE_DIR/ended keeps the notes of the containers a limit ended, by design.)
expect_eq "$(find "$HEZO_TEST_STATE" -path "$HEZO_TEST_STATE/ended" -prune -o -name '*.json' -print 2>/dev/null)" "" \
	"no record left in the shim's state directory"
reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done

tap_done

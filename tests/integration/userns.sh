#!/bin/bash
# Integration (runc): every box has a user namespace of its own, so it draws on per-user kernel
# counters that are not host root's (docs/hardening.md, "the runc backend's shared counters").
# Bundles and Docker; assumes the host's root holds few inotify instances itself (printed).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"

hezo_require_root
hezo_require_tools jq runc timeout "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim
[ "$HEZO_TEST_BACKEND" = runc ] || hezo_cannot_run "runc only: runsc keeps these counters in its Sentry"
# The probe is built by this tree; HEZO_KCOUNT names another build's (a run against main's shim).
KCOUNT=${HEZO_KCOUNT:-$HEZO_BUILD_DIR/tests/tools/hezo-kcount}
[ -x "$KCOUNT" ] || bail_out "hezo-kcount not built: $KCOUNT"

mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-userns
WORK=$(mktemp -d "$HEZO_TEST_DIR/userns.XXXXXX")
tap_cleanup "rm -rf '$WORK'"
hezo_write_policy bundle
diag "host: user.max_inotify_instances $(cat /proc/sys/user/max_inotify_instances), max_inotify_watches $(cat /proc/sys/user/max_inotify_watches)"
diag "host: inotify instances open now: $(find /proc/[0-9]*/fd -lname 'anon_inode:inotify' 2>/dev/null | wc -l)"

new_id()
{
	ID="hezo-it-userns-$1-$(hezo_rand)"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$ID'"
}

# uid_map_ok LABEL MAP: one line, the box's 0 at a host uid of the shim's ranges, 65536 ids.
uid_map_ok()
{
	local label=$1 map=$2
	expect_no_match "$map" '^ *0 +0 +4294967295' "[$label] uid_map is not the host's identity map" || diag "$map"
	expect_eq "$(awk 'END { print NR }' <<<"$map")" 1 "[$label] uid_map has one line" || diag "$map"
	expect_eq "$(awk '{ print ($1 == 0 && $2 >= 2147483648 && $3 == 65536) ? "range" : $0 }' <<<"$map")" range \
		"[$label] uid_map maps 0..65535 to a range above 2^31" || diag "$map"
}

# --- a bundle's box sees a range ------------------------------------------------------------------
new_id map
B=$WORK/map
hezo_make_bundle "$B" "$ID" '["cat", "/proc/self/uid_map", "/proc/self/gid_map"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/map.out" 2>"$WORK/map.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[bundle] run exits 0" || diag "$(cat "$WORK/map.err")"
uid_map_ok bundle "$(head -n 1 "$WORK/map.out")"
expect_eq "$(sed -n 2p "$WORK/map.out")" "$(head -n 1 "$WORK/map.out")" "[bundle] gid_map is the same range"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- two live boxes never share a range -----------------------------------------------------------
declare -A HOSTUID
TWO_IDS=
for n in a b; do
	new_id "two-$n"
	B=$WORK/two-$n
	hezo_make_bundle "$B" "$ID" '["sleep", "600"]' || bail_out "cannot make bundle"
	hezo_shim --root "$ROOT" create -b "$B" "$ID" >/dev/null 2> >(cat >"$WORK/two-$n.err") </dev/null && rc=0 || rc=$?
	expect_eq "$rc" 0 "[two] create of box $n exits 0" || diag "$(cat "$WORK/two-$n.err")"
	pid=$(hezo_backend --root "$ROOT" state "$ID" 2>/dev/null | jq -r '.pid // empty')
	HOSTUID[$n]=$(awk '{ print $2 }' "/proc/$pid/uid_map" 2>/dev/null)
	TWO_IDS+=" $ID"
done
expect_ne "${HOSTUID[a]}" "${HOSTUID[b]}" "[two] the two boxes' ranges differ" || diag "a=${HOSTUID[a]} b=${HOSTUID[b]}"
for id in $TWO_IDS; do hezo_shim --root "$ROOT" delete --force "$id" >/dev/null 2>&1; done

# --- two state directories, one machine: the ranges still differ -------------------------------------
# A second shim with its own HEZO_STATE_DIR (the suite's beside production's) takes ranges from the
# same machine-wide registry (/run/hezo-userns); on main each state directory handed out the first
# range again, and the two boxes shared one host uid and its per-user counters.
# Both state directories are the test's own and empty, so neither shim's records hold a range.
STATE1=$WORK/state1 STATE2=$WORK/state2
ROOT2=$HEZO_TEST_DIR/root-userns2
mkdir -p "$STATE1" "$STATE2"
declare -A SD_ID
for n in a b; do
	new_id "sd-$n"
	SD_ID[$n]=$ID
	B=$WORK/sd-$n
	state=$STATE1 root=$ROOT
	[ "$n" = b ] && state=$STATE2 root=$ROOT2
	tap_cleanup "HEZO_TEST_STATE='$state' hezo_bundle_cleanup '$root' '$ID'"
	hezo_make_bundle "$B" "$ID" '["sleep", "600"]' || bail_out "cannot make bundle"
	HEZO_TEST_STATE=$state hezo_shim --root "$root" create -b "$B" "$ID" >/dev/null 2> >(cat >"$WORK/sd-$n.err") </dev/null && rc=0 || rc=$?
	expect_eq "$rc" 0 "[state dirs] create of box $n (state dir $n) exits 0" || diag "$(cat "$WORK/sd-$n.err")"
	pid=$(hezo_backend --root "$root" state "$ID" 2>/dev/null | jq -r '.pid // empty')
	HOSTUID[$n]=$(awk '{ print $2 }' "/proc/$pid/uid_map" 2>/dev/null)
done
expect_ne "${HOSTUID[a]:-none}" "${HOSTUID[b]:-none}" "[state dirs] boxes of two state directories get different ranges" ||
	diag "a=${HOSTUID[a]:-} b=${HOSTUID[b]:-}"
HEZO_TEST_STATE=$STATE1 hezo_shim --root "$ROOT" delete --force "${SD_ID[a]}" >/dev/null 2>&1
HEZO_TEST_STATE=$STATE2 hezo_shim --root "$ROOT2" delete --force "${SD_ID[b]}" >/dev/null 2>&1
# Delete takes the box's entry out of the registry: none names this test's records.
left=$(grep -rlE "^($STATE1|$STATE2)/" /run/hezo-userns 2>/dev/null || true)
expect_eq "$left" "" "[state dirs] delete leaves no registry entry of the test's boxes"

# --- a foreground run that runc refuses leaves no cgroup behind ---------------------------------------
# The shim makes the box's memory cgroup for the TCP cap before runc runs; here runc refuses the
# bundle (a time namespace it cannot join), and on main the directory stayed.
sleep 600 >/dev/null 2>&1 &
SLEEPER=$!
tap_cleanup "kill $SLEEPER 2>/dev/null"
new_id refused
B=$WORK/refused
hezo_make_bundle "$B" "$ID" '["true"]' ".linux.namespaces += [{type: \"time\", path: \"/proc/$SLEEPER/ns/time\"}]" ||
	bail_out "cannot make bundle"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >/dev/null 2>"$WORK/refused.err" </dev/null && rc=0 || rc=$?
expect_ne "$rc" 0 "[refused run] runc refuses the bundle" || diag "$(cat "$WORK/refused.err")"
left=$(ls -d /sys/fs/cgroup/*/hezo-test/"$ID" 2>/dev/null || true)
expect_eq "$left" "" "[refused run] no cgroup of the box is left" || diag "$(cat "$WORK/refused.err")"
kill "$SLEEPER" 2>/dev/null
wait "$SLEEPER" 2>/dev/null

# --- ptys: the box's devpts instance has a bound of its own ---------------------------------------------
# Every devpts instance but host root's shares the ptys outside kernel.pty.reserve: the shim gives
# the box's instance max=64 (on main none, and one box took all of them). The bundle's devpts mount
# is Docker's; the box tries for 200 (NOFILE 1024 allows that) and cannot remount without it.
new_id pty
B=$WORK/pty
# shellcheck disable=SC2016
hezo_make_bundle "$B" "$ID" '["sh", "-c", "hezo-kcount pty 200; grep -o \"max=[0-9]*\" /proc/self/mountinfo; mount -o remount,max=4096 /dev/pts 2>/dev/null; echo remount=$?"]' ||
	bail_out "cannot make bundle"
install -m 0755 "$KCOUNT" "$B/rootfs/bin/hezo-kcount"
jq -e '.mounts[] | select(.type == "devpts")' "$B/config.json" >/dev/null || bail_out "the bundle has no devpts mount"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/pty.out" 2>"$WORK/pty.err" </dev/null && rc=0 || rc=$?
diag "kernel.pty: nr $(cat /proc/sys/kernel/pty/nr) of max $(cat /proc/sys/kernel/pty/max), reserve $(cat /proc/sys/kernel/pty/reserve); box: $(tr '\n' ' ' <"$WORK/pty.out")"
expect_eq "$(grep '^ptys=' "$WORK/pty.out")" "ptys=64 stop=ENOSPC" "[pty] the box gets 64 ptys, then ENOSPC" || diag "$(cat "$WORK/pty.err")"
expect_eq "$(grep '^remount=' "$WORK/pty.out")" remount=1 "[pty] the box cannot remount /dev/pts"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- a box at its inotify caps leaves host root its own ---------------------------------------------
# The box opens instances until the kernel refuses one and watches 4000 files from each until a
# watch is refused (on main: all of root's 128 instances and 192530 watches), and holds them. Its
# output goes through a pipe: runc hands the box the caller's stdio as it is.
new_id inotify
B=$WORK/inotify
hezo_make_bundle "$B" "$ID" '["hezo-kcount", "hold", "/tmp", "4000"]' || bail_out "cannot make bundle"
install -m 0755 "$KCOUNT" "$B/rootfs/bin/hezo-kcount"
hezo_shim --root "$ROOT" create -b "$B" "$ID" > >(cat >"$WORK/inotify.out") 2> >(cat >"$WORK/inotify.err") </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[inotify] create exits 0" || diag "$(cat "$WORK/inotify.err")"
hezo_shim --root "$ROOT" start "$ID" </dev/null >/dev/null 2>"$WORK/inotify-start.err" && rc=0 || rc=$?
expect_eq "$rc" 0 "[inotify] start exits 0" || diag "$(cat "$WORK/inotify-start.err")"
# Until the box says it holds what it could get (or ends): a condition, not a time.
for _ in $(seq 600); do
	grep -qE '^(held=yes|error=)' "$WORK/inotify.out" && break
	[ "$(hezo_backend --root "$ROOT" state "$ID" 2>/dev/null | jq -r '.status')" = running ] || break
	sleep 0.1
done
expect_match "$(cat "$WORK/inotify.out")" '^held=yes$' "[inotify] the box holds the instances and watches it got" ||
	diag "$(cat "$WORK/inotify.out" "$WORK/inotify.err")"
diag "box: $(head -n 1 "$WORK/inotify.out")"
expect_match "$("$KCOUNT" try)" '^inotify=ok' "[inotify] host root opens an inotify instance and a watch of its own"
hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- five boxes at their inotify caps with 10k epoll instances each, at once -----------------------
# The box's user namespace is owned by the box's own host uid, so what its users hold is charged
# to that uid at the host's level, not to root: on main (namespace owned by root) four boxes take
# root's 128 instances and the fifth finds none, nor does host root. Each box may hold 12000 files
# a process and the policy allows 32 processes: the file-table clamp (below) leaves 12000 only when
# fs.file-max is at least 12000 x 32 x 4.
[ "$(cat /proc/sys/fs/file-max)" -ge $((12000 * 32 * 4)) ] ||
	bail_out "fs.file-max $(cat /proc/sys/fs/file-max): [five] needs $((12000 * 32 * 4))"
hezo_write_policy bundle '.resources = {pids: 32}'
FIVE_IDS=
for n in 1 2 3 4 5; do
	new_id "five-$n"
	B=$WORK/five-$n
	hezo_make_bundle "$B" "$ID" '["hezo-kcount", "hold", "/tmp", "4000", "10000"]' \
		'.process.rlimits = [{type: "RLIMIT_NOFILE", hard: 12000, soft: 12000}] | .linux.resources.pids = {limit: 32}' ||
		bail_out "cannot make bundle"
	install -m 0755 "$KCOUNT" "$B/rootfs/bin/hezo-kcount"
	hezo_shim --root "$ROOT" create -b "$B" "$ID" > >(cat >"$WORK/five-$n.out") 2> >(cat >"$WORK/five-$n.err") </dev/null && rc=0 || rc=$?
	expect_eq "$rc" 0 "[five] create of box $n exits 0" || diag "$(cat "$WORK/five-$n.err")"
	hezo_shim --root "$ROOT" start "$ID" </dev/null >/dev/null 2>"$WORK/five-$n-start.err" || diag "$(cat "$WORK/five-$n-start.err")"
	FIVE_IDS+=" $ID"
	# One box after another: each holds what it got before the next starts (a condition).
	for _ in $(seq 600); do
		grep -qE '^(held=yes|error=)' "$WORK/five-$n.out" && break
		[ "$(hezo_backend --root "$ROOT" state "$ID" 2>/dev/null | jq -r '.status')" = running ] || break
		sleep 0.1
	done
	diag "box $n: $(head -n 1 "$WORK/five-$n.out")"
done
for n in 1 2 3 4 5; do
	expect_match "$(cat "$WORK/five-$n.out")" '^instances=[1-9][0-9]* .* epoll=10000 \(-\)$' \
		"[five] box $n holds inotify instances and 10000 epoll instances" || diag "$(cat "$WORK/five-$n.out" "$WORK/five-$n.err")"
done
expect_eq "$("$KCOUNT" try)" "inotify=ok epoll=ok" "[five] with five boxes at their caps, host root opens inotify and epoll of its own"
for id in $FIVE_IDS; do hezo_shim --root "$ROOT" delete --force "$id" >/dev/null 2>&1; done
hezo_write_policy bundle

# --- host-wide tables: the file table and AIO contexts ----------------------------------------------
# The policy's resources.pids (what an update may raise pids.limit to) x RLIMIT_NOFILE is clamped
# to a quarter of fs.file-max (on main the box got the 16000 it asked for), and io_setup answers
# ENOSYS (on main it made a context counted in fs.aio-max-nr). The policy here allows 64 tasks.
hezo_write_policy bundle '.resources = {pids: 64}'
new_id hostwide
B=$WORK/hostwide
FILE_MAX=$(cat /proc/sys/fs/file-max)
want=$((FILE_MAX / 4 / 64))
[ "$want" -lt 16000 ] || bail_out "fs.file-max $FILE_MAX: the test needs it below $((16000 * 4 * 64))"
# shellcheck disable=SC2016
hezo_make_bundle "$B" "$ID" '["sh", "-c", "echo nofile=$(ulimit -Hn)/$(ulimit -Sn); hezo-kcount aio"]' \
	'.process.rlimits = [{type: "RLIMIT_NOFILE", hard: 16000, soft: 16000}] | .linux.resources.pids = {limit: 64}' ||
	bail_out "cannot make bundle"
install -m 0755 "$KCOUNT" "$B/rootfs/bin/hezo-kcount"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/hostwide.out" 2>"$WORK/hostwide.err" </dev/null && rc=0 || rc=$?
diag "fs.file-max $FILE_MAX, box: $(tr '\n' ' ' <"$WORK/hostwide.out")"
expect_eq "$(grep '^nofile=' "$WORK/hostwide.out")" "nofile=$want/$want" \
	"[file-max] RLIMIT_NOFILE clamped to fs.file-max / 4 / the policy's 64 tasks" || diag "$(cat "$WORK/hostwide.err")"
expect_eq "$(grep '^io_setup=' "$WORK/hostwide.out")" io_setup=ENOSYS "[aio] io_setup answers ENOSYS in a runc box"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
hezo_write_policy bundle

# --- Docker: a box's uid_map ----------------------------------------------------------------------
if hezo_dockerd_start && hezo_image_docker; then
	RT=hezo-test-userns
	hezo_make_wrapper
	hezo_write_policy docker
	hezo_docker_register_runtime "$RT" "$HEZO_TEST_WRAPPER" || bail_out "cannot register runtime $RT"
	out=$(timeout 120 "$HEZO_DOCKER" run --rm --runtime="$RT" --network=none "$HEZO_TEST_IMAGE" \
		cat /proc/self/uid_map 2>&1 </dev/null) && rc=0 || rc=$?
	expect_eq "$rc" 0 "[docker] docker run --rm exits 0" || diag "$out"
	uid_map_ok docker "$out"
else
	hezo_cannot_run "dockerd does not start"
fi

left=$(hezo_backend_ids "$ROOT" | grep -F "hezo-it-userns" || true)
expect_eq "$left" "" "no test container left under --root"
reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports" || for r in $reports; do diag "$(head -c 4000 "$r")"; done

tap_done

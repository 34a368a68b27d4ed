#!/bin/bash
# Integration: busybox OCI bundles run through hezo-shim on the backend HEZO_TEST_BACKEND (runc or
# runsc) with the dev test policy; the box must hold whatever the bundle asked for.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/box.sh
. "$here/../lib/box.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"

hezo_require_root
hezo_require_tools jq runc cmp timeout awk "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

diag "backend $HEZO_TEST_BACKEND ($(hezo_backend_bin)), shim $HEZO_SHIM_BIN"
mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-bundle-$HEZO_TEST_BACKEND
WORK=$(mktemp -d "$HEZO_TEST_DIR/bundle.XXXXXX")
tap_cleanup "rm -rf '$WORK'"
hezo_write_policy bundle
MIB=1048576

# new_id NAME: sets ID to a fresh container ID that the exit trap cleans up.
new_id()
{
	ID="hezo-it-$1-$(hezo_rand)"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$ID'"
}

# --- --version ----------------------------------------------------------------------------------
out=$(hezo_shim --version 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "--version exits 0"
expect_match "$(head -n 1 <<<"$out")" '^hezo-shim version [0-9]' "--version prints 'hezo-shim version X' first"
expect_match "$out" '^commit: ' "--version prints a commit line"
expect_match "$out" '^spec: ' "--version prints a spec line"

# --- run: the box seen from inside ----------------------------------------------------------------
new_id run
B=$WORK/run
hezo_make_bundle "$B" "$ID" "$(jq -cn --arg p "$HEZO_BOX_PROBE" '["sh", "-c", $p]')" || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/run.out" 2>"$WORK/run.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[run] hezo-shim run exits 0" || diag "stderr: $(cat "$WORK/run.err")"
out=$(cat "$WORK/run.out")
hezo_assert_box run "$out"
hezo_assert_backend run "$out"
expect_eq "$(jq -r '.root.path' "$B/config.json")" rootfs "[run] root.path stays relative"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- run with a bind mount of the host's / : refused, bundle untouched -------------------------
new_id bindroot
B=$WORK/bindroot
hezo_make_bundle "$B" "$ID" '["true"]' \
	'.mounts += [{destination: "/host", type: "bind", source: "/", options: ["rbind", "rw"]}]' ||
	bail_out "cannot make bundle"
cp "$B/config.json" "$WORK/bindroot.orig"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/bindroot.out" 2>"$WORK/bindroot.err" </dev/null && rc=0 || rc=$?
expect_ne "$rc" 0 "[bind /] run is refused (non-zero exit)"
err=$(cat "$WORK/bindroot.err")
expect_eq "$(wc -l <"$WORK/bindroot.err" | tr -d ' ')" 1 "[bind /] exactly one line on stderr" || diag "$err"
expect_match "$err" '^hezo-shim: ' "[bind /] the line starts with 'hezo-shim: '"
expect_match "$err" '/host' "[bind /] the reason names the mount (/host)"
expect_eq "$(cat "$WORK/bindroot.out")" "" "[bind /] nothing on stdout"
check "[bind /] config.json unchanged" cmp "$WORK/bindroot.orig" "$B/config.json"
expect_eq "$(hezo_backend_ids "$ROOT" | grep -cxF "$ID")" 0 "[bind /] no container left"
expect_eq "$(hezo_state_records "$ID")" "" "[bind /] no state record"

# Same refusal through --log FILE --log-format json: one JSON line, as containerd reads it.
log=$WORK/bindroot.log
hezo_shim --root "$ROOT" --log "$log" --log-format json run -b "$B" "$ID" \
	>"$WORK/bindroot2.out" 2>"$WORK/bindroot2.err" </dev/null && rc=0 || rc=$?
expect_ne "$rc" 0 "[bind / --log] refused (non-zero exit)"
expect_eq "$(wc -l <"$log" 2>/dev/null | tr -d ' ')" 1 "[bind / --log] one line in the log file"
expect_eq "$(jq -r .level <"$log" 2>&1)" error "[bind / --log] level is error"
expect_match "$(jq -r .msg <"$log" 2>&1)" '^hezo-shim: .*/host' "[bind / --log] msg is the shim's reason naming /host"
expect_match "$(jq -r .time <"$log" 2>&1)" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$' \
	"[bind / --log] time is RFC 3339 UTC"
expect_eq "$(cat "$WORK/bindroot2.out" "$WORK/bindroot2.err")" "" "[bind / --log] nothing on stdout or stderr"
check "[bind / --log] config.json unchanged" cmp "$WORK/bindroot.orig" "$B/config.json"

# --- a bundle the backend refuses: runc and runsc leave nothing, and neither may the shim ---------
# This host has no AppArmor, so runc refuses a profile; runsc refuses a rootfs that is not there.
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	REFUSE='.process.apparmorProfile = "hezo-test-none"'
else
	REFUSE='.root.path = "rootfs-missing"'
fi
new_id refused
B=$WORK/refused
hezo_make_bundle "$B" "$ID" '["true"]' "$REFUSE" || bail_out "cannot make bundle"
cp "$B/config.json" "$WORK/refused.orig"
hezo_shim --root "$ROOT" create -b "$B" "$ID" >"$WORK/refused.out" 2>"$WORK/refused.err" </dev/null && rc=0 || rc=$?
expect_ne "$rc" 0 "[refused] create fails (the backend refuses the bundle)" || diag "$(cat "$WORK/refused.err")"
check "[refused] config.json as it was" cmp "$WORK/refused.orig" "$B/config.json"
expect_eq "$(hezo_state_records "$ID")" "" "[refused] no state record"
expect_eq "$(hezo_backend_ids "$ROOT" | grep -cxF "$ID")" 0 "[refused] no container left"
# run stays the backend's own process, so its refusal can leave a record: a plain delete (the
# backend: "does not exist") removes it.
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/refused.out" 2>"$WORK/refused.err" </dev/null && rc=0 || rc=$?
expect_ne "$rc" 0 "[refused] run fails too"
hezo_shim --root "$ROOT" delete "$ID" >/dev/null 2>&1 && rc=0 || rc=$?
# (runsc's delete is always forced by the shim, and a forced delete of nothing succeeds.)
[ "$HEZO_TEST_BACKEND" = runc ] && expect_ne "$rc" 0 "[refused] delete without --force: the container does not exist"
expect_eq "$(hezo_state_records "$ID")" "" "[refused] no state record after a plain delete"

# --- mounts and limits: a bundle asking for rtprio 99, nice 40 and OOM score -1000 ---------------
# The kernel filesystems the engine asked for, each once at its place; the limits clamped.
GREEDY='.process.rlimits = [{type: "RLIMIT_RTPRIO", hard: 99, soft: 99},
		{type: "RLIMIT_NICE", hard: 40, soft: 40}, {type: "RLIMIT_NOFILE", hard: 1024, soft: 1024}]
	| .process.oomScoreAdj = -1000'
new_id limits
B=$WORK/limits
hezo_make_bundle "$B" "$ID" "$(jq -cn --arg p "$HEZO_MOUNT_PROBE" '["sh", "-c", $p]')" "$GREEDY" ||
	bail_out "cannot make bundle"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/limits.out" 2>"$WORK/limits.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[limits] run exits 0" || diag "stderr: $(cat "$WORK/limits.err")"
out=$(cat "$WORK/limits.out")
expect_eq "$(hezo_probe_get "$out" probe)" "done" "[limits] probe ran to the end" || diag "$out"
expect_eq "$(hezo_probe_get "$out" procmounts)" 1 "[limits] inside: one proc mount in mountinfo"
expect_eq "$(hezo_probe_get "$out" sysfsmounts)" 1 "[limits] inside: one sysfs mount in mountinfo"
expect_match "$(hezo_probe_get "$out" sysopts)" '^ro(,|$)' "[limits] inside: /sys is read-only"
expect_ne "$(hezo_probe_get "$out" corepattern)" rw "[limits] inside: core_pattern cannot be opened for writing"
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	# (Measured: echo h > /proc/sysrq-trigger fails with EIO and the host's dmesg shows nothing.)
	skip "[limits] inside: sysrq-trigger cannot be opened for writing" \
		"gVisor's /proc/sysrq-trigger is its own: it opens, and a write fails without reaching the host"
else
	expect_ne "$(hezo_probe_get "$out" sysrqtrigger)" rw "[limits] inside: sysrq-trigger cannot be opened for writing"
fi
expect_eq "$(hezo_probe_get "$out" rtprio)" 0,0 "[limits] inside: RLIMIT_RTPRIO soft,hard 0,0"
expect_eq "$(hezo_probe_get "$out" nicelimit)" 0,0 "[limits] inside: RLIMIT_NICE soft,hard 0,0"
expect_eq "$(hezo_probe_get "$out" oomscoreadj)" 0 "[limits] inside: oom_score_adj 0"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	expect_eq "$(hezo_probe_get "$out" renice)" no "[limits] inside: renice -n -5 is refused"
else
	skip "[limits] inside: renice -n -5 is refused" "gVisor's setpriority is its own; the limits above are what it was given"
fi
cfg=$B/config.json
expect_eq "$(jq -c '[.process.rlimits[] | select(.type == "RLIMIT_RTPRIO" or .type == "RLIMIT_NICE")
	| [.type, .hard, .soft]]' "$cfg")" '[["RLIMIT_RTPRIO",0,0],["RLIMIT_NICE",0,0]]' \
	"[limits] saved config.json: RTPRIO and NICE clamped to 0"
expect_eq "$(jq -c '.process.rlimits[] | select(.type == "RLIMIT_NOFILE") | [.hard, .soft]' "$cfg")" \
	'[1024,1024]' "[limits] saved config.json: NOFILE kept"
expect_eq "$(jq -r '.process.oomScoreAdj' "$cfg")" 0 "[limits] saved config.json: oomScoreAdj 0"
expect_eq "$(jq -r '[.mounts[] | select(.type == "proc")] | length' "$cfg")" 1 \
	"[limits] saved config.json: one proc mount"
hezo_bundle_cleanup "$ROOT" "$ID"

# The same from the host, on a created container's init.
new_id limitshost
B=$WORK/limitshost
hezo_make_bundle "$B" "$ID" '["sleep", "600"]' "$GREEDY" || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$B" --pid-file "$WORK/limitshost.pid" "$ID" \
	>"$WORK/limitshost.out" 2>"$WORK/limitshost.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[limits host] create exits 0" || diag "stderr: $(cat "$WORK/limitshost.err")"
pid=$(cat "$WORK/limitshost.pid" 2>/dev/null)
if [ "$HEZO_TEST_BACKEND" = runc ] && [ -n "$pid" ]; then
	mi=/proc/$pid/mountinfo
	expect_eq "$(awk '$4 == "/" { for (i = 7; i <= NF; i++) if ($i == "-") { print $(i + 1); break } }' "$mi" |
		grep -cx proc)" 1 "[limits host] /proc/PID/mountinfo: one whole proc mount"
	expect_match "$(awk '$5 == "/sys" { print $6 }' "$mi" | tail -n 1)" '^ro(,|$)' \
		"[limits host] /proc/PID/mountinfo: /sys read-only"
	expect_eq "$(awk '/^Max realtime priority/ { print $4 "," $5 }' "/proc/$pid/limits")" 0,0 \
		"[limits host] /proc/PID/limits: realtime priority 0,0"
	expect_eq "$(awk '/^Max nice priority/ { print $4 "," $5 }' "/proc/$pid/limits")" 0,0 \
		"[limits host] /proc/PID/limits: nice priority 0,0"
	expect_eq "$(cat "/proc/$pid/oom_score_adj")" 0 "[limits host] /proc/PID/oom_score_adj 0"
else
	skip "[limits host] /proc/PID of the container's init" \
		"runsc: the host PID is the sandbox's, the workload's view is gVisor's (checked inside above)"
fi
hezo_bundle_cleanup "$ROOT" "$ID"

# --- create / state / cgroups / start / exec / kill / delete ------------------------------------
new_id life
B=$WORK/life
hezo_make_bundle "$B" "$ID" '["sleep", "600"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$B" --pid-file "$WORK/life.pid" "$ID" \
	>"$WORK/life.out" 2>"$WORK/life.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[life] create exits 0" || diag "stderr: $(cat "$WORK/life.err")"
st=$(hezo_shim --root "$ROOT" state "$ID" 2>&1)
expect_eq "$(jq -r .status <<<"$st" 2>&1)" created "[life] state says created"
expect_eq "$(jq -r .pid <<<"$st" 2>&1)" "$(cat "$WORK/life.pid" 2>/dev/null)" "[life] state pid matches --pid-file"
cgpath=$(jq -r '.linux.cgroupsPath // empty' "$B/config.json")
expect_eq "$cgpath" "/hezo-test/$ID" "[life] cgroupsPath kept"
hezo_assert_cgroup life "$cgpath" $((2048 * MIB))
hezo_assert_spec life "$B/config.json"
# hooks NAME VERB: how many hezo-hook VERB entries hooks.NAME of the bundle's config.json has.
hooks() { jq --arg v "$2" "[.hooks.$1[]? | select(.args[1] == \$v)] | length" "$B/config.json"; }
expect_eq "$(hooks prestart wire)" 1 "[life] egress deny: hezo-hook wire at prestart"
expect_eq "$(hooks poststop unwire)" 0 \
	"[life] egress deny in a namespace of its own: no unwire at poststop (nothing outlives it)"

check "[life] start" hezo_shim --root "$ROOT" start "$ID"
check "[life] state says running" hezo_wait_status "$ROOT" "$ID" running 10
expect_ne "$(hezo_state_records "$ID")" "" "[life] the shim recorded the container"

# exec with a process asking for 38 capabilities, plus --cap: still nothing.
hezo_process_json "$(jq -cn --arg p "$HEZO_BOX_PROBE" '["sh", "-c", $p]')" "$HEZO_CAPS_38" >"$WORK/proc.json"
hezo_shim --root "$ROOT" exec --process "$WORK/proc.json" --cap CAP_SYS_ADMIN "$ID" \
	>"$WORK/exec.out" 2>"$WORK/exec.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[exec 38 caps] exec exits 0" || diag "stderr: $(cat "$WORK/exec.err")"
out=$(cat "$WORK/exec.out")
hezo_assert_creds "exec 38 caps" "$out" &&
	expect_eq "$(hezo_probe_get "$out" rootwrite)" no "[exec 38 caps] root still read-only"

check "[life] kill KILL" hezo_shim --root "$ROOT" kill "$ID" KILL
check "[life] state says stopped" hezo_wait_status "$ROOT" "$ID" stopped 20

# runc's answers for a stopped or missing container, whatever the backend: containerd's runc v2
# shim reads them on stderr (also with --log) and finishes a pod's teardown only on these words.
# answer LABEL WANT_RC WANT_ERE VERB...: the shim's exit status and stderr, as containerd calls it.
answer()
{
	local label=$1 want_rc=$2 want=$3 out rc
	shift 3
	out=$(hezo_shim --root "$ROOT" --log "$WORK/answer.log" --log-format json "$@" 2>&1 >/dev/null) &&
		rc=0 || rc=$?
	expect_eq "$rc" "$want_rc" "[answers] $label: exit $want_rc, as runc's"
	[ -n "$want" ] && expect_match "$out" "$want" "[answers] $label: stderr says \"$want\""
}
answer "kill of a stopped container" 1 'container not running' kill "$ID" KILL
answer "kill --all of a stopped container" 0 '' kill --all "$ID" KILL
check "[life] delete" hezo_shim --root "$ROOT" delete "$ID"
expect_eq "$(hezo_backend_status "$ROOT" "$ID")" absent "[life] container gone after delete"
expect_eq "$(hezo_state_records "$ID")" "" "[life] state record removed by delete"
answer "state of an unknown container" 1 'does not exist' state "$ID"
answer "kill of an unknown container" 1 'does not exist' kill "$ID" KILL
answer "delete --force of an unknown container" 0 '' delete --force "$ID"
LIFE_ID=$ID
# The backend lost a container under the shim's record (a sandbox that died and was cleaned up).
new_id lost
hezo_make_bundle "$WORK/lost" "$ID" '["sleep", "600"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$WORK/lost" "$ID" >/dev/null 2>"$WORK/lost.err" </dev/null ||
	diag "create: $(cat "$WORK/lost.err")"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
expect_ne "$(hezo_state_records "$ID")" "" "[answers] the shim still has the lost container's record"
answer "state of a container the backend lost" 1 'does not exist' state "$ID"
answer "kill of a container the backend lost" 1 'does not exist' kill "$ID" KILL
answer "delete --force of a container the backend lost" 0 '' delete --force "$ID"
expect_eq "$(hezo_state_records "$ID")" "" "[answers] ... and its record goes with it"
hezo_bundle_cleanup "$ROOT" "$ID"
ID=$LIFE_ID
check_fails "[life] memory cgroup removed" test -d "$(hezo_cgroup_dir memory "/hezo-test/$ID")"

# --- a pod's sandbox: a refused app container leaves it running; killed from outside, the
# teardown containerd sends (kill, kill --all, delete) succeeds and leaves nothing ---------------
new_id sandbox
SB=$ID
POD_ANN='.annotations = {"io.kubernetes.cri.container-type": "sandbox", "io.kubernetes.cri.sandbox-id": $sb}'
hezo_make_bundle "$WORK/sb" "$SB" '["sleep", "600"]' "$(printf '%s' "$POD_ANN" | sed "s/\$sb/\"$SB\"/")" ||
	bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$WORK/sb" "$SB" >/dev/null 2>"$WORK/sb.err" </dev/null &&
	hezo_shim --root "$ROOT" start "$SB" 2>>"$WORK/sb.err" && rc=0 || rc=$?
expect_eq "$rc" 0 "[pod] the sandbox starts" || diag "$(cat "$WORK/sb.err")"
check "[pod] the sandbox runs" hezo_wait_status "$ROOT" "$SB" running 10
SPID=$(hezo_backend --root "$ROOT" state "$SB" 2>/dev/null | jq -r .pid)
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	new_id app
	hezo_make_bundle "$WORK/app" "$ID" '["sleep", "600"]' \
		".annotations = {\"io.kubernetes.cri.container-type\": \"container\", \"io.kubernetes.cri.sandbox-id\": \"$SB\"}" ||
		bail_out "cannot make bundle"
	out=$(hezo_shim --root "$ROOT" create -b "$WORK/app" "$ID" 2>&1 >/dev/null </dev/null) && rc=0 || rc=$?
	expect_ne "$rc" 0 "[pod] runsc: the pod's app container is refused"
	expect_eq "$(grep -c 'hezo-shim: ' <<<"$out"):$(grep -c . <<<"$out")" 1:1 "[pod] ... in one line"
	expect_match "$out" "runsc cannot run a pod's app container" "[pod] ... saying why"
	answer "delete --force of the refused app container" 0 '' delete --force "$ID"
	sleep 1
	check "[pod] the sandbox still runs after the refusal" kill -0 "$SPID"
	expect_eq "$(hezo_backend_status "$ROOT" "$SB")" running "[pod] ... and its backend says running"
fi
kill -KILL "$SPID"
check "[pod] the sandbox killed from outside is stopped" hezo_wait_status "$ROOT" "$SB" stopped 10
answer "kill of the killed sandbox" 1 'container not running' kill "$SB" KILL
answer "kill --all of the killed sandbox" 0 '' kill --all "$SB" KILL
answer "delete of the killed sandbox" 0 '' delete "$SB"
expect_eq "$(hezo_backend_status "$ROOT" "$SB")" absent "[pod] the backend has no container left"
expect_eq "$(hezo_state_records "$SB")" "" "[pod] the shim has no record left"
expect_eq "$(pgrep -f -- "$SB" | wc -l)" 0 "[pod] no process of the sandbox left"
expect_eq "$(grep -cF -- "$SB" /proc/mounts)" 0 "[pod] no mount of the sandbox left"

# --- resources: the stricter of request and policy wins ---------------------------------------
new_id greedy
B=$WORK/greedy
hezo_make_bundle "$B" "$ID" '["sleep", "600"]' \
	'.linux.resources = {memory: {limit: 8589934592, swap: 17179869184}, pids: {limit: 100000},
	 cpu: {quota: 800000, period: 100000}}' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$B" "$ID" >"$WORK/greedy.out" 2>"$WORK/greedy.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[8g] create exits 0" || diag "stderr: $(cat "$WORK/greedy.err")"
hezo_assert_cgroup 8g "/hezo-test/$ID" $((2048 * MIB))
expect_eq "$(hezo_read "$(hezo_cgroup_dir cpu "/hezo-test/$ID")/cpu.cfs_quota_us")" 200000 \
	"[8g] cpu.cfs_quota_us clamped to 2 CPUs"
hezo_bundle_cleanup "$ROOT" "$ID"

new_id modest
B=$WORK/modest
hezo_make_bundle "$B" "$ID" '["sleep", "600"]' \
	'.linux.resources = {memory: {limit: 536870912}, pids: {limit: 100}}' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$B" "$ID" >"$WORK/modest.out" 2>"$WORK/modest.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[512m] create exits 0" || diag "stderr: $(cat "$WORK/modest.err")"
hezo_assert_cgroup 512m "/hezo-test/$ID" $((512 * MIB)) "$(hezo_expected_pids 100)"
hezo_bundle_cleanup "$ROOT" "$ID"

# --- egress deny in a namespace named by path (a pod's): unwire at poststop ----------------------
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	new_id joined
	B=$WORK/joined
	NS=hezo-it-ns-$(hezo_rand)
	ip netns add "$NS" && tap_cleanup "ip netns del '$NS'"
	hezo_make_bundle "$B" "$ID" '["true"]' \
		'.linux.namespaces |= map(if .type == "network" then .path = "/run/netns/'"$NS"'" else . end)' ||
		bail_out "cannot make bundle"
	hezo_shim --root "$ROOT" create -b "$B" "$ID" >"$WORK/joined.out" 2>"$WORK/joined.err" </dev/null &&
		rc=0 || rc=$?
	expect_eq "$rc" 0 "[joined] create exits 0" || diag "stderr: $(cat "$WORK/joined.err")"
	expect_eq "$(hooks prestart wire):$(hooks poststop unwire)" 1:1 \
		"[joined] a namespace that outlives the container: wire at prestart, unwire at poststop"
	hezo_bundle_cleanup "$ROOT" "$ID"
else
	skip "[joined] wire and unwire hooks for a namespace named by path" \
		"runsc bundles here run with network none (shared/ENVIRONMENT.md)"
fi

# --- namespaces of another hezo-shim container, and one no process is in yet ----------------------
# ns_ino PID KIND: the namespace inode of a host process, from the host.
ns_ino() { stat -L -c %i "/proc/$1/ns/$2" 2>/dev/null || echo "<no /proc/$1/ns/$2>"; }
new_id nsowner
A=$ID
hezo_make_bundle "$WORK/nsowner" "$A" '["sleep", "600"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$WORK/nsowner" --pid-file "$WORK/nsowner.pid" "$A" \
	>"$WORK/nsowner.out" 2>"$WORK/nsowner.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[ns owner] create of the first container exits 0" || diag "$(cat "$WORK/nsowner.err")"
check "[ns owner] start" hezo_shim --root "$ROOT" start "$A"
APID=$(cat "$WORK/nsowner.pid" 2>/dev/null)
new_id nsjoin
JB=$WORK/nsjoin
join='.linux.namespaces |= map(if .type == "ipc" or .type == "uts" then .path = "/proc/'"$APID"'/ns/\(.type)" else . end)'
hezo_make_bundle "$JB" "$ID" '["sleep", "600"]' "$join" || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$JB" --pid-file "$WORK/nsjoin.pid" "$ID" \
	>"$WORK/nsjoin.out" 2>"$WORK/nsjoin.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[ns join] joining the IPC and UTS namespaces of a hezo-shim container is accepted" ||
	diag "$(cat "$WORK/nsjoin.err")"
BPID=$(cat "$WORK/nsjoin.pid" 2>/dev/null)
for k in ipc uts; do
	if [ "$HEZO_TEST_BACKEND" = runc ]; then
		expect_eq "$(ns_ino "$BPID" $k)" "$(ns_ino "$APID" $k)" \
			"[ns join] from the host: the second container is in the first one's $k namespace"
	else
		# Measured: runsc 2022-12 gives each sandbox host IPC/UTS namespaces of its own; the
		# container's IPC and UTS live inside the Sentry.
		skip "[ns join] from the host: the second container is in the first one's $k namespace" \
			"runsc keeps host $k namespaces of its own per sandbox"
	fi
	expect_ne "$(ns_ino "$BPID" $k)" "$(ns_ino $$ $k)" "[ns join] from the host: that $k namespace is not the host's"
done
hezo_bundle_cleanup "$ROOT" "$ID"
# A process of no container in a namespace of its own: refused.
new_id nsforeign
unshare --ipc --uts sleep 600 &
FPID=$!
tap_cleanup "kill $FPID"
sleep 0.3
hezo_make_bundle "$WORK/nsforeign" "$ID" '["true"]' \
	'.linux.namespaces |= map(if .type == "ipc" then .path = "/proc/'"$FPID"'/ns/ipc" else . end)' ||
	bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$WORK/nsforeign" "$ID" >"$WORK/nsforeign.out" 2>"$WORK/nsforeign.err" </dev/null &&
	rc=0 || rc=$?
expect_ne "$rc" 0 "[ns foreign] joining the IPC namespace of a process that is no container's is refused"
expect_match "$(cat "$WORK/nsforeign.err")" "^hezo-shim: linux\\.namespaces\\[[0-9]+\\] \\(ipc\\): path /proc/$FPID/ns/ipc is a namespace that processes of no hezo-shim container are in" \
	"[ns foreign] one line naming the field and the reason"
kill "$FPID" 2>/dev/null

# A planted record (as a `run` that failed inside the backend leaves one) naming the cgroup of a
# process that is no container's: not alive by the backend's state, so it gives nothing.
new_id nsplant
PLANT=$ID
ARECORD=$(find "$HEZO_TEST_STATE" -name "$A.json" 2>/dev/null | head -n 1)
PCG=/sys/fs/cgroup/pids/hezo-test/$PLANT
unshare --ipc sleep 600 &
PLANT_PID=$!
tap_cleanup "kill $PLANT_PID; rmdir '$PCG' 2>/dev/null"
sleep 0.3
mkdir -p "$PCG" && echo "$PLANT_PID" >"$PCG/cgroup.procs"
if [ -n "$ARECORD" ] && jq --arg id "$PLANT" --arg cg "/hezo-test/$PLANT" '.id = $id | .cgroupsPath = $cg' \
	"$ARECORD" >"$(dirname "$ARECORD")/$PLANT.json"; then
	tap_cleanup "rm -f '$(dirname "$ARECORD")/$PLANT.json'"
	new_id nsplantjoin
	hezo_make_bundle "$WORK/nsplant" "$ID" '["true"]' \
		'.linux.namespaces |= map(if .type == "ipc" then .path = "/proc/'"$PLANT_PID"'/ns/ipc" else . end)' ||
		bail_out "cannot make bundle"
	hezo_shim --root "$ROOT" create -b "$WORK/nsplant" "$ID" >"$WORK/nsplant.out" 2>"$WORK/nsplant.err" </dev/null &&
		rc=0 || rc=$?
	expect_ne "$rc" 0 "[ns planted] a record the backend knows nothing of makes no process a container's"
	expect_match "$(cat "$WORK/nsplant.err")" "^hezo-shim: linux\\.namespaces\\[[0-9]+\\] \\(ipc\\): path /proc/$PLANT_PID/ns/ipc is a namespace that processes of no hezo-shim container are in" \
		"[ns planted] one line naming the field and the reason"
	hezo_bundle_cleanup "$ROOT" "$ID"
	rm -f "$(dirname "$ARECORD")/$PLANT.json"
else
	bail_out "no record for $A to plant a copy of"
fi
kill "$PLANT_PID" 2>/dev/null
wait "$PLANT_PID" 2>/dev/null
rmdir "$PCG" 2>/dev/null
hezo_bundle_cleanup "$ROOT" "$A"

# Projects: a container of project alpha; one of beta may not join its namespaces, one of alpha may.
PROJ=$WORK/projects
mkdir -p "$PROJ" && echo '{}' >"$PROJ/alpha.json" && echo '{}' >"$PROJ/beta.json"
jq --arg d "$PROJ" '.projectsDir = $d' "$HEZO_TEST_POLICY" >"$WORK/policy-projects.json" ||
	bail_out "cannot write the projects policy"
new_id nsalpha
PA=$ID
hezo_make_bundle "$WORK/nsalpha" "$PA" '["sleep", "600"]' || bail_out "cannot make bundle"
HEZO_TEST_POLICY=$WORK/policy-projects.json hezo_shim --root "$ROOT" --hezo-project alpha create \
	-b "$WORK/nsalpha" --pid-file "$WORK/nsalpha.pid" "$PA" >"$WORK/nsalpha.out" 2>"$WORK/nsalpha.err" </dev/null &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[ns project] create of a container of project alpha exits 0" || diag "$(cat "$WORK/nsalpha.err")"
check "[ns project] start" hezo_shim --root "$ROOT" start "$PA"
PAPID=$(cat "$WORK/nsalpha.pid" 2>/dev/null)
join='.linux.namespaces |= map(if .type == "ipc" then .path = "/proc/'"$PAPID"'/ns/ipc" else . end)'
for proj in beta alpha; do
	new_id "ns$proj-join"
	hezo_make_bundle "$WORK/ns$proj-join" "$ID" '["true"]' "$join" || bail_out "cannot make bundle"
	HEZO_TEST_POLICY=$WORK/policy-projects.json hezo_shim --root "$ROOT" --hezo-project "$proj" create \
		-b "$WORK/ns$proj-join" "$ID" >"$WORK/ns$proj-join.out" 2>"$WORK/ns$proj-join.err" </dev/null &&
		rc=0 || rc=$?
	if [ "$proj" = beta ]; then
		expect_ne "$rc" 0 "[ns project] a container of project beta may not join alpha's namespaces"
		expect_match "$(cat "$WORK/ns$proj-join.err")" "^hezo-shim: linux\\.namespaces\\[[0-9]+\\] \\(ipc\\): path /proc/$PAPID/ns/ipc: it is container $PA.s, of project alpha; this container.s project is beta" \
			"[ns project] one line naming both projects"
	else
		expect_eq "$rc" 0 "[ns project] a container of project alpha joins alpha's namespaces" ||
			diag "$(cat "$WORK/ns$proj-join.err")"
	fi
	hezo_bundle_cleanup "$ROOT" "$ID"
done
hezo_bundle_cleanup "$ROOT" "$PA"

if [ "$HEZO_TEST_BACKEND" = runc ]; then
	# A named network namespace no process is in yet (CNI's, podman's): accepted, and joined.
	new_id nsfresh
	NS2=hezo-it-ns2-$(hezo_rand)
	ip netns add "$NS2" && tap_cleanup "ip netns del '$NS2'"
	hezo_make_bundle "$WORK/nsfresh" "$ID" '["sleep", "600"]' \
		'.linux.namespaces |= map(if .type == "network" then .path = "/run/netns/'"$NS2"'" else . end)' ||
		bail_out "cannot make bundle"
	hezo_shim --root "$ROOT" create -b "$WORK/nsfresh" --pid-file "$WORK/nsfresh.pid" "$ID" \
		>"$WORK/nsfresh.out" 2>"$WORK/nsfresh.err" </dev/null && rc=0 || rc=$?
	expect_eq "$rc" 0 "[ns fresh] a named netns no process is in is accepted" || diag "$(cat "$WORK/nsfresh.err")"
	expect_eq "$(ns_ino "$(cat "$WORK/nsfresh.pid" 2>/dev/null)" net)" "$(stat -L -c %i "/run/netns/$NS2")" \
		"[ns fresh] from the host: the container is in that netns"
	hezo_bundle_cleanup "$ROOT" "$ID"
else
	skip "[ns fresh] a named netns no process is in is accepted" \
		"runsc bundles here run with network none (shared/ENVIRONMENT.md)"
	skip "[ns fresh] from the host: the container is in that netns" \
		"runsc bundles here run with network none (shared/ENVIRONMENT.md)"
fi

# --- cgroupsPath absent, root.path absolute inside the bundle: both fine ----------------------------
new_id cgabsent
B=$WORK/cgabsent
hezo_make_bundle "$B" "$ID" '["true"]' 'del(.linux.cgroupsPath) | .root.path = "'"$B"'/rootfs"' ||
	bail_out "cannot make bundle"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/cgabsent.out" 2>"$WORK/cgabsent.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[no cgroupsPath, absolute root.path in the bundle] run exits 0" || diag "$(cat "$WORK/cgabsent.err")"
expect_eq "$(jq -r '.linux.cgroupsPath // "absent"' "$B/config.json")" absent "[no cgroupsPath] it stays absent"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- nothing left behind ---------------------------------------------------------------------
left=$(hezo_backend_ids "$ROOT" | grep -F "hezo-it-" || true)
expect_eq "$left" "" "no test container left under --root"
reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports" || for r in $reports; do diag "$(head -c 4000 "$r")"; done

tap_done

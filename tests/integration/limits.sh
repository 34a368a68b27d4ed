#!/bin/bash
# Integration: the box's process, memory and /tmp limits hold through Docker under the backend
# HEZO_TEST_BACKEND (docs/runsc.md, "Processes"): 200 processes under the default 256 start and
# finish; beyond 256, forks fail with EAGAIN inside while the container goes on and exits 0; a
# fork bomb is contained and the host's task count comes back; memory past the cap is reported
# as OOM by docker inspect and hezo-shim inspect; /tmp past 64 MiB gives ENOSPC; docker exec'd
# processes count against the same limit; docker update follows the box's current limits. HEZO_TEST_RUNSC names another runsc binary to test
# (e.g. /opt/runsc-2022/runsc).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"

hezo_require_root
hezo_require_tools jq timeout dockerd "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim
[ -z "${HEZO_TEST_RUNSC:-}" ] || hezo_require_tools "$HEZO_TEST_RUNSC"

hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
hezo_image_docker || bail_out "cannot import $HEZO_TEST_IMAGE"
IMG=$HEZO_TEST_IMAGE
RT=hezo-test-limits

hezo_make_wrapper
rm -rf "${HEZO_TEST_SANITIZER_DIR:?}"/*
# No hezo-init (issue 18.1): the counts below are of a workload that is PID 1, and the exec case's
# `kill -9 -1` must spare the container's own process, which only PID 1 is.
filter='.init = false'
[ -n "${HEZO_TEST_RUNSC:-}" ] && filter="$filter | .backends.runsc.path = \"$HEZO_TEST_RUNSC\""
hezo_write_policy docker "$filter"
hezo_docker_register_runtime "$RT" "$HEZO_TEST_WRAPPER" || bail_out "cannot register runtime $RT"
diag "backend $HEZO_TEST_BACKEND ${HEZO_TEST_RUNSC:-}, runtime $RT -> $HEZO_TEST_WRAPPER"
diag "host pids.max expected for 256: $(hezo_expected_pids 256)"

# Tries to keep N (320) `sleep 30` running. busybox sh exits when a fork fails, so a launcher
# shell dies at its first EAGAIN; pid 1 counts that as one refused attempt and starts another
# (using the slot the dead launcher freed), then kills the sleeps, forks again and exits 0.
# shellcheck disable=SC2016
OVER='N=${N:-320}; echo 0 >/tmp/n; fails=0; : >/tmp/err
while :; do
	read i </tmp/n
	[ $((i + fails)) -ge "$N" ] && break
	if ! M=$((N - fails)) sh -c '"'"'read i </tmp/n; while [ $i -lt $M ]; do sleep 30 & i=$((i+1)); echo $i >/tmp/n; done'"'"' 2>>/tmp/err; then
		fails=$((fails + 1))
	fi
done
read i </tmp/n
echo "started=$i refused=$fails"
read -r e </tmp/err; echo "first-error=$e"
kill -9 -1 2>/dev/null
wait
sleep 0.1 && echo "forks again: yes"
exit 0'

# A fork bomb whose copies start copies for ever; pid 1 uses only builtins while it runs,
# counts the tasks it sees each second, then kills them all, counts the bomb's refused forks
# (busybox sh says "can't fork" and exits) and forks again.
# shellcheck disable=SC2016
BOMB='mkfifo /tmp/idle || exit 3
exec 3<>/tmp/idle
export B='"'"'while :; do sh -c "$B" & done'"'"'
sh -c "$B" 2>>/tmp/bomb.err &
n=0
while [ $n -lt 8 ]; do
	read -t 1 x <&3
	set -- /proc/[0-9]*
	echo "t=$n tasks=$#"
	n=$((n + 1))
done
kill -9 -1 2>/dev/null
wait
e=0; a=0
while read -r l; do
	case $l in *"can'"'"'t fork: Resource temporarily unavailable"*) e=$((e + 1)) ;; *) a=$((a + 1)); echo "other: $l" ;; esac
done </tmp/bomb.err
echo "refused=$e other=$a"
sleep 0.2 && echo "bomb gone; pid 1 forks again"
exit 0'

NAMES=()
# run_d LABEL SCRIPT [DOCKER RUN OPTIONS...]: start SCRIPT detached in a fresh container; sets
# NAME, CID and CG (its cgroupsPath, while it runs).
run_d()
{
	local label=$1 script=$2
	shift 2
	NAME="hezo-lim-$label-$(hezo_rand)"
	NAMES+=("$NAME")
	tap_cleanup "hezo_docker rm -f '$NAME'"
	CID=$(timeout -k 5 60 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$NAME" "$@" "$IMG" \
		sh -c "$script" 2>&1 </dev/null) || { diag "docker run: $CID"; CID=; CG=; return 1; }
	# A container that has ended already has no bundle left: CG is then empty.
	CG=$(hezo_docker_cgroups_path "$NAME" 2>/dev/null) || CG=
	return 0
}

# finish TIMEOUT: wait for the container, set RC (its exit code), LOGS and OOM.
finish()
{
	timeout "$1" "$HEZO_DOCKER" wait "$NAME" >/dev/null 2>&1
	RC=$(hezo_docker inspect -f '{{.State.ExitCode}}' "$NAME" 2>&1)
	OOM=$(hezo_docker inspect -f '{{.State.OOMKilled}}' "$NAME" 2>&1)
	LOGS=$(hezo_docker logs "$NAME" 2>&1)
}

# note ID: what hezo-shim inspect says of a deleted container ("" when it kept no note).
note()
{
	hezo_shim inspect "$1" 2>/dev/null | jq -c '.ended // empty' 2>/dev/null
}

host_tasks()
{
	awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg
}

# --- 200 processes under the default cap ----------------------------------------------------------
# shellcheck disable=SC2016
run_d two-hundred 'echo "nproc=$(ulimit -S -u)/$(ulimit -H -u)"
i=0; while [ $i -lt 200 ]; do sleep 3 & i=$((i + 1)); done; echo "started=$i"
wait; echo "all finished"' || not_ok "[200] docker run -d"
finish 60
expect_eq "$RC" 0 "[200] the container exits 0" || diag "$LOGS"
expect_match "$LOGS" '^started=200$' "[200] 200 concurrent sleeps started"
expect_match "$LOGS" '^all finished$' "[200] all of them finished"
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	expect_match "$LOGS" '^nproc=256/256$' "[200] inside gVisor, RLIMIT_NPROC is the policy's 256"
fi
hezo_docker rm -f "$NAME" >/dev/null 2>&1
expect_eq "$(note "$CID")" "" "[200] no limit was reached (hezo-shim inspect keeps no note)"

# --- 320: EAGAIN beyond the cap, the container goes on --------------------------------------------
run_d over "$OVER" || not_ok "[320] docker run -d"
finish 120
expect_eq "$RC" 0 "[320] the container survives and exits 0 on its own" || diag "$LOGS"
expect_match "$LOGS" '^started=254 refused=66$' "[320] 254 start (256 less pid 1 and the launcher), 66 are refused"
expect_match "$LOGS" "^first-error=sh: can't fork: Resource temporarily unavailable\$" \
	"[320] the refused forks fail with EAGAIN"
expect_match "$LOGS" '^forks again: yes$' "[320] after the sleeps are gone, forks work again"
hezo_docker rm -f "$NAME" >/dev/null 2>&1
n=$(note "$CID")
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	# The limit is inside the sandbox: the host's backstop was never reached.
	expect_eq "$n" "" "[320] runsc: the host's pids.max was never reached (no note)"
else
	expect_eq "$(jq -r .pidsMaxHits <<<"$n" 2>&1)" 66 "[320] runc: hezo-shim inspect counts 66 refusals"
fi

# --- docker exec'd processes count against the same limit ------------------------------------------
run_d exec 'sleep 120' || not_ok "[exec] docker run -d"
out=$(timeout -k 5 120 "$HEZO_DOCKER" exec "$NAME" sh -c "$OVER" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[exec] the exec'd shell goes on and exits 0" || diag "$out"
# 256 less the container's sleep, the exec'd shell and its launcher.
expect_match "$out" '^started=253 refused=67$' "[exec] an exec'd shell gets 253, the rest are refused"
expect_eq "$(hezo_docker inspect -f '{{.State.Running}}' "$NAME" 2>&1)" true "[exec] the container still runs"
hezo_docker rm -f "$NAME" >/dev/null 2>&1

# --- a fork bomb -------------------------------------------------------------------------------------
before=$(host_tasks)
run_d bomb "$BOMB" || not_ok "[bomb] docker run -d"
peak=0 events=
max=$(hezo_read "$(hezo_cgroup_dir pids "$CG")/pids.max")
while [ "$(hezo_docker inspect -f '{{.State.Running}}' "$NAME" 2>/dev/null)" = true ]; do
	c=$(cat "$(hezo_cgroup_dir pids "$CG")/pids.current" 2>/dev/null || echo 0)
	[ "$c" -gt "$peak" ] && peak=$c
	e=$(cat "$(hezo_cgroup_dir pids "$CG")/pids.events" 2>/dev/null) && events=$e
	sleep 0.05
done
finish 60
diag "bomb: host pids.current peak $peak of pids.max $max; pids.events '$events'; host tasks before $before"
expect_eq "$RC" 0 "[bomb] the container exits 0 on its own" || diag "$LOGS"
expect_match "$LOGS" '^bomb gone; pid 1 forks again$' "[bomb] pid 1 outlives the bomb and forks again"
most=$(sed -n 's/^t=[0-9]* tasks=\([0-9]*\)$/\1/p' <<<"$LOGS" | sort -n | tail -n 1)
diag "bomb: most tasks seen inside ${most:-none}"
refused=$(sed -n 's/^refused=\([0-9]*\) other=.*$/\1/p' <<<"$LOGS")
diag "bomb: $(grep '^refused=' <<<"$LOGS")"
diag "$(grep '^other: ' <<<"$LOGS" | sort | uniq -c | sort -rn | head -n 3)"
check "[bomb] the bomb's forks were refused with EAGAIN inside" test "${refused:-0}" -ge 1
check "[bomb] never more than 256 tasks inside" test "${most:-999}" -le 256
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	expect_eq "$events" "max 0" "[bomb] runsc: the host's pids.max never refused a fork"
	check "[bomb] runsc: the host's tasks stayed below the backstop" test "$peak" -lt "$max"
fi
hezo_docker rm -f "$NAME" >/dev/null 2>&1
for ((i = 0; i < 30; i++)); do
	[ "$(host_tasks)" -le $((before + 64)) ] && break
	sleep 1
done
after=$(host_tasks)
diag "bomb: host tasks after $after"
check "[bomb] the host's task count returns to where it was (+64 at most)" test "$after" -le $((before + 64))

# --- memory past the cap -----------------------------------------------------------------------------
# shellcheck disable=SC2016
run_d oom 'echo start; x=$(head -c 300000000 /dev/zero | tr "\0" a); echo "survived ${#x}"' \
	--memory 128m || not_ok "[oom] docker run -d"
finish 60
expect_eq "$RC" 137 "[oom] the container is killed (137)" || diag "$LOGS"
expect_no_match "$LOGS" survived "[oom] the allocation did not succeed"
expect_eq "$OOM" true "[oom] docker inspect: State.OOMKilled"
hezo_docker rm -f "$NAME" >/dev/null 2>&1
n=$(note "$CID")
check "[oom] hezo-shim inspect of the deleted container counts an OOM kill" \
	test "$(jq -r '.oomKills // 0' <<<"$n" 2>&1)" -ge 1
expect_match "$(jq -r '.reasons[]' <<<"$n" 2>&1)" "OOM killer .* at the memory limit $((128 * 1048576)) bytes" \
	"[oom] and says why" || diag "$n"

# --- a 3 GiB allocation at -m 64m, in the foreground (issue 26.4) ----------------------------------
# What the caller sees of `docker run` itself: 137 (as under runc), or a message naming the cap.
# runsc 2024-07 gives 137 (measured); runsc 2022-12 made docker run exit 1 with no message.
label="oom-fg -m 64m"
NAME="hezo-lim-oomfg-$(hezo_rand)"
tap_cleanup "hezo_docker rm -f '$NAME'"
# shellcheck disable=SC2016
out=$(timeout -k 5 120 "$HEZO_DOCKER" run --rm --runtime="$RT" --name "$NAME" --memory 64m "$IMG" \
	sh -c 'x=$(head -c 3221225472 /dev/zero | tr "\0" a); echo "survived ${#x}"' 2>&1 </dev/null) && rc=0 || rc=$?
diag "[$label] docker run: status $rc, $(tail -c 300 <<<"$out" | tr '\n' ' ')"
if [ "$rc" = 137 ]; then
	ok "[$label] docker run exits 137 or names the memory cap"
else
	expect_match "$out" '(memory|OOM|oom).*(64|67108864)|(64|67108864).*(memory|OOM|oom)' \
		"[$label] docker run exits 137 or names the memory cap"
fi
expect_no_match "$out" survived "[$label] the allocation did not succeed"

# --- updates follow the box's current limits and never loosen (issue 26.5) ---------------------------
# Docker's `update --memory-swap -1` sends memory.limit 0, which runc reads as "unchanged": the box
# read it as the policy's ceiling and lifted an earlier --memory 64m back to 2 GiB. The TCP buffer
# cap (cgroup v1: a quarter of the memory limit, set at create) follows each update.
if [ -e /sys/fs/cgroup/memory/memory.kmem.tcp.limit_in_bytes ]; then
	run_d update 'sleep 300' --memory 256m --cpus 1 || not_ok "[update] docker run -d"
	memd=$(hezo_cgroup_dir memory "$CG")
	cpud=$(hezo_cgroup_dir cpu "$CG")
	# upd [DOCKER UPDATE FLAGS...]: run the update (none: only read), print the box's limits.
	upd()
	{
		local out
		[ $# -eq 0 ] || out=$(timeout 60 "$HEZO_DOCKER" update "$@" "$NAME" 2>&1) ||
			diag "docker update $*: $out"
		echo "mem=$(hezo_read "$memd/memory.limit_in_bytes") tcp=$(hezo_read "$memd/memory.kmem.tcp.limit_in_bytes")" \
			"quota=$(hezo_read "$cpud/cpu.cfs_quota_us")"
	}
	MIB=1048576
	expect_eq "$(upd)" "mem=$((256 * MIB)) tcp=$((64 * MIB)) quota=100000" \
		"[update] at create: 256 MiB, TCP 64 MiB, quota 100000"
	expect_eq "$(upd --memory 64m)" "mem=$((64 * MIB)) tcp=$((16 * MIB)) quota=100000" \
		"[update] --memory 64m: 64 MiB, the TCP cap follows to 16 MiB"
	expect_eq "$(upd --cpus 0.5)" "mem=$((64 * MIB)) tcp=$((16 * MIB)) quota=50000" \
		"[update] then --cpus 0.5: quota 50000, memory still 64 MiB"
	expect_eq "$(upd --memory-swap -1)" "mem=$((64 * MIB)) tcp=$((16 * MIB)) quota=50000" \
		"[update] then --memory-swap -1: memory stays 64 MiB, TCP 16 MiB, quota 50000"
	expect_eq "$(upd --memory 128m --memory-swap 128m)" "mem=$((128 * MIB)) tcp=$((32 * MIB)) quota=50000" \
		"[update] then --memory 128m, asked for: 128 MiB, TCP 32 MiB"
	expect_eq "$(hezo_docker inspect -f '{{.State.Running}}' "$NAME" 2>&1)" true "[update] the container still runs"
	hezo_docker rm -f "$NAME" >/dev/null 2>&1
else
	skip "[update] no memory.kmem.tcp.limit_in_bytes (not a cgroup v1 memory controller)"
fi

# --- /tmp past 64 MiB ---------------------------------------------------------------------------------
run_d tmp 'dd if=/dev/zero of=/tmp/fill bs=1M count=100 2>&1; echo "dd=$?"
rm /tmp/fill && echo ok >/tmp/x && echo "after=$(cat /tmp/x)"' || not_ok "[tmp] docker run -d"
finish 60
expect_eq "$RC" 0 "[tmp] the container goes on and exits 0" || diag "$LOGS"
expect_match "$LOGS" 'No space left on device' "[tmp] writing past 64 MiB fails with ENOSPC"
expect_match "$LOGS" '^64\+0 records out$' "[tmp] exactly 64 MiB were written"
expect_match "$LOGS" '^after=ok$' "[tmp] /tmp is usable again afterwards"
hezo_docker rm -f "$NAME" >/dev/null 2>&1

reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done

tap_done

#!/bin/bash
# Integration: `hezo-shim ps [--json]` (issue 18.3) on the backend HEZO_TEST_BACKEND: every live
# box, its figures equal to its cgroup files (under runsc, the host's view of the sandbox), the
# admission state, and nothing for boxes that are gone. proxyd's figures are compared in
# egress-docker.sh, where a container is registered with a real proxyd.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"

hezo_require_root
hezo_require_tools jq runc timeout dockerd "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-ps-$HEZO_TEST_BACKEND
WORK=$(mktemp -d "$HEZO_TEST_DIR/ps.XXXXXX")
tap_cleanup "rm -rf '$WORK'"
rm -rf "${HEZO_TEST_STATE:?}"
hezo_write_policy bundle '.admission = {maxActive: 7, wait: 5}'

# box JSON ID: its entry in `ps --json`.
box() { jq -c --arg id "$2" '.boxes[] | select(.id == $id)' <<<"$1"; }
# cgroup_figures LABEL ID CGROUPS_PATH ADMISSION: ps's figures for the box equal its cgroup files
# (usage figures are read again right after ps, so they may have moved a little).
cgroup_figures()
{
	local label=$1 id=$2 cg=$3 adm=$4 doc b v
	doc=$(hezo_shim ps --json 2>&1)
	b=$(box "$doc" "$id")
	[ -n "$b" ] && ok "[$label] ps --json lists the box" || { not_ok "[$label] ps --json lists the box"; diag "$doc"; return; }
	expect_eq "$(jq -r .memoryCap <<<"$b")" "$(cat "/sys/fs/cgroup/memory$cg/memory.limit_in_bytes")" \
		"[$label] memory cap = memory.limit_in_bytes"
	expect_eq "$(jq -r .pidsCap <<<"$b")" "$(cat "/sys/fs/cgroup/pids$cg/pids.max")" "[$label] pids cap = pids.max"
	expect_eq "$(jq -r .pids <<<"$b")" "$(cat "/sys/fs/cgroup/pids$cg/pids.current")" "[$label] pids = pids.current"
	v=$(cat "/sys/fs/cgroup/memory$cg/memory.usage_in_bytes")
	m=$(jq -r .memoryBytes <<<"$b")
	# Memory moves a little between two reads of an idle box: within 5 %.
	[ "$m" -gt 0 ] && [ $((m > v ? m - v : v - m)) -le $((v / 20 + 65536)) ] &&
		ok "[$label] memory used ~ memory.usage_in_bytes ($m vs $v)" ||
		not_ok "[$label] memory used ~ memory.usage_in_bytes ($m vs $v)"
	v=$(($(cat "/sys/fs/cgroup/cpuacct$cg/cpuacct.usage") / 1000))
	m=$(jq -r .cpuMicros <<<"$b")
	[ "$m" -gt 0 ] && [ "$m" -le "$v" ] && ok "[$label] CPU = cpuacct.usage (${m} us, file now ${v} us)" ||
		not_ok "[$label] CPU = cpuacct.usage (${m} us, file now ${v} us)"
	expect_eq "$(jq -r .backend <<<"$b")" "$HEZO_TEST_BACKEND" "[$label] backend"
	expect_eq "$(jq -r .admission <<<"$b")" "$adm" "[$label] admission state"
	expect_eq "$(jq -r .init <<<"$b")" hezo "[$label] init"
}

# --- bundles ---------------------------------------------------------------------------------------
IDS=()
for i in 1 2; do
	id=ahps$$-$i
	IDS+=("$id")
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$id'"
	hezo_make_bundle "$WORK/$id" "$id" '["sh", "-c", "for i in 1 2 3; do sleep 1000 & done; wait"]' >/dev/null 2>&1 ||
		bail_out "cannot make bundle"
	hezo_shim --root "$ROOT" run -d -b "$WORK/$id" "$id" </dev/null >/dev/null 2> >(cat >"$WORK/$id.err") ||
		bail_out "run -d $id: $(cat "$WORK/$id.err")"
done
sleep 1
cgroup_figures bundle "${IDS[0]}" "/hezo-test/${IDS[0]}" active
doc=$(hezo_shim ps --json 2>&1)
expect_eq "$(jq -r .engine <<<"$(box "$doc" "${IDS[0]}")")" oci "[bundle] engine of a bare bundle: oci"
expect_eq "$(jq -c '.admission | [.active, .waiting, .limit]' <<<"$doc")" "[2,0,7]" "[bundle] admission: 2 active, 0 waiting, limit 7"
table=$(hezo_shim ps 2>&1)
diag "$table"
expect_match "$(head -n 1 <<<"$table")" '^CONTAINER ID +PROJECT +BACKEND +EGRESS +MEMORY +PIDS +CPU +UP +CONNS$' \
	"[bundle] the table's header"
expect_match "$table" "^${IDS[1]:0:12} +- +$HEZO_TEST_BACKEND " "[bundle] the table lists the second box"
expect_eq "$(hezo_shim ps --format json 2>&1 | jq -c '[.boxes[].id] | sort')" "$(jq -c '[.boxes[].id] | sort' <<<"$doc")" \
	"[bundle] ps --format json is ps --json"
expect_match "$(tail -n 1 <<<"$table")" '^admission: 2 active, 0 waiting, limit 7 \(maxActive 7 from policy\)$' \
	"[bundle] the table's admission line"

# --- stats: the live view ----------------------------------------------------------------------
# A box that spins: its CPU share over an interval is well above an idle box's.
BUSY=ahps$$-busy
tap_cleanup "hezo_bundle_cleanup '$ROOT' '$BUSY'"
hezo_make_bundle "$WORK/$BUSY" "$BUSY" '["sh", "-c", "while :; do :; done"]' >/dev/null 2>&1 ||
	bail_out "cannot make bundle"
hezo_shim --root "$ROOT" run -d -b "$WORK/$BUSY" "$BUSY" </dev/null >/dev/null 2>"$WORK/busy.err" ||
	bail_out "run -d $BUSY: $(cat "$WORK/busy.err")"
sleep 1
sdoc=$(hezo_shim stats --no-stream --format json --interval 1 2>&1)
sb=$(box "$sdoc" "$BUSY")
si=$(box "$sdoc" "${IDS[0]}")
expect_match "$(jq -r .intervalSeconds <<<"$sdoc" 2>&1)" '^(0\.9|1\.)' "[stats] --no-stream --format json: one sample over the 1 s interval"
expect_eq "$(jq -r '.cpuPercent > 5' <<<"$sb" 2>&1)" true "[stats] the spinning box uses CPU ($(jq -r .cpuPercent <<<"$sb" 2>&1) %)"
expect_eq "$(jq -r '.cpuPercent < 5' <<<"$si" 2>&1)" true "[stats] an idle box does not ($(jq -r .cpuPercent <<<"$si" 2>&1) %)"
# (Under runsc the pids are the sandbox's host tasks: more than the box's 5 processes.)
expect_eq "$(jq -r '(.memoryPercent | type) + " " + (.pids > 0 | tostring) + " " + (.pidsCap | tostring)' <<<"$si" 2>&1)" \
	"number true $(cat "/sys/fs/cgroup/pids/hezo-test/${IDS[0]}/pids.max")" "[stats] memory share and pids against the cap"
expect_eq "$(jq -r .admission.active <<<"$sdoc")" 3 "[stats] the admission state: 3 active"
# In a real terminal (tmux): the view refreshes in place, one header on the screen at a time.
if command -v tmux >/dev/null 2>&1; then
	TS=hzstats$$
	tap_cleanup "tmux kill-session -t '$TS'"
	tmux new-session -d -s "$TS" -x 100 -y 24 \
		"env HEZO_POLICY='$HEZO_TEST_POLICY' HEZO_STATE_DIR='$HEZO_TEST_STATE' '$HEZO_SHIM_BIN' stats --interval 0.5; sleep 60"
	# Six lines a frame, two frames a second: after 4 s a scrolling view would show several.
	sleep 4
	screen2=$(tmux capture-pane -p -t "$TS")
	tmux kill-session -t "$TS" 2>/dev/null
	diag "$screen2"
	expect_eq "$(grep -c '^CONTAINER ID' <<<"$screen2")" 1 "[stats, tmux] one header on the screen: the view is redrawn in place"
	expect_match "$screen2" "^${BUSY:0:12} " "[stats, tmux] the spinning box is on the screen"
	expect_match "$screen2" "^admission: 3 active, 0 waiting, limit 7$" "[stats, tmux] the admission line"
else
	hezo_cannot_run "tmux is not installed (tests/setup.sh installs it)"
fi
hezo_shim --root "$ROOT" delete --force "$BUSY" >/dev/null 2>&1
hezo_bundle_cleanup "$ROOT" "$BUSY"
for _ in $(seq 50); do
	[ -z "$(box "$(hezo_shim ps --json 2>&1)" "$BUSY")" ] && break
	sleep 0.2
done
expect_eq "$(box "$(hezo_shim ps --json 2>&1)" "$BUSY")" "" "[stats] the spinning box, deleted, is no longer listed"

hezo_shim --root "$ROOT" kill "${IDS[1]}" KILL >/dev/null 2>&1
sleep 1
doc=$(hezo_shim ps --json 2>&1)
expect_eq "$(box "$doc" "${IDS[1]}")" "" "[bundle] a box whose processes are gone is not listed"
expect_eq "$(jq -r .admission.active <<<"$doc")" 1 "[bundle] ... nor counted"
hezo_write_policy bundle '.admission = {maxActive: "auto", wait: 5} | .resources.memory = "512m"'
doc=$(hezo_shim ps --json 2>&1)
want=$(awk '/^MemTotal:/ {m = $2} /^SwapTotal:/ {s = $2} END {printf "%d", (m + s - 1048576) / 524288}' /proc/meminfo)
[ "$want" -lt 1 ] && want=1
expect_eq "$(jq -r .admission.limit <<<"$doc")" "$want" "[auto] limit = (RAM + swap - 1 GiB) / 512 MiB from /proc/meminfo"
expect_match "$(jq -r .admission.how <<<"$doc")" '^maxActive auto: \(RAM [0-9.]+ GiB \+ swap [0-9.]+ GiB - 1 GiB\) / memory cap 0.50 GiB = ' \
	"[auto] ... and says how"
for id in "${IDS[@]}"; do hezo_bundle_cleanup "$ROOT" "$id"; done

# --- Docker --------------------------------------------------------------------------------------------
hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
hezo_image_docker || bail_out "cannot import $HEZO_TEST_IMAGE"
RT=hezo-test-ah-ps
hezo_make_wrapper
hezo_write_policy docker
hezo_docker_register_runtime "$RT" "$HEZO_TEST_WRAPPER" || bail_out "cannot register runtime $RT"
NAME=hezo-ah-ps-$(hezo_rand)
tap_cleanup "hezo_docker rm -f '$NAME'"
timeout 120 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$NAME" -m 300m --pids-limit 500 "$HEZO_TEST_IMAGE" \
	sh -c 'for i in 1 2 3; do sleep 1000 & done; wait' >/dev/null 2>&1 || not_ok "[docker] docker run -d"
sleep 1
cid=$(hezo_docker inspect -f '{{.Id}}' "$NAME")
cg=$(hezo_docker_cgroups_path "$NAME")
cgroup_figures docker "$cid" "$cg" unlimited
doc=$(hezo_shim ps --json 2>&1)
expect_eq "$(jq -r .engine <<<"$(box "$doc" "$cid")")" docker "[docker] engine: docker"
expect_eq "$(jq -r .memoryCap <<<"$(box "$doc" "$cid")")" $((300 * 1048576)) "[docker] memory cap: docker's -m 300m"
# As docker ps: 12-character IDs in the table and in -q, all 64 with --no-trunc, in 80 columns.
table=$(hezo_shim ps 2>&1)
diag "$table"
expect_match "$table" "^${cid:0:12}  " "[docker] the table shows the 12-character ID"
expect_eq "$(awk 'length > 80' <<<"$table")" "" "[docker] every line of the table fits 80 columns"
expect_match "$(hezo_shim ps -q 2>&1)" "^${cid:0:12}$" "[docker] ps -q prints the 12-character ID"
expect_match "$(hezo_shim ps -q --no-trunc 2>&1)" "^$cid$" "[docker] ps -q --no-trunc prints all 64"
expect_match "$(hezo_shim ps --no-trunc 2>&1)" "^$cid  " "[docker] ps --no-trunc shows all 64 in the table"
expect_match "$(hezo_shim ps -q "$cid" 2>&1)" 'give no ID' "[docker] ps -q with an ID is refused in one line, not passed to the backend"
hezo_docker rm -f "$NAME" >/dev/null 2>&1
sleep 1
expect_eq "$(box "$(hezo_shim ps --json 2>&1)" "$cid")" "" "[docker] a removed container is not listed"

reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done
tap_done

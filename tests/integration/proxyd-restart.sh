#!/bin/bash
# Integration: hezo-proxyd restarted under load. Ten real containers (OCI bundles under
# HEZO_TEST_BACKEND), each in a network namespace of its own wired by the real hezo-hook in
# egress proxy mode, resolve a name and fetch a page from a test host in a loop; proxyd is
# SIGKILLed and started again on the same state. While it is down nothing answers; once it is
# started again every box resolves and connects within 2 s (docs/egress.md, "Fail closed").
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"
# shellcheck source=tests/lib/netns.sh
. "$here/../lib/netns.sh"
# shellcheck source=tests/lib/proxyd.sh
. "$here/../lib/proxyd.sh"

hezo_require_root
hezo_require_tools jq runc ip nft ss dnsmasq curl ldd timeout "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim
PROXYD=${HEZO_PROXYD_BIN:-$HEZO_BUILD_DIR/proxyd/hezo-proxyd}
[ -x "$PROXYD" ] || hezo_cannot_run "no hezo-proxyd at $PROXYD"
[ -x "$HEZO_HOOK_BIN" ] || hezo_cannot_run "no hezo-hook at $HEZO_HOOK_BIN"
# The recovery bound is read from the host's clock as each box's line arrives: bash's own.
[ -n "${EPOCHREALTIME:-}" ] || hezo_cannot_run "bash without EPOCHREALTIME"

NBOX=10
# What the test assumes of the machine, and sets: each box's resolver gives up after 1 s (one
# attempt), and curl after 1 s, so a box tries again at least once a second and a half.
diag "backend $HEZO_TEST_BACKEND ($(hezo_backend_bin)), shim $HEZO_SHIM_BIN, proxyd $PROXYD"
diag "assumes: $NBOX boxes, $(nproc) CPUs, resolver timeout 1 s attempts 1, curl --max-time 1, 0.1 s between tries"
tap_plan 8

mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-proxyd-restart-$HEZO_TEST_BACKEND
E=$(mktemp -d "$HEZO_TEST_DIR/proxyd-restart.XXXXXX")
chmod 0755 "$E"
TAG=hzr$$
INS=$TAG-i
DNS_PORT=$((20000 + $$ % 20000))
# Named as containerd CRI names the pins it makes (an empty pin counts only under such a name).
NS=()
for i in $(seq $NBOX); do
	NS+=("cni-$(cat /proc/sys/kernel/random/uuid)")
done
PIDS=()
BOXPIDS=()
IDS=()
# Cleanups run last-registered first: boxes (while proxyd still answers their poststop hooks),
# then proxyd and the servers, its namespace pins, the namespaces, the files.
tap_cleanup "rm -rf '$E'"
# (tap.sh runs each cleanup with eval inside its own loop over i: no i here)
tap_cleanup 'ip netns del "$INS"; ip link del "$TAG-h"; for n in "${NS[@]}"; do ip netns del "$n"; done'
tap_cleanup 'for m in "$E"/proxyd/netns/*; do [ -e "$m" ] && umount -l "$m"; done; true'
tap_cleanup 'for p in "${PIDS[@]}"; do kill "$p"; done; for p in "${PIDS[@]}"; do wait "$p"; done'
tap_cleanup 'for id in "${IDS[@]}"; do hezo_bundle_cleanup "$ROOT" "$id"; done; for p in "${BOXPIDS[@]}"; do wait "$p"; done'

# ---- the world: the test host in a namespace, reached from the host; ten box namespaces ----
ip netns add "$INS" || bail_out "cannot create network namespaces"
ip -n "$INS" link set lo up
hezo_netns_link_host "$TAG-h" "$INS" 10.206.0 2 || bail_out "cannot link the test host's namespace"
for ns in "${NS[@]}"; do
	# A route out is all a box's namespace needs: the jail redirects everything to proxyd's
	# listeners there before it would leave.
	ip netns add "$ns" && ip -n "$ns" link set lo up &&
		ip -n "$ns" link add d0 type veth peer name d1 &&
		ip -n "$ns" addr add 10.207.0.2/24 dev d0 && ip -n "$ns" link set d0 up &&
		ip -n "$ns" link set d1 up && ip -n "$ns" route add default via 10.207.0.1 ||
		bail_out "cannot make the box namespace $ns"
done
mkdir -p "$E/www" && echo hello >"$E/www/index.html"
tap_bg ip netns exec "$INS" "$HEZO_BUSYBOX" httpd -f -p 10.206.0.2:8080 -h "$E/www"
tap_bg dnsmasq -k -C /dev/null --port "$DNS_PORT" --listen-address 127.0.0.1 --bind-interfaces \
	--no-resolv --no-hosts --user=root --address=/up.test/10.206.0.2
hezo_wait_listen "$INS" tcp 10.206.0.2 8080 && hezo_wait_listen - udp 127.0.0.1 "$DNS_PORT" ||
	bail_out "the test host or its resolver did not start"

mkdir -p "$E/proxyd" "$E/netlog"
start_proxyd() { hezo_proxyd_start "$E/proxyd" "$E/netlog" "$E/proxyd/control.sock" >>"$E/proxyd.log" 2>&1; }
rc=0
start_proxyd || rc=$?
PIDS+=("$PROXYD_PID")
[ "$rc" = 0 ] || bail_out "hezo-proxyd did not start: $(cat "$E/proxyd.log")"
export HEZO_PROXYD_SOCKET=$E/proxyd/control.sock

hezo_write_policy bundle ".egress = {mode: \"proxy\", allow: [\"up.test:8080\"],
		resolvers: [\"127.0.0.1:$DNS_PORT\"], allowRanges: [\"10.206.0.0/24\"]}
	| if .backends.runsc then .backends.runsc.network = \"host\" else . end"

# ---- one rootfs (busybox and Debian's curl), a bundle per box ----
RFS=$E/rootfs
hezo_busybox_rootfs "$RFS" && hezo_copy_bin "$RFS" /usr/bin/curl || bail_out "cannot make the rootfs"
printf 'nameserver 10.207.0.1\noptions timeout:1 attempts:1\n' >"$RFS/etc/resolv.conf"
printf 'hosts: dns files\n' >"$RFS/etc/nsswitch.conf"
LOOP='while :; do
	if curl -sS --max-time 1 -o /dev/null http://up.test:8080/ 2>/dev/null; then echo ok; else echo fail; fi
	sleep 0.1
done'

# stamp: each line read, after the host's clock in microseconds.
stamp()
{
	local l
	while IFS= read -r l; do
		printf '%s %s\n' "${EPOCHREALTIME/./}" "$l"
	done
}

for i in $(seq $NBOX); do
	id="hezo-it-pr-$i-$(hezo_rand)"
	IDS+=("$id")
	B=$E/bundle-$i
	mkdir -p "$B"
	cp -al "$RFS" "$B/rootfs" || bail_out "cannot copy the rootfs"
	runc spec --bundle "$B" >/dev/null || bail_out "runc spec"
	jq --arg ns "/run/netns/${NS[i - 1]}" --arg id "$id" --arg p "$LOOP" '
		.root = {path: "rootfs", readonly: true}
		| .process.terminal = false
		| .process.args = ["sh", "-c", $p]
		| .process.env = ["PATH=/bin:/usr/bin", "HOME=/tmp"]
		| .linux.cgroupsPath = ("/hezo-test/" + $id)
		| .linux.namespaces = [.linux.namespaces[] | if .type == "network" then .path = $ns else . end]
	' "$B/config.json" >"$B/config.json.new" && mv -f "$B/config.json.new" "$B/config.json" ||
		bail_out "cannot write the bundle"
	(hezo_shim --root "$ROOT" run -b "$B" "$id" </dev/null 2>&1 | stamp >"$E/box$i.out") &
	BOXPIDS+=($!)
done

# count_after BOX WORD T0 [T1]: lines of WORD the box printed at or after T0 (and before T1).
count_after()
{
	awk -v w="$2" -v t0="$3" -v t1="${4:-99999999999999999}" \
		'$2 == w && $1 >= t0 && $1 < t1 { n++ } END { print n + 0 }' "$E/box$1.out"
}
# boxes_with WORD T0 [T1] MIN: how many boxes printed WORD at least MIN times in that span.
boxes_with()
{
	local i n=0
	for i in $(seq $NBOX); do
		[ "$(count_after "$i" "$1" "$2" "$3")" -ge "$4" ] && n=$((n + 1))
	done
	echo "$n"
}

# ---- before: every box gets through ----
for _ in $(seq 120); do
	[ "$(boxes_with ok 0 99999999999999999 3)" = $NBOX ] && break
	sleep 0.5
done
expect_eq "$(boxes_with ok 0 99999999999999999 3)" $NBOX \
	"$NBOX boxes resolve up.test and fetch from it through proxyd" ||
	for i in $(seq $NBOX); do diag "box $i: $(tail -n 3 "$E/box$i.out" | tr '\n' ' ')"; done
expect_eq "$("$PROXYD" --socket "$HEZO_PROXYD_SOCKET" --ctl list | jq '.containers | length')" $NBOX \
	"proxyd holds $NBOX registrations"

# ---- proxyd killed: nothing answers ----
{
	kill -9 "$PROXYD_PID"
	wait "$PROXYD_PID"
} 2>/dev/null
T_KILL=${EPOCHREALTIME/./}
rm -f "$HEZO_PROXYD_SOCKET"
for _ in $(seq 100); do
	[ "$(boxes_with fail "$T_KILL" 99999999999999999 2)" = $NBOX ] && break
	sleep 0.1
done
T_DOWN=${EPOCHREALTIME/./}
# A try that had its answer before the kill may print ok just after it; then only failures.
expect_eq "$(boxes_with fail "$T_KILL" "$T_DOWN" 2)" $NBOX "proxyd down: every box's tries fail"

# ---- started again on the same state ----
T_UP=${EPOCHREALTIME/./}
rc=0
start_proxyd || rc=$?
PIDS+=("$PROXYD_PID")
# Looked at once, at once: a caller takes the socket as the sign that proxyd serves again.
n=0
for i in $(seq $NBOX); do
	ip netns exec "${NS[i - 1]}" ss -Hlun src 127.0.0.1:15053 | grep -q . &&
		ip netns exec "${NS[i - 1]}" ss -Hltn src 127.0.0.1:15001 | grep -q . && n=$((n + 1))
done
expect_eq "$rc/$n" "0/$NBOX" "restarted: when its control socket appears, all $NBOX boxes' listeners are back"
# The product's promise, the only time bound here: every box is through within 2 s.
LIMIT=$((T_UP + 2000000))
for _ in $(seq 100); do
	[ "${EPOCHREALTIME/./}" -gt "$LIMIT" ] && break
	sleep 0.1
done
expect_eq "$(boxes_with ok "$T_UP" "$LIMIT" 1)" $NBOX \
	"restarted under load: all $NBOX boxes resolve and connect within 2 s of the restart"
for i in $(seq $NBOX); do
	first=$(awk -v t0="$T_UP" '$2 == "ok" && $1 >= t0 { print $1; exit }' "$E/box$i.out")
	if [ -n "$first" ]; then
		diag "box $i: first success $(((first - T_UP) / 1000)) ms after the restart"
	else
		diag "box $i: no success after the restart"
	fi
done
# Then they keep getting through: three more tries each, none failing.
T_AFTER=${EPOCHREALTIME/./}
for _ in $(seq 100); do
	[ "$(boxes_with ok "$T_AFTER" 99999999999999999 3)" = $NBOX ] && break
	sleep 0.1
done
T_END=${EPOCHREALTIME/./}
expect_eq "$(boxes_with ok "$T_AFTER" "$T_END" 3)/$(boxes_with fail "$T_AFTER" "$T_END" 1)" "$NBOX/0" \
	"restarted: every box keeps getting through, no try fails"

# ---- the boxes end; their registrations go with them ----
for id in "${IDS[@]}"; do
	hezo_backend --root "$ROOT" kill "$id" KILL >/dev/null 2>&1
done
for p in "${BOXPIDS[@]}"; do
	wait "$p"
done
for id in "${IDS[@]}"; do
	hezo_backend --root "$ROOT" delete --force "$id" >/dev/null 2>&1
done
expect_eq "$("$PROXYD" --socket "$HEZO_PROXYD_SOCKET" --ctl list | jq '.containers | length')" 0 \
	"the boxes gone, proxyd holds no registration"
expect_no_match "$(cat "$E/proxyd.log")" 'Sanitizer|runtime error|"level":"error"' \
	"proxyd's log shows no sanitizer report or error"
tap_done

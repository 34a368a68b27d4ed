#!/bin/bash
# Fault: hezo-proxyd is SIGKILLed while a jailed "container" keeps it busy (wrk, many short HTTP
# connections to an allowed server). While it is down nothing may leave the container, neither
# directly nor through anything else; started again on the same state it must serve the same
# container without a new registration.
# World: netns C (the container, jailed by the real hezo-hook) and netns I (the internet) joined
# by a veth; the host reaches I over a second veth, which is where proxyd's upstream traffic goes.
# Usage: tests/fault/proxyd-kill.sh [BUILD_DIR]   (or HEZO_BUILD=...)
set -uo pipefail

# shellcheck source=tests/fault/fault-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/fault-lib.sh"

hezo_require_root
hezo_require_tools jq ip nft wrk curl timeout busybox "$HEZO_HOOK_BIN" "$HEZO_PROXYD_BIN"
fault_setup proxyd
tap_plan 11

TAG=hzk$$
C=$TAG-c
I=$TAG-i
PIDS=()
# Cleanups run last-registered first: processes, then mounts, then the namespaces.
tap_cleanup "ip netns del $C; ip netns del $I; ip link del $TAG-h"
tap_cleanup 'for m in "$FW"/proxyd/netns/*; do umount -l "$m"; done'
tap_cleanup 'for p in "${PIDS[@]}"; do kill "$p"; done'
# Whatever runs in the test's own namespaces was started by this test.
tap_cleanup "ip netns pids $C | xargs -r kill; ip netns pids $I | xargs -r kill"
in_c() { ip netns exec "$C" "$@"; }
in_i() { ip netns exec "$I" "$@"; }

ip netns add "$C" && ip netns add "$I" || bail_out "cannot create network namespaces"
ip link add "$TAG-c0" type veth peer name "$TAG-c1" &&
	ip link set "$TAG-c0" netns "$C" && ip link set "$TAG-c1" netns "$I" &&
	ip link add "$TAG-h" type veth peer name "$TAG-i0" && ip link set "$TAG-i0" netns "$I" ||
	bail_out "cannot create veth pairs"
in_c ip addr add 10.210.1.2/24 dev "$TAG-c0"
in_c ip link set "$TAG-c0" up
in_c ip route add default via 10.210.1.1
in_i ip addr add 10.210.1.1/24 dev "$TAG-c1"
in_i ip addr add 10.210.9.2/24 dev "$TAG-i0"
in_i ip link set "$TAG-c1" up
in_i ip link set "$TAG-i0" up
in_i ip link set lo up
in_i sysctl -qw net.ipv4.ip_forward=1
ip addr add 10.210.9.1/24 dev "$TAG-h"
ip link set "$TAG-h" up

mkdir -p "$FW/www" && echo hello >"$FW/www/index.html"
in_i busybox httpd -f -p 10.210.9.2:8080 -h "$FW/www" &
PIDS+=($!)
# A server the policy does not allow, next door to the container.
in_i busybox httpd -f -p 10.210.1.1:8081 -h "$FW/www" &
PIDS+=($!)
# Count what reaches the server, by who sent it: the container itself (must stay 0) and the
# host, where proxyd's upstream connections come from.
in_i nft -f - <<-'EOF' || bail_out "cannot install the counting table"
	table ip count {
		chain input {
			type filter hook input priority 0;
			ip saddr 10.210.1.0/24 counter
			ip saddr 10.210.9.1 tcp flags syn counter
		}
	}
EOF
counter()
{
	in_i nft -j list chain ip count input |
		jq --argjson i "$1" '[.nftables[].rule? // empty] | .[$i].expr[] | .counter? // empty | .packets'
}

in_c sleep 100000 &
PIDS+=($!)
CPID=$(hezo_netns_wait_pid "$C") || bail_out "no process in $C"
sleep 0.3
check "without the jail the container reaches the server directly" \
	in_c curl -sS --max-time 3 http://10.210.9.2:8080/
check "without the jail the container reaches the server next door" \
	in_c curl -sS --max-time 3 http://10.210.1.1:8081/
direct_base=$(counter 0)

PSTATE=$FW/proxyd
SOCK=$PSTATE/control.sock
mkdir -p "$PSTATE/log"
PROXYD_PID=""
start_proxyd()
{
	"$HEZO_PROXYD_BIN" --socket "$SOCK" --state-dir "$PSTATE" --log-dir "$PSTATE/log" \
		--upstream 127.0.0.1:53 >>"$FW/proxyd.log" 2>&1 &
	PROXYD_PID=$!
	PIDS+=($!)
	for _ in $(seq 100); do
		# The first start has nothing registered; a restart must listen in C again.
		[ -S "$SOCK" ] && { [ "${1:-}" != restore ] || in_c ss -Hltn | grep -q ':15001'; } &&
			return 0
		sleep 0.1
	done
	return 1
}
start_proxyd || bail_out "hezo-proxyd did not start: $(cat "$FW/proxyd.log")"

mkdir -p "$FW/bundle"
jq -n --arg p "/run/netns/$C" '{ociVersion:"1.0.2",linux:{namespaces:[{type:"network",path:$p}]}}' \
	>"$FW/bundle/config.json"
jq -cn --argjson pid "$CPID" --arg b "$FW/bundle" \
	'{ociVersion:"1.0.2",id:"fault-proxyd",status:"created",pid:$pid,bundle:$b,annotations:{}}' \
	>"$FW/state.json"
HEZO_PROXYD_SOCKET=$SOCK "$HEZO_HOOK_BIN" wire --egress \
	'{"mode":"proxy","allow":["10.210.9.2/32:8080"],"resolvers":[],"allowRanges":["10.210.9.0/24"],"project":"fault"}' \
	<"$FW/state.json" >"$FW/hook.out" 2>&1
expect_eq "$?" 0 "the hook wires the container to proxyd" || diag_cmd cat "$FW/hook.out"
check "jailed: the allowed server answers through proxyd" \
	in_c curl -sS --max-time 3 http://10.210.9.2:8080/

# Load for 12 s; proxyd is killed at 3 s and started again at 7 s.
in_c wrk -t 2 -c 16 -d 12s --timeout 2s http://10.210.9.2:8080/ >"$FW/wrk.out" 2>&1 &
WRK=$!
sleep 3
kill -KILL "$PROXYD_PID"
{ wait "$PROXYD_PID"; } 2>/dev/null
rm -f "$SOCK"
sleep 0.5
down_before=$(counter 1)
curl_down=$(in_c curl -sS --max-time 2 -o /dev/null -w '%{http_code}' http://10.210.9.2:8080/ 2>&1)
sleep 3
down_after=$(counter 1)
start_proxyd restore
restarted=$?
sleep 1
up_after=$(counter 1)
wait "$WRK"
diag "wrk under the kill: $(grep -E 'requests in|Socket errors|Non-2xx' "$FW/wrk.out" | tr -s ' ' | tr '\n' ';')"
diag "proxyd upstream SYNs: before kill+0.5s $down_before, end of downtime $down_after, 1 s after restart $up_after"

expect_no_match "$curl_down" '^200$' "proxyd down: a request from the container gets no answer"
expect_eq "$down_after" "$down_before" "proxyd down: no connection reached the server for 3 s under load"
expect_eq "$restarted" 0 "proxyd starts again on the same state directory"
expect_ne "$up_after" "$down_after" "restarted under load: connections flow again without re-registering"
check "restarted: the allowed server answers" in_c curl -sS --max-time 3 http://10.210.9.2:8080/
check_fails "restarted: a server not allowed is still refused" \
	in_c curl -sS --max-time 3 http://10.210.1.1:8081/
expect_eq "$(counter 0)" "$direct_base" "not one packet from the container's own address reached the internet"

HEZO_PROXYD_SOCKET=$SOCK "$HEZO_HOOK_BIN" unwire <"$FW/state.json" >/dev/null 2>&1
tap_done

#!/bin/bash
# Soak: hezo-proxyd under valgrind memcheck with SOAK_REGS registrations (default 1000, each its own
# network namespace) and SOAK_CONNS short connections (default 1,000,000; one HTTP request each,
# "Connection: close") from SOAK_CLIENTS jailed namespaces to an allowed haproxy. Then every
# registration is removed and proxyd stopped: memcheck must report no error and no definite leak,
# and the daemon must end with nothing registered and no namespace mount.
# Usage: tests/load/proxyd-soak.sh [BUILD_DIR]
#   SOAK_REGS=1000 SOAK_CONNS=1000000 SOAK_CLIENTS=4 SOAK_VALGRIND=1 (0: run proxyd bare)
#   SOAK_MAX_SECONDS=0 (a time cap on the load phase)
# Not part of `meson test`: with valgrind a million connections take hours on 2 cores.
set -uo pipefail

# shellcheck source=tests/fault/fault-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../fault/fault-lib.sh"

REGS=${SOAK_REGS:-1000}
CONNS=${SOAK_CONNS:-1000000}
CLIENTS=${SOAK_CLIENTS:-4}
USE_VG=${SOAK_VALGRIND:-1}
MAX_SECONDS=${SOAK_MAX_SECONDS:-0} # stop the load early (0: never); the count assertion then fails

hezo_require_root
hezo_require_tools jq ip nft wrk haproxy curl "$HEZO_HOOK_BIN" "$HEZO_PROXYD_BIN"
[ "$USE_VG" = 1 ] && hezo_require_tools valgrind
fault_setup soak
TAG=hzs$$
I=$TAG-i
PIDS=()
tap_cleanup "ip netns del $I; ip link del $TAG-h"
tap_cleanup "for n in \$(ip netns list | awk '/^$TAG-/ {print \$1}'); do ip netns del \$n; done"
tap_cleanup 'for m in "$FW"/proxyd/netns/*; do umount -l "$m"; done'
tap_cleanup 'for p in "${PIDS[@]}"; do kill "$p"; done'
tap_cleanup "ip netns pids $I | xargs -r kill"

# The internet: haproxy answering every request itself, reached from the host over a veth.
ip netns add "$I" || bail_out "cannot create $I"
ip link add "$TAG-h" type veth peer name "$TAG-i0" && ip link set "$TAG-i0" netns "$I" ||
	bail_out "cannot create the veth pair"
ip netns exec "$I" ip addr add 10.211.9.2/24 dev "$TAG-i0"
ip netns exec "$I" ip link set "$TAG-i0" up
ip netns exec "$I" ip link set lo up
ip addr add 10.211.9.1/24 dev "$TAG-h"
ip link set "$TAG-h" up
cat >"$FW/haproxy.cfg" <<-EOF
	global
		maxconn 4000
	defaults
		mode http
		timeout client 10s
		timeout server 10s
		timeout connect 5s
	frontend www
		bind 10.211.9.2:8080
		http-request return status 200 content-type text/plain string ok
EOF
ip netns exec "$I" haproxy -f "$FW/haproxy.cfg" -db >"$FW/haproxy.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do
	ip netns exec "$I" bash -c 'exec 3<>/dev/tcp/10.211.9.2/8080' 2>/dev/null && break
	sleep 0.1
done

PSTATE=$FW/proxyd
SOCK=$PSTATE/control.sock
mkdir -p "$PSTATE/log"
VG=()
# proxyd's seccomp filter would refuse valgrind's own system calls.
NOSECCOMP=()
if [ "$USE_VG" = 1 ]; then
	# A bind mount passes no filesystem type (NULL: the netns helper's seccomp filter pins that
	# argument to 0), which the kernel ignores and valgrind's mount() wrapper reports as an
	# unaddressable string.
	cat >"$FW/vg.supp" <<-'EOF'
		{
		   bind-mount-without-type
		   Memcheck:Param
		   mount(type)
		   fun:mount
		}
	EOF
	VG=(valgrind --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite
		--error-exitcode=99 --suppressions="$FW/vg.supp" --log-file="$FW/proxyd.vg")
	NOSECCOMP=(--no-seccomp)
fi
"${VG[@]}" "$HEZO_PROXYD_BIN" --socket "$SOCK" --state-dir "$PSTATE" --log-dir "$PSTATE/log" \
	--upstream 127.0.0.1:53 --conn-limit 4096 "${NOSECCOMP[@]}" >"$FW/proxyd.log" 2>&1 &
PROXYD_PID=$!
PIDS+=($!)
for _ in $(seq 300); do
	[ -S "$SOCK" ] && break
	sleep 0.1
done
[ -S "$SOCK" ] || bail_out "hezo-proxyd did not start: $(cat "$FW/proxyd.log")"
ctl() { "$HEZO_PROXYD_BIN" --socket "$SOCK" --ctl "$@"; }
EGRESS='{"mode":"proxy","allow":["10.211.9.2/32:8080"],"resolvers":[],"allowRanges":["10.211.9.0/24"],"project":"soak"}'

# Client namespaces: a veth pair inside each (no dummy module here) gives them a route out;
# the real hook jails them.
start=$(date +%s)
for ((c = 0; c < CLIENTS; c++)); do
	ns=$TAG-c$c
	ip netns add "$ns" && ip -n "$ns" link add d0 type veth peer name d1 && ip -n "$ns" link set d0 up &&
		ip -n "$ns" link set d1 up &&
		ip -n "$ns" addr add 10.211.100.2/24 dev d0 &&
		ip -n "$ns" route add default via 10.211.100.1 || bail_out "cannot set up $ns"
	ip netns exec "$ns" sleep 100000 &
	PIDS+=($!)
	sleep 0.1
	jq -n --arg p "/run/netns/$ns" \
		'{ociVersion:"1.0.2",linux:{namespaces:[{type:"network",path:$p}]}}' >"$FW/config.json"
	mkdir -p "$FW/b$c" && mv "$FW/config.json" "$FW/b$c/config.json"
	cpid=$(ip netns pids "$ns" | head -n1)
	jq -cn --arg id "soak-client-$c" --argjson pid "$cpid" --arg b "$FW/b$c" \
		'{ociVersion:"1.0.2",id:$id,status:"created",pid:$pid,bundle:$b}' >"$FW/state$c.json"
	HEZO_PROXYD_SOCKET=$SOCK "$HEZO_HOOK_BIN" wire --egress "$EGRESS" <"$FW/state$c.json" ||
		bail_out "hook wire failed for $ns"
done
# The other registrations: one namespace each, registered the way an operator would.
fails=0
for ((r = CLIENTS; r < REGS; r++)); do
	ns=$TAG-r$r
	ip netns add "$ns" || { fails=$((fails + 1)); continue; }
	ctl register "soak-$r" "/run/netns/$ns" "$EGRESS" soak >/dev/null 2>&1 || fails=$((fails + 1))
done
nreg=$(find "$PSTATE/containers" -name '*.json' | wc -l)
diag "ctl list: $(ctl list 2>&1 | wc -c) bytes"
diag "registered $nreg containers in $(($(date +%s) - start)) s ($fails failures)"
expect_eq "$nreg" "$REGS" "$REGS registrations accepted (state files)"
expect_eq "$(ctl list 2>/dev/null | jq '[.containers[].id] | unique | length' 2>&1)" "$REGS" \
	"ctl list names all $REGS registrations once"

check "a jailed client reaches the allowed server" \
	ip netns exec "$TAG-c0" curl -sS --max-time 10 http://10.211.9.2:8080/

# Connections: wrk rounds in every client namespace at once until CONNS requests are answered.
done_conns=0 errors=0 round=0
start=$(date +%s)
while [ "$done_conns" -lt "$CONNS" ]; do
	wrks=()
	for ((c = 0; c < CLIENTS; c++)); do
		ip netns exec "$TAG-c$c" wrk -t 1 -c 8 -d 20s --timeout 5s -H 'Connection: close' \
			http://10.211.9.2:8080/ >"$FW/wrk-$round-$c.out" 2>&1 &
		wrks+=($!)
	done
	wait "${wrks[@]}"
	for ((c = 0; c < CLIENTS; c++)); do
		n=$(awk '/requests in/ {print $1}' "$FW/wrk-$round-$c.out")
		e=$(awk -F'[ ,]+' '/Socket errors/ {print $4 + $6 + $8 + $10}' "$FW/wrk-$round-$c.out")
		done_conns=$((done_conns + ${n:-0}))
		errors=$((errors + ${e:-0}))
	done
	round=$((round + 1))
	kill -0 "$PROXYD_PID" 2>/dev/null || break
	# A round that got nothing through will not be followed by one that does.
	[ "$done_conns" -gt "${last_done:-0}" ] || break
	[ "$MAX_SECONDS" -gt 0 ] && [ $(($(date +%s) - start)) -ge "$MAX_SECONDS" ] && break
	last_done=$done_conns
done
secs=$(($(date +%s) - start))
diag "connections: $done_conns answered in $secs s ($((done_conns / (secs > 0 ? secs : 1)))/s)," \
	"$errors socket errors, $round rounds"
diag "proxyd stats: $(ctl stats 2>&1 | head -c 600)"
diag "proxyd RSS: $(awk '/VmRSS/ {print $2, $3}' "/proc/$PROXYD_PID/status" 2>/dev/null)"
check "proxyd is alive after the load" kill -0 "$PROXYD_PID"
expect_eq "$([ "$done_conns" -ge "$CONNS" ] && echo yes)" yes "$CONNS connections were answered"

for ((c = 0; c < CLIENTS; c++)); do
	HEZO_PROXYD_SOCKET=$SOCK "$HEZO_HOOK_BIN" unwire <"$FW/state$c.json" >/dev/null 2>&1
done
for ((r = CLIENTS; r < REGS; r++)); do
	ctl deregister "soak-$r" >/dev/null 2>&1
done
expect_eq "$(ctl list | jq '.containers | length')" 0 "every registration is gone (ctl list)"
expect_eq "$(find "$PSTATE/containers" "$PSTATE/netns" -mindepth 1 2>/dev/null | wc -l)" 0 \
	"no registration file or namespace mount is left"
kill -TERM "$PROXYD_PID"
wait "$PROXYD_PID"
rc=$?
if [ "$USE_VG" = 1 ]; then
	diag "$(grep -E 'ERROR SUMMARY|definitely|indirectly|in use at exit' "$FW/proxyd.vg")"
	expect_ne "$rc" 99 "memcheck: no errors and no definite leaks in proxyd"
	[ "$rc" = 99 ] && diag_cmd head -n 80 "$FW/proxyd.vg"
	# The netns helper is a forked child under the same memcheck, logging to the same file but
	# not deciding the daemon's exit status: any error report from any pid fails.
	expect_eq "$(grep -cE '== (Invalid (read|write|free)|Mismatched free|Conditional jump|Use of uninitialised|Syscall param|Source and destination overlap)' \
		"$FW/proxyd.vg")" 0 "memcheck: no error report from the daemon or its netns helper"
else
	expect_eq "$rc" 0 "proxyd exits 0 on SIGTERM"
fi
tap_done

#!/bin/bash
# hezo-hook against the real kernel, no container engine: a network namespace with a process in it
# plays the container, a second one plays the internet (10.202.0.2, fd00:202::2 over a veth).
# Needs root; skips (exit 77, or a TAP skip under meson) otherwise.

set -u

SRC=${HEZO_SOURCE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
BUILD=${HEZO_BUILD_ROOT:-$SRC/build}
HOOK=${HEZO_HOOK:-$BUILD/hooks/hezo-hook}
PROXYD=${HEZO_PROXYD_BIN:-$BUILD/proxyd/hezo-proxyd}

# shellcheck source=tests/lib/tap.sh
. "$SRC/tests/lib/tap.sh"
# shellcheck source=tests/lib/netns.sh
. "$SRC/tests/lib/netns.sh"

cannot_run()
{
	[ "${HEZO_REQUIRE_INTEGRATION:-0}" = 1 ] && bail_out "cannot run: $*"
	tap_skip_all "$*"
}

[ "$(id -u)" = 0 ] || cannot_run "needs root"
for t in ip nft jq bash busybox timeout; do
	command -v "$t" >/dev/null 2>&1 || cannot_run "missing tool $t"
done
[ -x "$HOOK" ] || cannot_run "hezo-hook not built: $HOOK"

TAG=hzw$$
C=$TAG-c # the container
I=$TAG-i # the internet
WORK=$(mktemp -d /tmp/hezo-wire.XXXXXX)
PIDS=()
tap_cleanup "rm -rf '$WORK'"
tap_cleanup "ip netns del $C"
tap_cleanup "ip netns del $I"
tap_cleanup 'for p in "${PIDS[@]}"; do kill "$p"; done'
# Whatever still runs in the test's own namespaces was started by this test.
tap_cleanup "ip netns pids $C | xargs -r kill; ip netns pids $I | xargs -r kill"


in_c() { ip netns exec "$C" "$@"; }
in_i() { ip netns exec "$I" "$@"; }

ip netns add "$C" && ip netns add "$I" || bail_out "cannot create network namespaces"
ip link add "$TAG-v0" type veth peer name "$TAG-v1" &&
	ip link set "$TAG-v0" netns "$C" && ip link set "$TAG-v1" netns "$I" ||
	bail_out "cannot create the veth pair"
in_c ip addr add 10.202.0.1/24 dev "$TAG-v0"
in_c ip -6 addr add fd00:202::1/64 dev "$TAG-v0" nodad
in_c ip link set "$TAG-v0" up
in_i ip addr add 10.202.0.2/24 dev "$TAG-v1"
in_i ip -6 addr add fd00:202::2/64 dev "$TAG-v1" nodad
in_i ip link set "$TAG-v1" up
in_i ip link set lo up
# lo in the container stays down: the hook must bring it up.

mkdir -p "$WORK/www" && echo hello >"$WORK/www/index.html"
tap_bg ip netns exec "$I" busybox httpd -f -p 8080 -h "$WORK/www"
# Count everything that reaches the internet from the container, whatever the protocol.
in_i nft -f - <<'EOF' || bail_out "cannot install the counting table"
table inet count {
	chain input {
		type filter hook input priority 0;
		ip saddr 10.202.0.1 counter
		ip6 saddr fd00:202::1 counter
	}
}
EOF
arrived()
{
	in_i nft -j list chain inet count input |
		jq '[.nftables[].rule? // empty | .expr[] | .counter? // empty | .packets] | add // 0'
}

# The "container": a process living in C.
sleeper()
{
	tap_bg ip netns exec "$C" sleep 1000
	CPID=$(hezo_netns_wait_pid "$C") || bail_out "no process in $C"
}
# The namespace's last process leaves (the pod's last container stops).
leave_c()
{
	ip netns pids "$C" | xargs -r kill -KILL
	for _ in $(seq 50); do
		[ -z "$(ip netns pids "$C")" ] && return 0
		sleep 0.1
	done
	bail_out "processes stay in $C"
}
sleeper

# A bundle whose config.json names the namespace, as a pod or --network=container would.
mkdir -p "$WORK/bundle"
jq -n --arg p "/run/netns/$C" '{ociVersion:"1.0.2",linux:{namespaces:[{type:"network",path:$p}]}}' \
	>"$WORK/bundle/config.json"

state()
{
	jq -cn --arg id "${2:-wire-test}" --argjson pid "$1" --arg b "$WORK/bundle" \
		'{ociVersion:"1.0.2",id:$id,status:"created",pid:$pid,bundle:$b,annotations:{}}'
}

# hook VERB [ARGS...] <<< state: run the hook, keep stderr in $ERR and the status in $RC.
hook()
{
	ERR=$("$HOOK" "$@" 2>&1 >/dev/null) && RC=0 || RC=$?
}

tcp_ok() { in_c timeout 3 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }
has_table() { in_c nft list table inet hezo >/dev/null 2>&1; }
one_line() { [ -n "$1" ] && [ "$(printf '%s\n' "$1" | wc -l)" = 1 ] && [ "${1#hezo-hook: }" != "$1" ]; }

# ---- baseline: the world works before the hook ----
in_c ip link set lo up
check "baseline: the container reaches 10.202.0.2:8080" tcp_ok 10.202.0.2 8080
check "baseline: the container reaches [fd00:202::2]:8080" tcp_ok fd00:202::2 8080
in_c ip link set lo down

# ---- deny ----
hook wire --egress '{"mode":"deny"}' <<<"$(state "$CPID")"
expect_eq "$RC" 0 "deny: wire exits 0"
[ -n "$ERR" ] && diag "$ERR"
TABLE=$(in_c nft list table inet hezo 2>&1)
expect_match "$TABLE" 'type filter hook output priority filter; policy drop;' \
	"deny: table inet hezo has the output chain with policy drop"
expect_no_match "$TABLE" 'redirect|type nat' "deny: no redirect"
expect_match "$(in_c ip -o link show lo)" '[<,]UP[,>]' "deny: the hook brought lo up"

before=$(arrived)
check_fails "deny: TCP to 10.202.0.2:8080 fails" tcp_ok 10.202.0.2 8080
check_fails "deny: TCP to [fd00:202::2]:8080 fails" tcp_ok fd00:202::2 8080
out=$(in_c timeout 3 bash -c 'echo ping >/dev/udp/10.202.0.2/9000; sleep 0.2; echo ping >/dev/udp/10.202.0.2/9000' 2>&1)
expect_match "$out" 'refused|not permitted|prohibited' "deny: UDP is refused at once (admin-prohibited seen by the sender)"
check_fails "deny: ICMP echo to 10.202.0.2 gets nothing" in_c busybox ping -c 1 -W 1 10.202.0.2
check_fails "deny: DNS (UDP 53) to 10.202.0.2 gets nothing" in_c busybox nslookup -timeout=1 allowed.test 10.202.0.2
sleep 0.5
expect_eq "$(arrived)" "$before" "deny: not one packet from the container reached the internet namespace"

# Loopback inside the container and replies to connections that came in still work.
tap_bg ip netns exec "$C" busybox httpd -f -p 127.0.0.1:8081 -h "$WORK/www"
tap_bg ip netns exec "$C" busybox httpd -f -p 10.202.0.1:8082 -h "$WORK/www"
sleep 0.3
check "deny: loopback inside the container works" tcp_ok 127.0.0.1 8081
check "deny: a connection from outside to a published port gets its reply" \
	in_i timeout 3 busybox wget -q -O /dev/null http://10.202.0.1:8082/

hook wire --egress '{"mode":"deny"}' <<<"$(state "$CPID")"
expect_eq "$RC:$(in_c nft -j list tables | jq '[.nftables[].table? // empty | select(.name=="hezo")] | length')" \
	"0:1" "deny: wiring again replaces the table (still exactly one)"

# One container of several in the namespace stops (a pod's, or one that joined another's with
# --network=container:): the others still run in it and must stay filtered.
hook unwire <<<"$(state "$CPID")"
expect_eq "$RC:$ERR" "0:" "unwire exits 0, silent"
check "unwire while other processes are in the namespace keeps the table" has_table
check_fails "... and they still cannot reach 10.202.0.2:8080" tcp_ok 10.202.0.2 8080
leave_c
hook unwire <<<"$(state "$CPID")"
expect_eq "$RC" 0 "unwire after the last process left exits 0"
check_fails "unwire deletes the table once no process is left in the namespace config.json names" has_table
check "after unwire the namespace reaches 10.202.0.2:8080 again" tcp_ok 10.202.0.2 8080
hook unwire <<<"$(state "$CPID")"
expect_eq "$RC:$ERR" "0:" "unwire twice: exit 0, silent"
sleeper
hook unwire <<<'{"ociVersion":"1.0.2","id":"wire-test","status":"stopped","pid":-1,"bundle":"/nonexistent"}'
expect_eq "$RC:$ERR" "0:" "unwire with runsc's poststop state (pid -1, bundle gone): exit 0, silent"

# ---- refusals ----
hook wire --egress '{"mode":"deny"}' <<<"$(state $$)"
one_line "$ERR" && [ "$RC" = 1 ] && [[ $ERR == *"host's network namespace"* ]] &&
	ok "a container in the host's namespace is refused with one line" ||
	{ not_ok "a container in the host's namespace is refused with one line"; diag "rc=$RC $ERR"; }
check_fails "... and the host got no table" nft list table inet hezo

for bad in '{"id":"x"}' '{"id":"x","pid":0}' '{"id":"x","pid":-5}' '{"id":"x","pid":"1"}' \
	'{"id":"../x","pid":1}' 'not json'; do
	hook wire --egress '{"mode":"deny"}' <<<"$bad"
	one_line "$ERR" && [ "$RC" = 1 ] && ok "bad state refused with one line: $bad" ||
		{ not_ok "bad state refused with one line: $bad"; diag "rc=$RC $ERR"; }
done
hook wire --egress '{"mode":"everything"}' <<<"$(state "$CPID")"
one_line "$ERR" && [ "$RC" = 1 ] && ok "unknown egress mode refused with one line" ||
	{ not_ok "unknown egress mode refused with one line"; diag "rc=$RC $ERR"; }
hook wire --egress '{"mode":"off"}' <<<"$(state "$CPID")"
expect_eq "$RC:$ERR" "0:" "mode off: exit 0, silent"
check_fails "mode off: no table" has_table

# ---- proxy, proxyd not running ----
HEZO_PROXYD_SOCKET=$WORK/absent.sock hook wire \
	--egress '{"mode":"proxy","allow":["allowed.test"],"project":"p"}' <<<"$(state "$CPID")"
one_line "$ERR" && [ "$RC" = 1 ] && [[ $ERR == *"cannot reach hezo-proxyd"* ]] &&
	ok "proxy without proxyd: exit 1, one line naming proxyd" ||
	{ not_ok "proxy without proxyd: exit 1, one line naming proxyd"; diag "rc=$RC $ERR"; }
check_fails "proxy without proxyd: no table left" has_table
# A container joining a namespace another container wired, whose own wiring fails: the runtime
# refuses it, and the first container keeps its table.
hook wire --egress '{"mode":"deny"}' <<<"$(state "$CPID")"
HEZO_PROXYD_SOCKET=$WORK/absent.sock hook wire \
	--egress '{"mode":"proxy","allow":["allowed.test"],"project":"p"}' <<<"$(state "$CPID" wire-join)"
expect_eq "$RC" 1 "a joining container's failed wire exits 1"
check "... and leaves the table of the container already in the namespace" has_table

# ---- proxy with the real proxyd ----
if [ ! -x "$PROXYD" ]; then
	for d in "with proxyd: wire exits 0" "with proxyd: redirect rules installed" \
		"with proxyd: the registration exists" "with proxyd: proxyd listens inside the namespace" \
		"with proxyd: a second container in the namespace joins" \
		"with proxyd: the last member's unwire removes the registration" \
		"with proxyd: unwire removes the table" \
		"killed after register: no table" "killed after register: what proxyd keeps" \
		"killed after register: the poststop unwire clears the registration"; do
		skip "$d" "hezo-proxyd not built ($PROXYD)"
	done
	tap_done
fi

PSTATE=$WORK/proxyd
SOCK=$PSTATE/control.sock
mkdir -p "$PSTATE/log"
tap_bg "$PROXYD" --socket "$SOCK" --state-dir "$PSTATE" --log-dir "$PSTATE/log" \
	--upstream 127.0.0.1:53 >"$WORK/proxyd.log" 2>&1
PROXYD_PID=$!
for _ in $(seq 50); do
	[ -S "$SOCK" ] && break
	sleep 0.1
done
[ -S "$SOCK" ] || { diag "$(cat "$WORK/proxyd.log")"; bail_out "hezo-proxyd did not create $SOCK"; }

registered() { [ -e "$PSTATE/containers/$1.json" ]; }

HEZO_PROXYD_SOCKET=$SOCK hook wire \
	--egress '{"mode":"proxy","allow":["allowed.test"],"resolvers":[],"allowRanges":[],"project":"p"}' \
	<<<"$(state "$CPID" wire-proxy)"
expect_eq "$RC:$ERR" "0:" "with proxyd: wire exits 0"
TABLE=$(in_c nft list table inet hezo 2>&1)
expect_match "$TABLE" 'meta l4proto tcp redirect to :15001' "with proxyd: redirect rules installed"
check "with proxyd: the registration exists" registered wire-proxy
expect_match "$(in_c ss -Hltn)" '127\.0\.0\.1:15001' "with proxyd: proxyd listens inside the namespace"
# A second container in the same namespace (a pod's, --network=container:) joins the first's
# registration: one registration, two members, and the namespace keeps one table.
# (Each member is {"id", "cgroup", "secrets"} since secrets are per member; older files held ids.)
members() { jq -c '[.members[] | (.id? // .)]' "$PSTATE/containers/$1.json" 2>/dev/null; }
# Lines reach the file within 50 ms (proxyd batches them).
nslog() { sleep 0.2; cat "$PSTATE/log/$1.jsonl" 2>/dev/null; }
HEZO_PROXYD_SOCKET=$SOCK hook wire \
	--egress '{"mode":"proxy","allow":["allowed.test"],"resolvers":[],"allowRanges":[],"project":"p"}' \
	<<<"$(state "$CPID" wire-second)"
expect_eq "$RC:$ERR" "0:" "with proxyd: a second container in the namespace joins (wire exits 0)"
check_fails "... it has no registration of its own" registered wire-second
expect_eq "$(members wire-proxy)" '["wire-proxy","wire-second"]' \
	"... the namespace's registration lists both members"
expect_match "$(in_c nft list table inet hezo 2>&1)" 'redirect to :15001' "... and the table is still there"
expect_eq "$(in_c nft list tables | grep -c hezo)" 1 "... exactly one table"
expect_match "$(nslog wire-proxy)" '"event":"join","member":"wire-second","verdict":"allow"' \
	"... and the namespace's netlog says it joined"
# A joiner of another project is refused with one line; the namespace is unchanged.
HEZO_PROXYD_SOCKET=$SOCK hook wire \
	--egress '{"mode":"proxy","allow":["allowed.test"],"resolvers":[],"allowRanges":[],"project":"q"}' \
	<<<"$(state "$CPID" wire-other)"
one_line "$ERR" && [ "$RC" = 1 ] && [[ $ERR == *'project "q"'* ]] &&
	ok "with proxyd: a joiner of another project is refused with one line" ||
	{ not_ok "with proxyd: a joiner of another project is refused with one line"; diag "rc=$RC $ERR"; }
expect_eq "$(members wire-proxy)" '["wire-proxy","wire-second"]' "... and is no member"
# A wider joiner widens nothing; a narrower one narrows the namespace, and the netlog says so.
HEZO_PROXYD_SOCKET=$SOCK hook wire \
	--egress '{"mode":"proxy","allow":["allowed.test","denied.test","*.wide.test"],"resolvers":[],"allowRanges":["10.0.0.0/8"],"project":"p"}' \
	<<<"$(state "$CPID" wire-wide)"
expect_eq "$RC" 0 "with proxyd: a wider joiner joins"
expect_eq "$(jq -c '[.egress.allow, .egress.allowRanges]' "$PSTATE/containers/wire-proxy.json")" \
	'[["allowed.test"],[]]' "... and the namespace's egress is not widened"
HEZO_PROXYD_SOCKET=$SOCK hook wire \
	--egress '{"mode":"proxy","allow":["allowed.test:443"],"resolvers":[],"allowRanges":[],"project":"p"}' \
	<<<"$(state "$CPID" wire-narrow)"
expect_eq "$RC" 0 "with proxyd: a narrower joiner joins"
expect_eq "$(jq -c '.egress.allow' "$PSTATE/containers/wire-proxy.json")" '["allowed.test:443"]' \
	"... and the namespace keeps what both allow"
expect_match "$(nslog wire-proxy)" '"member":"wire-narrow","verdict":"narrowed"' \
	"... and the netlog says so"
# A joiner whose resolvers differ cannot be narrowed to: refused with one line.
HEZO_PROXYD_SOCKET=$SOCK hook wire \
	--egress '{"mode":"proxy","allow":["allowed.test"],"resolvers":["10.202.0.2"],"allowRanges":[],"project":"p"}' \
	<<<"$(state "$CPID" wire-resolv)"
one_line "$ERR" && [ "$RC" = 1 ] && [[ $ERR == *resolvers* ]] &&
	ok "with proxyd: a joiner with other resolvers is refused with one line" ||
	{ not_ok "with proxyd: a joiner with other resolvers is refused with one line"; diag "rc=$RC $ERR"; }

# Leaving: the first container's poststop leaves the registration to the others; the last one
# takes it down. A restarted proxyd keeps the members.
HEZO_PROXYD_SOCKET=$SOCK hook unwire <<<"$(state 0 wire-proxy)"
check "with proxyd: the first container leaves, the registration stays" registered wire-proxy
expect_eq "$(members wire-proxy)" '["wire-second","wire-wide","wire-narrow"]' "... without it"
expect_match "$(in_c ss -Hltn)" '127\.0\.0\.1:15001' "... proxyd still listens in the namespace"
kill "$PROXYD_PID"
wait "$PROXYD_PID" 2>/dev/null
tap_bg "$PROXYD" --socket "$SOCK" --state-dir "$PSTATE" --log-dir "$PSTATE/log" \
	--upstream 127.0.0.1:53 >>"$WORK/proxyd.log" 2>&1
PROXYD_PID=$!
for _ in $(seq 50); do
	"$PROXYD" --socket "$SOCK" --ctl list >/dev/null 2>&1 && break
	sleep 0.1
done
expect_eq "$("$PROXYD" --socket "$SOCK" --ctl list 2>/dev/null | jq -c '[.containers[] | .members]')" \
	'[["wire-second","wire-wide","wire-narrow"]]' "with proxyd restarted: the members are kept"
expect_eq "$("$PROXYD" --socket "$SOCK" --ctl list 2>/dev/null | jq -c '[.containers[] | .allow]')" \
	'[["allowed.test:443"]]' "... and the narrowed egress"
for m in wire-second wire-wide; do
	HEZO_PROXYD_SOCKET=$SOCK hook unwire <<<"$(state 0 $m)"
done
check "... two more leave, the registration stays for the last" registered wire-proxy
leave_c
HEZO_PROXYD_SOCKET=$SOCK hook unwire <<<"$(state 0 wire-narrow)"
check_fails "with proxyd: the last member's unwire removes the registration" registered wire-proxy
check_fails "with proxyd: unwire removes the table" has_table
sleeper

# Killed between registering and installing the table (the test-only pause makes the moment).
HEZO_PROXYD_SOCKET=$SOCK HEZO_HOOK_TEST_PAUSE_AFTER_REGISTER=10 \
	"$HOOK" wire --egress '{"mode":"proxy","allow":[],"project":"p"}' \
	<<<"$(state "$CPID" wire-killed)" >/dev/null 2>&1 &
HPID=$!
for _ in $(seq 50); do
	registered wire-killed && break
	sleep 0.1
done
kill -KILL "$HPID"
wait "$HPID" 2>/dev/null
check_fails "killed after register: no table" has_table
# The runtime fails the container (its hook died), and the engine's delete runs the poststop hook,
# which deregisters. Without it the registration stays until proxyd restarts and finds no process
# in the namespace (proxyd's restore drops it).
if registered wire-killed; then
	ok "killed after register: what proxyd keeps (registration stays until unwire or a proxyd restart)"
else
	ok "killed after register: what proxyd keeps (nothing)"
fi
HEZO_PROXYD_SOCKET=$SOCK hook unwire <<<"$(state 0 wire-killed)"
check_fails "killed after register: the poststop unwire clears the registration" registered wire-killed

tap_done

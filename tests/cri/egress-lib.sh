# Egress proxy for the CRI tests: a test world (an "internet" namespace with allowed.test and
# denied.test on two addresses of a /24 of this run's own, dnsmasq on a host loopback port as the
# upstream resolver) and a hezo-proxyd of the test's own. Only loopback and the namespace made
# here are contacted. Source after tests/lib/common.sh; call cri_egress_world before cri_start,
# then cri_egress_wrapper after hezo_make_wrapper, and put cri_egress_filter in the policy.

# shellcheck shell=bash

CRI_EGRESS_NET=$((150 + $$ % 40))
CRI_EGRESS_TAG=hzcp$(printf '%04x' $(($$ % 65536)))
CRI_EGRESS_INET=$CRI_EGRESS_TAG-inet
CRI_EGRESS_DNS_PORT=$((5400 + $$ % 500))
CRI_ALLOWED_IP=10.$CRI_EGRESS_NET.0.10
CRI_DENIED_IP=10.$CRI_EGRESS_NET.0.11
CRI_EGRESS=
CRI_EGRESS_PIDS=()
CRI_PROXYD=${HEZO_PROXYD_BIN:-$HEZO_BUILD_DIR/proxyd/hezo-proxyd}
# Set before cri_setup: more arguments for proxyd (e.g. --test-upstream-ca FILE), more names for
# the resolver (dnsmasq --address=/NAME/IP arguments).
CRI_PROXYD_ARGS=()
CRI_EGRESS_DNS_ARGS=()

cri_egress_require()
{
	hezo_require_tools dnsmasq busybox nft ip jq
	[ -x "$CRI_PROXYD" ] || hezo_cannot_run "hezo-proxyd not built: $CRI_PROXYD"
}

# CMD in the background, without the caller's descriptors 3-9 (the engines lock's among them).
_cri_egress_bg()
{
	"$@" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	CRI_EGRESS_PIDS+=($!)
}

_cri_in_inet() { ip netns exec "$CRI_EGRESS_INET" "$@"; }

# cri_egress_world: the world and the proxyd, removed again by the exit trap.
cri_egress_world()
{
	local i
	CRI_EGRESS=$HEZO_TEST_DIR/egress
	mkdir -p "$CRI_EGRESS"/{www,proxyd,netlog} || bail_out "cannot create $CRI_EGRESS"
	# (Run in reverse: proxyd goes first, then the namespaces it pinned for registrations a
	# failed test left.)
	tap_cleanup "awk -v d='$CRI_EGRESS/proxyd/netns/' 'index(\$2, d) == 1 { print \$2 }' /proc/mounts | xargs -r -n1 umount"
	tap_cleanup 'for p in "${CRI_EGRESS_PIDS[@]}"; do kill "$p"; done; sleep 0.2'
	tap_cleanup "ip netns pids $CRI_EGRESS_INET | xargs -r kill; ip netns del $CRI_EGRESS_INET"
	tap_cleanup "ip link del $CRI_EGRESS_TAG-h"
	ip netns add "$CRI_EGRESS_INET" || bail_out "cannot create $CRI_EGRESS_INET"
	ip link add "$CRI_EGRESS_TAG-h" type veth peer name "$CRI_EGRESS_TAG-i" &&
		ip link set "$CRI_EGRESS_TAG-i" netns "$CRI_EGRESS_INET" ||
		bail_out "cannot create the veth pair"
	ip addr add "10.$CRI_EGRESS_NET.0.1/24" dev "$CRI_EGRESS_TAG-h"
	ip link set "$CRI_EGRESS_TAG-h" up
	_cri_in_inet ip link set lo up
	_cri_in_inet ip addr add "$CRI_ALLOWED_IP/24" dev "$CRI_EGRESS_TAG-i"
	_cri_in_inet ip addr add "$CRI_DENIED_IP/24" dev "$CRI_EGRESS_TAG-i"
	_cri_in_inet ip link set "$CRI_EGRESS_TAG-i" up
	_cri_in_inet ip route add default via "10.$CRI_EGRESS_NET.0.1"
	echo hello-pod >"$CRI_EGRESS/www/index.html"
	_cri_egress_bg ip netns exec "$CRI_EGRESS_INET" busybox httpd -f -p 80 -h "$CRI_EGRESS/www"
	_cri_in_inet nft -f - <<-'EOF' || bail_out "cannot install the counting table"
		table inet count {
			counter c_tcp {}
			chain input {
				type filter hook input priority 0;
				meta l4proto tcp counter name "c_tcp" accept
			}
		}
	EOF
	_cri_egress_bg dnsmasq -k -C /dev/null --port "$CRI_EGRESS_DNS_PORT" \
		--listen-address 127.0.0.1 --bind-interfaces --no-resolv --no-hosts --user=root \
		--address=/allowed.test/"$CRI_ALLOWED_IP" --address=/denied.test/"$CRI_DENIED_IP" \
		"${CRI_EGRESS_DNS_ARGS[@]}"
	_cri_proxyd_start || bail_out "hezo-proxyd did not start: $(tail -n 5 "$CRI_EGRESS/proxyd.log")"
}

CRI_PROXYD_PID=
_cri_proxyd_start()
{
	local i
	_cri_egress_bg "$CRI_PROXYD" --socket "$CRI_EGRESS/proxyd/control.sock" \
		--state-dir "$CRI_EGRESS/proxyd" --log-dir "$CRI_EGRESS/netlog" \
		--upstream "127.0.0.1:$CRI_EGRESS_DNS_PORT" "${CRI_PROXYD_ARGS[@]}" \
		>>"$CRI_EGRESS/proxyd.log" 2>&1
	CRI_PROXYD_PID=$!
	for ((i = 0; i < 50; i++)); do
		cri_proxyd_list >/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# cri_egress_proxyd_restart: stop proxyd (SIGTERM, its registrations stay in its state
# directory) and start it again on the same state; fails when it does not answer. Call it in
# the test's own shell (not in $(...) or check): the exit trap must learn the new pid.
cri_egress_proxyd_restart()
{
	kill -TERM "$CRI_PROXYD_PID" 2>/dev/null
	wait "$CRI_PROXYD_PID" 2>/dev/null
	_cri_proxyd_start
}

# TCP packets that reached the internet namespace, from anyone.
cri_egress_arrived()
{
	_cri_in_inet nft -j list counter inet count c_tcp | jq '.nftables[1].counter.packets'
}

# The shim's wrapper talks to our proxyd.
cri_egress_wrapper()
{
	sed -i "s|^exec |export HEZO_PROXYD_SOCKET='$CRI_EGRESS/proxyd/control.sock'\nexec |" \
		"$HEZO_TEST_WRAPPER"
	grep -q HEZO_PROXYD_SOCKET "$HEZO_TEST_WRAPPER" || bail_out "cannot point the wrapper at proxyd"
}

# A jq filter for the policy: egress proxy allowing allowed.test (MODE deny: the deny box).
cri_egress_filter()
{
	if [ "${1:-proxy}" = deny ]; then
		printf '.egress = {mode: "deny"}'
		return
	fi
	printf '.egress = {mode: "proxy", allow: ["allowed.test"], resolvers: ["127.0.0.1:%s"],
		allowRanges: ["10.%s.0.0/24"]}' "$CRI_EGRESS_DNS_PORT" "$CRI_EGRESS_NET"
}

# A jq filter for a PodSandboxConfig on stdin: its resolver is the world's (redirected to proxyd).
cri_egress_dns()
{
	jq -c --arg d "10.$CRI_EGRESS_NET.0.1" '.dns_config.servers = [$d]'
}

cri_proxyd_list()
{
	"$CRI_PROXYD" --socket "$CRI_EGRESS/proxyd/control.sock" --ctl list 2>/dev/null
}

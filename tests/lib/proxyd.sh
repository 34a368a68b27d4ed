# Running hezo-proxyd in a test: start it and wait for its control socket, and the redirect
# rules hezo-hook installs in a container's namespace. Sourced, not run; the caller sets PROXYD to
# the binary.

# shellcheck shell=bash

# hezo_proxyd_start STATE_DIR LOG_DIR SOCKET [ARG...]: hezo-proxyd in the background with those
# directories and control socket (and ARGs), stdin from /dev/null, output where the caller
# redirects this call's. Sets PROXYD_PID (also when it fails: the caller's cleanup kills it) and
# returns once SOCKET exists (looked for every 10 ms, so a caller sees it about when a hook
# would), or 1 after 5 s without it.
hezo_proxyd_start()
{
	local state=$1 log=$2 sock=$3
	shift 3
	"$PROXYD" --state-dir "$state" --log-dir "$log" --socket "$sock" "$@" </dev/null &
	# shellcheck disable=SC2034 # the caller stops proxyd with it
	PROXYD_PID=$!
	for _ in $(seq 500); do
		[ -S "$sock" ] && return 0
		sleep 0.01
	done
	return 1
}

# hezo_jail_rules [nat]: the nftables ruleset hezo-hook installs in a container's namespace
# (DNS to proxyd's :15053, TCP to :15001, everything else dropped), for `nft -f -`; with "nat",
# only the redirects (no filter chain).
hezo_jail_rules()
{
	cat <<'NFT'
table inet hezo {
	chain nat_out {
		type nat hook output priority -100; policy accept;
		meta l4proto { tcp, udp } th dport 53 redirect to :15053
		fib daddr type local accept
		meta l4proto tcp redirect to :15001
	}
NFT
	[ "${1:-}" = nat ] || cat <<'NFT'
	chain filter_out {
		type filter hook output priority 0; policy drop;
		# after a redirect the packet goes to lo, but "oif" still names the route chosen
		# before NAT: match the rewritten destination instead
		ip daddr 127.0.0.0/8 accept
		ip6 daddr ::1 accept
		fib daddr type local accept
		ct state established,related accept
		meta l4proto udp reject with icmpx type admin-prohibited
		meta l4proto tcp reject with tcp reset
	}
NFT
	echo '}'
}

# Helpers for tests that play a container with a process in a network namespace.

# shellcheck shell=bash

# hezo_netns_wait_pid NS: print the pid of a process in namespace NS, waiting up to 5 s for one
# to appear (a process started in the background with `ip netns exec`); fails if none does.
hezo_netns_wait_pid()
{
	local p
	for _ in $(seq 50); do
		p=$(ip netns pids "$1" | head -n 1)
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.1
	done
	return 1
}

# hezo_wait_listen NS PROTO ADDR PORT: wait up to 10 s until a socket listens on ADDR:PORT (tcp)
# or is bound there (udp) in namespace NS ("-": the host's); fails if none does in time.
hezo_wait_listen()
{
	local ns=$1 flag=t out
	[ "$2" = udp ] && flag=u
	for _ in $(seq 100); do
		if [ "$ns" = - ]; then
			out=$(ss -Hln$flag src "$3:$4" 2>/dev/null)
		else
			out=$(ip netns exec "$ns" ss -Hln$flag src "$3:$4" 2>/dev/null)
		fi
		[ -n "$out" ] && return 0
		sleep 0.1
	done
	return 1
}

# hezo_netns_link_host VETH NS PREFIX N...: a veth VETH from the host (PREFIX.1/24) into namespace
# NS (its end there "up0", with PREFIX.N/24 for each N), both up: the test's "internet", which
# proxyd reaches from the host. PREFIX is three octets (10.202.0).
hezo_netns_link_host()
{
	local veth=$1 ns=$2 prefix=$3 n
	shift 3
	ip link add "$veth" type veth peer name up0 netns "$ns" &&
		ip addr add "$prefix.1/24" dev "$veth" &&
		ip link set "$veth" up || return 1
	for n in "$@"; do
		ip -n "$ns" addr add "$prefix.$n/24" dev up0 || return 1
	done
	ip -n "$ns" link set up0 up
}

# hezo_netns_link_client CNS NS PREFIX: a container's namespace CNS wired into NS: eth0 in CNS
# with PREFIX.2/24 and its default route via PREFIX.1, which NS holds on the other end ("c0").
hezo_netns_link_client()
{
	local cns=$1 ns=$2 prefix=$3
	ip -n "$cns" link add eth0 type veth peer name c0 netns "$ns" &&
		ip -n "$cns" addr add "$prefix.2/24" dev eth0 &&
		ip -n "$cns" link set eth0 up &&
		ip -n "$cns" route add default via "$prefix.1" &&
		ip -n "$ns" addr add "$prefix.1/24" dev c0 &&
		ip -n "$ns" link set c0 up
}

# hezo_netns_exclusive: tests that make namespaces, links and host addresses under fixed names
# (hzp-*, 10.201.0.1 on the host...) call this first: it waits for any other such test on the
# machine (another checkout's, a second terminal's) and holds the lock until the script exits.
hezo_netns_exclusive()
{
	exec 8>/run/hezo-netns-tests.lock && flock 8
}

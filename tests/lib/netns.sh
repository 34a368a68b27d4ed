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

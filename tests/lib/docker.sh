# dockerd for the tests: start it when it is not running, and register runtimes in
# /etc/docker/daemon.json by merging (every other key is kept) and reloading with SIGHUP. The
# first registration takes a snapshot of the engines' files (tests/lib/engines.sh) that the
# test's exit puts back byte for byte.

# shellcheck shell=bash

HEZO_DOCKER=${HEZO_DOCKER:-/usr/bin/docker}
HEZO_DOCKERD_LOG=${HEZO_DOCKERD_LOG:-/var/log/hezo-test-dockerd.log}
# shellcheck source=tests/lib/engines.sh
. "$(dirname "${BASH_SOURCE[0]}")/engines.sh"

hezo_docker()
{
	"$HEZO_DOCKER" "$@"
}

# hezo_docker_wait SECONDS: until `docker info` answers.
hezo_docker_wait()
{
	local i
	for ((i = 0; i < ${1:-60}; i++)); do
		hezo_docker info >/dev/null 2>&1 && return 0
		sleep 1
	done
	return 1
}

hezo_dockerd_pid()
{
	local pid
	pid=$(cat "$HEZO_DOCKERD_PIDFILE" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# Start dockerd in the background unless it answers already. dockerd starts its own containerd
# when no system containerd socket exists.
hezo_dockerd_start()
{
	if hezo_docker info >/dev/null 2>&1; then
		return 0
	fi
	if ! hezo_dockerd_pid >/dev/null; then
		mkdir -p "$(dirname "$HEZO_DOCKERD_LOG")"
		# Without the caller's other descriptors: a dockerd that inherits the fd of
		# `flock /run/hezo-engines.lock` holds that lock for as long as it runs.
		setsid dockerd >>"$HEZO_DOCKERD_LOG" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	fi
	if ! hezo_docker_wait 60; then
		echo "dockerd did not come up in 60 s; last lines of $HEZO_DOCKERD_LOG:" >&2
		tail -n 20 "$HEZO_DOCKERD_LOG" >&2
		return 1
	fi
}

# A second dockerd started with --bridge none deletes the first one's docker0 link, and then every
# `docker run` on the default network fails. Put the bridge back as dockerd made it (address only:
# tests send no traffic off the machine). Prints what it did; returns 0 when the bridge is there.
hezo_docker_bridge_repair()
{
	local name sub gw
	name=$(hezo_docker network inspect bridge -f '{{index .Options "com.docker.network.bridge.name"}}' 2>/dev/null) ||
		return 0
	[ -n "$name" ] || return 0
	ip link show "$name" >/dev/null 2>&1 && return 0
	sub=$(hezo_docker network inspect bridge -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}')
	gw=$(hezo_docker network inspect bridge -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}')
	[ -n "$gw" ] || gw=${sub%.*/*}.1
	echo "the bridge $name of dockerd's default network was missing; recreating it ($gw/${sub#*/})"
	ip link add "$name" type bridge && ip addr add "$gw/${sub#*/}" dev "$name" && ip link set "$name" up
}

# hezo_docker_has_runtime NAME [PATH]: dockerd lists runtime NAME (with that path).
hezo_docker_has_runtime()
{
	hezo_docker info --format '{{json .Runtimes}}' 2>/dev/null |
		jq -e --arg n "$1" --arg p "${2:-}" 'has($n) and ($p == "" or .[$n].path == $p)' >/dev/null
}

# hezo_docker_register_runtime NAME PATH [ARG...]: merge runtimes.NAME into daemon.json, reload
# dockerd and wait until `docker info` lists the runtime. The first call of a test script takes
# the engines' snapshot, which the script's exit restores (tests/lib/engines.sh): call it from the
# script's own shell. Name test runtimes hezo-test-...: an entry the user had under any other
# name (their own "hezo-shim", say) is never rewritten, and the call fails instead.
hezo_docker_register_runtime()
{
	local name=$1 path=$2 pid i args cur new
	shift 2
	args=$(jq -cn '$ARGS.positional' --args -- "$@")
	hezo_engine_snapshot || { echo "cannot take a snapshot of the engines' files" >&2; return 1; }
	if [ "${name#"$HEZO_TEST_RUNTIME_PREFIX"}" = "$name" ] && hezo_engine_had_runtime "$name"; then
		echo "$HEZO_DAEMON_JSON already has a runtime '$name' that the tests did not create;" \
			"not rewriting it (name test runtimes $HEZO_TEST_RUNTIME_PREFIX...)" >&2
		return 1
	fi
	mkdir -p "$(dirname "$HEZO_DAEMON_JSON")"
	if [ -s "$HEZO_DAEMON_JSON" ]; then
		cur=$(cat "$HEZO_DAEMON_JSON")
		if ! jq -e 'type == "object"' <<<"$cur" >/dev/null 2>&1; then
			echo "$HEZO_DAEMON_JSON is not a JSON object; not touching it" >&2
			return 1
		fi
	else
		cur='{}'
	fi
	new=$(jq --arg n "$name" --arg p "$path" --argjson a "$args" \
		'.runtimes = ((.runtimes // {}) + {($n): ({path: $p} + (if ($a | length) > 0 then {runtimeArgs: $a} else {} end))})' \
		<<<"$cur") || return 1
	if [ "$new" != "$(jq . <<<"$cur")" ] || [ ! -e "$HEZO_DAEMON_JSON" ]; then
		printf '%s\n' "$new" >"$HEZO_DAEMON_JSON.tmp" && mv -f "$HEZO_DAEMON_JSON.tmp" "$HEZO_DAEMON_JSON"
	fi
	hezo_docker_has_runtime "$name" "$path" && return 0
	pid=$(hezo_dockerd_pid) || { echo "dockerd is not running" >&2; return 1; }
	kill -HUP "$pid"
	for ((i = 0; i < 30; i++)); do
		hezo_docker_has_runtime "$name" "$path" && return 0
		sleep 1
	done
	echo "dockerd did not pick up runtime $name after SIGHUP" >&2
	return 1
}

# hezo_docker_bundle CONTAINER: the bundle directory of a running container, under the
# containerd that dockerd started itself or under the system's.
hezo_docker_bundle()
{
	local id d
	id=$(hezo_docker inspect -f '{{.Id}}' "$1") || return 1
	for d in /var/run/docker/containerd/daemon /run/containerd; do
		d=$d/io.containerd.runtime.v2.task/moby/$id
		[ -e "$d/config.json" ] && { echo "$d"; return 0; }
	done
	echo "no bundle found for container $1 ($id)" >&2
	return 1
}

# hezo_docker_cgroups_path CONTAINER: cgroupsPath of the config.json the backend got (after the
# shim rewrote it).
hezo_docker_cgroups_path()
{
	local b
	b=$(hezo_docker_bundle "$1") || return 1
	jq -r '.linux.cgroupsPath // empty' "$b/config.json"
}

#!/bin/bash
# First look at hezo-shim on a fresh Debian 12 machine (tools/demo.sh as root, or sudo tools/demo.sh):
# install what it needs, build and install the shim, register it with Docker (`hezo-shim install
# --docker`) and show the box a plain `docker run` gets.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
src=$(pwd)
build=$src/build-release
prefix=/usr/local
policy=/etc/hezo/policy.json
docker=/usr/bin/docker
image=hezo-test/busybox:latest

# The policy written when the machine has none: the production box (gVisor, every default of
# docs/policy.md) with egress "deny", so the demo needs no hezo-proxyd; egress "proxy" (the shipped
# default) is shown by tests/integration/egress-docker.sh.
DEMO_POLICY='{
  "version": 1,
  "mode": "production",
  "backend": "runsc",
  "allowBackends": ["runsc"],
  "backends": { "runsc": { "network": "host" } },
  "egress": { "mode": "deny" }
}'

if [ "$(id -u)" != 0 ]; then
	echo "demo: must run as root (as root: tools/demo.sh; or sudo tools/demo.sh where sudo is installed)" >&2
	exit 1
fi

step()
{
	printf '\n== %s\n' "$*"
}

step "Installing packages, starting dockerd, importing $image"
bash tests/setup.sh
# shellcheck source=tests/lib/docker.sh
. tests/lib/docker.sh

step "Building (release) and installing to $prefix"
# CI builds with -Werror; a first look should not stop at a new compiler's new warning.
opts=(--buildtype=release --prefix="$prefix" -Dwerror=false)
buildlog=$build.log
if ! {
	if [ -f "$build/meson-private/coredata.dat" ]; then
		meson setup --reconfigure "$build" "${opts[@]}"
	else
		meson setup "$build" "${opts[@]}"
	fi && ninja -C "$build" && meson install -C "$build"
} >"$buildlog" 2>&1; then
	tail -n 30 "$buildlog" >&2
	echo "demo: build or install failed (full log: $buildlog)" >&2
	exit 1
fi
shim=$prefix/bin/hezo-shim
[ -x "$shim" ] || { echo "demo: $shim was not installed" >&2; exit 1; }
"$shim" --version

# `meson install` puts the shipped default (etc/policy.json) in place, which needs hezo-proxyd
# running; the demo replaces it while it is that unmodified default, never an admin's own file.
step "Policy $policy"
shipped=$src/etc/policy.json
if [ -e "$policy" ] && cmp -s <(printf '%s\n' "$DEMO_POLICY") "$policy"; then
	echo "keeping the demo's policy an earlier run wrote"
elif [ -e "$policy" ] && ! { [ -f "$shipped" ] && cmp -s "$shipped" "$policy"; }; then
	echo "keeping the existing (admin's own) $policy"
else
	mkdir -p "$(dirname "$policy")"
	[ -e "$policy" ] && cp -p "$policy" "$policy.shipped"
	printf '%s\n' "$DEMO_POLICY" >"$policy.tmp"
	chmod 0644 "$policy.tmp"
	mv -f "$policy.tmp" "$policy"
	echo "wrote the demo's policy (production: runsc, egress deny)"
	[ -e "$policy.shipped" ] && echo "(the shipped default is kept as $policy.shipped)"
fi
cat "$policy"

# The way an admin registers it: merged into daemon.json (other keys kept, the original saved as
# daemon.json.hezo-backup), dockerd reloaded with SIGHUP; `hezo-shim uninstall --docker` undoes it.
step "Registering runtime hezo-shim: $shim install --docker"
"$shim" install --docker
for _ in $(seq 30); do
	hezo_docker_has_runtime hezo-shim "$shim" && break
	sleep 1
done
hezo_docker_has_runtime hezo-shim "$shim" || { echo "demo: dockerd does not list runtime hezo-shim" >&2; exit 1; }
jq '.runtimes' "$HEZO_DAEMON_JSON"

# What a process inside sees, in words; the limits are read from the host's cgroup files, since
# gVisor shows the workload a cgroupfs of its own.
# shellcheck disable=SC2016
probe='
st() { sed -n "s/^$1:[[:space:]]*//p" /proc/self/status; }
echo "  kernel         $(cat /proc/version)"
echo "  capabilities   effective $(st CapEff), bounding $(st CapBnd), permitted $(st CapPrm)"
nnp=$(st NoNewPrivs)
[ -n "$nnp" ] && echo "  no_new_privs   $nnp"
echo "  seccomp        mode $(st Seccomp) (2 = filter)"
echo "  root fs        $(touch /probe 2>&1 || true)"
echo "  /tmp           $(awk "\$2 == \"/tmp\" { print \$3, \$4 }" /proc/mounts)"
cp /bin/busybox /tmp/bb
echo "  exec in /tmp   $(/tmp/bb true 2>&1 || true)"
'

show_box()
{
	local c pid cg bundle
	c=$("$docker" run -d --runtime=hezo-shim "$@" "$image" sleep 120)
	"$docker" exec "$c" sh -c "$probe"
	# gVisor's /proc/self/status has no NoNewPrivs line. Show it from where it is true: what the
	# shim wrote into the config.json the backend got, and the host's /proc/PID/status of the
	# container's process (under runsc that is runsc-sandbox, the Sentry the workload runs in,
	# which sets no_new_privs on itself whatever the spec says: measured with the spec's false).
	pid=$("$docker" inspect -f '{{.State.Pid}}' "$c")
	bundle=$(hezo_docker_bundle "$c")
	echo "  no_new_privs   $(jq -r '.process.noNewPrivileges' "$bundle/config.json")" \
		"(process.noNewPrivileges in the config.json the backend got, $bundle/config.json)"
	echo "                 host: NoNewPrivs $(sed -n 's/^NoNewPrivs:[[:space:]]*//p' "/proc/$pid/status")" \
		"in /proc/$pid/status of $(tr '\0' '\n' <"/proc/$pid/cmdline" | head -n 1)"
	cg=$("$docker" inspect -f '{{.HostConfig.CgroupParent}}' "$c")
	cg=${cg:-/docker}/$c
	echo "  pids.max       $(cat "/sys/fs/cgroup/pids$cg/pids.max")   (256 + gVisor's headroom of 128)"
	echo "  memory limit   $(($(cat "/sys/fs/cgroup/memory$cg/memory.limit_in_bytes") / 1048576)) MiB," \
		"memory+swap $(($(cat "/sys/fs/cgroup/memory$cg/memory.memsw.limit_in_bytes") / 1048576)) MiB"
	echo "  cpu            $(cat "/sys/fs/cgroup/cpu$cg/cpu.cfs_quota_us") / $(cat "/sys/fs/cgroup/cpu$cg/cpu.cfs_period_us") us"
	echo "  egress         nftables in the container's network namespace:"
	nsenter -t "$pid" -n nft list table inet hezo | sed 's/^/                 /'
	"$docker" rm -f "$c" >/dev/null
}

step "docker run --runtime=hezo-shim $image   (no hardening flags)"
show_box

step "docker run --runtime=hezo-shim --privileged --cap-add ALL --memory 8g $image   (asks for everything)"
show_box --privileged --cap-add ALL --memory 8g

step "docker run --rm --runtime=hezo-shim -v /:/host $image   (must be refused)"
if out=$("$docker" run --rm --runtime=hezo-shim -v /:/host "$image" true 2>&1); then
	echo "$out"
	echo "demo: the host's / was mounted: the box is NOT working" >&2
	exit 1
fi
echo "  ${out//$'\n'/$'\n'  }"
echo
echo "refused, as it should be."

step "hezo-shim ps   (every live box: records, cgroups, proxyd's stats, admission)"
c1=$("$docker" run -d --runtime=hezo-shim "$image" sleep 120)
c2=$("$docker" run -d --runtime=hezo-shim --memory 512m "$image" sh -c 'sleep 120 & sleep 120 & wait')
"$shim" ps
"$docker" rm -f "$c1" "$c2" >/dev/null

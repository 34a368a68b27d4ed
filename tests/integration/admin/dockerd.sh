#!/bin/sh
# A live dockerd: install merges daemon.json and sends SIGHUP, `docker info` then lists the runtime;
# uninstall gives back the file byte for byte (or no file) and dockerd drops the runtime again.
# Runs against a private dockerd of its own (own config, pid file, socket, data root), and also
# against the system's /etc/docker/daemon.json and running dockerd when nobody else registered
# hezo-shim there.
. "$(dirname "$0")/lib.sh"
need_root
docker=/usr/bin/docker # docker.io's own client (the one in /usr/local/bin is newer than the engine)
[ -x "$docker" ] || docker=docker
if ! command -v dockerd >/dev/null; then
	echo "1..0 # SKIP dockerd is not installed"
	exit 0
fi
work=$(mktemp -d /tmp/hezo-dockerd-XXXXXX)
shim=$work/hezo-shim
cp /usr/sbin/runc "$shim"
private_pid=
# A private dockerd given `--bridge none` deletes the host's docker0 when it starts, which breaks
# every other Docker test on the machine; give it a bridge of its own instead.
private_br=hzdbr$$
sys_cfg=/etc/docker/daemon.json
sys_had=
cleanup() {
	if [ -n "$private_pid" ]; then
		kill "$private_pid" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$private_pid" 2>/dev/null || break; sleep 0.1; done
	fi
	ip link del "$private_br" 2>/dev/null
	if [ -n "$sys_had" ]; then
		# Whatever happened, the system file is left as it was and dockerd reloaded.
		if [ "$sys_had" = yes ]; then
			cmp -s "$sys_cfg" "$work/sys.orig" || cp -p "$work/sys.orig" "$sys_cfg"
		else
			rm -f "$sys_cfg"
		fi
		rm -f "$sys_cfg.hezo-backup"
		kill -HUP "$(cat /var/run/docker.pid)" 2>/dev/null
	fi
	umount "$work/data" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# suite NAME CONFIG PIDFILE HOST
suite() {
	name=$1 cfg=$2 pidfile=$3 host=$4
	had=no
	if [ -e "$cfg" ]; then
		had=yes
		cp -p "$cfg" "$work/$name.orig"
	fi
	runtimes() { DOCKER_HOST=$host "$docker" info --format '{{json .Runtimes}}' 2>/dev/null; }
	wait_runtime() { # dockerd reloads asynchronously after SIGHUP
		for _ in $(seq 50); do
			if runtimes | jq -e --arg p "$shim" '.["hezo-shim"].path == $p' >/dev/null 2>&1; then
				[ "$1" = yes ] && return 0
			else
				[ "$1" = no ] && return 0
			fi
			sleep 0.2
		done
		return 1
	}
	check "$name: install merges and signals dockerd" sh -c "'$T' install --docker --config '$cfg' --pidfile '$pidfile' --shim '$shim' | grep -q 'sent SIGHUP to dockerd'"
	check "$name: daemon.json registers hezo-shim -> $shim" sh -c "jq -e '.runtimes[\"hezo-shim\"].path == \"$shim\"' '$cfg' >/dev/null"
	if [ $had = yes ]; then
		check "$name: backup holds the original bytes" cmp "$cfg.hezo-backup" "$work/$name.orig"
	fi
	if wait_runtime yes; then ok "$name: docker info lists runtime hezo-shim with our path"; else not_ok "$name: docker info lists runtime hezo-shim with our path"; runtimes | sed 's/^/# /'; fi
	check "$name: uninstall" "$T" uninstall --docker --config "$cfg" --pidfile "$pidfile"
	if [ $had = yes ]; then
		check "$name: daemon.json is byte-identical to before" cmp "$cfg" "$work/$name.orig"
	else
		check "$name: daemon.json is gone again (install created it)" test ! -e "$cfg"
	fi
	check "$name: no backup left behind" test ! -e "$cfg.hezo-backup"
	if wait_runtime no; then ok "$name: docker info no longer lists hezo-shim"; else not_ok "$name: docker info no longer lists hezo-shim"; fi
}

# --- a private dockerd, with a daemon.json holding other settings and another runtime ----------
mkdir -p "$work/data" "$work/exec"
mount -t tmpfs tmpfs "$work/data"
cat >"$work/daemon.json" <<'JSON'
{
	"log-level": "warn",
	"runtimes": {
		"runc-debug": { "path": "/usr/sbin/runc", "runtimeArgs": ["--debug"] }
	},
	"max-concurrent-downloads": 3
}
JSON
ip link add "$private_br" type bridge
ip addr add 10.251.0.1/24 dev "$private_br"
dockerd --config-file "$work/daemon.json" --data-root "$work/data" --exec-root "$work/exec" \
	--pidfile "$work/docker.pid" -H "unix://$work/docker.sock" --bridge "$private_br" --iptables=false \
	--ip-masq=false --ip6tables=false >"$work/dockerd.log" 2>&1 &
private_pid=$!
up=no
for _ in $(seq 100); do
	if DOCKER_HOST=unix://$work/docker.sock "$docker" info >/dev/null 2>&1; then up=yes; break; fi
	sleep 0.2
done
if [ $up = yes ]; then
	ok "private dockerd is up"
	suite private "$work/daemon.json" "$work/docker.pid" "unix://$work/docker.sock"
else
	not_ok "private dockerd is up"
	tail -5 "$work/dockerd.log" | sed 's/^/# /'
fi

# --- the system's dockerd ----------------------------------------------------------------------
if ! "$docker" info >/dev/null 2>&1; then
	skip "system dockerd is not running"
elif [ -e "$sys_cfg" ] && jq -e '.runtimes["hezo-shim"]' "$sys_cfg" >/dev/null 2>&1; then
	skip "$sys_cfg already registers hezo-shim; not taking someone else's registration away"
else
	sys_had=no
	[ -e "$sys_cfg" ] && sys_had=yes && cp -p "$sys_cfg" "$work/sys.orig"
	suite system "$sys_cfg" /var/run/docker.pid unix:///var/run/docker.sock
fi
finish

#!/bin/sh
# The Debian package: build it from the checkout, install it with apt, `hezo-shim doctor` passes,
# register with containerd and podman (and Docker when nobody else has), remove it, and the
# engines' files are byte for byte what they were before. Set HEZO_DEB to test a prebuilt .deb.
. "$(dirname "$0")/lib.sh"
need_root
if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
	echo "1..0 # SKIP not a Debian system"
	exit 0
fi
if dpkg -s hezo-shim >/dev/null 2>&1; then
	echo "1..0 # SKIP hezo-shim is already installed as a package here"
	exit 0
fi
work=$(mktemp -d /tmp/hezo-package-XXXXXX)
proxyd_pid=
files="/etc/docker/daemon.json /etc/containerd/config.toml /etc/containers/containers.conf"
snapshot() { # snapshot DIR: copy each engine file, or note its absence
	mkdir -p "$1"
	for f in $files; do
		if [ -e "$f" ]; then cp -p "$f" "$1/$(basename "$f")"; else : >"$1/$(basename "$f").absent"; fi
	done
}
same_as() { # same_as DIR: every engine file as in the snapshot
	for f in $files; do
		b=$1/$(basename "$f")
		if [ -e "$b.absent" ]; then
			[ ! -e "$f" ] || { echo "$f exists now"; return 1; }
		else
			cmp "$f" "$b" || return 1
		fi
	done
}
had_etc=no
[ -e /etc/hezo ] && had_etc=yes && cp -a /etc/hezo "$work/etc-hezo"
cleanup() {
	[ -n "$proxyd_pid" ] && kill "$proxyd_pid" 2>/dev/null
	if dpkg -s hezo-shim >/dev/null 2>&1; then
		apt-get purge -y hezo-shim >/dev/null 2>&1
	fi
	# Leave /etc/hezo as we found it, and the engines' files too.
	rm -rf /etc/hezo
	[ $had_etc = yes ] && cp -a "$work/etc-hezo" /etc/hezo
	if [ -d "$work/before" ]; then
		for f in $files; do
			b=$work/before/$(basename "$f")
			if [ -e "$b.absent" ]; then rm -f "$f"; else cmp -s "$f" "$b" || cp -p "$b" "$f"; fi
		done
	fi
	rm -rf "$work"
}
trap cleanup EXIT

deb=${HEZO_DEB:-}
if [ -z "$deb" ]; then
	mkdir -p "$work/out"
	if sh "$SRC/packaging/build-deb.sh" "$work/out" >"$work/build.log" 2>&1; then
		ok "build-deb.sh builds the package from the checkout"
	else
		not_ok "build-deb.sh builds the package from the checkout"
		tail -20 "$work/build.log" | sed 's/^/# /'
		finish
		exit 1
	fi
	deb=$(find "$work/out" -maxdepth 1 -name 'hezo-shim_*_*.deb' ! -name '*dbgsym*' | sort | head -n1)
fi
check "package holds shim, hook, proxyd, unit, policy, man pages, manifests" sh -c "
	dpkg-deb -c '$deb' >'$work/list' &&
	for p in ./usr/bin/hezo-shim hezo-hook ./usr/sbin/hezo-proxyd /system/hezo-proxyd.service ./etc/hezo/policy.json \
		man8/hezo-shim.8 man8/hezo-proxyd.8 man5/hezo-policy.5 kubernetes/runtimeclass.yaml \
		kubernetes/containerd-gvisor-default.toml hezo-pod-wait hezo-seccomp-exec \
		containerd/hezo.toml compose/docker-compose.yml; do grep -q \"\$p\" '$work/list' || { echo missing \$p; exit 1; }; done"
# A runc box's files are bounded by its memory cap, not RLIMIT_NOFILE: the table is raised as
# systemd raises it (read at boot; installing does not apply it, so this test leaves the host's).
check "the package ships /usr/lib/sysctl.d/50-hezo-shim.conf raising fs.file-max" sh -c "
	dpkg-deb --fsys-tarfile '$deb' | tar -xOf - ./usr/lib/sysctl.d/50-hezo-shim.conf | grep -qx 'fs.file-max = 9223372036854775807'"
check "the package needs runsc 2024-07-29 or newer (bookworm-backports on Debian 12)" sh -c "dpkg-deb -f '$deb' Depends | grep -qF 'runsc (>= 0.0~20240729)'"
# The package is built with -Dtest_switches=false: the hook's pause and timing switches and
# proxyd's --test-upstream-ca are not in it.
check "the packaged hook and proxyd carry no test-only switch" sh -c "
	mkdir -p '$work/x' && dpkg-deb -x '$deb' '$work/x' &&
	hook=\$(find '$work/x' -name hezo-hook -type f | head -n 1) && [ -n \"\$hook\" ] &&
	! grep -qa -e HEZO_HOOK_TEST_PAUSE_AFTER_REGISTER -e HEZO_HOOK_TIMING \"\$hook\" &&
	! grep -qa -e test-upstream-ca '$work/x/usr/sbin/hezo-proxyd'"
check "/etc/hezo/policy.json is a conffile" sh -c "dpkg-deb --ctrl-tarfile '$deb' | tar -xOf - ./conffiles | grep -qx /etc/hezo/policy.json"

snapshot "$work/before"
rm -rf /etc/hezo
check "apt-get install ./hezo-shim_*.deb" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y '$deb' >'$work/apt.log' 2>&1 || { tail -20 '$work/apt.log'; false; }"
check "postinst edited no engine file and said how to register" sh -c "grep -q 'hezo-shim install --docker' '$work/apt.log'"
check "engine files untouched by the install" same_as "$work/before"

# No systemd here to start the unit: run proxyd the way the unit would.
if [ ! -S /run/hezo-proxyd/control.sock ]; then
	mkdir -p /run/hezo-proxyd /var/log/hezo-proxyd
	/usr/sbin/hezo-proxyd >"$work/proxyd.log" 2>&1 &
	proxyd_pid=$!
	for _ in $(seq 50); do [ -S /run/hezo-proxyd/control.sock ] && break; sleep 0.1; done
fi
if /usr/bin/hezo-shim doctor >"$work/doctor" 2>&1; then
	ok "hezo-shim doctor passes right after install"
else
	not_ok "hezo-shim doctor passes right after install"
fi
sed 's/^/# /' "$work/doctor"

check "hezo-shim install --containerd --podman" /usr/bin/hezo-shim install --containerd --podman
check "doctor sees both registrations" sh -c "/usr/bin/hezo-shim doctor >'$work/doctor2' 2>&1; grep -q '^ok   containerd: registered' '$work/doctor2' && grep -q '^ok   podman: registered' '$work/doctor2'"
if [ -e /etc/docker/daemon.json ] && jq -e '.runtimes["hezo-shim"]' /etc/docker/daemon.json >/dev/null 2>&1; then
	skip "docker: daemon.json already registers hezo-shim (someone else's); not registering"
else
	check "hezo-shim install --docker" /usr/bin/hezo-shim install --docker
fi
check "apt-get remove hezo-shim" sh -c "DEBIAN_FRONTEND=noninteractive apt-get remove -y hezo-shim >'$work/rm.log' 2>&1 || { tail -20 '$work/rm.log'; false; }"
check "prerm unregistered: every engine file is byte-identical to before the package" same_as "$work/before"
check "the binaries are gone, the conffile stays until purge" sh -c "! test -e /usr/bin/hezo-shim && test -e /etc/hezo/policy.json"
check "apt-get purge removes the conffile" sh -c "apt-get purge -y hezo-shim >/dev/null 2>&1 && ! test -e /etc/hezo/policy.json"
finish

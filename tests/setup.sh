#!/bin/bash
# Prepare a fresh Debian 12 machine (as root) to build and test hezo-shim: Debian packages, gVisor
# (runsc) from bookworm-backports, a running dockerd and the busybox test image. Safe to run again.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/image.sh
. "$here/lib/image.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/lib/docker.sh"

log()
{
	echo "setup: $*"
}

if [ "$(id -u)" != 0 ]; then
	echo "setup: must run as root (as root: tests/setup.sh; or sudo tests/setup.sh)" >&2
	exit 1
fi

PACKAGES=(
	# build
	meson ninja-build pkg-config gcc clang-14 libclang-rt-14-dev clang-format git
	libseccomp-dev libcap-dev libyajl-dev libnftnl-dev libmnl-dev libssl-dev libnghttp2-dev
	# unit tests
	libcmocka-dev
	# backends and engines
	runc crun docker.io containerd podman docker-compose
	# network, images, test tools
	nftables iproute2 dnsmasq busybox-static debootstrap jq openssl curl util-linux procps python3 valgrind
	# the ssh agent's test (tests/integration/keys-docker.sh) runs its own sshd in a namespace
	openssh-server
	# record-reads.sh counts the opens of one create
	strace
	# proxyd's Prometheus endpoint, checked with a real parser (tests/integration/metrics.sh)
	python3-prometheus-client
	# HTTP/2 test upstreams for proxyd's interception (tests/integration/secrets-egress.sh)
	python3-h2
	# the CRI harness (tests/cri): gRPC for Debian's python3, the CNI plugins
	python3-grpcio python3-grpc-tools containernetworking-plugins
	# the key-spelling differential test (tests/tools/keys.sh): Go and runtime-spec's Go types
	golang-go golang-github-opencontainers-specs-dev
	# benchmarks
	hyperfine iperf3 haproxy wrk
	# the style suite: shell scripts (tests/integration/shellcheck.sh)
	shellcheck
	# hezo-shim stats seen in a real terminal (tests/integration/ps.sh)
	tmux
	# packaging tests: the Debian package build, man page rendering, unit file checks
	debhelper dpkg-dev fakeroot man-db systemd
)

missing=()
for p in "${PACKAGES[@]}"; do
	if [ "$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null)" != installed ]; then
		missing+=("$p")
	fi
done
# kubectl may come from elsewhere (a kubectl package conflicts with kubernetes-client).
if ! command -v kubectl >/dev/null 2>&1; then
	missing+=(kubernetes-client)
fi

export DEBIAN_FRONTEND=noninteractive
if [ "${#missing[@]}" -gt 0 ]; then
	log "installing ${missing[*]}"
	apt-get update
	# No service may start from an install (openssh-server would leave an sshd on the host):
	# a policy-rc.d of our own for the install's length, unless the machine has one already.
	prc=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		prc=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$prc"
		chmod 0755 "$prc"
	fi
	apt-get install -y -o Dpkg::Options::=--force-confold "${missing[@]}" || { [ -z "$prc" ] || rm -f "$prc"; exit 1; }
	[ -z "$prc" ] || rm -f "$prc"
else
	log "all packages present"
fi

# gVisor: bookworm's own runsc (2022-12-19) loses blocking reads in host network mode and costs
# about 8 host tasks per sandboxed process; bookworm-backports has 2024-07-29 (docs/runsc.md).
RUNSC_MIN=0.0~20240729
RUNSC_SOURCES=/etc/apt/sources.list.d/hezo-backports.sources
runsc_version()
{
	dpkg-query -W -f '${Version}' runsc 2>/dev/null | grep . || echo none
}
runsc_ok()
{
	local v
	v=$(runsc_version)
	[ "$v" != none ] && dpkg --compare-versions "$v" ge "$RUNSC_MIN"
}
# The suite, added the way https://backports.debian.org/Instructions/ says, unless some source
# already has it.
backports_listed()
{
	grep -rqsE '(^|[[:space:]])bookworm-backports([[:space:]]|$)' /etc/apt/sources.list /etc/apt/sources.list.d/
}
runsc_fail()
{
	echo "setup: cannot install runsc >= $RUNSC_MIN from bookworm-backports: $*" >&2
	exit 1
}
if runsc_ok; then
	log "runsc $(runsc_version) present"
else
	# shellcheck disable=SC1091
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	runsc_log=/var/log/hezo-setup-runsc.log
	: >"$runsc_log"
	if [ "$codename" = bookworm ]; then
		if ! backports_listed; then
			log "adding bookworm-backports to apt's sources ($RUNSC_SOURCES)"
			printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm-backports' \
				'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' \
				>"$RUNSC_SOURCES.tmp" || runsc_fail "cannot write $RUNSC_SOURCES"
			mv -f "$RUNSC_SOURCES.tmp" "$RUNSC_SOURCES" || runsc_fail "cannot write $RUNSC_SOURCES"
		fi
		log "installing runsc from bookworm-backports (was: $(runsc_version))"
		apt-get update >>"$runsc_log" 2>&1 || runsc_fail "apt-get update failed (log: $runsc_log)"
		apt-get install -y -t bookworm-backports runsc >>"$runsc_log" 2>&1 ||
			runsc_fail "apt-get install -t bookworm-backports runsc failed: $(tail -n 1 "$runsc_log") (log: $runsc_log)"
	else
		# Newer releases carry a new enough runsc in their own suite.
		log "installing runsc (${codename:-unknown release})"
		apt-get install -y runsc >>"$runsc_log" 2>&1 ||
			runsc_fail "apt-get install runsc failed: $(tail -n 1 "$runsc_log") (log: $runsc_log)"
	fi
	runsc_ok || runsc_fail "installed runsc is $(runsc_version)"
	log "runsc $(runsc_version) installed"
fi

log "starting dockerd if needed (log: $HEZO_DOCKERD_LOG)"
hezo_dockerd_start

log "test image $HEZO_TEST_IMAGE"
hezo_image_docker "$HEZO_TEST_IMAGE"
hezo_docker image inspect "$HEZO_TEST_IMAGE" >/dev/null
log "done"

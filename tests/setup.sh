#!/bin/bash
# Prepare a fresh Debian 12 machine (as root) to build and test hezo-shim: Debian packages,
# a running dockerd and the busybox test image. Safe to run again.
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
	echo "setup: must run as root (sudo tests/setup.sh)" >&2
	exit 1
fi

PACKAGES=(
	# build
	meson ninja-build pkg-config gcc clang-14 libclang-rt-14-dev clang-format git
	libseccomp-dev libcap-dev libyajl-dev libnftnl-dev libmnl-dev
	# unit tests
	libcmocka-dev
	# backends and engines
	runc crun runsc docker.io containerd podman docker-compose
	# network, images, test tools
	nftables iproute2 dnsmasq busybox-static jq openssl curl util-linux procps python3 valgrind
	# the CRI harness (tests/cri): gRPC for Debian's python3, the CNI plugins
	python3-grpcio python3-grpc-tools containernetworking-plugins
	# the key-spelling differential test (tests/tools/keys.sh): Go and runtime-spec's Go types
	golang-go golang-github-opencontainers-specs-dev
	# benchmarks
	hyperfine iperf3 haproxy wrk
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
	apt-get install -y -o Dpkg::Options::=--force-confold "${missing[@]}"
else
	log "all packages present"
fi

log "starting dockerd if needed (log: $HEZO_DOCKERD_LOG)"
hezo_dockerd_start

log "test image $HEZO_TEST_IMAGE"
hezo_image_docker "$HEZO_TEST_IMAGE"
hezo_docker image inspect "$HEZO_TEST_IMAGE" >/dev/null
log "done"

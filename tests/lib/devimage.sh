# A Debian test image for workloads an agent runs (a compiler, make, meson, git, ssh, python3 with
# venv), made offline from Debian's own repository with debootstrap and cached on the machine, so
# that only the first run pays for it. Used by the workspace, keys and build tests.

# shellcheck shell=bash

HEZO_DEV_IMAGE=${HEZO_DEV_IMAGE:-hezo-test/dev:latest}
HEZO_DEV_CACHE=${HEZO_DEV_CACHE:-/var/cache/hezo-test}
# What the image holds: minbase plus these. Changing the list changes the cache key.
HEZO_DEV_PACKAGES=${HEZO_DEV_PACKAGES:-gcc,libc6-dev,make,meson,ninja-build,pkg-config,git,openssh-client,python3,python3-venv,python3-pip-whl,python3-setuptools-whl,ca-certificates,curl,procps}

# The mirror apt already uses for bookworm (deb822 or one-line sources), else Debian's own.
_hezo_dev_mirror()
{
	local m
	m=$(grep -rhE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
		/etc/apt/sources.list.d/*.list 2>/dev/null |
		grep -v -e security -e backports -e google -e nodesource |
		sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//; s/[[:space:]].*//' |
		grep -m1 -E '^https?://.*/debian/?$')
	echo "${m:-http://deb.debian.org/debian}"
}

# hezo_devimage_tar: print the path of the cached rootfs tarball, building it first if needed.
# Builds under a lock so concurrent callers wait for one build; a failed build leaves no tarball.
hezo_devimage_tar()
{
	local key tar tmp rc=0 log
	key=$(printf '%s\n' "bookworm" "$HEZO_DEV_PACKAGES" | sha256sum | cut -c1-12)
	tar=$HEZO_DEV_CACHE/dev-$key.tar
	mkdir -p "$HEZO_DEV_CACHE" || return 1
	(
		flock 9 || exit 1
		[ -s "$tar" ] && exit 0
		command -v debootstrap >/dev/null || { echo "hezo_devimage_tar: debootstrap is not installed" >&2; exit 1; }
		tmp=$(mktemp -d "$HEZO_DEV_CACHE/build.XXXXXX") || exit 1
		log=$HEZO_DEV_CACHE/dev-$key.log
		if debootstrap --variant=minbase --include="$HEZO_DEV_PACKAGES" bookworm "$tmp/root" \
			"$(_hezo_dev_mirror)" >"$log" 2>&1; then
			# apt's lists and the package cache are of no use in a test image.
			rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*
			tar -C "$tmp/root" --numeric-owner -cf "$tmp/dev.tar" . && mv -f "$tmp/dev.tar" "$tar" || rc=1
		else
			echo "hezo_devimage_tar: debootstrap failed: $(tail -n 1 "$log") (log: $log)" >&2
			rc=1
		fi
		rm -rf "$tmp"
		exit "$rc"
	) 9>"$HEZO_DEV_CACHE/dev.lock" || return 1
	echo "$tar"
}

# hezo_devimage_docker [NAME]: the dev image in dockerd (imported from the cache unless present).
hezo_devimage_docker()
{
	local name=${1:-$HEZO_DEV_IMAGE} docker=${HEZO_DOCKER:-/usr/bin/docker} tar
	"$docker" image inspect "$name" >/dev/null 2>&1 && return 0
	tar=$(hezo_devimage_tar) || return 1
	"$docker" import -c 'CMD ["/bin/bash"]' -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		"$tar" "$name" >/dev/null
}

# hezo_devimage_rootfs DIR: unpack the dev image into DIR (an OCI bundle's rootfs).
hezo_devimage_rootfs()
{
	local dir=$1 tar
	tar=$(hezo_devimage_tar) || return 1
	mkdir -p "$dir" && tar -C "$dir" --numeric-owner -xf "$tar"
}

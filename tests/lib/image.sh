# Test images without a registry: a busybox-static root filesystem, imported into an engine.
# Used by tests/setup.sh and by tests that need a rootfs (OCI bundles, docker, podman, ctr).

# shellcheck shell=bash

HEZO_TEST_IMAGE=${HEZO_TEST_IMAGE:-hezo-test/busybox:latest}
HEZO_BUSYBOX=${HEZO_BUSYBOX:-/bin/busybox}

# hezo_busybox_rootfs DIR: fill DIR (created, must be empty or absent) with a busybox root.
hezo_busybox_rootfs()
{
	local dir=$1 applet
	if [ ! -x "$HEZO_BUSYBOX" ] || ! "$HEZO_BUSYBOX" --list >/dev/null 2>&1; then
		echo "hezo_busybox_rootfs: $HEZO_BUSYBOX is not a working busybox" >&2
		return 1
	fi
	# A dynamically linked busybox would not run in an empty root.
	if ldd "$HEZO_BUSYBOX" >/dev/null 2>&1; then
		echo "hezo_busybox_rootfs: $HEZO_BUSYBOX is not static (install busybox-static)" >&2
		return 1
	fi
	mkdir -p "$dir"/{bin,tmp,var/tmp,run,proc,sys,dev,etc,root}
	chmod 1777 "$dir/tmp" "$dir/var/tmp"
	install -m 0755 "$HEZO_BUSYBOX" "$dir/bin/busybox"
	for applet in $("$HEZO_BUSYBOX" --list); do
		[ "$applet" = busybox ] && continue
		[ -e "$dir/bin/$applet" ] || ln -s busybox "$dir/bin/$applet"
	done
	cat >"$dir/etc/passwd" <<-'EOF'
		root:x:0:0:root:/root:/bin/sh
		nobody:x:65534:65534:nobody:/nonexistent:/bin/false
	EOF
	cat >"$dir/etc/group" <<-'EOF'
		root:x:0:
		nogroup:x:65534:
	EOF
}

# hezo_copy_bin ROOTFS FILE...: copy the host's FILEs (dynamically linked programs) and every
# library ldd names for them into ROOTFS at the same paths, so Debian's own binaries run there.
hezo_copy_bin()
{
	local root=$1 f
	shift
	for f in "$@" $(ldd "$@" 2>/dev/null | awk '/=>/ { print $3 } /^\t\// { print $1 }' | sort -u); do
		[ -e "$f" ] || continue
		mkdir -p "$root$(dirname "$f")" && cp -L "$f" "$root$f" || return 1
	done
}

# Write the tar stream of a fresh busybox rootfs to stdout.
_hezo_image_tar()
{
	local tmp rc=0
	tmp=$(mktemp -d /tmp/hezo-rootfs.XXXXXX) || return 1
	if hezo_busybox_rootfs "$tmp/rootfs"; then
		tar -C "$tmp/rootfs" --numeric-owner -c . || rc=$?
	else
		rc=1
	fi
	rm -rf "$tmp"
	return "$rc"
}

# hezo_image_docker [NAME]: import the busybox image into dockerd unless it is there already.
hezo_image_docker()
{
	local name=${1:-$HEZO_TEST_IMAGE} docker=${HEZO_DOCKER:-/usr/bin/docker}
	if "$docker" image inspect "$name" >/dev/null 2>&1; then
		return 0
	fi
	_hezo_image_tar | "$docker" import -c 'CMD ["/bin/sh"]' - "$name" >/dev/null
}

# hezo_image_podman [NAME]
hezo_image_podman()
{
	local name=${1:-$HEZO_TEST_IMAGE}
	if podman image exists "$name" 2>/dev/null; then
		return 0
	fi
	_hezo_image_tar | podman import -c 'CMD ["/bin/sh"]' - "$name" >/dev/null
}

# hezo_image_ctr [NAME] [NAMESPACE]: containerd imports image archives, so go through docker save.
hezo_image_ctr()
{
	local name=${1:-$HEZO_TEST_IMAGE} ns=${2:-default} ref
	ref="docker.io/$name"
	if ctr -n "$ns" images ls -q 2>/dev/null | grep -qxF "$ref"; then
		return 0
	fi
	hezo_image_docker "$name" || return 1
	"${HEZO_DOCKER:-/usr/bin/docker}" save "$name" | ctr -n "$ns" images import - >/dev/null
}

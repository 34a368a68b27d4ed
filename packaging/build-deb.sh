#!/bin/sh
# Build the hezo-shim .deb from a checkout: copy the sources (the files git tracks or would track,
# never ignored ones such as build directories) to a temp dir, put packaging/debian at its top,
# and run dpkg-buildpackage -us -uc -b. Usage: packaging/build-deb.sh [OUTDIR] (default: .).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "${1:-.}" && pwd)
version=$(sed -n 's/^hezo-shim (\([^)]*\)).*/\1/p' "$src/packaging/debian/changelog" | head -n1)

missing=
for tool in dpkg-buildpackage:dpkg-dev dh:debhelper fakeroot:fakeroot; do
	command -v "${tool%%:*}" >/dev/null || missing="$missing ${tool#*:}"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ]; then
		apt-get install -y --no-install-recommends $missing
	else
		echo "build-deb.sh: install$missing first" >&2
		exit 1
	fi
fi

work=$(mktemp -d /tmp/hezo-deb-XXXXXX)
trap 'rm -rf "$work"' EXIT
tree=$work/hezo-shim-$version
mkdir -p "$tree"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	# One tar reading the whole list: xargs would split a long list over several tars, and the
	# extracting tar stops at the first archive's end.
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		tar --null --no-recursion -T - -cf -) | tar -C "$tree" -xf -
else
	(cd "$src" && tar --exclude='./build*' --exclude='./.git' --exclude='./obj-*' -cf - .) |
		tar -C "$tree" -xf -
fi
cp -r "$tree/packaging/debian" "$tree/debian"

cd "$tree"
if ! dpkg-checkbuilddeps >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		deps=$(dpkg-checkbuilddeps 2>&1 | sed -n 's/.*Unmet build dependencies: //p' |
			sed 's/([^)]*)//g')
		apt-get install -y --no-install-recommends $deps
	else
		dpkg-checkbuilddeps
	fi
fi
dpkg-buildpackage -us -uc -b
cp "$work"/*.deb "$out"/
ls "$out"/hezo-shim_"$version"_*.deb

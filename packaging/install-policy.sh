#!/bin/sh
# meson install step: put the shipped policy at the policy path unless one is already there.
set -eu
src="${DESTDIR:-}$1"
dst="${DESTDIR:-}$2"
if [ -e "$dst" ]; then
	echo "keeping existing $2 (shipped default: $1)"
	exit 0
fi
mkdir -p "$(dirname "$dst")"
install -m 0644 "$src" "$dst"
echo "installed $2"

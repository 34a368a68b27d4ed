#!/bin/bash
# Style gate: every shell script git knows of (tracked, or new and not ignored) passes shellcheck
# at severity warning, following the files it sources (-x). One TAP line per file.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"

hezo_require_tools git shellcheck
cd "$HEZO_SOURCE_DIR" || bail_out "no source dir $HEZO_SOURCE_DIR"
git rev-parse --git-dir >/dev/null 2>&1 || hezo_cannot_run "$HEZO_SOURCE_DIR is not a git checkout"

mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.sh' .ci/run | sort -u)
diag "shellcheck $(shellcheck --version | sed -n 's/^version: //p')"
[ "${#files[@]}" -gt 0 ] || bail_out "no shell scripts found"
for f in "${files[@]}"; do
	[ -f "$f" ] || continue
	check "$f passes shellcheck -S warning" shellcheck -x -S warning -f gcc "$f"
done
tap_done

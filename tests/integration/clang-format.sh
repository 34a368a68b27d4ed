#!/bin/bash
# Style gate: every C file git knows of (tracked, or new and not ignored) is clang-format clean
# under the repository's .clang-format. One TAP line per file.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"

hezo_require_tools git clang-format
cd "$HEZO_SOURCE_DIR" || bail_out "no source dir $HEZO_SOURCE_DIR"
git rev-parse --git-dir >/dev/null 2>&1 || hezo_cannot_run "$HEZO_SOURCE_DIR is not a git checkout"

mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' | sort -u)
diag "clang-format $(clang-format --version | head -n 1)"
[ "${#files[@]}" -gt 0 ] || bail_out "no C files found"
for f in "${files[@]}"; do
	[ -f "$f" ] || continue
	check "$f is clang-format clean" clang-format --dry-run -Werror --style=file "$f"
done
tap_done

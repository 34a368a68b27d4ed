#!/bin/bash
# The README's commands for a fresh Debian 12 machine, as written: each script they name must be
# executable in git's index (mode 100755) and on disk, and every program a command line runs
# (its first word, and each named script's interpreter) must be one a fresh Debian 12 root has:
# shipped by a package of priority "required" or an Essential one (no sudo, say).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
SRC=${HEZO_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
README=$SRC/README.md
SECTION='## On a fresh Debian 12 machine'

for t in git dpkg dpkg-query awk; do
	command -v "$t" >/dev/null 2>&1 || bail_out "missing tool $t"
done
git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 || bail_out "$SRC is not a git checkout"

# The indented code lines of the section, one command per line.
mapfile -t CMDS < <(awk -v s="$SECTION" '
	index($0, s) == 1 { on = 1; next }
	on && /^## / { exit }
	on && /^    [^ ]/ { sub(/^    /, ""); print }' "$README")
expect_eq "${#CMDS[@]}" 2 "README's section for a fresh Debian 12 machine has two commands" ||
	diag "found: ${CMDS[*]}"

# fresh_has PROGRAM: PROGRAM (a name on PATH or an absolute path) comes with every Debian 12
# root: the package that ships it is Essential or of priority required (what debootstrap installs).
fresh_has()
{
	local path pkg prio ess
	path=$(command -v "$1" 2>/dev/null) || { echo "$1 is not installed here either"; return 1; }
	path=$(readlink -f "$path")
	pkg=$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1)
	# usrmerge: /usr/bin/bash is shipped as /bin/bash.
	[ -n "$pkg" ] || pkg=$(dpkg -S "${path#/usr}" 2>/dev/null | head -n 1 | cut -d: -f1)
	[ -n "$pkg" ] || { echo "$1 ($path) belongs to no package"; return 1; }
	read -r prio ess < <(dpkg-query -W -f '${Priority} ${Essential}\n' "$pkg" 2>/dev/null)
	if [ "$prio" = required ] || [ "$ess" = yes ]; then
		return 0
	fi
	echo "$1 comes from package $pkg (priority ${prio:-?}), which a fresh Debian 12 root lacks"
	return 1
}

for cmd in "${CMDS[@]}"; do
	read -r -a words <<<"$cmd"
	first=${words[0]:-}
	if [ -e "$SRC/$first" ] && [ "${first#/}" = "$first" ]; then
		# A script of the checkout, run by its path.
		mode=$(git -C "$SRC" ls-files -s -- "$first" | awk '{ print $1 }')
		expect_eq "$mode" 100755 "[$cmd] git's index records $first as executable (100755)"
		check "[$cmd] $first is executable on disk" test -x "$SRC/$first"
		read -r shebang <"$SRC/$first"
		interp=${shebang#\#!}
		read -r -a iw <<<"$interp"
		prog=${iw[0]:-}
		[ "$(basename "$prog")" = env ] && prog=${iw[1]:-}
		if [ "${shebang:0:2}" != '#!' ] || [ -z "$prog" ]; then
			not_ok "[$cmd] $first starts with a #! line"
			continue
		fi
		if out=$(fresh_has "$prog"); then
			ok "[$cmd] its interpreter $prog is on a fresh Debian 12 root"
		else
			not_ok "[$cmd] its interpreter $prog is on a fresh Debian 12 root"
			diag "$out"
		fi
	else
		if out=$(fresh_has "$first"); then
			ok "[$cmd] $first is on a fresh Debian 12 root"
		else
			not_ok "[$cmd] $first is on a fresh Debian 12 root"
			diag "$out"
		fi
		for w in "${words[@]:1}"; do
			[ -e "$SRC/$w" ] || continue
			mode=$(git -C "$SRC" ls-files -s -- "$w" | awk '{ print $1 }')
			expect_eq "$mode" 100755 "[$cmd] git's index records $w as executable (100755)"
			check "[$cmd] $w is executable on disk" test -x "$SRC/$w"
		done
	fi
done
tap_done

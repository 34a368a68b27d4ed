#!/bin/bash
# Integration (raw hezo-shim, runsc, no engine): runsc trusts whatever file bears a container's
# state name in its --root, so a root others may write (sticky or not) is refused, and a state
# file that is not runsc's own (another user's, a symlink, another container's copy) is refused
# before runsc loads it: beta's exec never reaches alpha's box (red team caller report, finding 1).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export HEZO_TEST_BACKEND=runsc
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"

hezo_require_root
hezo_require_tools jq timeout "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

# Directories made here are 0755 (the roots the shim accepts), whatever the caller's umask.
umask 022
mkdir -p "$HEZO_TEST_DIR"
WORK=$(mktemp -d "$HEZO_TEST_DIR/runsc-root.XXXXXX") || bail_out "cannot make a work directory"
tap_cleanup "rm -rf --one-file-system '$WORK'"
# Records of our own: nothing is left in the shared state directory.
HEZO_TEST_STATE=$WORK/state
mkdir -p "$WORK/projects" "$HEZO_TEST_STATE" && echo '{}' >"$WORK/projects/alpha.json" &&
	echo '{}' >"$WORK/projects/beta.json" || bail_out "cannot write the project files"
hezo_write_policy bundle ".projectsDir = \"$WORK/projects\""
RAND=$(hezo_rand)
AROOT=$WORK/aroot
BROOT=$WORK/broot
mkdir -p "$AROOT" "$BROOT" || bail_out "cannot make the roots"

# pshim PROJECT ARGS...: the shim as that project's runtime; rc in RC, stderr in ERR. A box made
# keeps the stdout it is handed, so only exec's (pexec) is read, through a pipe (a regular file is
# not handed to a box: shim/fds.c).
pshim()
{
	local p=$1
	shift
	hezo_shim --hezo-project "$p" "$@" </dev/null >/dev/null 2>"$WORK/err" && RC=0 || RC=$?
	ERR=$(cat "$WORK/err")
}

# pexec PROJECT ARGS...: the same, stdout in OUT.
pexec()
{
	local p=$1
	shift
	OUT=$(hezo_shim --hezo-project "$p" "$@" </dev/null 2>"$WORK/err" | cat) && RC=0 || RC=$?
	ERR=$(cat "$WORK/err")
}

# alpha's box, the victim: it says whose it is in /tmp/who.
A=hezo-rr-alpha-$RAND
tap_cleanup "hezo_bundle_cleanup '$AROOT' '$A'"
hezo_make_bundle "$WORK/a" "$A" '["sh", "-c", "echo box-of-alpha >/tmp/who; exec sleep 600"]' ||
	bail_out "cannot make bundle a"
pshim alpha --root "$AROOT" create -b "$WORK/a" "$A"
[ "$RC" = 0 ] || bail_out "cannot create alpha's box: $ERR"
pshim alpha --root "$AROOT" start "$A"
[ "$RC" = 0 ] || bail_out "cannot start alpha's box: $ERR"
AFILE="$AROOT/${A}_sandbox:$A.state"
[ -f "$AFILE" ] || bail_out "runsc keeps no state file at $AFILE"

# --- a --root others may write, sticky like /tmp ----------------------------------------------
# Anyone may create a name there once runsc has freed it (a foreground run's end, a delete).
W=$WORK/sticky
mkdir -m 1777 "$W" && chmod 1777 "$W" || bail_out "cannot make $W"
S=hezo-rr-s-$RAND
tap_cleanup "hezo_bundle_cleanup '$W' '$S'"
hezo_make_bundle "$WORK/s" "$S" '["sleep", "600"]' || bail_out "cannot make bundle s"
pshim beta --root "$W" create -b "$WORK/s" "$S"
expect_ne "$RC" 0 "[sticky root] create under a root-owned 1777 --root is refused"
expect_match "$ERR" "^hezo-shim: --root $W: $W is writable by others \\(mode 1777\\), so another user could plant the state files the backend reads there\$" \
	"[sticky root] the error names the directory"
expect_eq "$(hezo_backend_ids "$W" | grep -cxF "$S")" 0 "[sticky root] runsc made nothing there"
pshim beta --root "$W" exec "$S" true
expect_match "$ERR" "$W is writable by others" "[sticky root] exec under it is refused too"

# --- state files that are not runsc's own -----------------------------------------------------
# beta's own box; then runsc frees its state name (as at the end of a foreground run or a
# delete; done here directly), and something else is put at that name.
B=hezo-rr-beta-$RAND
tap_cleanup "hezo_bundle_cleanup '$BROOT' '$B'"
hezo_make_bundle "$WORK/b" "$B" '["sh", "-c", "echo box-of-beta >/tmp/who; exec sleep 600"]' ||
	bail_out "cannot make bundle b"
pshim beta --root "$BROOT" create -b "$WORK/b" "$B"
[ "$RC" = 0 ] || bail_out "cannot create beta's box: $ERR"
pshim beta --root "$BROOT" start "$B"
pexec beta --root "$BROOT" exec "$B" cat /tmp/who
expect_eq "$OUT" box-of-beta "[state file] beta's exec reaches its own box while runsc's file is there" ||
	diag "$ERR"
BFILE="$BROOT/${B}_sandbox:$B.state"
hezo_backend --root "$BROOT" delete --force "$B" >/dev/null 2>&1
[ ! -e "$BFILE" ] || bail_out "runsc left $BFILE"

# planted PROJECT LABEL PATTERN: beta's exec of B is refused with PATTERN, alpha's box unreached.
planted()
{
	pexec beta --root "$BROOT" exec "$B" cat /tmp/who
	expect_ne "$RC" 0 "[$1] beta's exec of its container is refused"
	expect_match "$ERR" "$2" "[$1] the shim names the file"
	expect_no_match "$OUT" box-of-alpha "[$1] exec did not run in alpha's box"
	rm -f "$BFILE"
}

# What a user learns from ps alone: alpha's sandbox pid and --root (runsc's own format, 2024).
pid=$(jq -r '.sandbox.pid' "$AFILE")
jq -n --arg a "$A" --arg b "$B" --arg w "$BROOT" --argjson pid "$pid" --arg sock "$AROOT/runsc-$A.sock" \
	'{id: $a, bundleDir: "/", status: "running",
	  spec: {ociVersion: "1.0.2-dev", process: {user: {uid: 0, gid: 0}, args: ["sh"], cwd: "/"},
		 root: {path: "/"}},
	  sandbox: {id: $a, pid: $pid, uid: 0, gid: 0, controlSocketPath: $sock},
	  saver: {rootDir: $w, id: {sandboxId: $b, containerId: $b}}}' >"$WORK/forged.json" ||
	bail_out "cannot write the forged state file"
# nobody's file (made here as root and given away: the name is where a user of a sticky root
# would have created it).
cp "$WORK/forged.json" "$BFILE" && chown 65534:65534 "$BFILE" && chmod 0644 "$BFILE" ||
	bail_out "cannot plant $BFILE"
planted "file of nobody's" "^hezo-shim: container $B: $BFILE is not runsc's state file \\(regular, uid 65534, mode 0644\\)\$"

ln -s "$AFILE" "$BFILE" || bail_out "cannot plant the symlink"
planted "symlink to alpha's" "^hezo-shim: container $B: $BFILE is a symlink, not runsc's state file\$"

# root's, mode 0640, as runsc writes it: but alpha's file, not beta's.
cp -p "$AFILE" "$BFILE" || bail_out "cannot copy alpha's state file"
planted "copy of alpha's" "^hezo-shim: container $B: $BFILE names another container, not this one\$"

expect_eq "$(hezo_backend_status "$AROOT" "$A")" running "alpha's box still runs"
pshim alpha --root "$AROOT" delete --force "$A"
expect_eq "$RC" 0 "alpha's box is deleted" || diag "$ERR"
pshim beta --root "$BROOT" delete --force "$B"
tap_done

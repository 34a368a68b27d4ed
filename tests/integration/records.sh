#!/bin/bash
# Integration: the verbs after create act only on the containers hezo-shim made, by their own
# record, under every spelling of the --root that made them, and only for the project that owns
# them; a create never takes over a live container's ID (red team pass 8, H-F1, F3, F6, F8).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"

hezo_require_root
hezo_require_tools jq runc timeout "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-records-$HEZO_TEST_BACKEND
PLAIN=$HEZO_TEST_DIR/root-records-plain
WORK=$(mktemp -d "$HEZO_TEST_DIR/records.XXXXXX")
tap_cleanup "rm -rf '$WORK'"
hezo_write_policy bundle
MIB=1048576
# Two projects with different boxes: alpha's is the tighter.
PROJ=$WORK/projects
mkdir -p "$PROJ" && echo '{"resources": {"memory": "64m"}}' >"$PROJ/alpha.json" &&
	echo '{}' >"$PROJ/beta.json" || bail_out "cannot write the project files"
SHARE=$WORK/share
mkdir -p "$SHARE" || bail_out "cannot make $SHARE"
# gamma's own shares, which the main policy does not list; delta's boxes write their root
# filesystem; a share of the main policy's that is not made yet, whose parent is a --root below.
GSHARE=$WORK/gshare
GSHARE2=$WORK/gshare2
mkdir -p "$GSHARE" "$GSHARE2" || bail_out "cannot make the gamma shares"
jq -n --arg a "$GSHARE" --arg b "$GSHARE2" '{"mounts": {"allowedSources": [$a, $b]}}' \
	>"$PROJ/gamma.json" && echo '{"readonlyRootfs": false}' >"$PROJ/delta.json" ||
	bail_out "cannot write the gamma and delta project files"
LATER=$WORK/later/hezo-it-later-$(hezo_rand)
jq --arg d "$PROJ" --arg s "$SHARE" --arg l "$LATER" \
	'.projectsDir = $d | .mounts.allowedSources += [$s, $l]' \
	"$HEZO_TEST_POLICY" >"$WORK/policy.json" ||
	bail_out "cannot write the projects policy"
export HEZO_TEST_POLICY=$WORK/policy.json

new_id()
{
	ID="hezo-it-$1-$(hezo_rand)"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$ID'"
}

# shim_err LABEL ARGS...: run the shim (stdout to /dev/null); rc in RC, stderr in ERR.
shim_err()
{
	local label=$1
	shift
	# stderr through a pipe (a regular file is not handed to a box: shim/fds.c); a box made
	# holds it, so the copy is waited for only when nothing was made.
	hezo_shim "$@" </dev/null >/dev/null 2> >(cat >"$WORK/$label.err") && RC=0 || RC=$?
	[ "$RC" = 0 ] || wait "$!" 2>/dev/null
	ERR=$(cat "$WORK/$label.err")
}

# refused LABEL REGEX: the last shim_err failed with one line matching REGEX.
refused()
{
	expect_ne "$RC" 0 "[$1] refused (non-zero exit)"
	expect_match "$(wc -l <<<"$ERR"):$ERR" "^1:hezo-shim: $2" "[$1] one line saying why" ||
		diag "stderr: $ERR"
}

mem_limit() { hezo_read "$(hezo_cgroup_dir memory "/hezo-test/$1")/memory.limit_in_bytes"; }

# --- alpha's running box -------------------------------------------------------------------------
new_id alpha
A=$ID
hezo_make_bundle "$WORK/a" "$A" '["sh", "-c", "echo alpha >/tmp/who; exec sleep 600"]' ||
	bail_out "cannot make bundle a"
shim_err a-create --hezo-project alpha --root "$ROOT" create -b "$WORK/a" "$A"
expect_eq "$RC" 0 "[alpha] create exits 0" || diag "$ERR"
shim_err a-start --root "$ROOT" start "$A"
expect_eq "$RC" 0 "[alpha] start exits 0" || diag "$ERR"
hezo_wait_status "$ROOT" "$A" running 20 || bail_out "alpha's container does not run"
expect_eq "$(mem_limit "$A")" $((64 * MIB)) "[alpha] its memory limit is alpha's 64 MiB"

# --- the same --root, spelled another way: the same record, the same box ---------------------
cd "$(dirname "$ROOT")" || bail_out "cannot cd to $(dirname "$ROOT")"
for spelling in "$ROOT/" "$(dirname "$ROOT")//$(basename "$ROOT")" "$ROOT/../$(basename "$ROOT")" \
	"./$(basename "$ROOT")"; do
	shim_err spell --root "$spelling" update --memory 1g --memory-swap 1g "$A"
	expect_eq "$RC" 0 "[--root $spelling] update finds alpha's record (clamped, exit 0)" || diag "$ERR"
	expect_eq "$(mem_limit "$A")" $((64 * MIB)) \
		"[--root $spelling] update --memory 1g keeps alpha's 64 MiB" || diag "rc $RC: $ERR"
done
cd / || bail_out "cannot cd to /"

# --- kill's words as runc would reorder them (red team pass 12, part N, M1) -------------------
# runc reads `kill OWN --all OTHER` as `kill --all OTHER OWN`: the shim checked OWN (here a
# container named like a signal) and handed that argv on, so OTHER got the signal. The backend
# now gets the shim's own reading: OWN and the signal OTHER, which is none.
tap_cleanup "hezo_bundle_cleanup '$ROOT' kill; rmdir /sys/fs/cgroup/*/hezo-test/'$A'-k /sys/fs/cgroup/hezo-test/'$A'-k 2>/dev/null"
hezo_make_bundle "$WORK/kill" kill '["sleep", "600"]' '.linux.cgroupsPath = "/hezo-test/'"$A"'-k/kill"' ||
	bail_out "cannot make bundle kill"
shim_err kill-create --hezo-project alpha --root "$ROOT" create -b "$WORK/kill" kill
expect_eq "$RC" 0 "[kill reorder] a box named kill is created" || diag "$ERR"
shim_err killorder --hezo-project alpha --root "$ROOT" kill kill --all "$A"
expect_ne "$RC" 0 "[kill reorder] kill kill --all A fails (A is no signal)"
expect_eq "$(hezo_backend_status "$ROOT" "$A")" running "[kill reorder] alpha's box A still runs"
hezo_shim --hezo-project alpha --root "$ROOT" delete --force kill </dev/null >/dev/null 2>&1
hezo_bundle_cleanup "$ROOT" kill

# --- roots the backend would read otherwise than the shim (red team pass 9, H2, H3, H4) --------
shim_err emptyroot --hezo-project alpha --root "" exec "$A" true
refused "--root \"\"" "--root \"\": the backend would take the working directory; name the directory\$"
shim_err procroot --hezo-project alpha --root "/proc/self/root$ROOT" exec "$A" true
refused "--root /proc/self/root..." "--root /proc/self/root$ROOT: a path through /proc is not a state directory"
mkdir -m 0777 "$WORK/open" && chmod 0777 "$WORK/open" || bail_out "cannot make $WORK/open"
shim_err openroot --hezo-project alpha --root "$WORK/open/r" exec "$A" true
refused "--root in a directory others may write" "--root $WORK/open/r: $WORK/open is writable by others, so another user could point the root elsewhere\$"
# A root inside a directory boxes may be handed (red team pass 9, H5: a box rewrote runc's
# state.json there, and the next exec was host root).
tap_cleanup "hezo_bundle_cleanup '$SHARE/r' '$A-s'"
hezo_make_bundle "$WORK/s" "$A-s" '["true"]' || bail_out "cannot make bundle s"
shim_err shareroot --hezo-project alpha --root "$SHARE/r" create -b "$WORK/s" "$A-s"
refused "--root in a bind source" "--root $SHARE/r is at or below $SHARE, which boxes may be handed: a box could rewrite the backend's state there\$"
expect_eq "$(ls -A "$SHARE")" "" "[--root in a bind source] nothing was made there"
# Below an engine root a directory may be one container's files (ROOT/ID/mounts/shm, handed to
# that box as /dev/shm; red team pass 10, H2), but for containerd's runtime roots ROOT/runc/NS.
# On code without the rule these would be made: they go again, and so does the directory.
tap_cleanup "hezo_bundle_cleanup '/run/containerd/$A-x/mounts/shm' '$A-s'; rm -rf '/run/containerd/$A-x'"
# runc makes its --root on any verb, the cleanup's delete too: what was not there goes after it.
for d in /run/containerd/runc /run/containerd/runc/mounts; do
	[ -e "$d" ] || tap_cleanup "rmdir '$d' 2>/dev/null"
done
tap_cleanup "hezo_bundle_cleanup /run/containerd/runc/mounts '$A-s'"
shim_err engroot --hezo-project alpha --root "/run/containerd/$A-x/mounts/shm" create -b "$WORK/s" "$A-s"
refused "--root below an engine root" "--root /run/containerd/$A-x/mounts/shm is at or below /run/containerd, which boxes may be handed: a box could rewrite the backend's state there\$"
shim_err engmounts --hezo-project alpha --root /run/containerd/runc/mounts create -b "$WORK/s" "$A-s"
refused "--root containerd's runc/mounts" "--root /run/containerd/runc/mounts is at or below /run/containerd, which boxes may be handed"
# A --root above a directory boxes may be handed: runc keeps the container in ROOT/ID, here
# that very directory (red team pass 12, H2).
tap_cleanup "hezo_bundle_cleanup '$(dirname "$LATER")' '$(basename "$LATER")'; rm -rf '$LATER'"
hezo_make_bundle "$WORK/later-b" "$(basename "$LATER")" '["true"]' || bail_out "cannot make bundle later-b"
shim_err laterroot --root "$(dirname "$LATER")" create -b "$WORK/later-b" "$(basename "$LATER")"
refused "--root above a bind source" "--root $(dirname "$LATER") is above $LATER, which boxes may be handed: a box could rewrite the backend's state there\$"
expect_eq "$(ls -A "$(dirname "$LATER")" 2>/dev/null)" "" "[--root above a bind source] nothing was made there"
# What a project's box is handed, judged against every --root and the other way round, whatever
# the project of the other create (red team pass 12, H1, H3): the records say who holds what.
share_mount()
{
	printf '.mounts += [{"destination": "/share", "type": "bind", "source": "%s", "options": ["rbind", "rw"]}]' "$1"
}
# project_box NAME PROJECT FILTER: create a sleeping box of PROJECT under $ROOT (ID in $ID).
project_box()
{
	new_id "$1"
	hezo_make_bundle "$WORK/$1" "$ID" '["sleep", "600"]' "$3" || bail_out "cannot make bundle $1"
	shim_err "$1-create" --hezo-project "$2" --root "$ROOT" create -b "$WORK/$1" "$ID"
}
project_box gbox gamma "$(share_mount "$GSHARE")"
G=$ID
expect_eq "$RC" 0 "[gamma share] gamma's box with its own share is created" || diag "$ERR"
# root_refused LABEL ROOT NAME REGEX: container $A-NAME (bundle $WORK/NAME) under ROOT is refused.
root_refused()
{
	tap_cleanup "hezo_bundle_cleanup '$2' '$A-$3'"
	hezo_make_bundle "$WORK/$3" "$A-$3" '["true"]' || bail_out "cannot make bundle $3"
	shim_err "$3-create" --root "$2" create -b "$WORK/$3" "$A-$3"
	refused "$1" "$4"
}
# A share of any project's table, held or not: a box may keep a descriptor of what it was handed
# after its own end (passed to another box over a socket in a share both hold), where no record
# says it any more (red team pass 12, part Q1).
root_refused "--root in another project's share" "$GSHARE/vroot" v "--root $GSHARE/vroot is at or below $GSHARE, which boxes may be handed: a box could rewrite the backend's state there\$"
expect_eq "$(ls -A "$GSHARE")" "" "[--root in another project's share] nothing was made there"
root_refused "--root in a share no box holds" "$GSHARE2/vroot" v2 "--root $GSHARE2/vroot is at or below $GSHARE2, which boxes may be handed: a box could rewrite the backend's state there\$"
# A project file that no longer layers (here: its seccomp profile is gone) still names the shares
# its boxes may hold.
ESHARE=$WORK/eshare
mkdir -p "$ESHARE" && jq -n --arg a "$ESHARE" '{"mounts": {"allowedSources": [$a]}, "seccomp": "/nonexistent/hezo-profile.json"}' \
	>"$PROJ/epsilon.json" || bail_out "cannot write the epsilon project"
root_refused "--root in the share of a project that does not layer" "$ESHARE/vroot" v4 "--root $ESHARE/vroot is at or below $ESHARE, which boxes may be handed: a box could rewrite the backend's state there\$"
# The other way round: a box handed a directory that holds a recorded container's state.
new_id v
V=$ID
# (its config.json comes after the --root: a --root inside a bundle is refused outright)
hezo_make_bundle "$WORK/dbox2" "$V-d" '["sleep", "600"]' && mv "$WORK/dbox2/config.json" "$WORK/dbox2.json" ||
	bail_out "cannot make bundle dbox2"
tap_cleanup "hezo_bundle_cleanup '$ROOT' '$V-d'; hezo_bundle_cleanup '$WORK/dbox2/rootfs/vroot' '$V'"
hezo_make_bundle "$WORK/v" "$V" '["true"]' || bail_out "cannot make bundle v"
shim_err v-create --root "$WORK/dbox2/rootfs/vroot" create -b "$WORK/v" "$V"
expect_eq "$RC" 0 "[box after the --root] a --root in a rootfs no box holds yet is taken" || diag "$ERR"
mv "$WORK/dbox2.json" "$WORK/dbox2/config.json" || bail_out "cannot put back dbox2's config.json"
shim_err dbox2-create --hezo-project delta --root "$ROOT" create -b "$WORK/dbox2" "$V-d"
refused "box after the --root" "root.path $WORK/dbox2/rootfs overlaps $WORK/dbox2/rootfs/vroot, the backend's state directory of container $V: the box could rewrite that container's state\$"
project_box dbox delta .
D=$ID
expect_eq "$RC" 0 "[writable rootfs] delta's box with a writable root filesystem is created" || diag "$ERR"
# Inside a bundle (a directory with a config.json), whatever holds it: a box may keep a
# descriptor of its root filesystem after its end, where no record says it (red team pass 12,
# part R1).
root_refused "--root in a writable rootfs" "$WORK/dbox/rootfs/var/r" w "--root $WORK/dbox/rootfs/var/r is inside the bundle $WORK/dbox \\(it has a config.json\\): a box's root filesystem is there, and the box could rewrite the backend's state\$"
expect_eq "$(find "$WORK/dbox/rootfs/var" -mindepth 1 -maxdepth 1 -name r 2>/dev/null | wc -l)" 0 "[--root in a writable rootfs] nothing was made there"
# The box holds the directory, not its name: moved out of its bundle after the create, it is
# still the box's (red team pass 12, part O, H1).
mv "$WORK/dbox/rootfs" "$WORK/dbox-rootfs-moved" || bail_out "cannot move the rootfs"
root_refused "--root in a moved writable rootfs" "$WORK/dbox-rootfs-moved/var/r" w2 "--root $WORK/dbox-rootfs-moved/var/r overlaps $WORK/dbox/rootfs, which container $D's box is handed: a box could rewrite the backend's state there\$"

# Another name for a directory a box may hold: a host bind mount of a subdirectory of a share or
# of a writable root, or the upper directory of a writable overlay root. Neither the path text
# nor the identity of any directory on the way names it (red team pass 12, part P, P2); the
# mount table does.
mkdir -p "$GSHARE2/sub" "$WORK/alias" "$WORK/dbox3-var" "$WORK/alias3" || bail_out "cannot make the alias dirs"
tap_cleanup "umount -l '$WORK/alias' '$WORK/alias3'"
mount --bind "$GSHARE2/sub" "$WORK/alias" || bail_out "cannot bind the share's subdirectory"
root_refused "--root through a bind alias of a share" "$WORK/alias/r" al "--root $WORK/alias/r \\(also named $GSHARE2/sub/r\\) is at or below $GSHARE2, which boxes may be handed: a box could rewrite the backend's state there\$"
expect_eq "$(ls -A "$GSHARE2/sub")" "" "[--root through a bind alias of a share] nothing was made there"
new_id v3
V3=$ID
hezo_make_bundle "$WORK/dbox3" "$V3-d" '["sleep", "600"]' && mv "$WORK/dbox3/config.json" "$WORK/dbox3.json" ||
	bail_out "cannot make bundle dbox3"
tap_cleanup "hezo_bundle_cleanup '$ROOT' '$V3-d'; hezo_bundle_cleanup '$WORK/alias3/vroot' '$V3'"
mount --bind "$WORK/dbox3/rootfs/var" "$WORK/alias3" || bail_out "cannot bind the rootfs's /var"
hezo_make_bundle "$WORK/v3" "$V3" '["true"]' || bail_out "cannot make bundle v3"
shim_err v3-create --root "$WORK/alias3/vroot" create -b "$WORK/v3" "$V3"
expect_eq "$RC" 0 "[box after an alias --root] a --root in an alias of a rootfs no box holds is taken" || diag "$ERR"
mv "$WORK/dbox3.json" "$WORK/dbox3/config.json" || bail_out "cannot put back dbox3's config.json"
shim_err dbox3-create --hezo-project delta --root "$ROOT" create -b "$WORK/dbox3" "$V3-d"
refused "box after an alias --root" "root.path $WORK/dbox3/rootfs overlaps $WORK/alias3/vroot, the backend's state directory of container $V3: the box could rewrite that container's state\$"
# delta's writable root, an overlay (as the engines make them) whose upper is outside every
# engine root: what the box writes at / lands there.
# (unmounted after the container's own cleanup, which new_id registers next)
tap_cleanup "umount -l '$WORK/obox/rootfs'"
new_id obox
O=$ID
hezo_make_bundle "$WORK/obox" "$O" '["sleep", "600"]' || bail_out "cannot make bundle obox"
mv "$WORK/obox/rootfs" "$WORK/obox-lower" && mkdir -p "$WORK/obox/rootfs" "$WORK/obox-upper" "$WORK/obox-work" ||
	bail_out "cannot lay out the overlay"
mount -t overlay overlay -o "lowerdir=$WORK/obox-lower,upperdir=$WORK/obox-upper,workdir=$WORK/obox-work" \
	"$WORK/obox/rootfs" || bail_out "cannot mount the overlay"
shim_err obox-create --hezo-project delta --root "$ROOT" create -b "$WORK/obox" "$O"
expect_eq "$RC" 0 "[writable overlay root] delta's box on an overlay root is created" || diag "$ERR"
root_refused "--root in an overlay's upper dir" "$WORK/obox-upper/r" ou "--root $WORK/obox-upper/r overlaps $WORK/obox/rootfs, which container $O's box is handed: a box could rewrite the backend's state there\$"
expect_eq "$(find "$WORK/obox-upper" -mindepth 1 -maxdepth 1 -name r | wc -l)" 0 "[--root in an overlay's upper dir] nothing was made there"
mkdir -p "$WORK/alias-o" || bail_out "cannot make alias-o"
tap_cleanup "umount -l '$WORK/alias-o'"
mount --bind "$WORK/obox/rootfs/var" "$WORK/alias-o" || bail_out "cannot bind the overlay's /var"
root_refused "--root through a bind alias of a writable root" "$WORK/alias-o/r" ao "--root $WORK/alias-o/r \\(also named $WORK/obox/rootfs/var/r\\) is inside the bundle $WORK/obox \\(it has a config.json\\)"

# A record larger than every scan reads would count for nothing (red team pass 12, part O, H2):
# leading zeros make org.hezo.memory, which the record keeps, as long as one likes.
new_id pad
hezo_make_bundle "$WORK/pad" "$ID" '["true"]' \
	'.annotations["org.hezo.memory"] = ("0" * 1100000 + "64m")' || bail_out "cannot make bundle pad"
shim_err pad-create --root "$ROOT" create -b "$WORK/pad" "$ID"
refused "record too large" "container record: [0-9]+ bytes, more than the 1048576 the shim reads back"
expect_eq "$(hezo_backend_status "$ROOT" "$ID")" absent "[record too large] no container"

# config.json is read from the directory --bundle named when it was opened, and from a regular
# file: a FIFO held the shim while the caller turned a --bundle link to another bundle, whose
# rootfs the box then got (red team pass 12, H4).
new_id flip
hezo_make_bundle "$WORK/fv" "$ID" '["true"]' && touch "$WORK/fv/rootfs/victim-marker" &&
	hezo_make_bundle "$WORK/fa" "$ID" '["true"]' && cp "$WORK/fa/config.json" "$WORK/fa.json" &&
	rm -f "$WORK/fa/config.json" && mkfifo "$WORK/fa/config.json" && ln -s "$WORK/fa" "$WORK/flink" ||
	bail_out "cannot make the flip bundles"
hezo_shim --root "$ROOT" create -b "$WORK/flink" "$ID" </dev/null >/dev/null 2> >(cat >"$WORK/flip.err") &
flip_pid=$!
timeout 5 bash -c 'exec 3>"$1" && cat "$2" >&3 && ln -sfn "$3" "$4"' _ "$WORK/fa/config.json" \
	"$WORK/fa.json" "$WORK/fv" "$WORK/flink" 2>/dev/null
wait "$flip_pid" && RC=0 || RC=$?
sleep 0.2
ERR=$(cat "$WORK/flip.err")
refused "bundle flip" "bundle $WORK/flink: config.json: config.json is not a regular file\$"
expect_eq "$(hezo_backend_ids "$ROOT" | grep -cxF "$ID")" 0 "[bundle flip] no container was made"

# A relative --root and a $PWD that names another directory: runc (Go's os.Getwd) would start from
# $PWD, the shim from the working directory. beta has a container in a look-alike root; the backend
# must be handed the root the record was found under. Its ID is not alpha's: a create of an ID
# recorded under another --root is refused (one ID, one box: proxyd and the agent know a box by its
# ID alone; red team keys, F1), which [pwd same ID] shows first.
mkdir -p "$WORK/bdir/sub" || bail_out "cannot make $WORK/bdir"
LNK=$(dirname "$ROOT")/lnk-records-$(hezo_rand)
ln -s "$WORK/bdir/sub" "$LNK" && tap_cleanup "rm -f '$LNK'" || bail_out "cannot make $LNK"
BROOT=$WORK/bdir/$(basename "$ROOT")
BID=${A}b
# The backend removes the container's cgroup, not the parent it made for it: that goes after.
tap_cleanup "rmdir /sys/fs/cgroup/*/hezo-test/'$BID-b' /sys/fs/cgroup/hezo-test/'$BID-b' 2>/dev/null"
tap_cleanup "hezo_bundle_cleanup '$BROOT' '$BID'; hezo_bundle_cleanup '$BROOT' '$A'"
hezo_make_bundle "$WORK/bsame" "$A" '["true"]' '.linux.cgroupsPath = "/hezo-test/'"$A"'-s/'"$A"'"' ||
	bail_out "cannot make bundle bsame"
shim_err bsame-create --hezo-project beta --root "$BROOT" create -b "$WORK/bsame" "$A"
refused "pwd same ID" "container $A: the ID is a container of hezo-shim's under --root [^ ]+, still recorded \\(delete it first\\)"
hezo_make_bundle "$WORK/b" "$BID" '["sh", "-c", "echo beta >/tmp/who; exec sleep 600"]' \
	'.linux.cgroupsPath = "/hezo-test/'"$BID"'-b/'"$BID"'"' || bail_out "cannot make bundle b"
shim_err b-create --hezo-project beta --root "$BROOT" create -b "$WORK/b" "$BID"
expect_eq "$RC" 0 "[pwd] beta's look-alike container is created" || diag "$ERR"
hezo_shim --root "$BROOT" start "$BID" >/dev/null 2>&1 </dev/null
hezo_wait_status "$BROOT" "$BID" running 20 || bail_out "beta's look-alike container does not run"
out=$(cd "$WORK/bdir/sub" && PWD=$LNK hezo_shim --hezo-project beta --root "../$(basename "$ROOT")" \
	exec "$BID" cat /tmp/who 2>&1 </dev/null)
expect_eq "$out" beta "[pwd] beta's relative --root with a lying \$PWD reaches beta's own container, not alpha's"

# --- another project's runtime: no verb on alpha's container -----------------------------------
shim_err beta-inspect --hezo-project beta --root "$ROOT" inspect "$A"
refused "beta inspect" "container $A is project alpha's; this runtime's project is beta\$"
hezo_shim --hezo-project beta ps --json >"$WORK/beta-ps.json" 2>/dev/null </dev/null
expect_eq "$(jq --arg a "$A" '[.. | objects | select(.id? == $a and .project? != "beta")] | length' "$WORK/beta-ps.json" 2>/dev/null)" 0 \
	"[beta ps] beta's runtime lists no box of alpha's"
hezo_shim --hezo-project alpha ps --json >"$WORK/alpha-ps.json" 2>/dev/null </dev/null
expect_eq "$(jq --arg a "$A" '[.. | objects | select(.id? == $a and .project? == "alpha")] | length' "$WORK/alpha-ps.json" 2>/dev/null)" 1 \
	"[alpha ps] alpha's runtime lists it"
shim_err beta-exec --hezo-project beta --root "$ROOT" exec "$A" true
refused "beta exec" "container $A is project alpha's; this runtime's project is beta\$"
shim_err beta-update --hezo-project beta --root "$ROOT" update --memory 1g "$A"
refused "beta update" "container $A is project alpha's; this runtime's project is beta\$"
shim_err beta-kill --hezo-project beta --root "$ROOT" kill "$A" KILL
refused "beta kill" "container $A is project alpha's; this runtime's project is beta\$"
expect_eq "$(hezo_backend_status "$ROOT" "$A")" running "[beta kill] alpha's container still runs"
expect_eq "$(mem_limit "$A")" $((64 * MIB)) "[beta update] alpha's memory limit unchanged"
shim_err alpha-exec --hezo-project alpha --root "$ROOT" exec "$A" true
expect_eq "$RC" 0 "[alpha exec] alpha's own runtime still execs into it" || diag "$ERR"
# list is the shim's: the backend's own would show every container in its state directory
# (red team pass 12, part N, L2).
out=$(hezo_shim --hezo-project beta --root "$ROOT" list -q 2>&1 </dev/null)
expect_eq "$(grep -cx -- "$A" <<<"$out")" 0 "[beta list] beta's runtime does not list alpha's container" || diag "$out"
out=$(hezo_shim --hezo-project alpha --root "$ROOT" list -q 2>&1 </dev/null)
expect_eq "$out" "$A" "[alpha list] alpha's runtime lists its one container under this --root"
out=$(hezo_shim --hezo-project alpha --root "$ROOT" list --format json 2>&1 </dev/null)
expect_eq "$(jq -r '[.[] | .id + " " + .status] | join(",")' <<<"$out" 2>&1)" "$A running" \
	"[alpha list json] its ID and status, as the backend gives them" || diag "$out"
out=$(hezo_shim --hezo-project alpha --root "$ROOT" list 2>&1 </dev/null)
expect_match "$out" "^ID +PID +STATUS +BUNDLE +CREATED +OWNER
$A +[0-9]+ +running +/[^ ]+ +[0-9T:.Z+-]+ +root\$" "[alpha list table] runc's table, one row" || diag "$out"
out=$(hezo_shim --root "$ROOT" list -q 2>&1 </dev/null)
expect_eq "$(grep -cx -e "$A" -e "$G" <<<"$out")" 2 "[list, no project] every project's containers under this --root" || diag "$out"
shim_err list-bad --root "$ROOT" list --format yaml
refused "list format" "list: invalid format option \"yaml\"\$"

# --- a create under a live container's ID takes nothing of it -----------------------------------
# alpha's record (beta's look-alike container of the same ID has one under its own root).
REC=""
for f in $(hezo_state_records "$A" | grep '\.json$'); do
	[ "$(jq -r .root "$f" 2>/dev/null)" = "$ROOT" ] && REC=$f
done
[ -f "$REC" ] || bail_out "no record of $A under $ROOT"
cp "$REC" "$WORK/rec.before"
hezo_make_bundle "$WORK/a2" "$A" '["true"]' '.linux.cgroupsPath = "/hezo-test/'"$A"'-o/'"$A"'"' ||
	bail_out "cannot make bundle a2"
shim_err a2 --hezo-project beta --root "$ROOT" create -b "$WORK/a2" "$A"
refused "same ID" "container $A already exists \\($HEZO_TEST_BACKEND has it\\)\$"
expect_eq "$(jq -S . "$REC")" "$(jq -S . "$WORK/rec.before")" "[same ID] alpha's record is unchanged"
expect_eq "$(hezo_backend_status "$ROOT" "$A")" running "[same ID] alpha's container still runs"
shim_err a-update2 --root "$ROOT" update --memory 1g "$A"
expect_eq "$(mem_limit "$A")" $((64 * MIB)) "[same ID] a later update still keeps alpha's 64 MiB"

# --- a record whose creator still runs: its ID is being created -------------------------------
new_id creating
C=$ID
sleep 600 &
SLEEPER=$!
tap_cleanup "kill $SLEEPER 2>/dev/null"
START=$(awk '{ print $22 }' "/proc/$SLEEPER/stat")
# The record's file name: ID.json beside alpha's (shim/record.c).
planted=$(dirname "$REC")/$C.json
[ "$(basename "$REC")" = "$A.json" ] || bail_out "record names are not as planned: $REC"
jq --arg id "$C" --argjson pid "$SLEEPER" --argjson start "$START" \
	'.id = $id | .creator = {pid: $pid, start: $start}' "$REC" >"$planted" ||
	bail_out "cannot plant a record for $C"
hezo_make_bundle "$WORK/c" "$C" '["true"]' || bail_out "cannot make bundle c"
if [ "$(hezo_state_records "$C" | head -n 1)" = "$planted" ]; then
	shim_err c --root "$ROOT" create -b "$WORK/c" "$C"
	refused "being created" "container $C is being created by another hezo-shim\$"
	kill "$SLEEPER" && wait "$SLEEPER" 2>/dev/null
	shim_err c2 --root "$ROOT" create -b "$WORK/c" "$C"
	expect_eq "$RC" 0 "[being created] once its creator is gone the stale record is replaced" ||
		diag "$ERR"
else
	bail_out "the planted record is not where the shim looks for $C"
fi
hezo_bundle_cleanup "$ROOT" "$C"

# --- the backend's default root named or not: one set of records (red team pass 9, M2) --------
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	new_id dflt
	D=$ID
	tap_cleanup "hezo_bundle_cleanup /run/runc '$D'"
	hezo_make_bundle "$WORK/d" "$D" '["sleep", "600"]' || bail_out "cannot make bundle d"
	shim_err d-create --hezo-project alpha create -b "$WORK/d" "$D"
	expect_eq "$RC" 0 "[default root] create with no --root exits 0" || diag "$ERR"
	shim_err d-state --hezo-project alpha --root /run/runc state "$D"
	expect_eq "$RC" 0 "[default root] --root /run/runc finds it" || diag "$ERR"
	# Its record is under the key "default": every scan of the records reads it (red team
	# pass 12, part Q1, H2: nesting, admission, the --root checks, ps and list skipped it).
	new_id dnest
	hezo_make_bundle "$WORK/dnest" "$ID" '["true"]' '.linux.cgroupsPath = "/hezo-test/'"$D"'/'"$ID"'"' ||
		bail_out "cannot make bundle dnest"
	shim_err dnest-create --hezo-project alpha --root "$ROOT" create -b "$WORK/dnest" "$ID"
	refused "default root, nesting" "config\\.json: linux.cgroupsPath \"/hezo-test/$D/$ID\": it is below container $D's cgroup /hezo-test/$D"
	out=$(hezo_shim --hezo-project alpha list -q 2>&1 </dev/null)
	expect_eq "$out" "$D" "[default root, list] list with no --root shows it" || diag "$out"
	hezo_shim --hezo-project alpha ps --json >"$WORK/dflt-ps.json" 2>/dev/null </dev/null
	expect_eq "$(jq --arg d "$D" '[.boxes[] | select(.id == $d)] | length' "$WORK/dflt-ps.json" 2>&1)" 1 \
		"[default root, ps] ps lists it"
	hezo_make_bundle "$WORK/d2" "$D" '["true"]' '.linux.cgroupsPath = "/hezo-test/'"$D"'-o/'"$D"'"' ||
		bail_out "cannot make bundle d2"
	shim_err d-again --hezo-project alpha --root /var/run/runc create -b "$WORK/d2" "$D"
	refused "default root" "container $D already exists \(runc has it\)\$"
	hezo_bundle_cleanup /run/runc "$D"
	# The default key holds crun's root too: a live container of the ID there is asked for
	# under its own root, not the new create's (red team pass 12, L1).
	new_id dflt2
	[ -e /run/crun ] || tap_cleanup "rmdir /run/crun 2>/dev/null"
	tap_cleanup "hezo_bundle_cleanup /run/crun '$ID'; hezo_bundle_cleanup /run/runc '$ID'; rmdir /sys/fs/cgroup/*/hezo-test/'$ID'-o /sys/fs/cgroup/hezo-test/'$ID'-o 2>/dev/null"
	hezo_make_bundle "$WORK/d3" "$ID" '["sleep", "600"]' || bail_out "cannot make bundle d3"
	shim_err d3-create --hezo-project alpha --root /run/crun create -b "$WORK/d3" "$ID"
	expect_eq "$RC" 0 "[default key, crun's root] create under --root /run/crun exits 0" || diag "$ERR"
	hezo_make_bundle "$WORK/d4" "$ID" '["true"]' '.linux.cgroupsPath = "/hezo-test/'"$ID"'-o/'"$ID"'"' ||
		bail_out "cannot make bundle d4"
	shim_err d4-create --hezo-project alpha create -b "$WORK/d4" "$ID"
	refused "default key, crun's root" "container $ID already exists under backend runc"
	shim_err d3-state --hezo-project alpha --root /run/crun state "$ID"
	expect_eq "$RC" 0 "[default key, crun's root] the first container is still found" || diag "$ERR"
fi

# --- nesting checked again once the admission wait is over (red team pass 10, H1) ----------------
# Two creates queued together both passed the nesting check before either box existed. With both
# slots held by fillers, the outer box and then the inner one queue; the fillers go, the outer is
# made, and the inner must be refused when its turn comes.
NSTATE=$WORK/state-nest
jq '.admission = {maxActive: 2, wait: 30}' "$HEZO_TEST_POLICY" >"$WORK/policy-adm.json" ||
	bail_out "cannot write the admission policy"
nest() { HEZO_TEST_STATE=$NSTATE HEZO_TEST_POLICY=$WORK/policy-adm.json hezo_shim "$@"; }
hezo_fill_slots "$ROOT" "$NSTATE" "$WORK" hezo-it-records nest || bail_out "cannot create the filler boxes"
new_id outer
O=$ID
tap_cleanup "HEZO_TEST_STATE='$NSTATE' hezo_bundle_cleanup '$ROOT' '$O'"
hezo_make_bundle "$WORK/o" "$O" '["sleep", "600"]' || bail_out "cannot make bundle o"
new_id inner
I=$ID
tap_cleanup "HEZO_TEST_STATE='$NSTATE' hezo_bundle_cleanup '$ROOT' '$I'"
hezo_make_bundle "$WORK/i" "$I" '["sleep", "600"]' ".linux.cgroupsPath = \"/hezo-test/$O/$I\"" ||
	bail_out "cannot make bundle i"
nest --root "$ROOT" create -b "$WORK/o" "$O" </dev/null >/dev/null 2>/dev/null &
OPID=$!
sleep 1
nest --root "$ROOT" create -b "$WORK/i" "$I" </dev/null >/dev/null 2> >(cat >"$WORK/inner.err") &
IPID=$!
sleep 1
free_fillers() { for f in "${FILLERS[@]}"; do hezo_backend --root "$ROOT" delete --force "$f" >/dev/null 2>&1; done; }
# queued_refused LABEL PID ERRFILE REGEX ROOT ID: the queued create PID was refused, saying so.
queued_refused()
{
	local rc
	wait "$2" && rc=0 || rc=$?
	sleep 0.5
	expect_ne "$rc" 0 "[$1] the queued create is refused"
	expect_match "$(cat "$3")" "$4" "[$1] ... saying why"
	expect_eq "$(hezo_backend_status "$5" "$6")" absent "[$1] no container"
}
free_fillers
wait "$OPID" && rc=0 || rc=$?
expect_eq "$rc" 0 "[nest after the wait] the outer box is made once the fillers go"
queued_refused "nest after the wait" "$IPID" "$WORK/inner.err" "it is below container $O's cgroup" "$ROOT" "$I"

# --- the --root made by another user while the create waited (red team pass 12, M2) ----------
# settle found no directory there (below sticky /tmp) and took it; the other user's directory,
# made during the wait, would hold the container's state.
HEZO_TEST_STATE=$NSTATE hezo_bundle_cleanup "$ROOT" "$O" # the outer box held a slot
hezo_fill_slots "$ROOT" "$NSTATE" "$WORK" hezo-it-records2 nest || bail_out "cannot create the filler boxes"
new_id lpe
L=$ID
LROOT=/tmp/hezo-it-lpe-$(hezo_rand)
tap_cleanup "HEZO_TEST_STATE='$NSTATE' hezo_bundle_cleanup '$LROOT' '$L'; rm -rf '$LROOT'"
hezo_make_bundle "$WORK/l" "$L" '["sleep", "600"]' || bail_out "cannot make bundle l"
nest --root "$LROOT" create -b "$WORK/l" "$L" </dev/null >/dev/null 2> >(cat >"$WORK/lpe.err") &
LPID=$!
sleep 1
setpriv --reuid=65534 --regid=65534 --clear-groups mkdir -m 0755 "$LROOT" ||
	bail_out "cannot make $LROOT as nobody"
free_fillers
queued_refused "root made while queued" "$LPID" "$WORK/lpe.err" \
	"^hezo-shim: --root $LROOT: $LROOT is owned by another user" "$LROOT" "$L"

# --- two sandboxes claiming one pod, created at once (red team pass 12, M1) ---------------------
# The second to take the records lock must see the first, whose backend may not have written its
# state yet: exactly one of the two is made, at each stagger.
for delay in 0.01 0.02 0.04; do
	uid=$(printf '%08x-0000-4000-8000-%012x' "$RANDOM$RANDOM" "$RANDOM")
	ids=()
	for n in 1 2; do
		new_id "sb$n"
		ids+=("$ID")
		hezo_make_bundle "$WORK/sb$n" "$ID" '["sleep", "600"]' \
			".annotations = {\"io.kubernetes.cri.container-type\": \"sandbox\", \"io.kubernetes.cri.sandbox-uid\": \"$uid\", \"io.kubernetes.cri.sandbox-id\": \"$ID\"}" ||
			bail_out "cannot make bundle sb$n"
	done
	hezo_shim --root "$ROOT" create -b "$WORK/sb1" "${ids[0]}" </dev/null >/dev/null 2>&1 &
	p1=$!
	sleep "$delay"
	hezo_shim --root "$ROOT" create -b "$WORK/sb2" "${ids[1]}" </dev/null >/dev/null 2>&1 &
	p2=$!
	wait "$p1"
	wait "$p2"
	made=$(hezo_backend_ids "$ROOT" | grep -cxF -e "${ids[0]}" -e "${ids[1]}")
	expect_eq "$made" 1 "[one pod, two sandboxes at once, ${delay}s apart] one of them is made"
	for i in "${ids[@]}"; do hezo_bundle_cleanup "$ROOT" "$i"; done
done

# --- runsc takes a unique prefix for an ID: "X" is not "X0" (the ID check must not think so) ---
new_id pfx
X=$ID
tap_cleanup "hezo_bundle_cleanup '$ROOT' '${X}0'"
hezo_make_bundle "$WORK/x0" "${X}0" '["sleep", "600"]' || bail_out "cannot make bundle x0"
hezo_make_bundle "$WORK/x" "$X" '["sleep", "600"]' || bail_out "cannot make bundle x"
shim_err x0 --hezo-project alpha --root "$ROOT" create -b "$WORK/x0" "${X}0"
expect_eq "$RC" 0 "[id prefix] ${X}0 is created" || diag "$ERR"
shim_err x --hezo-project alpha --root "$ROOT" create -b "$WORK/x" "$X"
expect_eq "$RC" 0 "[id prefix] then $X, a prefix of it, is created too" || diag "$ERR"
hezo_bundle_cleanup "$ROOT" "$X"
hezo_bundle_cleanup "$ROOT" "${X}0"

# --- a backend's container the shim never made: no verb reaches it ---------------------------
P=hezo-it-plain-$(hezo_rand)
tap_cleanup "runc --root '$PLAIN' delete --force '$P' >/dev/null 2>&1; rm -rf '$PLAIN'"
hezo_make_bundle "$WORK/p" "$P" '["sleep", "600"]' \
	'.process.capabilities.bounding += ["CAP_SYS_ADMIN"] | .process.capabilities.effective += ["CAP_SYS_ADMIN"] | .process.capabilities.permitted += ["CAP_SYS_ADMIN"]' ||
	bail_out "cannot make bundle p"
runc --root "$PLAIN" run -d --bundle "$WORK/p" "$P" </dev/null >/dev/null 2>"$WORK/p.err" ||
	bail_out "plain runc run failed: $(cat "$WORK/p.err")"
for verb in "exec $P true" "update --memory 1g $P" "kill $P KILL" "pause $P" "state $P"; do
	# shellcheck disable=SC2086
	shim_err plain --root "$PLAIN" $verb
	refused "unrecorded ${verb%% *}" "container \"?$P\"? does not exist"
done
shim_err plain-delete --root "$PLAIN" delete --force "$P"
expect_eq "$RC" 0 "[unrecorded delete --force] answers as runc does for an unknown container"
expect_eq "$(runc --root "$PLAIN" state "$P" 2>/dev/null | jq -r .status)" running \
	"[unrecorded] the plain container was not touched"
expect_eq "$(hezo_shim --root "$PLAIN" list -q 2>&1 </dev/null)" "" "[unrecorded list] the plain container is not listed"
expect_eq "$(hezo_shim --root "$PLAIN" list --format json 2>&1 </dev/null)" null "[unrecorded list json] none, as runc says it"


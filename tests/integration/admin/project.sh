#!/bin/bash
# `hezo-shim project create|list|show|rm` against the real engines' files and the running dockerd,
# on a machine where nothing else was configured: /etc/hezo holds only a fresh policy (the test's
# own, snapshot and put back at exit with the engines' files), no wrapper and no environment
# reaches the shim, and `docker run --runtime=hezo-NAME` must put the container in project NAME's
# box. rm must give back every engine's file byte for byte, and refuse while a box lives.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=$here/../../lib
export HEZO_SOURCE_DIR=${HEZO_SOURCE_DIR:-${HEZO_SOURCE_ROOT:-$(cd "$here/../../.." && pwd)}}
export HEZO_BUILD_DIR=${HEZO_BUILD_DIR:-${HEZO_BUILD_ROOT:-$HEZO_SOURCE_DIR/build}}
# shellcheck source=tests/lib/common.sh
. "$lib/common.sh"
# shellcheck source=tests/lib/image.sh
. "$lib/image.sh"
# shellcheck source=tests/lib/docker.sh
. "$lib/docker.sh"
# shellcheck source=tests/lib/devimage.sh
. "$lib/devimage.sh"

hezo_require_root
hezo_require_tools jq cmp timeout dockerd "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_shim
hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
hezo_image_docker || bail_out "cannot import $HEZO_TEST_IMAGE"

SHIM=$HEZO_SHIM_BIN
# The project's runtime hezo-NAME is a suite runtime name (hezo-test-...), so a run killed
# midway leaves nothing the next restore would keep.
P=test-pj$$
RT=hezo-$P
DROPINS=/etc/containers/containers.conf.d
T=$(mktemp -d /tmp/hezo-project.XXXXXX) || bail_out "mktemp failed"
tap_cleanup "rm -rf '$T'"
# The links containerd and podman run (hezo-shim@NAME) go to the test's own directory.
LINKS=$T/links

# What this test assumes of the machine, said and set: the three engines' files, /etc/hezo and
# podman's drop-in directory are snapshot now and put back at exit, whatever happens.
export HEZO_ENGINE_EXTRA="/etc/hezo $DROPINS"
hezo_engine_snapshot || bail_out "cannot take a snapshot of the engines' files"
unset HEZO_POLICY HEZO_STATE_DIR HEZO_HOOK_PATH
# The shim's default state directory: when the test made it, it goes again once it holds no
# record (what is left is its lock file and empty directories).
[ -e /run/hezo-shim ] ||
	tap_cleanup "[ -z \"\$(find /run/hezo-shim -type f ! -name .records.lock 2>/dev/null)\" ] &&
		rm -rf /run/hezo-shim"
rm -rf /etc/hezo
mkdir -p /etc/hezo
# A fresh machine's policy, with runc (this machine's runsc has its own suites) and no egress
# hook, so that nothing but the policy file is configured.
jq '.mode = "dev" | .backend = "runc" | .allowBackends = ["runc", "runsc"] |
	.egress = {"mode": "off"} | .cgroupParents += ["/docker"]' \
	"$HEZO_SOURCE_DIR/etc/policy.json" >/etc/hezo/policy.json || bail_out "cannot write the policy"
diag "policy: $(jq -c . /etc/hezo/policy.json | head -c 300)"

# sums: the engines' files and podman's drop-ins as they are now.
sums()
{
	hezo_engine_sums "$HEZO_DAEMON_JSON" "$HEZO_CONTAINERD_CONFIG" "$HEZO_CONTAINERS_CONF"
	if [ -d "$DROPINS" ]; then
		find "$DROPINS" -printf '%p %y %m\n' | sort
	else
		echo "absent $DROPINS"
	fi
}
sums >"$T/before"
cp -a "$HEZO_DAEMON_JSON" "$T/daemon.before" 2>/dev/null || : >"$T/daemon.absent"

create()
{
	"$SHIM" project create "$P" --backend runc --link-dir "$LINKS" "$@"
}
# create_as NAME [options...]: project create NAME, as create does for $P.
create_as()
{
	"$SHIM" project create "$1" --backend runc --link-dir "$LINKS" "${@:2}"
}

out=$(create 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "project create $P exits 0" || diag "$out"
check "the project file is written, and the main policy layers it" \
	"$SHIM" policy show --project "$P"
# shellcheck disable=SC2016 # jq's variables
check "daemon.json registers $RT with --hezo-project $P" \
	jq -e --arg r "$RT" --arg p "$P" --arg s "$SHIM" \
	'.runtimes[$r] == {"path": $s, "runtimeArgs": ["--hezo-project", $p]}' "$HEZO_DAEMON_JSON"
check "containerd's config.toml holds the project's block" \
	grep -qx "# BEGIN hezo-project $RT" "$HEZO_CONTAINERD_CONFIG"
check "podman's drop-in names the link" \
	grep -qF "\"$RT\" = [\"$LINKS/hezo-shim@$P\"]" "$DROPINS/$RT.conf"
check "the link runs the shim" test "$(readlink "$LINKS/hezo-shim@$P")" = "$SHIM"
for ((i = 0; i < 30; i++)); do
	hezo_docker_has_runtime "$RT" "$SHIM" && break
	sleep 1
done
check "dockerd lists runtime $RT after create's SIGHUP" hezo_docker_has_runtime "$RT" "$SHIM"

sums >"$T/created"
out=$(create 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "project create twice exits 0" || diag "$out"
check "create twice changes no file" cmp "$T/created" <(sums)
expect_match "$out" "already" "create twice says the project is there already"
out=$(create --allow example.com 2>&1) && rc=0 || rc=$?
expect_ne "$rc" 0 "create with other settings is refused without --force"
check "a refused create changes no file" cmp "$T/created" <(sums)

check "project list names it with its engines" \
	sh -c "'$SHIM' project list | grep -qx '$P	runtime $RT: docker containerd podman'"

NAME=hezo-it-project-$$
tap_cleanup "'$HEZO_DOCKER' rm -f '$NAME' >/dev/null 2>&1"
out=$(timeout -k 5 120 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$NAME" "$HEZO_TEST_IMAGE" \
	sleep 300 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "docker run --runtime=$RT starts a box" || diag "$out"
ID=$("$HEZO_DOCKER" inspect -f '{{.Id}}' "$NAME" 2>/dev/null)
insp=$("$SHIM" --root /run/docker/runtime-runc/moby inspect "$ID" 2>&1)
expect_eq "$(jq -r '.project // empty' <<<"$insp" 2>/dev/null)" "$P" \
	"hezo-shim inspect: the box is project $P's" || diag "$(head -c 600 <<<"$insp")"
out=$("$HEZO_DOCKER" exec "$NAME" sh -c 'touch /probe 2>&1; echo rc=$?' 2>&1)
expect_match "$out" "rc=1" "the box's root is read-only (the main policy's box)"

# podman reads the drop-in and runs the link, whose name says the project (no arguments).
if command -v podman >/dev/null 2>&1; then
	PIMG=localhost/$HEZO_TEST_IMAGE
	if ! podman image exists "$PIMG" 2>/dev/null; then
		hezo_image_podman "$HEZO_TEST_IMAGE" || bail_out "cannot import $HEZO_TEST_IMAGE into podman"
		tap_cleanup "podman rmi -f '$PIMG' >/dev/null 2>&1"
	fi
	PNAME=hezo-it-project-pm-$$
	tap_cleanup "podman rm -f '$PNAME' >/dev/null 2>&1"
	# podman's own nofile (1048576) is above this machine's hard limit: ask for what it has.
	out=$(timeout -k 5 120 podman --cgroup-manager cgroupfs --runtime "$RT" run -d --network none \
		--ulimit nofile=1024:1024 --ulimit nproc=4096:4096 --name "$PNAME" "$PIMG" sleep 300 \
		2>&1) && rc=0 || rc=$?
	expect_eq "$rc" 0 "podman --runtime $RT run starts a box" || diag "$out"
	pid=$(podman inspect -f '{{.Id}}' "$PNAME" 2>/dev/null)
	insp=$("$SHIM" inspect "$pid" 2>&1)
	expect_eq "$(jq -r '.project // empty' <<<"$insp" 2>/dev/null)" "$P" \
		"podman's box is project $P's (the link hezo-shim@$P)" || diag "$(head -c 600 <<<"$insp")"
	timeout -k 5 60 podman rm -f "$PNAME" >/dev/null 2>&1
else
	skip "podman --runtime $RT run starts a box" "podman is not installed"
	skip "podman's box is project $P's" "podman is not installed"
fi

sums >"$T/live"
out=$("$SHIM" project rm "$P" --link-dir "$LINKS" 2>&1) && rc=0 || rc=$?
expect_ne "$rc" 0 "project rm is refused while a box of the project lives"
expect_match "$out" "$ID" "the refusal names the live box"
check "a refused rm changes no file" cmp "$T/live" <(sums)
check "the refused rm keeps the project file" test -f "/etc/hezo/projects/$P.json"

"$HEZO_DOCKER" rm -f "$NAME" >/dev/null 2>&1
out=$("$SHIM" project rm "$P" --link-dir "$LINKS" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "project rm exits 0 once the box is gone" || diag "$out"
if [ -e "$T/daemon.absent" ]; then
	check "daemon.json is gone again (create made it)" test ! -e "$HEZO_DAEMON_JSON"
else
	check "daemon.json is byte for byte as before create" cmp "$T/daemon.before" "$HEZO_DAEMON_JSON"
fi
check "every engine's file is as before create" cmp "$T/before" <(sums)
check "the project file and the link are gone" \
	test ! -e "/etc/hezo/projects/$P.json" -a ! -L "$LINKS/hezo-shim@$P"
for ((i = 0; i < 30; i++)); do
	hezo_docker_has_runtime "$RT" || break
	sleep 1
done
check_fails "dockerd no longer lists $RT" hezo_docker_has_runtime "$RT"

# The newcomer's path with a workspace: one command makes the project, then a build runs in
# /workspace through its runtime and its results stay on the host (Debian's dev image).
hezo_devimage_docker || bail_out "cannot import $HEZO_DEV_IMAGE"
P2=test-pw$$
RT2=hezo-$P2
WSP=/srv/hezo-pwtest-$$
tap_cleanup "rm -rf '$WSP'; '$HEZO_DOCKER' rm -f 'hezo-it-project-ws-$$' >/dev/null 2>&1"
# A box's root may open its workspace (chmod 755) while it runs: the parent keeps other users out
# (red team ws2, F1). One they can search is refused; a missing one create makes 0700.
mkdir -p "$WSP" && chmod 0755 "$WSP"
out=$("$SHIM" project create "$P2" --backend runc --link-dir "$LINKS" --workspace "$WSP/ws" 2>&1) &&
	rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9][0-9]*:hezo-shim project create: workspace $WSP/ws: other users can search its parent; chmod 0700 $WSP\$" \
	"[parent] project create refuses a workspace parent others can search, in one line" || diag "$out"
check "[parent] ... and writes no project file" test ! -e "/etc/hezo/projects/$P2.json"
rmdir "$WSP"
out=$("$SHIM" project create "$P2" --backend runc --link-dir "$LINKS" --workspace "$WSP/ws" 2>&1) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "project create $P2 --workspace $WSP/ws exits 0" || diag "$out"
expect_eq "$(stat -c %u:%a "$WSP" 2>&1)" 0:700 "[parent] create made the missing parent $WSP root's, 0700"
for ((i = 0; i < 30; i++)); do
	hezo_docker_has_runtime "$RT2" "$SHIM" && break
	sleep 1
done
out=$(timeout -k 5 300 "$HEZO_DOCKER" run --rm --runtime="$RT2" --name "hezo-it-project-ws-$$" \
	-w /workspace "$HEZO_DEV_IMAGE" sh -c 'printf "#include <stdio.h>\nint main(void) { puts(\"built\"); return 0; }\n" >t.c &&
		gcc -o t t.c && ./t && git config --global user.name hezo && echo "home=$HOME"' 2>&1) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "docker run --runtime=$RT2 builds and runs a program in /workspace" || diag "$out"
expect_match "$out" "^built$" "... the program it built runs there" || diag "$out"
check "... and the build is on the host in the workspace after the box ended" test -x "$WSP/ws/t"
expect_match "$out" "^home=/workspace/.home$" "... with HOME in the workspace (git config --global works)"
out=$("$SHIM" project rm "$P2" --link-dir "$LINKS" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "project rm $P2 exits 0" || diag "$out"
check "every engine's file is as before either create" cmp "$T/before" <(sums)


# --- rm removes only what create made (red team, workspace F5) ------------------------------------
# Each file rm would remove, written by someone else under the project's names: rm refuses in one
# line naming it and removes nothing, not even the files that are create's.
P3=test-pr$$
RT3=hezo-$P3
PF3=/etc/hezo/projects/$P3.json
DI3=$DROPINS/$RT3.conf
LN3=$LINKS/hezo-shim@$P3
tap_cleanup "rm -f '$PF3' '$DI3' '$LN3'"
rm3()
{
	"$SHIM" project rm "$P3" --link-dir "$LINKS" 2>&1
}
[ -d "$DROPINS" ] && dropins_made= || dropins_made=1
mkdir -p /etc/hezo/projects "$DROPINS" "$LINKS"
printf '{"backend": "runc", "mounts": {"allowedSources": ["/srv"]}}\n' >"$PF3"
cp "$PF3" "$T/pf3"
out=$(rm3) && rc=0 || rc=$?
expect_ne "$rc" 0 "[rm own] an admin's own $P3.json: project rm is refused"
expect_match "$out" "project rm: $PF3 is not a file .project create. writes" \
	"[rm own] ... in one line naming the file" || diag "$out"
check "[rm own] ... and the file stays as it was" cmp "$T/pf3" "$PF3"
rm -f "$PF3"
printf '[engine.runtimes]\n"%s" = ["/usr/local/bin/someone-elses"]\n' "$RT3" >"$DI3"
cp "$DI3" "$T/di3"
out=$(rm3) && rc=0 || rc=$?
expect_ne "$rc" 0 "[rm own] a podman drop-in $RT3.conf someone else wrote: project rm is refused"
expect_match "$out" "project rm: podman: $DI3 is not the drop-in" "[rm own] ... in one line naming it" ||
	diag "$out"
check "[rm own] ... and the drop-in stays as it was" cmp "$T/di3" "$DI3"
rm -f "$DI3"
ln -s /bin/true "$LN3"
out=$(rm3) && rc=0 || rc=$?
expect_ne "$rc" 0 "[rm own] a link hezo-shim@$P3 to /bin/true: project rm is refused"
expect_match "$out" "project rm: $LN3 points at /bin/true, not at the shim" "[rm own] ... in one line naming it" ||
	diag "$out"
check "[rm own] ... and the link stays" test "$(readlink "$LN3")" = /bin/true
rm -f "$LN3"
: >"$LN3"
out=$(rm3) && rc=0 || rc=$?
expect_ne "$rc" 0 "[rm own] a regular file at hezo-shim@$P3: project rm is refused"
check "[rm own] ... and the file stays" test -f "$LN3" -a ! -L "$LN3"
rm -f "$LN3"
[ -n "$dropins_made" ] && rmdir "$DROPINS"

# create's own files, with one of them then replaced: nothing is removed (no half-removal).
out=$(create_as "$P3" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[rm own] project create $P3 exits 0" || diag "$out"
sums >"$T/created3"
cp "$PF3" "$T/pf3"
ln -sfn /bin/true "$LN3"
out=$(rm3) && rc=0 || rc=$?
expect_ne "$rc" 0 "[rm own] create's files, the link then pointed elsewhere: project rm is refused"
check "[rm own] ... every engine's file is as create left it" cmp "$T/created3" <(sums)
check "[rm own] ... the project file stays" cmp "$T/pf3" "$PF3"
ln -sfn "$SHIM" "$LN3"
printf '{"backend": "runc"}\n' >"$PF3"
out=$(rm3) && rc=0 || rc=$?
expect_ne "$rc" 0 "[rm own] create's files, the project file then edited: project rm is refused"
check "[rm own] ... every engine's file is as create left it" cmp "$T/created3" <(sums)
check "[rm own] ... the link stays" test "$(readlink "$LN3")" = "$SHIM"
cp "$T/pf3" "$PF3"
out=$(rm3) && rc=0 || rc=$?
expect_eq "$rc" 0 "[rm own] create's files as it wrote them: project rm exits 0" || diag "$out"
check "[rm own] ... every engine's file is as before create" cmp "$T/before" <(sums)
check "[rm own] ... the project file and the link are gone" test ! -e "$PF3" -a ! -L "$LN3"

# --- create refuses another project's workspace (red team, workspace F6) ---------------------------
# The shim would refuse every box of such a project (and of the other): create says so first,
# naming the other project, by path, parent, child, symlink or bind mount.
P4=test-pa$$
P5=test-pb$$
WS4=/srv/hezo-pwclash-$$
tap_cleanup "'$SHIM' project rm '$P4' --link-dir '$LINKS' >/dev/null 2>&1; \
	'$SHIM' project rm '$P5' --link-dir '$LINKS' >/dev/null 2>&1; rm -rf '$WS4'"
mkdir -p "$WS4/a" "$WS4/alias" && chmod 0700 "$WS4" "$WS4/a"
ln -s "$WS4/a" "$WS4/link" && ln -s "$WS4/gone" "$WS4/dangling" || bail_out "cannot make $WS4's links"
out=$(create_as "$P4" --engine podman --workspace "$WS4/a" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[create other's] project create $P4 --workspace $WS4/a exits 0" || diag "$out"
sums >"$T/created4"
ls -A /etc/hezo/projects "$LINKS" >"$T/files4"
# refused5 DESC WORKSPACE [REGEX]: a create of a project of its own (P5-N) there is refused,
# naming P4 (or saying REGEX), and writes nothing.
k5=0
refused5()
{
	local desc=$1 ws=$2 re=${3:-"workspace $2 overlaps $WS4/a, project $P4's workspace"}
	k5=$((k5 + 1))
	tap_cleanup "'$SHIM' project rm '$P5-$k5' --link-dir '$LINKS' >/dev/null 2>&1"
	out=$(create_as "$P5-$k5" --engine podman --workspace "$ws" 2>&1) && rc=0 || rc=$?
	expect_ne "$rc" 0 "[create other's] $desc: project create $P5-$k5 is refused"
	expect_match "$out" "^hezo-shim project create: $re\$" "[create other's] $desc: ... in one line" ||
		diag "$out"
	check "[create other's] $desc: ... and no file changed" \
		sh -c "cmp '$T/created4' - && ls -A /etc/hezo/projects '$LINKS' | cmp '$T/files4' -" < <(sums)
}
refused5 "the same directory" "$WS4/a"
refused5 "a directory inside it" "$WS4/a/sub"
refused5 "its parent" "$WS4" "workspace $WS4 overlaps $WS4/a, project $P4's workspace"
refused5 "a symlink to it" "$WS4/link"
refused5 "a path below a symlink to it" "$WS4/link/sub" \
	"workspace $WS4/link/sub overlaps $WS4/a, project $P4's workspace"
refused5 "a dangling symlink" "$WS4/dangling" \
	"workspace $WS4/dangling: a symlink is on its path, and the shim opens a workspace without following one"
out=$(unshare -m sh -c "mount --bind '$WS4/a' '$WS4/alias' &&
	'$SHIM' project create '$P5' --backend runc --link-dir '$LINKS' --engine podman --workspace '$WS4/alias'" 2>&1) &&
	rc=0 || rc=$?
expect_ne "$rc" 0 "[create other's] a bind mount of it elsewhere (a mount namespace of the test's): refused"
expect_match "$out" "workspace $WS4/alias overlaps $WS4/a, project $P4's workspace" \
	"[create other's] ... naming $P4" || diag "$out"
out=$(create_as "$P5" --engine podman --workspace "$WS4/b/../a" 2>&1) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*is neither \"volume\" nor a clean absolute path" \
	"[create other's] by ..: refused (no .. in a workspace)" || diag "$out"
out=$(create_as "$P5" --engine podman --workspace "$WS4/b" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[create other's] a sibling directory $WS4/b is accepted" || diag "$out"
out=$("$SHIM" project rm "$P5" --link-dir "$LINKS" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[create other's] project rm $P5 exits 0" || diag "$out"
out=$("$SHIM" project rm "$P4" --link-dir "$LINKS" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[create other's] project rm $P4 exits 0" || diag "$out"
check "[create other's] every engine's file is as before" cmp "$T/before" <(sums)

tap_done

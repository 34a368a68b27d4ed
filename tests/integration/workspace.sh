#!/bin/bash
# Integration: a project's workspace (issue 28, policy/workspace.c, shim/workspace.c) with
# hezo-shim on HEZO_TEST_BACKEND through Docker and the dev image (tests/lib/devimage.sh): in
# /workspace a C program is built and run, a meson project configured, built and tested, git
# commits after `git config --global`, a venv installs a local wheel; the results are on the host
# afterwards and a second box sees them. Another project's box reaches none of it (by path,
# symlink, a bind of the parent, `..`, /proc/self/root, a bind mount elsewhere, volume name); the
# root stays read-only and tmpfs noexec. Workspaces the admin may not name are refused.
#
# Assumes: dockerd running, the dev image cached or debootstrap-able, /var/tmp on a filesystem
# that allows exec (the workspaces live there, each made by the test and removed after it).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/devbox.sh
. "$here/../lib/devbox.sh"

hezo_devbox_setup python3 setpriv
IMG=$HEZO_DEV_IMAGE
B=$HEZO_TEST_BACKEND
TAG=hzw$(hezo_rand | tr -dc 'a-z0-9' | head -c 6)
PA=${TAG}a # the project at work
PB=${TAG}b # another project, trying every route to A's workspace
PV=${TAG}v # a project whose workspace is a volume
PU=${TAG}u # a project whose boxes run as uid 1000
W=$HEZO_TEST_DIR/workspace
mkdir -p "$W/projects"
tap_cleanup "rm -rf '$W'"
# The workspaces' parent: root's, 0700 (others may not search it: a box may open its workspace).
# No workspace may be at, in or above an allowed root, where a box of no project may hold it
# already (red team ws2, F2): the admin shares another directory.
WS=$(mktemp -d /var/tmp/hezo-ws.XXXXXX) || bail_out "cannot make a workspace root in /var/tmp"
chmod 0700 "$WS"
SH=$(mktemp -d /var/tmp/hezo-wsshare.XXXXXX) || bail_out "cannot make a shared root in /var/tmp"
chmod 0755 "$SH"
tap_cleanup "rm -rf '$SH'"
# A parent others can search: a workspace there is refused.
WSPUB=$(mktemp -d /var/tmp/hezo-wspub.XXXXXX) || bail_out "cannot make a second workspace root"
chmod 0755 "$WSPUB"
tap_cleanup "rm -rf '$WSPUB'"
tap_cleanup "umount -l '$WS/alias' 2>/dev/null; umount -l '$WS/etc' 2>/dev/null; rm -rf '$WS'"
findmnt -no OPTIONS -T "$WS" | grep -qw noexec && hezo_cannot_run "/var/tmp is noexec here"
WSA=$WS/a
WSB=$WS/b
WSU=$WS/u
# A's the admin makes beforehand; B's and U's the shim makes on their first create.
mkdir -m 0755 "$WSA"
VOLDIR=/var/lib/docker/volumes/${PV}_workspace
# dockerd registers the volume when a box names it (-v); a shim that lets project ${PV}_x have one
# makes its directory.
tap_cleanup "hezo_docker volume rm -f '${PV}_workspace' >/dev/null 2>&1; rm -rf '$VOLDIR' '/var/lib/docker/volumes/${PV}_x_workspace'"
jq -n --arg w "$WSA" '{workspace: $w}' >"$W/projects/$PA.json"
jq -n --arg w "$WSB" '{workspace: $w}' >"$W/projects/$PB.json"
jq -n --arg w "$WSU" '{workspace: $w}' >"$W/projects/$PU.json"
echo '{"workspace": "volume"}' >"$W/projects/$PV.json"
jq -n --arg w "$WSPUB/w" '{workspace: $w}' >"$W/projects/${TAG}pub.json"
jq -n --arg w "$WS/l2" '{workspace: $w}' >"$W/projects/${TAG}l2.json"
jq -n --arg w "$SH/w" '{workspace: $w}' >"$W/projects/${TAG}shr.json"
echo '{"workspace": "volume"}' >"$W/projects/${TAG}pre.json"
echo '{"workspace": "volume"}' >"$W/projects/${PV}_x.json"
# Workspaces the admin may not name.
echo '{"workspace": "/"}' >"$W/projects/${TAG}root.json"
echo '{"workspace": "/var/lib/docker/ws"}' >"$W/projects/${TAG}engine.json"
jq -n --arg w "$WS/etc" '{workspace: $w}' >"$W/projects/${TAG}etc.json"
# A symlink on the way lets whoever made it choose the directory (red team, workspace F2, F3).
# Each its own target: two projects whose workspaces resolve to one directory clash first.
mkdir -m 0755 "$WS/symtarget" "$WS/symtarget2" && ln -s "$WS/symtarget" "$WS/symdir" &&
	ln -s "$WS/symtarget2" "$WS/symws" ||
	bail_out "cannot make the symlinked workspaces"
jq -n --arg w "$WS/symdir/w" '{workspace: $w}' >"$W/projects/${TAG}symp.json"
jq -n --arg w "$WS/symws" '{workspace: $w}' >"$W/projects/${TAG}syms.json"

hezo_make_wrapper
rm -rf "${HEZO_TEST_SANITIZER_DIR:?}"/*
hezo_write_policy docker ". + {projectsDir: \"$W/projects\", mounts: {allowedSources: [\"$SH\"]}}"
declare -A RT
for p in a b v u root engine etc symp syms inner pub l2 shr pre v_x; do
	sed "s|^exec \(.*\) \"\\\$@\"\$|exec \1 --hezo-project $TAG$p \"\\\$@\"|" "$HEZO_TEST_WRAPPER" >"$W/hezo-shim-$p"
	chmod 0755 "$W/hezo-shim-$p"
	grep -q -- "--hezo-project $TAG$p" "$W/hezo-shim-$p" || bail_out "cannot write the project $p wrapper"
	RT[$p]=hezo-test-ws-$p-$B
	hezo_docker_register_runtime "${RT[$p]}" "$W/hezo-shim-$p" || bail_out "cannot register ${RT[$p]}"
done
tap_cleanup "hezo_docker ps -aq --filter name=$TAG | xargs -r $HEZO_DOCKER rm -f >/dev/null 2>&1"
diag "backend $B, image $IMG, workspaces under $WS"

# run P NAME [docker run options...] -- CMD: docker run in project P's box, output and status.
run()
{
	local p=$1 name=$2
	shift 2
	timeout 300 "$HEZO_DOCKER" run --rm --network=none --runtime="${RT[$p]}" --name "$TAG-$name" "$@" 2>&1 </dev/null
}

# --- in /workspace of a project box: build, test, commit, install ---------------------------------
out=$(run a cc -w /workspace "$IMG" sh -c '
	printf "#include <stdio.h>\nint main(void){puts(\"built-here\");return 0;}\n" >t.c &&
	gcc -o t t.c && ./t') && rc=0 || rc=$?
expect_eq "$rc:$out" 0:built-here "[build] gcc -o t t.c && ./t in /workspace" || diag "$out"

out=$(run a meson -w /workspace "$IMG" sh -c '
	mkdir -p mp && cd mp &&
	printf "project(%s, %s)\nexecutable(%s, %s)\ntest(%s, executable(%s, %s))\n" \
		"'"'mp'"'" "'"'c'"'" "'"'mp'"'" "'"'mp.c'"'" "'"'ok'"'" "'"'chk'"'" "'"'chk.c'"'" >meson.build &&
	printf "int main(void){return 0;}\n" >mp.c && cp mp.c chk.c &&
	meson setup b >/dev/null && meson compile -C b >/dev/null && meson test -C b 2>&1 | grep -E "^Ok:"') &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[meson] setup, compile and test in /workspace exit 0" || diag "$out"
expect_match "$out" "Ok: +1" "[meson] its one test passed" || diag "$out"

out=$(run a git -w /workspace "$IMG" sh -c '
	git config --global user.name "Hezo Test" && git config --global user.email t@example.test &&
	git init -q repo && cd repo && echo one >f && git add f && git commit -qm first &&
	git log --format=%an:%s') && rc=0 || rc=$?
expect_eq "$rc:$out" "0:Hezo Test:first" "[git] config --global, init and commit in /workspace" || diag "$out"

# A wheel made offline on the host, by hand: a zip with the package and its dist-info.
python3 - "$WSA/hzpkg-1.0-py3-none-any.whl" <<-'EOF' || bail_out "cannot write the test wheel"
	import base64, hashlib, sys, zipfile
	files = {"hzpkg/__init__.py": "VALUE = 'from-the-wheel'\n",
	         "hzpkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: hzpkg\nVersion: 1.0\n",
	         "hzpkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
	rec = []
	with zipfile.ZipFile(sys.argv[1], "w") as z:
	    for name, text in files.items():
	        data = text.encode()
	        z.writestr(name, data)
	        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
	        rec.append(f"{name},sha256={digest},{len(data)}")
	    rec.append("hzpkg-1.0.dist-info/RECORD,,")
	    z.writestr("hzpkg-1.0.dist-info/RECORD", "\n".join(rec) + "\n")
EOF
out=$(run a venv -w /workspace "$IMG" sh -c '
	python3 -m venv venv && venv/bin/pip install -q --no-index hzpkg-1.0-py3-none-any.whl &&
	venv/bin/python -c "import hzpkg; print(hzpkg.VALUE)"') && rc=0 || rc=$?
expect_eq "$rc:$(tail -n 1 <<<"$out")" 0:from-the-wheel "[venv] python3 -m venv and pip install of a local wheel" ||
	diag "$out"

# --- on the host after the boxes ended, and in a second box ------------------------------------------
expect_eq "$("$WSA/t" 2>&1)" built-here "[host] the binary the box built is in the workspace and runs"
expect_eq "$(git -C "$WSA/repo" log --format=%s 2>&1)" first "[host] the box's commit is in the workspace"
expect_match "$(cat "$WSA/.home/.gitconfig" 2>&1)" "name = Hezo Test" \
	"[host] git config --global went to the workspace's .home"
expect_eq "$(stat -c %u:%a "$WSA/.home" 2>&1)" 0:700 "[host] .home is the box user's (root), 0700"
expect_eq "$(stat -c %u "$WSA/t" 2>&1)" 0 "[host] a file the box's root wrote is the host's uid 0 (the box's uid)"
# Root in the box writes as host root, and owns its workspace: it may open it (chmod 755) while it
# runs. It cannot make a set-id file (the seccomp floor refuses a mode with 06000 to chmod and to
# every call that creates; red team ws2, F1), and the workspace's parent keeps other users out.
expect_eq "$(stat -c %a "$WSA" 2>&1)" 700 "[host, setuid] the workspace is the owner's alone (0700, the admin made it 0755)"
out=$(run a suid -w /workspace "$IMG" sh -c '
	s=$(find /usr/bin /bin -perm -4000 -type f 2>/dev/null | head -n 1); echo "image-suid=${s:+yes}"
	cp /bin/cat c && chmod 755 c && chmod 644 c && chmod 755 c && echo chmod-755-644-ok
	chmod 4755 c 2>/dev/null || echo chmod-4755-refused
	chmod u+s c 2>/dev/null || echo chmod-us-refused
	chmod g+s c 2>/dev/null || echo chmod-gs-refused
	install -m 4755 /bin/cat i 2>/dev/null || echo install-4755-refused
	cp -p "$s" p 2>/dev/null || echo cp-p-refused
	python3 -c "import os; os.open(\"o\", os.O_CREAT | os.O_WRONLY, 0o4755)" 2>/dev/null || echo os.open-4755-refused
	python3 -c "import os; os.mkdir(\"d\", 0o2755); os.chmod(\"d\", 0o2755)" 2>/dev/null || echo mkdir-2755-refused
	python3 -c "import os; os.close(os.open(\"n\", os.O_CREAT | os.O_WRONLY, 0o755))" && echo os.open-755-ok
	chmod 755 /workspace && echo opened') && rc=0 || rc=$?
for want in image-suid=yes chmod-755-644-ok chmod-4755-refused chmod-us-refused chmod-gs-refused \
	install-4755-refused cp-p-refused os.open-4755-refused mkdir-2755-refused os.open-755-ok opened; do
	expect_match "$out" "^$want\$" "[setuid] in the box: $want" || diag "$out"
done
expect_eq "$(find "$WSA" -perm /6000 2>&1)" "" "[host, setuid] no set-id file or directory in the workspace"
expect_eq "$(stat -c %a "$WSA" 2>&1)" 755 "[host, setuid] the box opened its workspace (0755) while it ran"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups ls "$WSA" 2>&1) && rc=0 || rc=$?
expect_ne "$rc" 0 "[host, setuid] uid 65534 still cannot reach it: the parent is 0700" || diag "$out"
rm -rf "${WSA:?}/c" "$WSA/i" "$WSA/p" "$WSA/o" "$WSA/d" "$WSA/n"
out=$(run pub pub "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*workspace $WSPUB/w: other users can search its parent; chmod 0700 $WSPUB" \
	"[parent] a workspace whose parent others can search (0755) is refused" || diag "$out"
check "[parent] ... and nothing was made there" test ! -e "$WSPUB/w"
out=$(run a again -w /workspace "$IMG" sh -c '
	./t && git -C repo log --format=%s && venv/bin/python -c "import hzpkg; print(hzpkg.VALUE)" &&
	git config --global user.name && echo "$HOME"') && rc=0 || rc=$?
expect_eq "$rc:$(tr '\n' ' ' <<<"$out")" "0:built-here first from-the-wheel Hezo Test /workspace/.home " \
	"[second box] sees the binary, the commit, the venv and the git identity" || diag "$out"

# docker exec copies the image's HOME into every exec: the shim gives it the box's.
"$HEZO_DOCKER" run -d --network=none --runtime="${RT[a]}" --name "$TAG-live" "$IMG" sleep 600 >/dev/null 2>&1 ||
	bail_out "cannot start a long-running box"
out=$(timeout 60 "$HEZO_DOCKER" exec "$TAG-live" sh -c 'echo "$HOME" && cd && git config --global user.name' 2>&1 </dev/null) &&
	rc=0 || rc=$?
expect_eq "$rc:$(tr '\n' ' ' <<<"$out")" "0:/workspace/.home Hezo Test " "[exec] docker exec gets HOME=/workspace/.home" ||
	diag "$out"
out=$(timeout 60 "$HEZO_DOCKER" exec -e HOME=/tmp "$TAG-live" sh -c 'echo "$HOME"' 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc:$out" 0:/tmp "[exec] a HOME the caller sets stays its own" || diag "$out"
"$HEZO_DOCKER" rm -f "$TAG-live" >/dev/null 2>&1

# --- outside the workspace: root read-only, tmpfs noexec ------------------------------------------------
out=$(run a rofs "$IMG" sh -c 'touch /etc/hezo-x 2>&1; touch /usr/hezo-x 2>&1; echo done') && rc=0 || rc=$?
expect_eq "$(grep -c 'Read-only file system' <<<"$out")" 2 "[outside] the root is read-only (/etc, /usr)" || diag "$out"
out=$(run a tmpexec "$IMG" sh -c 'cp /bin/true /tmp/t && /tmp/t; echo "rc=$?"') && rc=0 || rc=$?
expect_match "$out" "rc=126" "[outside] a binary copied to /tmp does not execute (tmpfs noexec)" || diag "$out"
if [ "$B" = runc ]; then
	out=$(run a tmpld "$IMG" sh -c 'cp /bin/true /tmp/t && /lib64/ld-linux-x86-64.so.2 /tmp/t; echo "rc=$?"') &&
		rc=0 || rc=$?
	expect_no_match "$out" "rc=0" "[outside] runc: ld.so refuses to map a /tmp binary (noexec)" || diag "$out"
fi
out=$(run a wsexec "$IMG" sh -c 'grep " /workspace " /proc/mounts') && rc=0 || rc=$?
if [ "$B" = runc ]; then
	expect_match "$out" "nosuid,nodev" "[mount] /workspace is nosuid,nodev" || diag "$out"
	expect_no_match "$out" "noexec" "[mount] /workspace is not noexec" || diag "$out"
else
	expect_eq "$rc" 0 "[mount] /workspace is mounted under runsc" || diag "$out"
fi

# --- the box's user owns a new workspace and its home ----------------------------------------------------
out=$(run u user --user 1000:1000 -w /workspace "$IMG" sh -c '
	echo "$HOME" && touch /workspace/mine && git config --global user.name u && id -u') && rc=0 || rc=$?
expect_eq "$rc:$(tr '\n' ' ' <<<"$out")" "0:/workspace/.home 1000 " "[user 1000] HOME is the workspace's .home, writable" ||
	diag "$out"
expect_eq "$(stat -c %u:%g "$WSU" "$WSU/.home" "$WSU/mine" 2>&1 | tr '\n' ' ')" "1000:1000 1000:1000 1000:1000 " \
	"[user 1000] host: the workspace, .home and the box's file are uid 1000's"

# A create refused for a reason of its own (a bind of /etc) makes no workspace, which would have
# been that refused config's user's for good (red team ws2, L2).
out=$(run l2 l2 --user 4242:4242 -v /etc:/x "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*bind source /etc is not under an allowed root" "[L2] a create refused for its bind of /etc" ||
	diag "$out"
check "[L2] ... made no workspace (nor .home) for uid 4242" test ! -e "$WS/l2"

# --- an engine's -v of the workspace or below goes where the engine asked ---------------------------------
mkdir -p "$WSA/sub" && echo below >"$WSA/sub/f"
out=$(run a sub -v "$WSA/sub:/src:ro" "$IMG" cat /src/f) && rc=0 || rc=$?
expect_eq "$rc:$out" 0:below "[own -v] the project's box mounts a directory of its workspace elsewhere" || diag "$out"

# --- a volume as the workspace (made by its first box, before anyone names it) ----------------------------
out=$(run v vol -w /workspace "$IMG" sh -c 'echo in-volume >f && cat f') && rc=0 || rc=$?
expect_eq "$rc:$out" 0:in-volume "[volume] the box writes its NAME_workspace volume" || diag "$out"
expect_eq "$(cat "$VOLDIR/_data/f" 2>&1)" in-volume "[volume] host: the file is in $VOLDIR/_data"

# --- another project's box never gets A's workspace -------------------------------------------------------
# No workspace lies under an allowed root (F2), so these routes meet that check first; the
# workspace rule stands behind it.
WHO="is not under an allowed root" # what the refusal says
expect_refused() # NAME DESC [docker run options...]
{
	local name=$1 desc=$2
	shift 2
	out=$(run b "$name" "$@" "$IMG" sh -c 'cat /x/t.c /x/a/t.c 2>/dev/null; ls /x') && rc=0 || rc=$?
	expect_ne "$rc" 0 "[other project] $desc: docker run fails"
	expect_no_match "$out" "built-here" "[other project] $desc: nothing of A's workspace was read"
	expect_match "$out" "hezo-shim: .*$WHO" "[other project] $desc: the shim says why ($WHO)" ||
		diag "$out"
}
expect_refused path "by path" -v "$WSA:/x"
run b mklink "$IMG" sh -c "ln -s $WSA /workspace/link" >/dev/null
expect_refused symlink "by a symlink in its own workspace" -v "$WSB/link:/x"
expect_refused parent "by a bind of the parent" -v "$WS:/x"
expect_refused dotdot "by .." --mount "type=bind,src=$WSB/../a,dst=/x"
expect_refused procroot "by /proc/self/root" -v "/proc/self/root$WSA:/x"
mkdir -p "$WS/alias" && mount --bind "$WSA" "$WS/alias" || bail_out "cannot bind $WSA at $WS/alias"
expect_refused alias "by a bind mount of it elsewhere" -v "$WS/alias:/x"
umount "$WS/alias"
# A's file stops layering (an unknown key here; a seccomp file it names removed, in the red
# team's): its workspace still counts (red team ws2, F3). A file that is not JSON at all: every
# create is refused, naming it, until it is fixed or removed.
cp "$W/projects/$PA.json" "$W/pa.json.saved"
jq '. + {bogus: 1}' "$W/pa.json.saved" >"$W/projects/$PA.json"
jq -n --arg w "$WSA/inner" '{workspace: $w}' >"$W/projects/${TAG}inner.json"
out=$(run inner inner-unlayered "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*$WSA/inner overlaps $WSA, project $PA's workspace" \
	"[F3] a workspace inside A's, while A's file does not layer: refused" || diag "$out"
check "[F3] ... and nothing was made in A's workspace" test ! -e "$WSA/inner"
rm -rf "$W/projects/${TAG}inner.json" "${WSA:?}/inner"
echo '{"workspace": ' >"$W/projects/${TAG}junk.json"
out=$(run b junk "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*project file $W/projects/${TAG}junk.json cannot be read or is not JSON" \
	"[F3] a project file that is not JSON: a create is refused, naming it" || diag "$out"
rm -f "$W/projects/${TAG}junk.json"
cp "$W/pa.json.saved" "$W/projects/$PA.json"
out=$(run b volname -v "${PV}_workspace:/x" "$IMG" ls /x) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*volume ${PV}_workspace belongs to project $PV" \
	"[other project] by volume name: ${PV}_workspace is refused to project $PB" || diag "$out"
hezo_docker volume create --opt type=none --opt o=bind --opt device="$WSA" "${PB}_bound" >/dev/null 2>&1 ||
	bail_out "cannot create volume ${PB}_bound"
tap_cleanup "hezo_docker volume rm -f '${PB}_bound' >/dev/null 2>&1"
out=$(run b volbind -v "${PB}_bound:/x" "$IMG" cat /x/t.c) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*volume ${PB}_bound has something mounted on its _data" \
	"[other project] by a volume bound to A's workspace: refused" || diag "$out"
out=$(run b own -w /workspace "$IMG" sh -c 'ls -A /workspace | tr "\n" " "') && rc=0 || rc=$?
expect_eq "$rc:$out" "0:.home link " "[other project] B's /workspace is its own" || diag "$out"
# A project whose own workspace lies inside A's (a project file written by hand: `project create`
# refuses it) is refused before the shim makes its directory there (red team, workspace F6).
jq -n --arg w "$WSA/inner" '{workspace: $w}' >"$W/projects/${TAG}inner.json"
out=$(run inner inner "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*$WSA/inner overlaps $WSA, project $PA's workspace" \
	"[other project] a project whose workspace is inside A's: its box is refused" || diag "$out"
check "[other project] ... and nothing was made in A's workspace" test ! -e "$WSA/inner"
rm -rf "$W/projects/${TAG}inner.json" "${WSA:?}/inner"
# dockerd makes a missing -v source itself, following B's link out of its workspace (F4, open:
# docs/hardening.md); --mount type=bind refuses a missing source instead, and makes nothing.
out=$(run b f4 --mount "type=bind,src=$WSB/link/f4-missing,dst=/x" "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*bind source path does not exist" \
	"[F4] --mount type=bind of a missing source through a box's link: dockerd refuses it" || diag "$out"
check "[F4] ... and makes nothing where the link points" test ! -e "$WSA/f4-missing"


# A volume the shim did not make for the project (docker volume create, or a box of no project
# holding it) is refused; so is a volume that another project's volumes.allow names (F2).
hezo_docker volume create "${TAG}pre_workspace" >/dev/null 2>&1 || bail_out "cannot create volume ${TAG}pre_workspace"
tap_cleanup "hezo_docker volume rm -f '${TAG}pre_workspace' >/dev/null 2>&1"
out=$(run pre pre "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*workspace volume ${TAG}pre_workspace was not made by hezo-shim for project ${TAG}pre.*docker volume rm ${TAG}pre_workspace" \
	"[F2] a NAME_workspace volume made beforehand is refused, saying how to remove it" || diag "$out"
out=$(run v_x vx "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*volume ${PV}_x_workspace: project $PV's volumes.allow matches it" \
	"[F2] a volume workspace another project's volumes.allow names is refused" || diag "$out"
check "[F2] ... and no volume directory was made for it" test ! -e "/var/lib/docker/volumes/${PV}_x_workspace"
out=$(run shr shr "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*workspace: $SH/w: it is, holds or is inside $SH, a mounts.allowedSources root" \
	"[F2] a workspace under an allowed root is refused" || diag "$out"
check "[F2] ... and nothing was made there" test ! -e "$SH/w"

# --- workspaces the admin may not name ---------------------------------------------------------------
out=$(run root root "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*workspace: /: it is the host's /" "[refused workspace] /" || diag "$out"
out=$(run engine engine "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*workspace: /var/lib/docker/ws: it is, holds or is inside /var/lib/docker" \
	"[refused workspace] inside Docker's data-root" || diag "$out"
mkdir -p "$WS/etc" && mount --bind /etc "$WS/etc" -o ro || bail_out "cannot bind /etc at $WS/etc"
out=$(run etc etc "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*workspace $WS/etc: it is also named /etc" \
	"[refused workspace] a bind mount of /etc, by the mount table's other name" || diag "$out"
umount "$WS/etc"
out=$(run symp symp "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*workspace $WS/symdir/w: its parent $WS/symdir \\(no symlink on the way\\)" \
	"[refused workspace] a symlink in its parent's path" || diag "$out"
out=$(run syms syms "$IMG" true) && rc=0 || rc=$?
expect_match "$rc:$out" "^[1-9].*workspace $WS/symws \\(no symlink\\)" "[refused workspace] the workspace itself a symlink" ||
	diag "$out"
expect_eq "$(find "$WS/symtarget" "$WS/symtarget2" -mindepth 1)" "" \
	"[refused workspace] ... and nothing was made where the symlinks point"

# --- nothing left behind ----------------------------------------------------------------------------------
hezo_docker ps -aq --filter name="$TAG" | xargs -r "$HEZO_DOCKER" rm -f >/dev/null 2>&1
expect_eq "$(hezo_docker ps -aq --filter name="$TAG")" "" "no test container left in docker"
hezo_expect_no_sanitizer_reports
tap_done

#!/bin/bash
# Integration: hostile or broken input to `hezo-shim create` (config.json, bundle, verb, policy).
# Each must end in one clear error line, a non-zero exit, an untouched config.json, no container
# and no state record: fail closed, nothing half-done.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"

hezo_require_root
hezo_require_tools jq runc cmp timeout head tr "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

diag "backend $HEZO_TEST_BACKEND ($(hezo_backend_bin)), shim $HEZO_SHIM_BIN"
mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-bad-$HEZO_TEST_BACKEND
WORK=$(mktemp -d "$HEZO_TEST_DIR/bad.XXXXXX")
# The 100 MB file goes to disk, not to the tmpfs under /run.
BIG=$(mktemp -d /var/tmp/hezo-bad.XXXXXX)
tap_cleanup "rm -rf '$WORK' '$BIG'"
hezo_write_policy bundle

# A template bundle that is fine: every case starts from a copy of its config.json.
TEMPLATE=$WORK/template
hezo_make_bundle "$TEMPLATE" hezo-bad-template '["true"]' || bail_out "cannot make bundle"
# No cgroupsPath: it must name the container's ID, which every case makes up for itself (an
# absent cgroupsPath is fine: the backend's default).
VALID=$(jq 'del(.linux.cgroupsPath)' "$TEMPLATE/config.json")

# fresh_bundle NAME [DIR]: sets B to a new bundle under DIR (default WORK) sharing the
# template's rootfs, with the valid config.json.
fresh_bundle()
{
	B=${2:-$WORK}/b-$1
	rm -rf "$B"
	mkdir -p "$B"
	# A copy: a symlink to another bundle's rootfs would itself be refused (root.path).
	cp -a "$TEMPLATE/rootfs" "$B/rootfs"
	printf '%s\n' "$VALID" >"$B/config.json"
}

# What every refusal names: the file its cause is in (the bundle's config.json, a policy file, the
# bundle) or the command line's word (a flag, the command).
NAMES_SOURCE='(config\.json: |policy /|bundle /| in /[^ ]+\.json( and /[^ ]+\.json)?\)$|--[a-z]|command "|global flag)'

# expect_refused NAME REASON_ERE BUNDLE_DIR SHIM_ARGS...: run the shim twice (stderr, then
# --log FILE --log-format json) and check everything a refusal must give.
expect_refused()
{
	local name=$1 reason=$2 bdir=$3 id rc out err log lines orig="" files=""
	shift 3
	# BAD_ID: a case whose config.json must name the container's ID (cgroupsPath).
	id=${BAD_ID:-"hezo-bad-$name-$(hezo_rand)"}
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$id'"
	if [ -f "$bdir/config.json" ]; then
		orig=$WORK/$name.orig
		cp "$bdir/config.json" "$orig"
		files=$(ls -A "$bdir")
	fi

	# 1. Without --log: the reason on stderr, one line.
	out=$WORK/$name.out
	err=$WORK/$name.err
	hezo_shim --root "$ROOT" "$@" "$id" >"$out" 2>"$err" </dev/null && rc=0 || rc=$?
	expect_ne "$rc" 0 "[$name] non-zero exit"
	expect_ne "$rc" 124 "[$name] did not time out"
	lines=$(wc -l <"$err" | tr -d ' ')
	expect_eq "$lines" 1 "[$name] exactly one line on stderr" || diag "$(head -c 2000 "$err")"
	expect_match "$(head -n 1 "$err")" '^hezo-shim: ' "[$name] the line starts with 'hezo-shim: '"
	expect_match "$(head -n 1 "$err")" "$reason" "[$name] the reason matches /$reason/"
	expect_match "$(head -n 1 "$err")" "$NAMES_SOURCE" \
		"[$name] the line names the file (config.json, the policy, the bundle) or the flag it is about"
	expect_eq "$(wc -c <"$out" | tr -d ' ')" 0 "[$name] nothing on stdout"

	# 2. With --log FILE --log-format json: one JSON line, as containerd reads it.
	log=$WORK/$name.log
	rm -f "$log"
	hezo_shim --root "$ROOT" --log "$log" --log-format json "$@" "$id" >"$out" 2>"$err" </dev/null &&
		rc=0 || rc=$?
	expect_ne "$rc" 0 "[$name --log] non-zero exit"
	expect_eq "$(wc -l <"$log" 2>/dev/null | tr -d ' ')" 1 "[$name --log] one line in the log" ||
		diag "$(head -c 2000 "$log" 2>/dev/null)"
	expect_eq "$(jq -r .level <"$log" 2>&1)" error "[$name --log] level is error"
	expect_match "$(jq -r .msg <"$log" 2>&1)" '^hezo-shim: ' "[$name --log] msg starts with 'hezo-shim: '"
	expect_match "$(jq -r .msg <"$log" 2>&1)" "$reason" "[$name --log] msg matches /$reason/"
	expect_eq "$(cat "$out" "$err" | wc -c | tr -d ' ')" 0 "[$name --log] nothing on stdout or stderr" ||
		diag "$(head -c 2000 "$err")"

	# 3. Nothing half-done.
	if [ -n "$orig" ]; then
		check "[$name] config.json unchanged" cmp "$orig" "$bdir/config.json"
		rm -f "$orig"
		expect_eq "$(ls -A "$bdir")" "$files" "[$name] no file left behind in the bundle"
	fi
	expect_eq "$(hezo_backend_ids "$ROOT" | grep -cxF "$id")" 0 "[$name] no container left"
	expect_eq "$(hezo_state_records "$id")" "" "[$name] no state record"
}

# --- config.json --------------------------------------------------------------------------------
fresh_bundle malformed
printf '{ "ociVersion": "1.0.2", "process": { "args": [ "true" ], oops }\n' >"$B/config.json"
expect_refused malformed 'config\.json' "$B" create -b "$B"

fresh_bundle truncated
head -c $((${#VALID} / 2)) <<<"$VALID" >"$B/config.json"
expect_refused truncated 'config\.json' "$B" create -b "$B"

fresh_bundle empty
: >"$B/config.json"
expect_refused empty 'config\.json' "$B" create -b "$B"

fresh_bundle notobject
echo '["ociVersion", "1.0.2"]' >"$B/config.json"
expect_refused notobject 'config\.json' "$B" create -b "$B"

# Wrong types in fields the policy has to read: it cannot judge what it cannot parse.
fresh_bundle mountsnotlist
jq '.mounts = {destination: "/host", type: "bind", source: "/"}' <<<"$VALID" >"$B/config.json"
expect_refused mountsnotlist 'mounts' "$B" create -b "$B"

fresh_bundle capsnotlist
jq '.process.capabilities.bounding = "CAP_SYS_ADMIN"' <<<"$VALID" >"$B/config.json"
expect_refused capsnotlist 'bounding|capabilities' "$B" create -b "$B"

fresh_bundle memorystring
jq '.linux.resources = {memory: {limit: "8g"}}' <<<"$VALID" >"$B/config.json"
expect_refused memorystring 'memory|limit' "$B" create -b "$B"

# --- mounts and process fields that would loosen the box --------------------------------------------
# mount_case NAME REASON_ERE JQ_FILTER: the valid bundle edited by JQ_FILTER is refused.
mount_case()
{
	fresh_bundle "$1"
	jq "$3" <<<"$VALID" >"$B/config.json"
	expect_refused "$1" "$2" "$B" create -b "$B"
}

# A second procfs: unmasked, with a writable /p2/sys/kernel/core_pattern and /p2/sysrq-trigger.
mount_case proc2 'mounts\[[0-9]+\] \(/p2\): a proc mount is allowed only at /proc' \
	'.mounts += [{destination: "/p2", type: "proc", source: "proc"}]'
mount_case sysfs2 'mounts\[[0-9]+\] \(/sys2\): a sysfs mount' \
	'.mounts += [{destination: "/sys2", type: "sysfs", source: "sysfs", options: ["ro"]}]'
# runc would remount the sysfs entry before it with these flags: read-write.
mount_case remount 'mounts\[[0-9]+\] \(/sys\): mount option "remount" is not allowed' \
	'.mounts += [{destination: "/sys", type: "tmpfs", source: "x",
		options: ["remount", "nosuid", "nodev", "noexec"]}]'
mount_case rrw '\(/data\): mount option "rrw" is not allowed' \
	'.mounts += [{destination: "/data", type: "tmpfs", source: "tmpfs", options: ["rrw"]}]'
mount_case tmpfsdata '\(/data\): mount option "size=1m,huge=always" is not allowed on a tmpfs' \
	'.mounts += [{destination: "/data", type: "tmpfs", source: "tmpfs", options: ["size=1m,huge=always"]}]'
# Every container's config.v2.json, hostconfig.json and logs, read-write.
mkdir -p "$WORK/engine/containers"
hezo_write_policy bundle '.mounts = {engineRoots: ["'"$WORK/engine/containers"'"]}'
mount_case enginedir '\(/dev/shm\): bind source .*/engine/containers is in an engine.s state' \
	'.mounts += [{destination: "/dev/shm", type: "bind", source: "'"$WORK/engine/containers"'",
		options: ["rbind", "rw"]}]'
hezo_write_policy bundle
# A refusal by a policy key names the key and the file it is in (README, "What the box is"), and
# the project's file too when the container has a project (its value may come from there).
mount_case hostroot "^hezo-shim: config\\.json: mounts\\[[0-9]+\\] \\(/host\\): bind source / is not under an allowed root \\(mounts\\.allowedSources in $HEZO_TEST_POLICY\\)\$" \
	'.mounts += [{destination: "/host", type: "bind", source: "/", options: ["rbind", "rw"]}]'
mkdir -p "$WORK/projects"
printf '{}\n' >"$WORK/projects/alpha.json"
hezo_write_policy bundle '.projectsDir = "'"$WORK/projects"'"'
fresh_bundle hostroot-project
jq '.mounts += [{destination: "/host", type: "bind", source: "/", options: ["rbind", "rw"]}]' \
	<<<"$VALID" >"$B/config.json"
expect_refused hostroot-project "\\(/host\\): bind source / is not under an allowed root \\(mounts\\.allowedSources in $HEZO_TEST_POLICY and $WORK/projects/alpha\\.json\\)\$" \
	"$B" --hezo-project alpha create -b "$B"
hezo_write_policy bundle
mount_case rlimitbogus 'process\.rlimits\[0\]\.type: unknown rlimit "RLIMIT_BOGUS"' \
	'.process.rlimits = [{type: "RLIMIT_BOGUS", hard: 1, soft: 1}]'

fresh_bundle huge "$BIG"
{
	printf '%s' "${VALID%\}*}"
	printf ', "annotations": {"pad": "'
	head -c $((100 * 1024 * 1024)) /dev/zero | tr '\0' a
	printf '"}}\n'
} >"$B/config.json"
diag "huge config.json: $(wc -c <"$B/config.json") bytes"
expect_refused huge 'config\.json' "$B" create -b "$B"
rm -f "$B/config.json"

fresh_bundle deep
{
	printf '{"ociVersion": "1.0.2", "x": '
	head -c 100000 /dev/zero | tr '\0' '['
} >"$B/config.json"
expect_refused deep 'config\.json' "$B" create -b "$B"

fresh_bundle deepwellformed
{
	printf '%s' "${VALID%\}*}"
	printf ', "x-hezo-deep": '
	head -c 100000 /dev/zero | tr '\0' '['
	head -c 100000 /dev/zero | tr '\0' ']'
	printf '}\n'
} >"$B/config.json"
expect_refused deepwellformed 'config\.json' "$B" create -b "$B"

# --- fields that point outside the box ------------------------------------------------------------
# bad_spec NAME REASON JQ_FILTER: a fresh bundle edited by JQ_FILTER must be refused for REASON.
bad_spec()
{
	fresh_bundle "$1"
	jq "$3" <<<"$VALID" >"$B/config.json" || bail_out "jq failed for $1"
	expect_refused "$1" "$2" "$B" create -b "$B"
}

# Namespaces other processes are in: a named netns with a process of no container in it, and the
# IPC and UTS namespaces of such a process.
FNS=hezo-bad-ns-$(hezo_rand)
ip netns add "$FNS" && tap_cleanup "ip netns del '$FNS'"
ip netns exec "$FNS" sleep 600 &
FPID_NET=$!
unshare --ipc --uts sleep 600 &
FPID_IPC=$!
tap_cleanup "kill $FPID_NET $FPID_IPC"
sleep 0.5
bad_spec nsnetforeign "linux\\.namespaces\\[[0-9]+\\] \\(network\\): path /run/netns/$FNS is a namespace that processes of no hezo-shim container are in \\(process $FPID_NET sleep" \
	'.linux.namespaces |= map(if .type == "network" then .path = "/run/netns/'"$FNS"'" else . end)'
bad_spec nsipcforeign "linux\\.namespaces\\[[0-9]+\\] \\(ipc\\): path /proc/$FPID_IPC/ns/ipc is a namespace that processes of no hezo-shim container are in" \
	'.linux.namespaces |= map(if .type == "ipc" then .path = "/proc/'"$FPID_IPC"'/ns/ipc" else . end)'
bad_spec nsutsforeign "linux\\.namespaces\\[[0-9]+\\] \\(uts\\): path /proc/$FPID_IPC/ns/uts is a namespace that processes" \
	'.linux.namespaces |= map(if .type == "uts" then .path = "/proc/'"$FPID_IPC"'/ns/uts" else . end)'
# The host's own namespaces by another name: the existing host rule.
bad_spec nshostpid "config\\.json: linux\\.namespaces: host pid namespace not allowed \\(namespaces\\.allowHost in $HEZO_TEST_POLICY\\)\$" \
	'.linux.namespaces |= map(if .type == "pid" then .path = "/proc/'"$$"'/ns/pid" else . end)'

# cgroupsPath: another cgroup, the root, a way up, a foreign parent, an existing busy cgroup.
bad_spec cgother 'linux\.cgroupsPath "/some-other-cgroup": the cgroup.s name is not the container.s ID in an engine.s form' \
	'.linux.cgroupsPath = "/some-other-cgroup"'
bad_spec cgroot 'linux\.cgroupsPath "/": not a clean absolute path' '.linux.cgroupsPath = "/"'
bad_spec cgdotdot 'linux\.cgroupsPath "/hezo-test/\.\./x": not a clean' '.linux.cgroupsPath = "/hezo-test/../x"'
BAD_ID=hezo-bad-cgparent-$(hezo_rand)
bad_spec cgparent "linux\\.cgroupsPath \"/user\\.slice/$BAD_ID\": parent /user\\.slice is not in the policy.s cgroupParents \\(cgroupParents in $HEZO_TEST_POLICY\\)\$" \
	".linux.cgroupsPath = \"/user.slice/$BAD_ID\""
BAD_ID=hezo-bad-cgbusy-$(hezo_rand)
BUSY=/sys/fs/cgroup/pids/hezo-test/$BAD_ID
mkdir -p "$BUSY" && tap_cleanup "rmdir '$BUSY'"
sleep 600 &
BUSY_PID=$!
echo "$BUSY_PID" >"$BUSY/cgroup.procs"
tap_cleanup "kill $BUSY_PID"
bad_spec cgbusy "linux\\.cgroupsPath \"/hezo-test/$BAD_ID\": the cgroup exists and has processes in it \\($BUSY/cgroup\\.procs\\)" \
	".linux.cgroupsPath = \"/hezo-test/$BAD_ID\""
echo "$BUSY_PID" >/sys/fs/cgroup/pids/cgroup.procs
# The red team's: a parent cgroup named like the ID, empty itself, with processes below it (as
# "/docker" for ID "docker" has every Docker container's); and a name that only contains the ID.
BAD_ID=hezo-bad-cgparentbusy-$(hezo_rand)
PBUSY=/sys/fs/cgroup/pids/hezo-test/$BAD_ID
mkdir -p "$PBUSY/child" && tap_cleanup "rmdir '$PBUSY/child' '$PBUSY'"
echo "$BUSY_PID" >"$PBUSY/child/cgroup.procs"
bad_spec cgparentbusy "linux\\.cgroupsPath \"/hezo-test/$BAD_ID\": the cgroup exists and has processes below it \\($PBUSY/child/cgroup\\.procs\\)" \
	".linux.cgroupsPath = \"/hezo-test/$BAD_ID\""
echo "$BUSY_PID" >/sys/fs/cgroup/pids/cgroup.procs
bad_spec cgcontains "linux\\.cgroupsPath \"/hezo-test/evil-$BAD_ID\": the cgroup.s name is not the container.s ID in an engine.s form" \
	".linux.cgroupsPath = \"/hezo-test/evil-$BAD_ID\""

# The path as the backend's cgroup driver reads it (red team pass 8, F3): without
# --systemd-cgroup runc and runsc make "slice:prefix:name" a cgroup below their own, outside
# cgroupParents; with it they read nothing else (this host's PID 1 is not systemd, so the systemd
# form itself cannot run here: only the refusal of the other pairing is shown).
BAD_ID=hezo-bad-cgsdform-$(hezo_rand)
bad_spec cgsdform "linux\\.cgroupsPath \"system\\.slice:docker:$BAD_ID\": the systemd form slice:prefix:name, but the backend is not given --systemd-cgroup" \
	".linux.cgroupsPath = \"system.slice:docker:$BAD_ID\""
BAD_ID=hezo-bad-cgsdflag-$(hezo_rand)
fresh_bundle cgsdflag
jq ".linux.cgroupsPath = \"/hezo-test/$BAD_ID\"" <<<"$VALID" >"$B/config.json" || bail_out "jq failed"
expect_refused cgsdflag "linux\\.cgroupsPath \"/hezo-test/$BAD_ID\": a path, but the backend is given --systemd-cgroup, under which it reads only slice:prefix:name" \
	"$B" --systemd-cgroup create -b "$B"
fresh_bundle cgsdflagrel
jq ".linux.cgroupsPath = \"hezo-test/$BAD_ID\"" <<<"$VALID" >"$B/config.json" || bail_out "jq failed"
expect_refused cgsdflagrel "linux\\.cgroupsPath \"hezo-test/$BAD_ID\": not a clean slice:prefix:name \\(with --systemd-cgroup\\)" \
	"$B" --systemd-cgroup=true create -b "$B"
# No nesting (F2): a cgroupParents entry as the leaf (Docker's /docker for ID docker would hold
# every later Docker container below this box's limits; here an entry of the test's own), and an
# existing empty cgroup with a cgroup below it (a parent, not a container's leftover leaf).
BAD_ID=hezo-bad-cgentry-$(hezo_rand)
hezo_write_policy bundle ".cgroupParents += [\"/hezo-test/$BAD_ID\"]"
bad_spec cgentry "linux\\.cgroupsPath \"/hezo-test/$BAD_ID\": /hezo-test/$BAD_ID is itself in the policy.s cgroupParents, where engines create their containers. cgroups" \
	".linux.cgroupsPath = \"/hezo-test/$BAD_ID\""
hezo_write_policy bundle
BAD_ID=hezo-bad-cgsub-$(hezo_rand)
SUBP=/sys/fs/cgroup/pids/hezo-test/$BAD_ID
mkdir -p "$SUBP/child" && tap_cleanup "rmdir '$SUBP/child' '$SUBP'"
bad_spec cgsub "linux\\.cgroupsPath \"/hezo-test/$BAD_ID\": the cgroup exists and has cgroups below it \\($SUBP/child\\): a parent, not a container.s" \
	".linux.cgroupsPath = \"/hezo-test/$BAD_ID\""
rmdir "$SUBP/child"
# ... while an empty leaf of its own name (runc's leftover after a stop) is reused.
fresh_bundle cgleaf
jq ".linux.cgroupsPath = \"/hezo-test/$BAD_ID\"" <<<"$VALID" >"$B/config.json" || bail_out "jq failed"
tap_cleanup "hezo_bundle_cleanup '$ROOT' '$BAD_ID'"
hezo_shim --root "$ROOT" run -b "$B" "$BAD_ID" >"$WORK/cgleaf.out" 2>"$WORK/cgleaf.err" </dev/null && rc=0 || rc=$?
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	# runsc sets its limits only in a cgroup it makes (red team pass 12, part N, H1).
	expect_ne "$rc" 0 "[cgleaf] under runsc an existing empty leaf is refused"
	expect_match "$(cat "$WORK/cgleaf.err")" "the cgroup $SUBP exists, and runsc sets its limits only in a cgroup it makes" \
		"[cgleaf] ... saying why"
else
	expect_eq "$rc" 0 "[cgleaf] an existing empty leaf named for the container is taken" || diag "$(cat "$WORK/cgleaf.err")"
fi
hezo_bundle_cleanup "$ROOT" "$BAD_ID"
unset BAD_ID

# root.path: the host's /, another bundle's rootfs, a symlink out of the bundle.
bad_spec roothost 'root\.path /: neither inside the bundle nor the engine.s root filesystem' '.root.path = "/"'
bad_spec rootother "root\\.path $TEMPLATE/rootfs: neither inside the bundle" ".root.path = \"$TEMPLATE/rootfs\""
fresh_bundle rootlink
ln -s "$TEMPLATE/rootfs" "$B/escape"
jq '.root.path = "escape"' <<<"$VALID" >"$B/config.json"
expect_refused rootlink "root\\.path escape resolves to $TEMPLATE/rootfs: neither inside the bundle" "$B" create -b "$B"

# hooks: host root with every capability, in every stage; Docker's hook only from dockerd.
for stage in prestart createRuntime createContainer startContainer poststart poststop; do
	bad_spec "hook-$stage" "hooks\\.$stage\\[0\\] \\(\"/bin/sh\"\\): hooks run on the host as root.* \\(allowedHooks in $HEZO_TEST_POLICY\\)\$" \
		".hooks.$stage = [{path: \"/bin/sh\", args: [\"sh\", \"-c\", \"touch $WORK/pwned\"]}]"
done
bad_spec hook-setkey-fake 'hooks\.prestart\[0\] \("/proc/self/exe"\)' \
	'.hooks.prestart = [{path: "/proc/self/exe", args: ["libnetwork-setkey", "-exec-root=/var/run/docker", "x", "y"]}]'
# The red team's: nobody's copy of bash named dockerd, running as nobody, its pid in the hook's
# path and the container's ID somewhere in the arguments; then the same binary in Docker's exact
# argument shape (it is still not the dockerd of /var/run/docker.pid, nor root's file).
FAKE=$BIG/nobody
mkdir -p "$FAKE" && chmod 0711 "$BIG" && chmod 0755 "$FAKE"
cp "$(command -v bash)" "$FAKE/dockerd" && mkfifo "$FAKE/fifo" &&
	chown 65534:65534 "$FAKE/dockerd" "$FAKE/fifo"
# bash itself waits (no child it could exec into), so /proc/PID/exe stays this dockerd.
setpriv --reuid=65534 --regid=65534 --clear-groups "$FAKE/dockerd" \
	-c 'read -r -t 600 x <>"$0"' "$FAKE/fifo" &
FAKE_PID=$!
tap_cleanup "kill $FAKE_PID"
sleep 0.3
BAD_ID=hezo-bad-setkey-$(hezo_rand) bad_spec hook-setkey-nobody \
	"hooks\\.prestart\\[0\\] \\(\"/proc/$FAKE_PID/exe\"\\): hooks run on the host as root" \
	'.hooks.prestart = [{path: "/proc/'"$FAKE_PID"'/exe", args: ["libnetwork-setkey", "-c", "touch '"$WORK"'/pwned", env.BAD_ID]}]'
BAD_ID=hezo-bad-setkey-$(hezo_rand) bad_spec hook-setkey-shape \
	"hooks\\.prestart\\[0\\] \\(\"/proc/$FAKE_PID/exe\"\\)" \
	'.hooks.prestart = [{path: "/proc/'"$FAKE_PID"'/exe", args: ["libnetwork-setkey", "-exec-root=/var/run/docker", env.BAD_ID, "8d713b06a5d8"]}]'
check_fails "[hooks] no hook ran" test -e "$WORK/pwned"

# --- bundle and verb ------------------------------------------------------------------------------
expect_refused nobundle 'nonexistent' "$WORK" create -b "$WORK/nonexistent"

mkdir -p "$WORK/noconfig"
expect_refused noconfig 'config\.json' "$WORK/noconfig" create -b "$WORK/noconfig"

expect_refused unknownverb 'frobnicate' "$WORK" frobnicate

# --- global flags, CRIU and inherited descriptors (red team pass 4, F3) ---------------------------
# A global flag the shim does not know would follow the policy's own on the backend's command line
# and override them (runsc: --oci-seccomp=false, --ignore-cgroups, --allow-flag-override).
for gflag in --oci-seccomp=false --ignore-cgroups --allow-flag-override --network=host --debug-log=/tmp/x; do
	fresh_bundle "gflag${gflag%%=*}"
	expect_refused "gflag${gflag%%=*}" "global flag \"$gflag\" is not handed to the backend through hezo-shim" \
		"$B" "$gflag" run -b "$B"
done
# CRIU runs as root on the host and restores credentials and seccomp from the caller's image.
fresh_bundle criu
expect_refused criu 'global flag --criu: CRIU runs as root outside the box' "$B" --criu /bin/true create -b "$B"
expect_refused checkpoint 'command "checkpoint" is not allowed through hezo-shim' "$WORK" checkpoint --image-path "$WORK/img"
fresh_bundle restore
expect_refused restore 'command "restore" is not allowed through hezo-shim' "$B" restore --image-path "$WORK/img" -b "$B"
# --preserve-fds: the caller's descriptors are not handed on. runc puts LISTEN_FDS's first and the
# N after them (3+L..2+L+N), fills a slot left closed with its own (an O_PATH of /sys/fs/cgroup),
# and a directory, file or socket of the host's reaches past every rule (red team passes 4, 5, 7).
PFD_WHY='--preserve-fds "[^"]*": the caller.s descriptors are not handed to the box'
fresh_bundle pfd-dir
exec 3</
expect_refused pfd-dir "$PFD_WHY" "$B" run --preserve-fds 1 -b "$B"
expect_refused pfd-exec "$PFD_WHY" "$WORK" exec --preserve-fds 1
fresh_bundle pfd-hex
expect_refused pfd-hex '--preserve-fds "0x1": the caller.s descriptors' "$B" run --preserve-fds 0x1 -b "$B"
exec 3<&-
fresh_bundle pfd-closed
expect_refused pfd-closed "$PFD_WHY" "$B" create --preserve-fds=1 -b "$B"
fresh_bundle pfd-pipe
exec 3< <(sleep 30)
expect_refused pfd-pipe "$PFD_WHY" "$B" run --preserve-fds 1 -b "$B"
exec 3<&-
# systemd's LISTEN_FDS never reach runc, which would hand those descriptors to the box: with
# LISTEN_PID the shim's own pid (it execs runc in place for run) and fd 3 the host's /, the box
# sees no fd 3.
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	fresh_bundle pfd-listen
	jq -c '.process.args = ["sh", "-c", "if [ -e /proc/self/fd/3 ]; then echo LEAK; else echo none; fi"]' \
		"$B/config.json" >"$B/c" && mv "$B/c" "$B/config.json"
	pfd_listen=hezo-bad-pfdlisten-$(hezo_rand)
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$pfd_listen'"
	out=$(HEZO_POLICY="$HEZO_TEST_POLICY" HEZO_STATE_DIR="$HEZO_TEST_STATE" HEZO_HOOK_PATH="$HEZO_HOOK_BIN" \
		timeout 120 bash -c 'exec 3</; LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" --root "$1" run -b "$2" "$3"' \
		"$HEZO_SHIM_BIN" "$ROOT" "$B" "$pfd_listen" 2>"$WORK/pfd-listen.err" </dev/null) && rc=0 || rc=$?
	expect_eq "$rc:$out" "0:none" "[pfd-listen] LISTEN_FDS's descriptor is not handed to the box" ||
		diag "$(head -c 2000 "$WORK/pfd-listen.err")"
	hezo_bundle_cleanup "$ROOT" "$pfd_listen"
else
	skip "[pfd-listen] LISTEN_FDS's descriptor is not handed to the box" "runsc reads no LISTEN_FDS"
fi
# runc hands the caller's stdio to the box as it is for create, run -d and exec -d: a directory
# there opens the host's tree, a network socket stays in the caller's namespace (pass 7, F4).
# stdio_case NAME SETUP WANT: run `create` with stdio set up by SETUP (bash redirections).
stdio_case()
{
	local name=$1 setup=$2 want=$3 id rc
	id=hezo-bad-stdio-$1-$(hezo_rand)
	fresh_bundle "stdio-$name"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$id'"
	HEZO_POLICY="$HEZO_TEST_POLICY" HEZO_STATE_DIR="$HEZO_TEST_STATE" HEZO_HOOK_PATH="$HEZO_HOOK_BIN" \
		WORK="$WORK" timeout 60 bash -c "$setup"' exec "$0" --root "$1" create -b "$2" "$3"' \
		"$HEZO_SHIM_BIN" "$ROOT" "$B" "$id" 2>"$WORK/stdio-$name.err" && rc=0 || rc=$?
	expect_ne "$rc" 0 "[stdio $name] create is refused"
	expect_eq "$(cat "$WORK/stdio-$name.err")" "hezo-shim: $want" "[stdio $name] one line naming the descriptor"
	expect_eq "$(hezo_backend_ids "$ROOT" | grep -cxF "$id")" 0 "[stdio $name] no container left"
	hezo_bundle_cleanup "$ROOT" "$id"
}
new_hint="which must not reach the box (give it a pipe or /dev/null, e.g. cat FILE | hezo-shim ...)"
stdio_case dir 'exec 0</ >/dev/null;' \
	"standard input (fd 0) is a directory, which must not reach the box (give it a pipe or /dev/null, e.g. cat FILE | hezo-shim ...)"
stdio_case socket 'exec >/dev/null; exec python3 -c "import os, socket, sys; s = socket.socket(); os.dup2(s.fileno(), 1); os.execvp(sys.argv[1], sys.argv[1:])" "$0" --root "$1" create -b "$2" "$3" </dev/null;' \
	"standard output (fd 1) is a network socket of the caller's namespace, which must not reach the box (give it a pipe or /dev/null, e.g. cat FILE | hezo-shim ...)"
stdio_case closed 'exec 0<&- >/dev/null;' \
	"standard input (fd 0) is closed, which must not reach the box (give it a pipe or /dev/null, e.g. cat FILE | hezo-shim ...)"
# Red team pass 8, F2: a local socket connected to a host daemon's named (or an abstract)
# listening socket lets the box drive that daemon (docker.sock); a socketpair's peer is unnamed.
# stdio-sock.py MODE ADDR CMD...: fd 0 becomes a socket connected to a listener at ADDR (a path,
# or an abstract name), or one end of a socketpair (MODE pair); a child holds the other end until
# it reads EOF (at most 120 s), so the peer lives as long as the shim or the box holds fd 0.
cat >"$WORK/stdio-sock.py" <<'PY'
import os, signal, socket, sys
mode, addr = sys.argv[1], sys.argv[2]
if mode == "pair":
    s, other = socket.socketpair()
else:
    name = "\0" + addr if mode == "abstract" else addr
    other = socket.socket(socket.AF_UNIX)
    other.bind(name)
    other.listen(1)
if os.fork() == 0:
    signal.alarm(120)
    if mode == "pair":
        s.close()
        c = other
    else:
        c = other.accept()[0]
    while c.recv(4096):
        pass
    os._exit(0)
if mode != "pair":
    other.close()
    s = socket.socket(socket.AF_UNIX)
    s.connect(name)
else:
    other.close()
os.dup2(s.fileno(), 0)
os.execvp(sys.argv[3], sys.argv[3:])
PY
stdio_case named-peer 'exec >/dev/null; exec python3 "$WORK/stdio-sock.py" named "$WORK/daemon.sock" "$0" --root "$1" create -b "$2" "$3";' \
	"standard input (fd 0) is a socket connected to the named socket $WORK/daemon.sock, $new_hint"
# Red team pass 8, F7: even a socketpair's peer (unnamed) can pass the box descriptors through
# it (SCM_RIGHTS): a directory fd of the host's / sent down fd 0 gave the box the host's files.
stdio_case socketpair 'exec >/dev/null; exec python3 "$WORK/stdio-sock.py" pair - "$0" --root "$1" create -b "$2" "$3";' \
	"standard input (fd 0) is a socket, whose peer could pass the box descriptors of the host's, $new_hint"
stdio_case abstract-peer 'exec >/dev/null; exec python3 "$WORK/stdio-sock.py" abstract "hezo-test-stdio-$$" "$0" --root "$1" create -b "$2" "$3";' \
	"standard input (fd 0) is a socket connected to an abstract socket, $new_hint"
# Red team pass 8, F5 (b): a character device other than /dev/null (a tty, /dev/kvm, /dev/kmsg)
# is one the box's device cgroup would never let it open.
stdio_case chardev 'exec 0</dev/zero >/dev/null;' \
	"standard input (fd 0) is a character device (1:5), $new_hint"
# A regular file: runc hands it to the box as it is, but the box is in a user namespace of its
# own, so it reopens it through /proc/self/fd only as far as the file's mode lets others (F5 (a));
# runsc's sentry holds the host descriptor. The test's files are root's, 0644 or 0600 as set here.
echo "host original" >"$WORK/stdio-ro.txt"
chmod 0644 "$WORK/stdio-ro.txt"

# stdio_ok NAME SETUP: `create` with stdio set up by SETUP is accepted (what engines pass);
# stderr is a pipe (a regular file would be refused under runc).
stdio_ok()
{
	local name=$1 setup=$2 id rc
	id=hezo-bad-stdio-$1-$(hezo_rand)
	fresh_bundle "stdio-$name"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$id'"
	HEZO_POLICY="$HEZO_TEST_POLICY" HEZO_STATE_DIR="$HEZO_TEST_STATE" HEZO_HOOK_PATH="$HEZO_HOOK_BIN" \
		WORK="$WORK" timeout 60 bash -c "$setup"' exec "$0" --root "$1" create -b "$2" "$3"' \
		"$HEZO_SHIM_BIN" "$ROOT" "$B" "$id" 2> >(cat >"$WORK/stdio-$name.err") && rc=0 || rc=$?
	expect_eq "$rc" 0 "[stdio $name] create is accepted" || diag "$(head -c 2000 "$WORK/stdio-$name.err")"
	expect_eq "$(hezo_backend_ids "$ROOT" | grep -cxF "$id")" 1 "[stdio $name] the container exists"
	hezo_bundle_cleanup "$ROOT" "$id"
}
stdio_ok devnull 'exec 0</dev/null >/dev/null;'
stdio_ok fifo 'mkfifo "$WORK/stdio-fifo"; exec 0<>"$WORK/stdio-fifo" >/dev/null;'
stdio_ok file 'exec 0<"$WORK/stdio-ro.txt" >/dev/null;'

# The box's own proof (F5 (a)): with a read-only host file as stdin of run -d, it writes through
# /proc/self/fd/0. Accepted; the write fails (runc: the box's root is not the file's owner in
# its user namespace; runsc: the sentry's descriptor).
fresh_bundle stdio-ro-write
jq -c '.process.args = ["sh", "-c", "echo written-by-box >/proc/self/fd/0; sleep 30"]' \
	"$B/config.json" >"$B/c" && mv "$B/c" "$B/config.json"
ro_id=hezo-bad-stdio-ro-$(hezo_rand)
tap_cleanup "hezo_bundle_cleanup '$ROOT' '$ro_id'"
hezo_shim --root "$ROOT" run -d -b "$B" "$ro_id" <"$WORK/stdio-ro.txt" >/dev/null 2>"$WORK/stdio-ro.err" && rc=0 || rc=$?
expect_eq "$rc" 0 "[stdio ro-write] run -d with a host file as stdin is accepted" ||
	diag "$(head -c 2000 "$WORK/stdio-ro.err")"
sleep 3
expect_eq "$(cat "$WORK/stdio-ro.txt")" "host original" "[stdio ro-write] the box could not write the read-only host file"
hezo_bundle_cleanup "$ROOT" "$ro_id"

# A regular file of root's, mode 0600, as stdout of create and of run -d: accepted (the OCI
# validation suite hands files), and the box cannot reopen it through /proc/self/fd for reading.
# The box writes its verdict into the file itself; the test waits for that line, not for a time.
stdio_out_case()
{
	local how=$1 id rc out=$WORK/stdio-out-$1.txt
	id=hezo-bad-stdio-out-$1-$(hezo_rand)
	fresh_bundle "stdio-out-$how"
	jq -c '.process.args = ["sh", "-c", "if (exec 3</proc/self/fd/1) 2>/dev/null; then echo reopen-read=yes; else echo reopen-read=no; fi; sleep 60"]' \
		"$B/config.json" >"$B/c" && mv "$B/c" "$B/config.json"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$id'"
	: >"$out"
	chmod 0600 "$out"
	if [ "$how" = create ]; then
		hezo_shim --root "$ROOT" create -b "$B" "$id" </dev/null >"$out" 2> >(cat >"$WORK/stdio-out-$how.err") &&
			hezo_shim --root "$ROOT" start "$id" </dev/null >/dev/null 2>>"$WORK/stdio-out-$how.start" && rc=0 || rc=$?
	else
		hezo_shim --root "$ROOT" run -d -b "$B" "$id" </dev/null >"$out" 2> >(cat >"$WORK/stdio-out-$how.err") && rc=0 || rc=$?
	fi
	expect_eq "$rc" 0 "[stdio out-$how] a regular file as stdout of $how is accepted" ||
		diag "$(head -c 2000 "$WORK/stdio-out-$how.err")"
	for _ in $(seq 300); do
		grep -q '^reopen-read=' "$out" && break
		[ "$(hezo_backend --root "$ROOT" state "$id" 2>/dev/null | jq -r '.status')" = running ] || break
		sleep 0.1
	done
	if [ "$HEZO_TEST_BACKEND" = runc ]; then
		expect_eq "$(grep '^reopen-read=' "$out")" reopen-read=no \
			"[stdio out-$how] the box cannot reopen it through /proc/self/fd/1 for reading"
	else
		# runsc's Sentry answers the reopen itself (measured: it opens); open in
		# docs/hardening.md until it is shown what such a descriptor reads.
		diag "[stdio out-$how] runsc: $(grep '^reopen-read=' "$out")"
	fi
	hezo_bundle_cleanup "$ROOT" "$id"
}
stdio_out_case create
stdio_out_case run-d

# A regular file as stdout of a foreground run is what a caller does (runc copies through its
# own pipes; runsc's sentry writes the descriptor): accepted, and the output lands in it.
fresh_bundle stdio-fg-file
jq -c '.process.args = ["echo", "out-of-the-box"]' "$B/config.json" >"$B/c" && mv "$B/c" "$B/config.json"
fg_id=hezo-bad-stdio-fg-$(hezo_rand)
tap_cleanup "hezo_bundle_cleanup '$ROOT' '$fg_id'"
hezo_shim --root "$ROOT" run -b "$B" "$fg_id" </dev/null >"$WORK/stdio-fg.out" 2>"$WORK/stdio-fg.err" && rc=0 || rc=$?
expect_eq "$rc:$(cat "$WORK/stdio-fg.out")" "0:out-of-the-box" "[stdio fg-file] a foreground run writes its output to a regular file" ||
	diag "$(head -c 2000 "$WORK/stdio-fg.err")"
hezo_bundle_cleanup "$ROOT" "$fg_id"

# runc's nsexec acts on _LIBCONTAINER_* before its command line (`_LIBCONTAINER_INITPIPE=99 runc
# --version` fails: "could not inform the parent"): the caller's never reach the backend.
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	fresh_bundle libcontainer-env
	env_id=hezo-bad-lcenv-$(hezo_rand)
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$env_id'"
	_LIBCONTAINER_INITPIPE=99 _LIBCONTAINER_STATEDIR=/tmp hezo_shim --root "$ROOT" run -b "$B" "$env_id" \
		>"$WORK/lcenv.out" 2>"$WORK/lcenv.err" </dev/null && rc=0 || rc=$?
	expect_eq "$rc" 0 "[libcontainer-env] the caller's _LIBCONTAINER_* do not reach runc" ||
		diag "$(head -c 2000 "$WORK/lcenv.err")"
	hezo_bundle_cleanup "$ROOT" "$env_id"
else
	skip "[libcontainer-env] the caller's _LIBCONTAINER_* do not reach runc" "runsc has no nsexec"
fi
# runc joins exec --cgroup SUB after a string-prefix test only (red team pass 5, F4).
expect_refused exec-cgroup '--cgroup is not allowed' "$WORK" exec --cgroup ../elsewhere
# The admin's wrapper gives --hezo-project first; a caller's second one must not win (pass 5, F5).
fresh_bundle project-twice
expect_refused project-twice '--hezo-project given twice \("beta", then "alpha"\)' "$B" --hezo-project beta --hezo-project=alpha run -b "$B"

# --- broken policy ----------------------------------------------------------------------------------
policy_case()
{
	local name=$1 reason=$2
	fresh_bundle "$name"
	expect_refused "$name" "$reason" "$B" create -b "$B"
	hezo_write_policy bundle
}

printf '{"version": 1, "mode": ' >"$HEZO_TEST_POLICY"
policy_case policy-notjson "$HEZO_TEST_POLICY"

hezo_write_policy bundle '. + {bogusKey: true}'
policy_case policy-unknownkey "$HEZO_TEST_POLICY.*bogusKey"

hezo_write_policy bundle '.resources = {memory: "2 GB"}'
policy_case policy-badsize "$HEZO_TEST_POLICY.*resources\\.memory"

hezo_write_policy bundle '.resources = {pids: "many"}'
policy_case policy-badtype "$HEZO_TEST_POLICY.*resources\\.pids"

rm -f "$HEZO_TEST_POLICY"
policy_case policy-missing "$HEZO_TEST_POLICY"

: >"$HEZO_TEST_POLICY"
policy_case policy-empty "$HEZO_TEST_POLICY"

# --- key spelling: keys runc's Go decoder folds onto a spec field ----------------------------------
# encoding/json matches keys case-insensitively (and U+017F, U+212A) with the later one winning;
# the shim reads exact keys only. Each document must be refused naming the key (docs/policy.md).
KEY_EVIL_PROC='{capabilities: {bounding: ["CAP_SYS_ADMIN"], effective: ["CAP_SYS_ADMIN"],
	permitted: ["CAP_SYS_ADMIN"]}, noNewPrivileges: false}'
fresh_bundle key-Process
jq ". + {Process: (.process + $KEY_EVIL_PROC)}" <<<"$VALID" >"$B/config.json"
expect_refused key-Process '"Process": differs from the spec.s field "process" only in case' \
	"$B" create -b "$B"
fresh_bundle key-Process-run
jq ". + {Process: (.process + $KEY_EVIL_PROC)}" <<<"$VALID" >"$B/config.json"
expect_refused key-Process-run '"Process": differs from the spec.s field "process"' "$B" run -b "$B"
fresh_bundle key-Mounts
jq '. + {Mounts: (.mounts + [{destination: "/host", type: "bind", source: "/",
	options: ["rbind", "ro"]}])}' <<<"$VALID" >"$B/config.json"
expect_refused key-Mounts '"Mounts": differs from the spec.s field "mounts"' "$B" create -b "$B"
fresh_bundle key-Linux
jq '. + {Linux: (.linux + {namespaces: [{type: "mount"}, {type: "network"}], seccomp: null})}' \
	<<<"$VALID" >"$B/config.json"
expect_refused key-Linux '"Linux": differs from the spec.s field "linux"' "$B" create -b "$B"
fresh_bundle key-long-s
jq ". + {\"proce\u017fs\": (.process + $KEY_EVIL_PROC)}" <<<"$VALID" >"$B/config.json"
expect_refused key-long-s 'differs from the spec.s field "process"' "$B" create -b "$B"

# exec --process and update --resources need a container: one that runs, from the same keys
# spelled exactly (which must still work).
KEY_ID="hezo-bad-keys-$(hezo_rand)"
tap_cleanup "hezo_bundle_cleanup '$ROOT' '$KEY_ID'"
KB=$WORK/keys-live
hezo_make_bundle "$KB" "$KEY_ID" '["sleep", "600"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$KB" "$KEY_ID" > >(cat >"$WORK/keys-live.out") 2> >(cat >"$WORK/keys-live.err") \
	</dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[keys] the same keys spelled exactly: create works" ||
	diag "$(head -c 2000 "$WORK/keys-live.err")"
check "[keys] start" hezo_shim --root "$ROOT" start "$KEY_ID"
hezo_wait_status "$ROOT" "$KEY_ID" running 20 ||
	not_ok "[keys] container running (status $(hezo_backend_status "$ROOT" "$KEY_ID"))"
# exec hands stdio on as create does: exec -d (and, under runsc, the foreground exec) gets the
# caller's descriptors; runc's foreground exec copies through its own pipes.
hezo_shim --root "$ROOT" exec -d "$KEY_ID" true </dev/zero >/dev/null 2>"$WORK/stdio-exec-d.err" && rc=0 || rc=$?
expect_eq "$rc:$(cat "$WORK/stdio-exec-d.err")" "1:hezo-shim: standard input (fd 0) is a character device (1:5), $new_hint" \
	"[stdio exec-d] exec -d with /dev/zero as stdin is refused"
printf '{"args": ["true"], "cwd": "/", "env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0}}\n' >"$WORK/stdio-exec-p.json"
hezo_shim --root "$ROOT" exec -d --process "$WORK/stdio-exec-p.json" "$KEY_ID" </dev/zero >/dev/null 2>"$WORK/stdio-exec-p.err" && rc=0 || rc=$?
expect_eq "$rc:$(cat "$WORK/stdio-exec-p.err")" "1:hezo-shim: standard input (fd 0) is a character device (1:5), $new_hint" \
	"[stdio exec-process] exec -d --process with /dev/zero as stdin is refused"
hezo_shim --root "$ROOT" exec "$KEY_ID" true </dev/zero >/dev/null 2>"$WORK/stdio-exec-fg.err" && rc=0 || rc=$?
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	expect_eq "$rc" 0 "[stdio exec-fg] a foreground exec copies /dev/zero (runc's pipes): accepted" ||
		diag "$(head -c 2000 "$WORK/stdio-exec-fg.err")"
else
	expect_eq "$rc:$(cat "$WORK/stdio-exec-fg.err")" "1:hezo-shim: standard input (fd 0) is a character device (1:5), $new_hint" \
		"[stdio exec-fg] runsc hands a foreground exec's stdio on too: /dev/zero is refused"
fi

# expect_key_refused NAME REASON_ERE FILE SHIM_ARGS...: one line naming the key, FILE unchanged.
expect_key_refused()
{
	local name=$1 reason=$2 file=$3 rc
	shift 3
	cp "$file" "$WORK/$name.orig"
	hezo_shim --root "$ROOT" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" </dev/null &&
		rc=0 || rc=$?
	expect_ne "$rc" 0 "[$name] non-zero exit"
	expect_eq "$(wc -l <"$WORK/$name.err" | tr -d ' ')" 1 "[$name] exactly one line on stderr" ||
		diag "$(head -c 2000 "$WORK/$name.err")"
	expect_match "$(head -n 1 "$WORK/$name.err")" "^hezo-shim: .*$reason" \
		"[$name] the line names the key: /$reason/"
	expect_eq "$(wc -c <"$WORK/$name.out" | tr -d ' ')" 0 "[$name] nothing on stdout (nothing ran)"
	check "[$name] the document is unchanged" cmp "$WORK/$name.orig" "$file"
}

KP=$WORK/keys-proc.json
jq -n '{user: {uid: 0, gid: 0}, args: ["echo", "ran"], env: ["PATH=/bin"], cwd: "/",
	capabilities: {bounding: [], effective: [], permitted: []}, noNewPrivileges: true,
	Capabilities: {bounding: ["CAP_SYS_ADMIN"], effective: ["CAP_SYS_ADMIN"],
		permitted: ["CAP_SYS_ADMIN"]}, NoNewPrivileges: false}' >"$KP"
expect_key_refused exec-Capabilities \
	'process: "Capabilities": differs from the spec.s field "capabilities"' "$KP" \
	exec --process "$KP" "$KEY_ID"
jq -n '{user: {uid: 0, gid: 0}, args: ["echo", "ran"], env: ["PATH=/bin"], cwd: "/",
	noNewPrivileges: true, NoNewPrivileges: false}' >"$KP"
expect_key_refused exec-NoNewPrivileges \
	'process: "NoNewPrivileges": differs from the spec.s field "noNewPrivileges"' "$KP" \
	exec --process "$KP" "$KEY_ID"
jq -n '{user: {uid: 0, gid: 0}, args: ["echo", "ran"], env: ["PATH=/bin"], cwd: "/",
	capabilities: {bounding: [], effective: [], permitted: []}, noNewPrivileges: true}' >"$KP"
out=$(hezo_shim --root "$ROOT" exec --process "$KP" "$KEY_ID" 2>"$WORK/keys-exec.err" </dev/null)
expect_eq "$out" ran "[keys] exec --process with the keys spelled exactly works" ||
	diag "$(head -c 2000 "$WORK/keys-exec.err")"

# The container's limits, as the host's cgroups hold them.
key_limits()
{
	local p=/hezo-test/$KEY_ID
	echo "mem=$(hezo_read "$(hezo_cgroup_dir memory "$p")/memory.limit_in_bytes")" \
		"memsw=$(hezo_read "$(hezo_cgroup_dir memory "$p")/memory.memsw.limit_in_bytes")" \
		"pids=$(hezo_read "$(hezo_cgroup_dir pids "$p")/pids.max")" \
		"quota=$(hezo_read "$(hezo_cgroup_dir cpu "$p")/cpu.cfs_quota_us")"
}
before=$(key_limits)
diag "limits before: $before"
KR=$WORK/keys-res.json
echo '{"Memory": {"limit": 8589934592, "swap": -1}, "Pids": {"limit": -1}, "CPU": {"quota": -1}}' >"$KR"
expect_key_refused update-Memory 'resources: "Memory": differs from the spec.s field "memory"' \
	"$KR" update --resources "$KR" "$KEY_ID"
echo '{"memory": {"limit": 268435456, "Limit": 8589934592}, "pids": {"limit": 64, "LIMIT": -1}}' >"$KR"
expect_key_refused update-Limit 'resources: memory."Limit": differs from the spec.s field "limit"' \
	"$KR" update --resources "$KR" "$KEY_ID"
# Intel RDT by update's flags, refused in config.json (red team pass 12, part Q2).
expect_key_refused update-l3 'update --l3-cache-schema: Intel RDT is not allowed' \
	"$KR" update --l3-cache-schema 'L3:0=ff' "$KEY_ID"
expect_key_refused update-mb 'update --mem-bw-schema: Intel RDT is not allowed' \
	"$KR" update --mem-bw-schema 'MB:0=50' "$KEY_ID"
expect_eq "$(key_limits)" "$before" "[keys] limits unchanged after the refused updates"
echo '{"memory": {"limit": 268435456, "swap": 268435456}}' >"$KR"
check "[keys] update --resources with the keys spelled exactly works" \
	hezo_shim --root "$ROOT" update --resources "$KR" "$KEY_ID"
expect_match "$(key_limits)" '^mem=268435456 ' "[keys] and the memory limit is 256 MiB now"
check "[keys] delete --force" hezo_shim --root "$ROOT" delete --force "$KEY_ID"
expect_eq "$(hezo_backend_status "$ROOT" "$KEY_ID")" absent "[keys] container removed"
expect_eq "$(hezo_state_records "$KEY_ID")" "" "[keys] state record removed"

# --- nothing left behind ----------------------------------------------------------------------------
expect_eq "$(hezo_backend_ids "$ROOT" | grep -F hezo-bad- || true)" "" "no test container left under --root"

tap_done

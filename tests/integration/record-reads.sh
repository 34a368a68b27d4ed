#!/bin/bash
# Integration: a create reads each live record of other containers once, however many times its
# checks walk the records (two judgements, the uid ranges, admission): with 50 live boxes of other
# projects recorded, it opens no more record files than there are (issue 31). Once a create has
# indexed them (STATE/.records.index), the next opens none of them, and a record it knows only
# from the index still refuses a cgroup that nests with its box's. Counts, not times.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"

hezo_require_root
hezo_require_tools jq strace sleep "$HEZO_BUSYBOX"
hezo_require_shim

N=50
WORK=$(mktemp -d /tmp/hezo-record-reads.XXXXXX)
tap_cleanup "rm -rf '$WORK'"
STATE=$WORK/state
# The shim's records are its own here: a private state directory, not the suite's.
mkdir -p "$STATE" "$WORK/root" "$WORK/engine" || bail_out "cannot make $WORK"

# A bundle inside a containerd task directory under an engine root of the policy's, as
# Docker's are; the backend is /bin/true, so create does all its own work and makes nothing.
ID=hezo-it-reads-$(hezo_rand)
B=$WORK/engine/io.containerd.runtime.v2.task/moby/$ID
mkdir -p "$B" || bail_out "cannot make $B"
# The backend is /bin/true: the memory cgroup the shim makes for TCP accounting stays behind.
tap_cleanup "rmdir /sys/fs/cgroup/*/docker/'$ID' 2>/dev/null"
hezo_busybox_rootfs "$B/rootfs" >/dev/null || bail_out "no busybox rootfs"
# Docker's own config.json (tests/data), its container files made real under the engine root.
E=$WORK/engine/$ID
mkdir -p "$E" && touch "$E/resolv.conf" "$E/hostname" "$E/hosts" || bail_out "cannot make $E"
jq --arg e "$E" --arg cg "/docker/$ID" \
	'(.mounts[] | select(.source | startswith("/var/lib/docker/containers/")) | .source) |=
	($e + "/" + (split("/") | last)) | .root.path = "rootfs" | .linux.cgroupsPath = $cg
	| del(.hooks)' "$HEZO_SOURCE_DIR/tests/data/config-docker.json" >"$B/config.json" ||
	bail_out "cannot write config.json"
jq -n --arg e "$WORK/engine" '{version: 1, mode: "dev", backend: "runc",
	allowBackends: ["runc"], egress: {mode: "off"}, backends: {runc: {path: "/bin/true"}},
	mounts: {engineRoots: [$e]}}' >"$WORK/policy.json" || bail_out "cannot write the policy"
shim() { env HEZO_POLICY="$WORK/policy.json" HEZO_STATE_DIR="$STATE" "$HEZO_SHIM_BIN" "$@"; }

# The other boxes: records of other IDs and projects, alive by a process in their cgroup (one
# sleeper holds the cgroup they all name), each with a uid range of its own.
CG=/sys/fs/cgroup/pids/hezo-it-reads-$$
mkdir -p "$CG" || bail_out "cannot make $CG"
sleep 600 &
SLEEPER=$!
tap_cleanup "kill $SLEEPER; wait $SLEEPER; rmdir '$CG'"
echo "$SLEEPER" >"$CG/cgroup.procs" || bail_out "cannot move the sleeper into $CG"
KEY=$(
	shim --root "$WORK/root" create -b "$B" "$ID" >/dev/null 2>"$WORK/first.err" &&
		basename "$(dirname "$(ls "$STATE"/*/"$ID".json)")"
) || bail_out "the first create failed: $(cat "$WORK/first.err")"
REC=$STATE/$KEY/$ID.json
for ((i = 0; i < N; i++)); do
	jq --arg id "other-$i" --arg p "p$i" --arg cg "/hezo-it-reads-$$" --argjson k "$i" \
		'.id = $id | .project = $p | .cgroupsPath = $cg | .handed = []
		| .userns.base = (.userns.base + 65536 * ($k + 1))' "$REC" >"$STATE/$KEY/other-$i.json" ||
		bail_out "cannot write record other-$i"
done
rm -f "$REC"
diag "$N records of other live boxes in $STATE/$KEY, their cgroup $CG holds pid $SLEEPER"

# The same create again with the others present (leak-checked under ASan), then once more with
# every open traced (LeakSanitizer cannot run under ptrace).
shim --root "$WORK/root" create -b "$B" "$ID" >/dev/null 2>"$WORK/second.err" &&
	ok "create with $N live records of others present succeeds" ||
	{ not_ok "create with $N live records of others present succeeds"; diag "$(cat "$WORK/second.err")"; }
rm -f "$REC"
strace -f -qq -e trace=open,openat,openat2 -o "$WORK/trace" \
	env ASAN_OPTIONS=detect_leaks=0 HEZO_POLICY="$WORK/policy.json" HEZO_STATE_DIR="$STATE" \
	"$HEZO_SHIM_BIN" --root "$WORK/root" create -b "$B" "$ID" >/dev/null 2>"$WORK/third.err" ||
	diag "the traced create failed: $(cat "$WORK/third.err")"
# openat(dirfd, "other-N.json", ...): by name within the key's directory.
opens=$(grep -cE '"other-[0-9]+\.json"' "$WORK/trace")
most=$(grep -oE '"other-[0-9]+\.json"' "$WORK/trace" | sort | uniq -c | sort -rn | head -n 1 |
	awk '{ print $1 }')
diag "record files opened: $opens in all, at most ${most:-0} times the same one"
[ "${opens:-0}" -le "$N" ] && [ "${most:-0}" -le 1 ] &&
	ok "create opens each of the $N live records once: $opens opens" ||
	not_ok "create opens each of the $N live records once: $opens opens, one of them ${most:-0} times"
# The create before it indexed them: none needs opening now.
[ "${opens:-1}" -eq 0 ] && ok "create opens none of the $N records the index holds as they are" ||
	not_ok "create opens none of the $N records the index holds as they are ($opens opens)"

# A box the index alone tells of must still refuse: other-$N, alive by the sleeper as its
# creator, in cgroup /docker/$ID/inner, below the one this create asks for. A create of another
# ID (its cgroup apart) indexes it; then this create is refused without opening its record.
START=$(awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[20] }' "/proc/$SLEEPER/stat")
jq --arg id "other-$N" --arg cg "/docker/$ID/inner" --argjson pid "$SLEEPER" \
	--argjson start "$START" --argjson k "$N" \
	'.id = $id | .project = "pnest" | .cgroupsPath = $cg | .handed = []
	| .admission.creator = $pid | .admission.creatorStart = $start
	| .userns.base = (.userns.base + 65536 * ($k + 1))' "$STATE/$KEY/other-0.json" \
	>"$STATE/$KEY/other-$N.json" || bail_out "cannot write record other-$N"
ID2=hezo-it-reads2-$(hezo_rand)
B2=$WORK/engine/io.containerd.runtime.v2.task/moby/$ID2
E2=$WORK/engine/$ID2
tap_cleanup "rmdir /sys/fs/cgroup/*/docker/'$ID2' 2>/dev/null"
mkdir -p "$B2" "$E2" && touch "$E2/resolv.conf" "$E2/hostname" "$E2/hosts" &&
	cp -a "$B/rootfs" "$B2/rootfs" || bail_out "cannot make $B2"
jq --arg e "$E2" --arg cg "/docker/$ID2" \
	'(.mounts[] | select(.source | startswith("/var/lib/docker/containers/")) | .source) |=
	($e + "/" + (split("/") | last)) | .root.path = "rootfs" | .linux.cgroupsPath = $cg
	| del(.hooks)' "$HEZO_SOURCE_DIR/tests/data/config-docker.json" >"$B2/config.json" ||
	bail_out "cannot write $B2/config.json"
shim --root "$WORK/root" create -b "$B2" "$ID2" >/dev/null 2>"$WORK/fourth.err" ||
	bail_out "the create of $ID2 failed: $(cat "$WORK/fourth.err")"
# A line per record file (after the format's own line), other-$N's among them.
lines=$(($(wc -l <"$STATE/.records.index" 2>/dev/null || echo 0) - 1))
files=$(find "$STATE/$KEY" -maxdepth 1 -name '*.json' | wc -l)
[ "$lines" -eq "$files" ] && ok "a create indexes the records it walked ($lines of $files)" ||
	not_ok "a create indexes the records it walked ($lines lines for $files records)"
jq --arg e "$E" --arg cg "/docker/$ID" \
	'(.mounts[] | select(.source | startswith("/var/lib/docker/containers/")) | .source) |=
	($e + "/" + (split("/") | last)) | .root.path = "rootfs" | .linux.cgroupsPath = $cg
	| del(.hooks)' "$HEZO_SOURCE_DIR/tests/data/config-docker.json" >"$B/config.json" ||
	bail_out "cannot write config.json"
rm -f "$REC" "$B/.hezo-config.json"
strace -f -qq -e trace=open,openat,openat2 -o "$WORK/trace5" \
	env ASAN_OPTIONS=detect_leaks=0 HEZO_POLICY="$WORK/policy.json" HEZO_STATE_DIR="$STATE" \
	"$HEZO_SHIM_BIN" --root "$WORK/root" create -b "$B" "$ID" >/dev/null 2>"$WORK/fifth.err"
rc=$?
nest_opens=$(grep -cE "\"other-$N\\.json\"" "$WORK/trace5")
diag "create of $ID beside other-$N: exit $rc, $(cat "$WORK/fifth.err"); other-$N.json opened $nest_opens times"
[ "$rc" -ne 0 ] && grep -q "container other-$N's cgroup" "$WORK/fifth.err" &&
	ok "a box known from the index alone refuses a cgroup above its own" ||
	not_ok "a box known from the index alone refuses a cgroup above its own"
[ "${nest_opens:-1}" -eq 0 ] && ok "that refusal came from the index (its record not opened)" ||
	not_ok "that refusal came from the index (its record opened $nest_opens times)"
tap_done

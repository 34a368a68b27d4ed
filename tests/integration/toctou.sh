#!/bin/bash
# Integration: a caller who can write its bundle swaps files between the shim's check and the
# backend's read (red team rt12): config.json renamed over after the rewrite, the --process file
# of exec renamed over, a namespace symlink repointed. The backend must only ever see what the
# shim checked: it reads a bundle of the shim's own under the state directory.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/box.sh
. "$here/../lib/box.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"

hezo_require_root
hezo_require_tools jq runc python3 timeout ip unshare "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

ATTEMPTS=${HEZO_TOCTOU_ATTEMPTS:-20}
diag "backend $HEZO_TEST_BACKEND ($(hezo_backend_bin)), shim $HEZO_SHIM_BIN, $ATTEMPTS attempts per race"
mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-toctou-$HEZO_TEST_BACKEND
WORK=$(mktemp -d "$HEZO_TEST_DIR/toctou.XXXXXX")
tap_cleanup "rm -rf '$WORK'"
hezo_write_policy bundle
# The shim's state keys are per --root; find the private bundle by its name instead.
priv_bundle() { find "$HEZO_TEST_STATE" -path "*/.bundles/$1" -type d 2>/dev/null | head -n 1; }

new_id()
{
	ID="hezo-it-$1-$(hezo_rand)"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$ID'; hezo_shim --root '$ROOT' delete --force '$ID' >/dev/null 2>&1"
}

# --- structure: the backend's bundle is the shim's, 0700, holding the rewritten config.json -------
new_id layout
B=$WORK/layout
hezo_make_bundle "$B" "$ID" '["sleep", "600"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$B" "$ID" > >(cat >"$WORK/layout.out") 2> >(cat >"$WORK/layout.err") </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[layout] create exits 0" || diag "stderr: $(cat "$WORK/layout.err")"
backend_bundle=$(hezo_backend --root "$ROOT" state "$ID" 2>/dev/null | jq -r .bundle)
P=$(priv_bundle "$ID")
expect_match "$backend_bundle" "^$HEZO_TEST_STATE/[^/]+/\\.bundles/$ID\$" "[layout] the backend's --bundle is under the state directory"
expect_eq "$backend_bundle" "$P" "[layout] and it is the container's private bundle"
expect_eq "$(stat -c '%a %u' "$P" 2>&1)" "700 0" "[layout] private bundle: mode 0700, owned by root"
expect_eq "$(stat -c '%a %u' "$(dirname "$P")" 2>&1)" "700 0" "[layout] .bundles: mode 0700, owned by root"
# Under runc the box has a user namespace of its own: its root is staged where that root can walk
# to (the built-in state directory's sibling, in the shim's mount namespace only), and the backend's
# copy names the namespace (mnt/userns) and its range, and carries no rlimits: the shim sets them,
# since runc's prlimit cannot reach into a namespace the box's own uid owns (shim/rlimits.c).
staged_root() { if [ "$HEZO_TEST_BACKEND" = runc ]; then echo /run/hezo-shim.root; else echo "$1/mnt/root"; fi; }
expect_eq "$(jq -r .root.path "$P/config.json" 2>&1)" "$(staged_root "$P")" "[layout] private config.json: root.path is the staged root"
expect_eq "$(jq -r .root.path "$B/config.json")" rootfs "[layout] caller's config.json: root.path stays relative"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	expect_eq "$(jq -c '.process.rlimits // "none"' "$P/config.json" 2>&1)" '"none"' "[layout] runc: private config.json has no process.rlimits"
	check "[layout] runc: the caller's config.json keeps them" jq -e '.process.rlimits | length > 0' "$B/config.json"
fi
expect_eq "$(jq -S 'del(.root.path, .linux.uidMappings, .linux.gidMappings, .process.rlimits) | .linux.namespaces |= map(select(.type != "user"))' "$P/config.json" 2>&1)" \
	"$(jq -S 'del(.root.path, .linux.uidMappings, .linux.gidMappings, .process.rlimits) | .linux.namespaces |= map(select(.type != "user"))' "$B/config.json")" \
	"[layout] private config.json is the rewritten one the caller's bundle shows"
expect_eq "$(jq -r '[.process.capabilities[] | length] | add' "$P/config.json" 2>&1)" 0 \
	"[layout] private config.json: every capability set empty"

# exec: the clamped process file lives in the private bundle; the caller's is left as it was.
check "[layout] start" hezo_shim --root "$ROOT" start "$ID"
hezo_process_json '["sh", "-c", "grep CapEff /proc/self/status"]' "$HEZO_CAPS_GREEDY" >"$WORK/proc.json"
cp "$WORK/proc.json" "$WORK/proc.orig"
for n in 1 2; do
	hezo_shim --root "$ROOT" exec --process "$WORK/proc.json" "$ID" >"$WORK/exec$n.out" 2>"$WORK/exec$n.err" </dev/null && rc=0 || rc=$?
	expect_eq "$rc:$(tr -d '\t' <"$WORK/exec$n.out")" "0:CapEff:0000000000000000" "[layout] exec $n: no capability" ||
		diag "stderr: $(cat "$WORK/exec$n.err")"
done
expect_eq "$(cmp "$WORK/proc.json" "$WORK/proc.orig" 2>&1 && echo same)" same "[layout] exec: the caller's --process file is untouched"
n=$(find "$P" -name 'exec-*.json' | wc -l)
expect_eq "$n" 1 "[layout] exec: the file of the first exec is tidied by the second, once its backend is gone"
f=$(find "$P" -name 'exec-*.json' | head -n 1)
expect_eq "$(stat -c %a "$f" 2>&1)" 600 "[layout] exec: the clamped process file is 0600"
expect_eq "$(jq -r '[.capabilities[] | length] | add' "$f" 2>&1)" 0 "[layout] exec: the clamped file has no capability"
hezo_shim --root "$ROOT" kill "$ID" KILL >/dev/null 2>&1
hezo_wait_status "$ROOT" "$ID" stopped 20
check "[layout] delete" hezo_shim --root "$ROOT" delete "$ID"
expect_eq "$(test -e "$P" && echo present || echo gone)" gone "[layout] delete removes the private bundle"
expect_eq "$(hezo_state_records "$ID")" "" "[layout] nothing of the container left in the state directory"

# --- delete --force of a running container, and stale bundles ------------------------------------
new_id force
B=$WORK/force
hezo_make_bundle "$B" "$ID" '["sleep", "600"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$B" "$ID" > >(cat >"$WORK/force.out") 2> >(cat >"$WORK/force.err") </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[force] create exits 0" || diag "stderr: $(cat "$WORK/force.err")"
P=$(priv_bundle "$ID")
STALE=
if [ -n "$P" ]; then
	STALE=$(dirname "$P")/hezo-it-stale-$(hezo_rand)
	mkdir -m 0700 "$STALE" && echo '{}' >"$STALE/config.json"
fi
check "[force] start" hezo_shim --root "$ROOT" start "$ID"
check "[force] delete --force" hezo_shim --root "$ROOT" delete --force "$ID"
expect_eq "$(test -e "$P" && echo present || echo gone)" gone "[force] delete --force removes the private bundle"
new_id tidy
B=$WORK/tidy
hezo_make_bundle "$B" "$ID" '["true"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$B" "$ID" >/dev/null 2> >(cat >"$WORK/tidy.err") </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[tidy] create exits 0" || diag "stderr: $(cat "$WORK/tidy.err")"
expect_eq "$([ -n "$STALE" ] && ! test -e "$STALE" && echo gone || echo "present (or none made)")" gone \
	"[tidy] the next create removes a bundle whose record is gone"
hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- a refused create leaves nothing ------------------------------------------------------------
new_id refused
B=$WORK/refused
hezo_make_bundle "$B" "$ID" '["true"]' \
	'.mounts += [{destination: "/host", type: "bind", source: "/", options: ["rbind", "rw"]}]' ||
	bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$B" "$ID" >/dev/null 2> >(cat >"$WORK/refused.err") </dev/null && rc=0 || rc=$?
expect_ne "$rc" 0 "[refused] a bind mount of / is refused"
expect_eq "$(hezo_state_records "$ID")" "" "[refused] no record and no private bundle left"

# --- race 1: config.json renamed over right after the shim's rewrite -----------------------------
new_id swapcfg
B=$WORK/swapcfg
hezo_make_bundle "$B" "$ID" '["sh", "-c", "grep CapEff /proc/self/status; test -d /host/etc && echo HOSTROOT; echo end"]' ||
	bail_out "cannot make bundle"
cp "$B/config.json" "$WORK/swapcfg.orig"
# What the caller renames in: every capability, no seccomp, the host's / at /host, the host's pid
# namespace, and a command that says so.
jq --argjson caps "$HEZO_CAPS_GREEDY" '
	.process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps}
	| .process.args = ["sh", "-c", "echo SWAPPED; grep CapEff /proc/self/status; test -d /host/etc && echo HOSTROOT; echo end"]
	| .mounts += [{destination: "/host", type: "bind", source: "/", options: ["rbind", "rw"]}]
	| .linux.namespaces |= map(select(.type != "pid"))
	| del(.linux.seccomp)' "$WORK/swapcfg.orig" >"$WORK/evil.json"
swapped=0 seen=0 ran=0
for ((i = 0; i < ATTEMPTS; i++)); do
	cp "$WORK/swapcfg.orig" "$B/config.json"
	python3 "$here/swap.py" "$B/config.json" "$WORK/evil.json" 30 >"$WORK/swap.log" 2>&1 &
	spid=$!
	for ((w = 0; w < 50; w++)); do grep -q ready "$WORK/swap.log" && break; sleep 0.05; done
	hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/race.out" 2>"$WORK/race.err" </dev/null && rc=0 || rc=$?
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	grep -q swapped "$WORK/swap.log" && swapped=$((swapped + 1))
	[ "$rc" = 0 ] && ran=$((ran + 1))
	if grep -qE 'SWAPPED|HOSTROOT' "$WORK/race.out" ||
		{ [ "$rc" = 0 ] && ! grep -q 'CapEff:[[:space:]]*0000000000000000' "$WORK/race.out"; }; then
		seen=$((seen + 1))
		diag "attempt $i: $(tr '\n' ' ' <"$WORK/race.out")"
	fi
	hezo_bundle_cleanup "$ROOT" "$ID"
done
diag "config.json: swapped in $swapped of $ATTEMPTS attempts, the container ran $ran times"
expect_ne "$swapped" 0 "[swap config.json] the swap did happen (else this proves nothing)"
expect_eq "$ran" "$ATTEMPTS" "[swap config.json] every run still succeeded"
expect_eq "$seen" 0 "[swap config.json] the container never saw the swapped config (capabilities, host /)"
hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- race 2: exec's --process file renamed over ---------------------------------------------------
new_id swapexec
B=$WORK/swapexec
hezo_make_bundle "$B" "$ID" '["sleep", "600"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$B" "$ID" >/dev/null 2> >(cat >"$WORK/swapexec.err") </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[swap exec] create exits 0" || diag "stderr: $(cat "$WORK/swapexec.err")"
check "[swap exec] start" hezo_shim --root "$ROOT" start "$ID"
hezo_process_json '["sh", "-c", "grep CapEff /proc/self/status"]' "$HEZO_CAPS_GREEDY" >"$WORK/p.orig"
hezo_process_json '["sh", "-c", "echo SWAPPED; grep CapEff /proc/self/status"]' "$HEZO_CAPS_GREEDY" >"$WORK/p.evil"
seen=0 ran=0
for ((i = 0; i < ATTEMPTS; i++)); do
	cp "$WORK/p.orig" "$WORK/p.json"
	python3 "$here/swap.py" "$WORK/p.json" "$WORK/p.evil" 30 >"$WORK/swap.log" 2>&1 &
	spid=$!
	for ((w = 0; w < 50; w++)); do grep -q ready "$WORK/swap.log" && break; sleep 0.05; done
	hezo_shim --root "$ROOT" exec --process "$WORK/p.json" "$ID" >"$WORK/race.out" 2>"$WORK/race.err" </dev/null && rc=0 || rc=$?
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	[ "$rc" = 0 ] && ran=$((ran + 1))
	if grep -q SWAPPED "$WORK/race.out" || ! grep -q 'CapEff:[[:space:]]*0000000000000000' "$WORK/race.out"; then
		seen=$((seen + 1))
		diag "attempt $i (rc $rc): $(tr '\n' ' ' <"$WORK/race.out") $(head -c 300 "$WORK/race.err")"
	fi
done
expect_eq "$ran" "$ATTEMPTS" "[swap exec] every exec still succeeded"
expect_eq "$seen" 0 "[swap exec] no exec'd process ever got the swapped file's capabilities"
expect_eq "$(cmp "$WORK/p.json" "$WORK/p.orig" 2>&1 && echo same)" same \
	"[swap exec] the caller's file is not rewritten (nothing to race on)"
hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- race 3: a namespace symlink repointed between check and open (runc joins by path) -----------
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	# An engine-named pin (cni-UUID): the one the link first names is acceptable.
	NSA=cni-$(cat /proc/sys/kernel/random/uuid)
	NSF=hezo-it-nsf-$(hezo_rand)
	ip netns add "$NSA" && tap_cleanup "ip netns del '$NSA'"
	ip netns add "$NSF" && tap_cleanup "ip netns del '$NSF'"
	# A process of no container in the foreign one: the shim refuses it when it sees it.
	ip netns exec "$NSF" sleep 600 &
	FPID=$!
	tap_cleanup "kill $FPID"
	LINK=$WORK/netns-link
	ln -s "/run/netns/$NSA" "$LINK"
	new_id swapns
	B=$WORK/swapns
	hezo_make_bundle "$B" "$ID" '["sleep", "600"]' \
		'.linux.namespaces |= map(if .type == "network" then .path = "'"$LINK"'" else . end)' ||
		bail_out "cannot make bundle"
	cp "$B/config.json" "$WORK/swapns.orig"
	ina=$(stat -L -c %i "/run/netns/$NSA") inf=$(stat -L -c %i "/run/netns/$NSF")
	foreign=0 created=0
	# Which target each of the shim's reads sees is chance: when no create of the first ATTEMPTS
	# got through the check (seen on a loaded machine), more are tried, up to four times as many.
	for ((i = 0; i < ATTEMPTS || (created == 0 && i < 4 * ATTEMPTS); i++)); do
		cp "$WORK/swapns.orig" "$B/config.json"
		ln -sfn "/run/netns/$NSA" "$LINK"
		python3 "$here/flip.py" "$LINK" "/run/netns/$NSA" "/run/netns/$NSF" 30 >"$WORK/flip.log" 2>&1 &
		fpid=$!
		for ((w = 0; w < 50; w++)); do grep -q ready "$WORK/flip.log" && break; sleep 0.05; done
		hezo_shim --root "$ROOT" create -b "$B" --pid-file "$WORK/swapns.pid" "$ID" >/dev/null 2> >(cat >"$WORK/swapns.err") </dev/null &&
			rc=0 || rc=$?
		kill "$fpid" 2>/dev/null
		wait "$fpid" 2>/dev/null
		if [ "$rc" = 0 ]; then
			created=$((created + 1))
			in=$(stat -L -c %i "/proc/$(cat "$WORK/swapns.pid")/ns/net" 2>/dev/null)
			[ "$in" = "$ina" ] || { foreign=$((foreign + 1)); diag "attempt $i: netns $in (foreign $inf)"; }
		fi
		hezo_bundle_cleanup "$ROOT" "$ID"
		hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
		rm -f "$WORK"/netns-link.*
	done
	diag "netns link: $created of $i creates passed the check (the others saw the foreign one)"
	expect_ne "$created" 0 "[swap netns] some creates passed the check (else this proves nothing)"
	expect_eq "$foreign" 0 "[swap netns] a container never joined the namespace the link was repointed to"
	# Structure: the path written for the backend is the resolved one.
	cp "$WORK/swapns.orig" "$B/config.json"
	ln -sfn "/run/netns/$NSA" "$LINK"
	hezo_shim --root "$ROOT" create -b "$B" --pid-file "$WORK/swapns.pid" "$ID" >/dev/null 2> >(cat >"$WORK/swapns.err") </dev/null && rc=0 || rc=$?
	expect_eq "$rc" 0 "[netns resolved] create exits 0" || diag "stderr: $(cat "$WORK/swapns.err")"
	# ... and held: what the backend opens is the namespace checked, bound in its bundle (race 6).
	expect_match "$(jq -r '.linux.namespaces[] | select(.type == "network") | .path' "$(priv_bundle "$ID")/config.json" 2>&1)" \
		"^$(priv_bundle "$ID")/mnt/ns-[0-9]+\$" "[netns resolved] the backend is handed the namespace held at the check, not the link"
	expect_eq "$(stat -L -c %i "/proc/$(cat "$WORK/swapns.pid" 2>/dev/null)/ns/net" 2>&1)" "$ina" \
		"[netns resolved] the container is in the link's target"
	hezo_bundle_cleanup "$ROOT" "$ID"
	hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
	# The host's namespace by path is held too (red team pass 6, F6): where allowHost admits it
	# (here IPC), runc is not handed /proc/PID/ns/KIND to open again after a pid reuse.
	jq '.namespaces.allowHost = ["ipc"]' "$HEZO_TEST_POLICY" >"$WORK/policy-hostipc.json" ||
		bail_out "cannot write the host-IPC policy"
	new_id hostipc
	hezo_make_bundle "$WORK/hostipc" "$ID" '["true"]' \
		'.linux.namespaces |= map(if .type == "ipc" then .path = "/proc/'"$$"'/ns/ipc" else . end)' ||
		bail_out "cannot make bundle"
	HEZO_TEST_POLICY=$WORK/policy-hostipc.json hezo_shim --root "$ROOT" create -b "$WORK/hostipc" \
		--pid-file "$WORK/hostipc.pid" "$ID" >/dev/null 2> >(cat >"$WORK/hostipc.err") </dev/null && rc=0 || rc=$?
	expect_eq "$rc" 0 "[host ipc held] create exits 0" || diag "stderr: $(cat "$WORK/hostipc.err")"
	expect_match "$(jq -r '.linux.namespaces[] | select(.type == "ipc") | .path' "$(priv_bundle "$ID")/config.json" 2>&1)" \
		"^$(priv_bundle "$ID")/mnt/ns-[0-9]+\$" "[host ipc held] the backend is handed the host's IPC namespace held, not /proc/PID/ns/ipc"
	expect_eq "$(stat -L -c %i "/proc/$(cat "$WORK/hostipc.pid" 2>/dev/null)/ns/ipc" 2>&1)" "$(stat -L -c %i /proc/$$/ns/ipc)" \
		"[host ipc held] the container is in the host's IPC namespace, as allowHost says"
	hezo_bundle_cleanup "$ROOT" "$ID"
	hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
	kill "$FPID" 2>/dev/null
else
	skip "[swap netns] a container never joined the namespace the link was repointed to" \
		"runsc bundles here run with network none (shared/ENVIRONMENT.md)"
fi

# A namespace path through a directory another uid owns: refused (that uid could swap it).
new_id nsdir
D=$WORK/userdir
mkdir "$D" && chown 65534 "$D"
ln -s /proc/$$/ns/ipc "$D/ipc"
hezo_make_bundle "$WORK/nsdir" "$ID" '["true"]' \
	'.linux.namespaces |= map(if .type == "ipc" then .path = "'"$D/ipc"'" else . end)' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$WORK/nsdir" "$ID" >/dev/null 2>"$WORK/nsdir.err" </dev/null && rc=0 || rc=$?
expect_ne "$rc" 0 "[ns dir] a namespace link in a directory of uid 65534 is refused"
expect_match "$(cat "$WORK/nsdir.err")" "path $D/ipc: $D is owned by uid 65534" "[ns dir] the reason names the directory"

# --- races 4 and 5: a path the check resolved, turned while the create waits (red team rt12 pass 2)
# A create that has passed every check waits for an admission slot (maxActive 1, one holder
# running): the test turns the path then, deterministically, and frees the slot. Once it has the
# slot the create is judged again (shim/create.c judge), and the turned path is refused there in
# the rule's own line; after that look the backend is handed the objects both looks held, never
# the path again (the random races above turn paths in that window too).
ALLOWED=$WORK/allowed
mkdir -p "$ALLOWED/x"
echo checked >"$ALLOWED/x/marker"
hezo_write_policy bundle '.admission = {maxActive: 1, wait: 60} | .mounts.allowedSources = ["'"$ALLOWED"'"]'
# A state directory of its own: a live container another test left in the shared one would hold
# the only slot.
MAIN_STATE=$HEZO_TEST_STATE
HEZO_TEST_STATE=$WORK/state-race
# queued: a create is waiting for its slot (its ticket is in the admission queue).
queued()
{
	local w
	for ((w = 0; w < 200; w++)); do
		find "$HEZO_TEST_STATE/admission-queue" -regex '.*/[0-9]+' 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}
# race_run LABEL BUNDLE TURN: run BUNDLE's container once a holder fills the slot, doing TURN
# while it waits; sets RACE_OUT (its output) and RACE_RC.
race_run()
{
	local label=$1 b=$2 turn=$3 hid pid
	hid=hezo-it-hold-$(hezo_rand)
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$hid'; hezo_shim --root '$ROOT' delete --force '$hid' >/dev/null 2>&1"
	hezo_make_bundle "$WORK/$label-hold" "$hid" '["sleep", "600"]' || bail_out "cannot make bundle"
	hezo_shim --root "$ROOT" create -b "$WORK/$label-hold" "$hid" >/dev/null 2>&1 </dev/null
	hezo_shim --root "$ROOT" start "$hid" >/dev/null 2>&1
	hezo_shim --root "$ROOT" run -b "$b" "$ID" >"$WORK/$label.out" 2>"$WORK/$label.err" </dev/null &
	pid=$!
	if queued; then
		eval "$turn"
	else
		diag "[$label] the create never queued: $(cat "$WORK/$label.err")"
	fi
	hezo_shim --root "$ROOT" kill "$hid" KILL >/dev/null 2>&1
	hezo_wait_status "$ROOT" "$hid" stopped 20
	hezo_shim --root "$ROOT" delete --force "$hid" >/dev/null 2>&1
	wait "$pid" && RACE_RC=0 || RACE_RC=$?
	RACE_OUT=$(tr '\n' ' ' <"$WORK/$label.out")
}
staged_mounts() { grep -c " $HEZO_TEST_STATE/" /proc/self/mountinfo; }

# F1: a bind source's directory replaced by a symlink to / (as a container with the allowed root
# bound read-write can do to it).
new_id bindswap
hezo_make_bundle "$WORK/bindswap" "$ID" '["sh", "-c", "test -d /mnt/etc && echo HOSTROOT; cat /mnt/marker; echo end"]' \
	'.mounts += [{destination: "/mnt", type: "bind", source: "'"$ALLOWED/x"'", options: ["rbind", "rw"]}]' ||
	bail_out "cannot make bundle"
race_run bindswap "$WORK/bindswap" 'mv "$ALLOWED/x" "$ALLOWED/x.old" && ln -s / "$ALLOWED/x"'
expect_eq "$(readlink "$ALLOWED/x")" / "[bind swap] the source was turned into a symlink to / while create waited"
expect_match "$RACE_RC:$RACE_OUT:$(cat "$WORK/bindswap.err")" \
	"^[1-9][0-9]*::hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/mnt\\): bind source $ALLOWED/x \\(resolves to /\\) is not under an allowed root \\(mounts\\.allowedSources in [^)]*\\)\$" \
	"[bind swap] judged again after the wait: refused for the host's /, and nothing ran"
hezo_bundle_cleanup "$ROOT" "$ID"
hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
expect_eq "$(staged_mounts)" 0 "[bind swap] nothing of the state directory left in the mount table"

# Structure: the backend's source is a private, recursive bind in the private bundle; a file too.
rm -f "$ALLOWED/x" && mv "$ALLOWED/x.old" "$ALLOWED/x"
echo file >"$ALLOWED/f"
mkdir -p "$ALLOWED/x/sub" && mount -t tmpfs -o size=1m hezo-sub "$ALLOWED/x/sub" &&
	tap_cleanup "umount -l '$ALLOWED/x/sub'" && echo below >"$ALLOWED/x/sub/marker"
hezo_write_policy bundle '.mounts.allowedSources = ["'"$ALLOWED"'"]'
new_id staged
# A second mount of a source with a submount below it: runsc 2024-07 fails to start the sandbox
# ("cannot read client sync file"), with or without the staging, so only runc gets /b.
second='{destination: "/b", type: "bind", source: "'"$ALLOWED/x"'", options: ["bind", "rw"]},'
[ "$HEZO_TEST_BACKEND" = runc ] || second=
hezo_make_bundle "$WORK/staged" "$ID" '["sleep", "600"]' \
	'.mounts += [{destination: "/r", type: "bind", source: "'"$ALLOWED/x"'", options: ["rbind", "ro"]},
		'"$second"'
		{destination: "/f", type: "bind", source: "'"$ALLOWED/f"'", options: ["bind", "ro"]}]' ||
	bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$WORK/staged" "$ID" >/dev/null 2> >(cat >"$WORK/staged.err") </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[staged] create exits 0" || diag "stderr: $(cat "$WORK/staged.err")"
P=$(priv_bundle "$ID")
want="$P/mnt/0 $P/mnt/0 $P/mnt/1"
[ -n "$second" ] || want="$P/mnt/0 $P/mnt/1"
# runc, a box with its own user namespace: a plain bind gets the source's top mount alone (the
# kernel refuses a plain bind of a tree whose submounts are locked to it).
[ "$HEZO_TEST_BACKEND" = runc ] && want="$P/mnt/0 $P/mnt/0-top $P/mnt/1-top"
expect_eq "$(jq -r '[.mounts[] | select(.destination == "/r" or .destination == "/b" or .destination == "/f") | .source] | join(" ")' "$P/config.json" 2>&1)" \
	"$want" "[staged] the backend's sources are the staged mounts, one per source"
expect_eq "$(jq -r .root.path "$P/config.json" 2>&1)" "$(staged_root "$P")" "[staged] the backend's root.path is the staged root"
# The shim stages in a mount namespace of its own, gone once the backend's create is done.
expect_eq "$(staged_mounts)" 0 "[staged] while the container exists, no staged mount is in the host's mount table"
expect_eq "$(jq -r '[.mounts[] | select(.destination == "/r" or .destination == "/f") | .source] | join(" ")' "$WORK/staged/config.json")" \
	"$ALLOWED/x $ALLOWED/f" "[staged] the caller's config.json names the sources as checked"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	check "[staged] start" hezo_shim --root "$ROOT" start "$ID"
	pid=$(hezo_backend --root "$ROOT" state "$ID" | jq -r .pid)
	expect_eq "$(stat -L -c %d:%i "/proc/$pid/root" "/proc/$pid/root/r" "/proc/$pid/root/f" 2>&1 | tr '\n' ' ')" \
		"$(stat -c %d:%i "$WORK/staged/rootfs" "$ALLOWED/x" "$ALLOWED/f" | tr '\n' ' ')" \
		"[staged] inside: the root and each source are the objects checked (device and inode)"
	expect_eq "$(cat "/proc/$pid/root/r/sub/marker" "/proc/$pid/root/f" 2>&1 | tr '\n' ' ')" "below file " \
		"[staged] inside: rbind keeps the submount, the file source is the file"
	expect_eq "$(awk '$5 == "/r" && / master:/' "/proc/$pid/mountinfo" | wc -l)" 0 \
		"[staged] inside: /r receives no propagation through the staging (private)"
	expect_eq "$(test -e "/proc/$pid/root/b/sub/marker" && echo present || echo absent)" absent \
		"[staged] inside: a plain bind takes the top mount only, as runc's own"
fi
hezo_shim --root "$ROOT" kill "$ID" KILL >/dev/null 2>&1
hezo_wait_status "$ROOT" "$ID" stopped 20
check "[staged] delete" hezo_shim --root "$ROOT" delete --force "$ID"
expect_eq "$(staged_mounts)" 0 "[staged] delete leaves nothing of the state directory in the mount table"
expect_eq "$(test -e "$P" && echo present || echo gone)" gone "[staged] delete removes the private bundle"
expect_eq "$(cat "$ALLOWED/x/marker" "$ALLOWED/f" 2>&1 | tr '\n' ' ')" "checked file " "[staged] the sources are untouched"
# A create the backend refuses (a missing command under runc, an absent one under runsc) leaves none.
new_id stagedfail
hezo_make_bundle "$WORK/stagedfail" "$ID" '["/no/such/command"]' \
	'.mounts += [{destination: "/r", type: "bind", source: "'"$ALLOWED/x"'", options: ["rbind", "ro"]}]' ||
	bail_out "cannot make bundle"
hezo_shim --root "$ROOT" run -b "$WORK/stagedfail" "$ID" >/dev/null 2>&1 </dev/null
hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
expect_eq "$(staged_mounts)" 0 "[staged fail] a failed run and its delete leave no staged mount"
umount -l "$ALLOWED/x/sub" 2>/dev/null

# F2: root.path a symlink inside the bundle, repointed at another directory while create waits.
hezo_write_policy bundle '.admission = {maxActive: 1, wait: 60}'
new_id rootswap
B=$WORK/rootswap
hezo_make_bundle "$B" "$ID" '["sh", "-c", "test -e /EVIL && echo EVIL; cat /GOOD; echo end"]' || bail_out "cannot make bundle"
mv "$B/rootfs" "$B/rootfs.good" && echo good >"$B/rootfs.good/GOOD"
ln -s rootfs.good "$B/rootfs"
hezo_busybox_rootfs "$WORK/evilroot" && touch "$WORK/evilroot/EVIL"
race_run rootswap "$B" 'ln -sfn "$WORK/evilroot" "$B/rootfs.new" && mv -T "$B/rootfs.new" "$B/rootfs"'
expect_eq "$(readlink "$B/rootfs")" "$WORK/evilroot" "[root swap] rootfs was repointed outside the bundle while create waited"
expect_match "$RACE_RC:$RACE_OUT:$(cat "$WORK/rootswap.err")" \
	"^[1-9][0-9]*::hezo-shim: config.json: root\\.path rootfs resolves to $WORK/evilroot: neither inside the bundle" \
	"[root swap] judged again after the wait: refused for the other directory, and nothing ran"
hezo_bundle_cleanup "$ROOT" "$ID"
hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
expect_eq "$(staged_mounts)" 0 "[root swap] nothing of the state directory left in the mount table"

# Race 6 (red team rt12 pass 3): /proc/P/ns/ipc of a process P in container A, checked as A's; while
# the create waits, P exits and a host process is given P (ns_last_pid). runc opening the path again
# would join the host's IPC namespace; the backend must get the namespace the check held.
# (runc only: runsc keeps its own IPC namespace whatever path it is given.)
if [ "$HEZO_TEST_BACKEND" = runc ] && [ -w /proc/sys/kernel/ns_last_pid ]; then
	hezo_write_policy bundle '.admission = {maxActive: 2, wait: 60}'
	AID=hezo-it-nsown-$(hezo_rand)
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$AID'; hezo_shim --root '$ROOT' delete --force '$AID' >/dev/null 2>&1"
	hezo_make_bundle "$WORK/nsown" "$AID" '["sh", "-c", "sleep 600 & wait; exec sleep 601"]' || bail_out "cannot make bundle"
	hezo_shim --root "$ROOT" create -b "$WORK/nsown" "$AID" >/dev/null 2> >(cat >"$WORK/nsown.err") </dev/null ||
		diag "$(cat "$WORK/nsown.err")"
	hezo_shim --root "$ROOT" start "$AID" >/dev/null 2>&1
	P=
	for ((w = 0; w < 100; w++)); do
		[ -z "$P" ] || break
		for q in $(cat "/sys/fs/cgroup/pids/hezo-test/$AID/cgroup.procs" 2>/dev/null); do
			# The background one: killed, it is reaped by sh, and A runs on (in its slot).
			[ "$(tr '\0' ' ' <"/proc/$q/cmdline" 2>/dev/null)" = "sleep 600 " ] && P=$q
		done
		sleep 0.05
	done
	A_IPC=$(readlink "/proc/$P/ns/ipc" 2>/dev/null)
	HOST_IPC=$(readlink /proc/self/ns/ipc)
	diag "[ns reuse] box A's IPC namespace: $A_IPC (pid $P); the host's: $HOST_IPC"
	new_id nsreuse
	hezo_make_bundle "$WORK/nsreuse" "$ID" '["sh", "-c", "readlink /proc/self/ns/ipc; echo end"]' \
		'.linux.namespaces |= map(if .type == "ipc" then .path = "/proc/'"$P"'/ns/ipc" else . end)' ||
		bail_out "cannot make bundle"
	# The turn: P exits, and the next pid the kernel hands out is P, to a host process.
	reuse()
	{
		local t
		kill -KILL "$P"
		for ((t = 0; t < 100; t++)); do [ -e "/proc/$P" ] || break; sleep 0.02; done
		for ((t = 0; t < 20; t++)); do
			echo $((P - 1)) >/proc/sys/kernel/ns_last_pid
			sleep 600 &
			HPID=$!
			[ "$HPID" = "$P" ] && break
			kill "$HPID"
		done
		tap_cleanup "kill $HPID"
	}
	race_run nsreuse "$WORK/nsreuse" reuse
	expect_eq "$HPID:$(readlink "/proc/$HPID/ns/ipc" 2>&1)" "$P:$HOST_IPC" \
		"[ns reuse] while create waited, pid $P (A's, checked) went to a host process in the host's IPC namespace"
	expect_match "$RACE_RC:$RACE_OUT:$(cat "$WORK/nsreuse.err")" \
		"^[1-9][0-9]*::hezo-shim: config.json: linux\\.namespaces: host ipc namespace not allowed \\(namespaces\\.allowHost in [^)]*\\)\$" \
		"[ns reuse] judged again after the wait: refused for the host's IPC namespace ($HOST_IPC), and nothing ran"
	kill "$HPID" 2>/dev/null
	hezo_bundle_cleanup "$ROOT" "$ID"
	hezo_shim --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
	hezo_shim --root "$ROOT" delete --force "$AID" >/dev/null 2>&1
	expect_eq "$(staged_mounts)" 0 "[ns reuse] nothing of the state directory left in the mount table"
else
	skip "[ns reuse] judged again after the wait: refused for the host's IPC namespace" \
		"runsc keeps its own IPC namespace whatever path it is given"
fi
hezo_write_policy bundle
HEZO_TEST_STATE=$MAIN_STATE

left=$(hezo_backend_ids "$ROOT" | grep -c '^hezo-it-' || true)
expect_eq "$left" 0 "no test container left under --root"
reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports" || for r in $reports; do diag "$(head -c 4000 "$r")"; done

tap_done

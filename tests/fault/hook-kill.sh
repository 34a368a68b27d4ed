#!/bin/bash
# Fault: the egress hook (prestart `hezo-hook wire`) is SIGKILLed while runc creates a container
# through the shim with egress "proxy": once at its most awkward moment (registered with proxyd,
# table not yet installed) and then at random moments. The container must not start, and once the
# engine's `delete --force` has run, no proxyd registration or namespace mount, no extra mount,
# no runc container and no shim record may be left.
# Usage: tests/fault/hook-kill.sh [BUILD_DIR]   (or HEZO_BUILD=...; FAULT_HOOK_ROUNDS=10)
set -uo pipefail

# shellcheck source=tests/fault/fault-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/fault-lib.sh"
# shellcheck source=tests/lib/bundle.sh
. "$FAULT_DIR/../lib/bundle.sh"

ROUNDS=${FAULT_HOOK_ROUNDS:-10}

hezo_require_root
hezo_require_tools jq runc ip nft timeout "$HEZO_BUSYBOX" "$HEZO_HOOK_BIN" "$HEZO_PROXYD_BIN"
fault_setup hook
ROOT=$FW/runc-root
PSTATE=$FW/proxyd
SOCK=$PSTATE/control.sock
mkdir -p "$PSTATE/log"
"$HEZO_PROXYD_BIN" --socket "$SOCK" --state-dir "$PSTATE" --log-dir "$PSTATE/log" \
	--upstream 127.0.0.1:53 >"$FW/proxyd.log" 2>&1 &
PROXYD_PID=$!
tap_cleanup "kill $PROXYD_PID"
tap_cleanup 'for m in "$PSTATE"/netns/*; do umount -l "$m"; done'
tap_cleanup "runc --root '$ROOT' list -q | xargs -r -n1 runc --root '$ROOT' delete --force"
for _ in $(seq 50); do
	[ -S "$SOCK" ] && break
	sleep 0.1
done
[ -S "$SOCK" ] || { diag_cmd cat "$FW/proxyd.log"; bail_out "hezo-proxyd did not start"; }

# The hook the shim injects is this wrapper: it records its pid (exec keeps it) and, when asked,
# makes the real hook pause right after registering with proxyd.
cat >"$FW/hook" <<-EOF
	#!/bin/sh
	if [ "\$1" = wire ]; then
		echo \$\$ >'$FW/hook.pid'
		[ -e '$FW/pause' ] && export HEZO_HOOK_TEST_PAUSE_AFTER_REGISTER=10
	fi
	exec '$HEZO_HOOK_BIN' "\$@"
EOF
chmod 0755 "$FW/hook"
POLICY=$FW/policy.json
fault_policy "$POLICY" "$(command -v runc)" '.egress = {mode: "proxy", allow: []}'
export HEZO_HOOK_PATH=$FW/hook HEZO_PROXYD_SOCKET=$SOCK

# Several containers (hezo-hook-*) share this bundle, and a cgroupsPath must name the container's
# own ID: none here, so runc names each cgroup after its container.
hezo_make_bundle "$FW/bundle" hezo-fault-hook '["sleep","30"]' 'del(.linux.cgroupsPath)' ||
	bail_out "cannot make bundle"
cp "$FW/bundle/config.json" "$FW/config.orig"

registrations() { find "$PSTATE/containers" "$PSTATE/netns" -mindepth 1 2>/dev/null | wc -l; }
# Other tests may run on this machine at the same time: count only what this test can own.
mounts() { grep -cF "$FW" /proc/mounts; }
snapshot()
{
	echo "registrations=$(registrations) mounts=$(mounts)" \
		"runc=$(runc --root "$ROOT" list -q 2>/dev/null | wc -l) records=$(state_records | wc -l)"
}

# One container that works first: the wiring is real and leaves nothing after delete.
BEFORE=$(snapshot)
diag "before: $BEFORE"
fault_shim "$POLICY" --root "$ROOT" run --detach --bundle "$FW/bundle" hezo-hook-ok \
	>"$FW/ok.out" 2>&1
expect_eq "$?" 0 "with the hook intact the container starts" || diag_cmd cat "$FW/ok.out"
expect_eq "$(registrations)" 2 "it is registered with proxyd (registration and netns mount)"
fault_shim "$POLICY" --root "$ROOT" delete --force hezo-hook-ok >"$FW/ok-del.out" 2>&1
expect_eq "$(snapshot)" "$BEFORE" "after delete --force the counts are back"

# kill_round NAME DELAY: create with the hook killed after DELAY seconds ("registered": once
# proxyd has the registration, the hook paused), then the engine's delete --force.
kill_round()
{
	local name=$1 delay=$2 pid="" rc i cpid
	cp "$FW/config.orig" "$FW/bundle/config.json"
	rm -f "$FW/hook.pid"
	fault_shim "$POLICY" --root "$ROOT" create --bundle "$FW/bundle" "hezo-hook-$name" \
		>"$FW/$name.out" 2>&1 &
	cpid=$!
	# Spin rather than sleep: the whole hook takes a few milliseconds.
	for ((i = 0; i < 2000000; i++)); do
		[ -s "$FW/hook.pid" ] || continue
		pid=$(<"$FW/hook.pid")
		[ "$delay" != registered ] && break
		[ -e "$PSTATE/containers/hezo-hook-$name.json" ] && break
	done
	[ "$delay" != registered ] && [ "$delay" != 0.000 ] && sleep "$delay"
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	wait "$cpid"
	rc=$?
	KILLED_RC=$rc
	STATUS=$(runc --root "$ROOT" state "hezo-hook-$name" 2>/dev/null | jq -r .status)
	PRE_DELETE=$(snapshot)
	fault_shim "$POLICY" --root "$ROOT" delete --force "hezo-hook-$name" \
		>"$FW/$name-del.out" 2>&1
}

touch "$FW/pause"
kill_round registered registered
expect_ne "$KILLED_RC" 0 "hook killed after registering: create fails"
expect_ne "$STATUS" running "hook killed after registering: the container is not running"
diag "create said: $(tail -n 1 "$FW/registered.out")"
diag "before the engine's delete: $PRE_DELETE"
expect_eq "$(snapshot)" "$BEFORE" "hook killed after registering: nothing left after delete --force"
rm -f "$FW/pause"

bad=0 started=0
for ((r = 0; r < ROUNDS; r++)); do
	kill_round "r$r" "0.00$((RANDOM % 4))"
	[ "$KILLED_RC" = 0 ] && started=$((started + 1))
	now=$(snapshot)
	if [ "$now" != "$BEFORE" ]; then
		bad=$((bad + 1))
		diag "round $r: $now"
	fi
	[ "$PRE_DELETE" != "$BEFORE" ] && diag "round $r, before delete: $PRE_DELETE"
done
diag "random kills: $started of $ROUNDS creates still succeeded (hook done before the kill)"
expect_eq "$bad" 0 "hook killed at random moments ($ROUNDS rounds): nothing left after delete"
check "proxyd survived every killed hook" kill -0 "$PROXYD_PID"
tap_done

#!/bin/bash
# valgrind memcheck over hezo-shim: create (the backend is /bin/true, so memcheck sees everything
# up to the execve), refusals (full leak check at exit), exec --process, update --resources,
# delete, state and the admin verbs. Any memcheck error or definite leak fails the case.
# valgrind cannot survive a failed execve ("EXEC FAILED: I can't recover"), so the undo path after
# a backend that cannot be executed is checked with LeakSanitizer instead: run
# tests/fault/backend.sh with a -Db_sanitize=address,undefined build. Not part of `meson test`.
# Usage: tests/load/valgrind-shim.sh [BUILD_DIR]   (TAP on stdout; needs root and valgrind)
# memcheck replaces malloc through the dynamic loader, so it cannot see into the fully static
# hezo-shim that static_deps builds: use a build configured with -Dstatic_deps=false.
set -uo pipefail

# shellcheck source=tests/fault/fault-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../fault/fault-lib.sh"

hezo_require_root
hezo_require_tools valgrind jq runc
readelf -l "$HEZO_SHIM_BIN" 2>/dev/null | grep -q 'Requesting program interpreter' ||
	bail_out "$HEZO_SHIM_BIN is statically linked: memcheck cannot track its heap; build with -Dstatic_deps=false"
fault_setup valgrind
VG=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite
	--error-exitcode=99 --trace-children=no --track-fds=no)

B=$FW/bundle
fault_bundle "$B" 0 || bail_out "cannot make bundle"
cp "$B/config.json" "$FW/orig.json"
fault_policy "$FW/true.json" /bin/true
echo '{"version":1,"mode":"dev","resources":{"memory":"2 GB"}}' >"$FW/broken-policy.json"

# vg NAME POLICY ARGS...: the shim under memcheck; valgrind's own verdict is exit 99.
vg()
{
	local name=$1 policy=$2 rc
	shift 2
	cp "$FW/orig.json" "$B/config.json"
	env HEZO_POLICY="$policy" HEZO_STATE_DIR="$FW/state" HEZO_HOOK_PATH="$HEZO_HOOK_BIN" \
		"${VG[@]}" --log-file="$FW/$name.vg" "$HEZO_SHIM_BIN" --root "$FW/root" "$@" \
		</dev/null 2>&1 | cat >"$FW/$name.out"
	# A pipe, not the file: runc's create hands a regular file on to the box (refused).
	rc=${PIPESTATUS[0]}
	if [ "$rc" != 99 ] && ! grep -q 'definitely lost\|Invalid\|uninitialised' "$FW/$name.vg"; then
		ok "$name: memcheck clean (shim exit $rc)"
	else
		not_ok "$name: memcheck clean (shim exit $rc)"
		diag_cmd head -n 60 "$FW/$name.vg"
	fi
}

vg create-exec "$FW/true.json" create --bundle "$B" vg-1
jq '.annotations["org.hezo.bogus"] = "1"' "$FW/orig.json" >"$FW/bogus.json"
cp "$FW/orig.json" "$FW/orig.json.good" && cp "$FW/bogus.json" "$FW/orig.json"
vg create-refused-annotation "$FW/true.json" create --bundle "$B" vg-3
printf '{"ociVersion": "1.0.2", "process": ' >"$FW/orig.json"
vg create-bad-json "$FW/true.json" create --bundle "$B" vg-4
cp "$FW/orig.json.good" "$FW/orig.json"
vg create-policy-broken "$FW/broken-policy.json" create --bundle "$B" vg-5
vg create-policy-missing "$FW/absent.json" create --bundle "$B" vg-6
vg create-no-bundle "$FW/true.json" create --bundle "$FW/nonexistent" vg-7

# Verbs on the container recorded by the first create (backend /bin/true).
jq -n '{terminal: false, user: {uid: 0, gid: 0}, args: ["true"], cwd: "/",
	capabilities: {bounding: ["CAP_SYS_ADMIN"], effective: ["CAP_SYS_ADMIN"]}}' >"$FW/process.json"
vg exec-process "$FW/true.json" exec --process "$FW/process.json" vg-1
echo '{"memory":{"limit":99999999999999},"pids":{"limit":0},"cpu":{"quota":1,"period":1000}}' \
	>"$FW/resources.json"
vg update-resources "$FW/true.json" update --resources "$FW/resources.json" vg-1
vg update-flags "$FW/true.json" update --memory 1g --pids-limit 10 vg-1
vg state "$FW/true.json" state vg-1
vg delete "$FW/true.json" delete --force vg-1
vg delete-unknown "$FW/true.json" delete vg-unknown
vg bad-verb-args "$FW/true.json" create
vg policy-show "$FW/true.json" policy show
vg doctor "$FW/true.json" doctor
vg version "$FW/true.json" --version
tap_done

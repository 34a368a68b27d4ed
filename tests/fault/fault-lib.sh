# Shared setup for the fault tests (tests/fault/*.sh): the build directory comes from $1 or
# HEZO_BUILD, the shim runs with a policy and state directory private to the test.

# shellcheck shell=bash

FAULT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -n "${1:-}" ]; then
	HEZO_BUILD_DIR=$(cd "$1" && pwd)
elif [ -n "${HEZO_BUILD:-}" ]; then
	HEZO_BUILD_DIR=$HEZO_BUILD
fi
export HEZO_BUILD_DIR
# shellcheck source=tests/lib/common.sh
. "$FAULT_DIR/../lib/common.sh"
# shellcheck source=tests/lib/netns.sh
. "$FAULT_DIR/../lib/netns.sh"

HEZO_HOOK_BIN=${HEZO_HOOK_BIN:-$HEZO_BUILD_DIR/hooks/hezo-hook}
HEZO_PROXYD_BIN=${HEZO_PROXYD_BIN:-$HEZO_BUILD_DIR/proxyd/hezo-proxyd}

# fault_setup NAME: FW, a fresh work directory removed at exit, with FW/state for the shim.
fault_setup()
{
	hezo_require_root
	hezo_require_shim
	mkdir -p "$HEZO_TEST_DIR"
	FW=$(mktemp -d "$HEZO_TEST_DIR/fault-$1.XXXXXX")
	mkdir -p "$FW/state"
	tap_cleanup "rm -rf '$FW'"
}

# fault_policy FILE RUNC_PATH [JQ_FILTER]: the dev runc policy with backends.runc.path set.
fault_policy()
{
	jq -n --arg path "$2" '{version: 1, mode: "dev", backend: "runc", allowBackends: ["runc"],
		backends: {runc: {path: $path}}, egress: {mode: "off"}}' | jq "${3:-.}" >"$1"
}

# fault_bundle DIR [PAD_BYTES]: a bundle (runc spec, empty rootfs) whose config.json carries
# PAD_BYTES of extra annotations, so rewriting it takes long enough to be interrupted.
fault_bundle()
{
	local dir=$1 pad=${2:-0}
	mkdir -p "$dir/rootfs"
	(cd "$dir" && rm -f config.json && runc spec) || return 1
	jq --argjson pad "$pad" '
		.root = {path: "rootfs", readonly: false}
		| .process.terminal = false
		| .process.args = ["true"]
		| .annotations = ((.annotations // {}) + ([range(0; ($pad / 1024 | floor))
			| {key: ("org.example.pad.\(.)"), value: ("x" * 1000)}] | from_entries))
	' "$dir/config.json" >"$dir/config.json.new" && mv -f "$dir/config.json.new" "$dir/config.json"
}

# fault_shim POLICY ARGS...: the shim under test with POLICY and the test's state directory.
# A box that create makes is handed the shim's stdout and stderr as they are, and a regular file
# is refused there (shim/fds.c): both go through one pipe to the caller's stderr (callers redirect
# it), and the copy is waited for when the shim failed (a box made holds the pipe for its life).
_fault_shim_exec()
{
	timeout -k 5 "${HEZO_SHIM_TIMEOUT:-120}" env HEZO_POLICY="$1" HEZO_STATE_DIR="$FW/state" \
		HEZO_HOOK_PATH="${HEZO_HOOK_PATH:-$HEZO_HOOK_BIN}" \
		HEZO_PROXYD_SOCKET="${HEZO_PROXYD_SOCKET:-/run/hezo-proxyd/control.sock}" \
		"$HEZO_SHIM_BIN" "${@:2}"
}
fault_shim()
{
	local rc
	# On a function call the shell itself makes the substitution, so $! is its copy.
	_fault_shim_exec "$@" </dev/null 2> >(cat >&2) >&2
	rc=$?
	[ "$rc" = 0 ] || wait "$!" 2>/dev/null
	return "$rc"
}

# fault_cgroup_cleanup ID...: with /bin/true as the backend nothing deletes the container, so the
# cgroup directories the shim made for it (cgroupsPath /ID: the TCP cap under cgroup v1) go at exit.
fault_cgroup_cleanup()
{
	local id
	for id in "$@"; do
		tap_cleanup "rmdir /sys/fs/cgroup/*/'$id' 2>/dev/null"
	done
}

# todo_not_ok DESC REASON: a known failure, reported as TAP TODO (does not fail the run).
todo_not_ok()
{
	TAP_COUNT=$((TAP_COUNT + 1))
	echo "not ok $TAP_COUNT - ${1//#/_} # TODO ${2//#/_}"
}

# temp_files DIR: the shim's atomic-write temporaries left in DIR.
temp_files()
{
	find "$1" -maxdepth 1 -name '.*.hezo-*' 2>/dev/null | sort
}

# state_records: the container records in the test's state directory (one directory per --root
# holds one file per container; the directories themselves stay).
state_records()
{
	# The records lock (.records.lock) holds nothing of any container.
	find "$FW/state" -type f ! -name .records.lock 2>/dev/null | sort
}

# no_sanitizer_report NAME FILE...: ok unless ASan, LSan or UBSan wrote a report into FILE.
no_sanitizer_report()
{
	expect_no_match "$(cat "${@:2}" 2>/dev/null)" 'ERROR: (Address|Leak)Sanitizer|runtime error:' \
		"$1: no sanitizer report"
}

# json_log_ok FILE: ok when FILE is exactly one JSON object per line with level, msg, time.
json_log_ok()
{
	[ -s "$1" ] && jq -e -s 'length >= 1 and all(.[]; (.level | type) == "string"
		and (.msg | type) == "string" and (.time | type) == "string")' "$1" >/dev/null
}

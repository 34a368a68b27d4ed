# Shared setup for the integration tests: where things are, what a test needs before it can run,
# the policy for the backend under test (HEZO_TEST_BACKEND) and the wrapper engines call.

# shellcheck shell=bash

HEZO_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HEZO_SOURCE_DIR=${HEZO_SOURCE_DIR:-$(cd "$HEZO_LIB_DIR/../.." && pwd)}
HEZO_BUILD_DIR=${HEZO_BUILD_DIR:-$HEZO_SOURCE_DIR/build}
HEZO_SHIM_BIN=${HEZO_SHIM_BIN:-$HEZO_BUILD_DIR/shim/hezo-shim}
HEZO_HOOK_BIN=${HEZO_HOOK_BIN:-$HEZO_BUILD_DIR/hooks/hezo-hook}
# Tests run one at a time (is_parallel: false) and share this directory.
HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-test}
HEZO_TEST_POLICY=$HEZO_TEST_DIR/policy.json
HEZO_TEST_STATE=$HEZO_TEST_DIR/state
HEZO_TEST_WRAPPER=$HEZO_TEST_DIR/hezo-shim
HEZO_TEST_SANITIZER_DIR=$HEZO_TEST_DIR/sanitizer
HEZO_TEST_BACKEND=${HEZO_TEST_BACKEND:-runc}
# The /usr/local/bin/docker on these machines is a newer client only; use docker.io's own.
HEZO_DOCKER=${HEZO_DOCKER:-/usr/bin/docker}

# shellcheck source=tests/lib/tap.sh
. "$HEZO_LIB_DIR/tap.sh"
# shellcheck source=tests/lib/image.sh
. "$HEZO_LIB_DIR/image.sh"

# A test that cannot run here is skipped, unless the caller (tests/run.sh, .ci/run) demands that
# integration tests really run: then it is a failure.
hezo_cannot_run()
{
	if [ "${HEZO_REQUIRE_INTEGRATION:-0}" = 1 ]; then
		bail_out "cannot run (HEZO_REQUIRE_INTEGRATION=1): $*"
	fi
	tap_skip_all "$*"
}

hezo_require_root()
{
	[ "$(id -u)" = 0 ] || hezo_cannot_run "needs root"
}

# hezo_require_tools TOOL...: each must be on PATH or an executable path.
hezo_require_tools()
{
	local t
	for t in "$@"; do
		if [ "${t#/}" != "$t" ]; then
			[ -x "$t" ] || hezo_cannot_run "missing $t"
		else
			command -v "$t" >/dev/null 2>&1 || hezo_cannot_run "missing tool $t"
		fi
	done
}

hezo_require_shim()
{
	[ -x "$HEZO_SHIM_BIN" ] || hezo_cannot_run "shim not built: $HEZO_SHIM_BIN"
}

# Path of the backend binary under test.
hezo_backend_bin()
{
	case "$HEZO_TEST_BACKEND" in
	runc) command -v runc || echo /usr/sbin/runc ;;
	runsc) command -v runsc || echo /usr/bin/runsc ;;
	crun) command -v crun || echo /usr/bin/crun ;;
	*) echo "unknown HEZO_TEST_BACKEND '$HEZO_TEST_BACKEND'" >&2; return 1 ;;
	esac
}

hezo_require_backend()
{
	case "$HEZO_TEST_BACKEND" in
	runc | runsc) ;;
	*) bail_out "HEZO_TEST_BACKEND must be runc or runsc, not '$HEZO_TEST_BACKEND'" ;;
	esac
	hezo_require_tools "$(hezo_backend_bin)"
}

# The host's pids.max the policy leads to under the backend, for a workload limit of N (256):
# runc: N. runsc: the shim's model of gVisor's own threads (docs/runsc.md, "Processes"), restated
# here on purpose: systrap (runsc from 0.0~20240729, the default) 64 + 5 * N, else 128 + 24 * N.
hezo_expected_pids()
{
	local base=${1:-256} bin date
	if [ "$HEZO_TEST_BACKEND" != runsc ]; then
		echo "$base"
		return
	fi
	bin=${HEZO_TEST_RUNSC:-$(hezo_backend_bin)}
	date=$("$bin" --version 2>/dev/null | grep -o '20[0-9]\{6\}' | head -n1)
	if [ "${date:-0}" -ge 20240729 ]; then
		echo $((64 + 5 * base))
	else
		echo $((128 + 24 * base))
	fi
}

# hezo_policy_json CONTEXT: the test policy for the backend under test. CONTEXT is "bundle" (a
# bare OCI bundle with an unconfigured network namespace) or "docker" (an engine's network).
# Egress is "deny": every container gets the hook's drop-all table (the proxy mode, with
# hezo-proxyd, has its own tests in tests/integration/egress-docker.sh).
# The default cgroupParents (docs/policy.md) plus the tests' own: bundles use /hezo-test/ID, ctr
# runs in containerd namespaces hezo-test and hezo-engines (cgroupsPath /NAMESPACE/ID).
HEZO_TEST_CGROUP_PARENTS='["/","/docker","/system.slice","/machine.slice","/libpod_parent",'\
'"/kubepods","/kubepods.slice","/default","/k8s.io","/hezo-test","/hezo-engines"]'

hezo_policy_json()
{
	local context=${1:-bundle} net
	case "$HEZO_TEST_BACKEND" in
	runc)
		echo '{"version":1,"mode":"dev","backend":"runc","allowBackends":["runc","runsc"],' \
			'"cgroupParents":'"$HEZO_TEST_CGROUP_PARENTS"',"egress":{"mode":"deny"}}'
		;;
	runsc)
		# runsc's netstack mode fails on this kernel (shared/ENVIRONMENT.md): a bundle gets no
		# network at all, an engine's container keeps its namespace through host mode.
		net=none
		[ "$context" = docker ] && net=host
		echo '{"version":1,"mode":"dev","backend":"runsc","allowBackends":["runc","runsc"],' \
			'"backends":{"runsc":{"network":"'"$net"'"}},"cgroupParents":'"$HEZO_TEST_CGROUP_PARENTS"',' \
			'"egress":{"mode":"deny"}}'
		;;
	*)
		echo "unknown HEZO_TEST_BACKEND '$HEZO_TEST_BACKEND'" >&2
		return 1
		;;
	esac
}

# hezo_write_policy CONTEXT [JQ_FILTER]: (re)write the shared test policy, edited by JQ_FILTER.
hezo_write_policy()
{
	local context=${1:-bundle} filter=${2:-.}
	mkdir -p "$HEZO_TEST_DIR"
	hezo_policy_json "$context" | jq "$filter" >"$HEZO_TEST_POLICY.tmp" &&
		mv -f "$HEZO_TEST_POLICY.tmp" "$HEZO_TEST_POLICY"
}

# The runtime engines call: the shim reads its policy and state directory from its own
# environment, which dockerd/containerd do not let us set, hence a wrapper script. Sanitizer
# reports of shim runs started by an engine land in HEZO_TEST_SANITIZER_DIR, where tests look.
hezo_make_wrapper()
{
	mkdir -p "$HEZO_TEST_DIR" "$HEZO_TEST_STATE" "$HEZO_TEST_SANITIZER_DIR"
	cat >"$HEZO_TEST_WRAPPER.tmp" <<-EOF
		#!/bin/sh
		# Generated by tests/lib/common.sh: runs the hezo-shim under test with the test policy.
		export HEZO_POLICY='$HEZO_TEST_POLICY'
		export HEZO_STATE_DIR='$HEZO_TEST_STATE'
		export HEZO_HOOK_PATH='$HEZO_HOOK_BIN'
		export ASAN_OPTIONS='${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$HEZO_TEST_SANITIZER_DIR/asan'
		export UBSAN_OPTIONS='${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}:log_path=$HEZO_TEST_SANITIZER_DIR/ubsan'
		exec '$HEZO_SHIM_BIN' "\$@"
	EOF
	chmod 0755 "$HEZO_TEST_WRAPPER.tmp"
	mv -f "$HEZO_TEST_WRAPPER.tmp" "$HEZO_TEST_WRAPPER"
}

# Sanitizer reports left by shim runs an engine started (empty output: none).
hezo_sanitizer_reports()
{
	find "$HEZO_TEST_SANITIZER_DIR" -type f 2>/dev/null | sort
}

# hezo_expect_no_sanitizer_reports [DESCRIPTION]: one assertion that no shim run of this test left
# a sanitizer report, showing the reports' starts when one did.
hezo_expect_no_sanitizer_reports()
{
	local reports r
	reports=$(hezo_sanitizer_reports)
	expect_eq "$reports" "" "${1:-no sanitizer reports from shim runs}" ||
		for r in $reports; do diag "$(head -c 4000 "$r")"; done
}

# Run the shim directly with the test policy and state directory, never for longer than
# HEZO_SHIM_TIMEOUT seconds.
hezo_shim()
{
	timeout -k 5 "${HEZO_SHIM_TIMEOUT:-120}" env HEZO_POLICY="$HEZO_TEST_POLICY" \
		HEZO_STATE_DIR="$HEZO_TEST_STATE" HEZO_HOOK_PATH="$HEZO_HOOK_BIN" "$HEZO_SHIM_BIN" "$@"
}

# hezo_state_records ID: files in the shim's state directory that name or mention container ID.
# The records come first (callers take the first line as the record), then what the container's
# private bundle (STATE/KEY/.bundles/ID) holds.
hezo_state_records()
{
	local all
	all=$({
		find "$HEZO_TEST_STATE" -name "*$1*" 2>/dev/null
		grep -rlF -- "$1" "$HEZO_TEST_STATE" 2>/dev/null
	} | sort -u)
	[ -n "$all" ] || return 0
	grep -v '/\.bundles/' <<<"$all"
	grep '/\.bundles/' <<<"$all"
	return 0
}

# hezo_cgroup_dir CONTROLLER CGROUPS_PATH: the host directory of a cgroup v1 controller for an
# absolute OCI cgroupsPath (cgroupfs driver, as dockerd uses here).
hezo_cgroup_dir()
{
	local controller=$1 path=$2
	case "$path" in
	/*) echo "/sys/fs/cgroup/$controller$path" ;;
	*) echo "hezo_cgroup_dir: cannot resolve relative cgroupsPath '$path'" >&2; return 1 ;;
	esac
}

# hezo_read FILE: its content, or "<unreadable FILE>" so an assertion shows what went wrong.
hezo_read()
{
	cat "$1" 2>/dev/null || echo "<unreadable $1>"
}

# A short random-ish suffix for container names.
hezo_rand()
{
	printf '%s%04x' "$$" "$RANDOM"
}

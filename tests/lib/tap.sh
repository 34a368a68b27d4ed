# TAP (Test Anything Protocol) helpers for the bash tests; meson parses what they print.
# Source it, then call the assertions; finish with tap_done (or let the EXIT trap do it).

# shellcheck shell=bash

TAP_COUNT=0
TAP_FAILED=0
TAP_PLANNED=""
TAP_FINISHED=0
TAP_CLEANUPS=()

# Plan N assertions up front; without it tap_done prints the plan at the end.
tap_plan()
{
	TAP_PLANNED=$1
	echo "1..$1"
}

# Every line of "$*" as TAP diagnostics, so command output never confuses the parser.
diag()
{
	local line
	while IFS= read -r line; do
		echo "# $line"
	done <<<"$*"
}

# Print the output of a command as diagnostics.
diag_cmd()
{
	diag "$("$@" 2>&1)"
}

_tap_result()
{
	local status=$1 desc=$2
	TAP_COUNT=$((TAP_COUNT + 1))
	# '#' starts a directive in TAP: keep descriptions free of it.
	desc=${desc//#/_}
	desc=${desc//$'\n'/ }
	if [ "$status" = ok ]; then
		echo "ok $TAP_COUNT - $desc"
		return 0
	fi
	TAP_FAILED=$((TAP_FAILED + 1))
	echo "not ok $TAP_COUNT - $desc"
	return 1
}

ok()
{
	_tap_result ok "$1"
}

not_ok()
{
	_tap_result fail "$1"
}

# skip DESC REASON: an assertion that cannot run here (counts as passed for TAP).
skip()
{
	TAP_COUNT=$((TAP_COUNT + 1))
	echo "ok $TAP_COUNT - ${1//#/_} # SKIP ${2:-}"
}

# check DESC CMD...: ok when CMD exits 0; its output goes to diagnostics when it fails.
check()
{
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1) && rc=0 || rc=$?
	if [ "$rc" -eq 0 ]; then
		ok "$desc"
		return 0
	fi
	not_ok "$desc"
	diag "command failed (exit $rc): $*"
	[ -n "$out" ] && diag "$out"
	return 1
}

# check_fails DESC CMD...: ok when CMD exits non-zero.
check_fails()
{
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1) && rc=0 || rc=$?
	if [ "$rc" -ne 0 ]; then
		ok "$desc"
		return 0
	fi
	not_ok "$desc"
	diag "command unexpectedly succeeded: $*"
	[ -n "$out" ] && diag "$out"
	return 1
}

# expect_eq GOT WANT DESC
expect_eq()
{
	if [ "$1" = "$2" ]; then
		ok "$3"
		return 0
	fi
	not_ok "$3"
	diag "got:  '$1'"
	diag "want: '$2'"
	return 1
}

# expect_ne GOT UNWANTED DESC
expect_ne()
{
	if [ "$1" != "$2" ]; then
		ok "$3"
		return 0
	fi
	not_ok "$3"
	diag "got the value it must not be: '$1'"
	return 1
}

# expect_match GOT ERE DESC: GOT (possibly many lines) contains a match of the extended regex.
expect_match()
{
	if grep -Eq -- "$2" <<<"$1"; then
		ok "$3"
		return 0
	fi
	not_ok "$3"
	diag "no match for /$2/ in:"
	diag "$1"
	return 1
}

# expect_no_match GOT ERE DESC
expect_no_match()
{
	if ! grep -Eq -- "$2" <<<"$1"; then
		ok "$3"
		return 0
	fi
	not_ok "$3"
	diag "unexpected match for /$2/ in:"
	diag "$1"
	return 1
}

# Register a command to run at exit (last registered runs first). Arguments are eval'd then.
tap_cleanup()
{
	TAP_CLEANUPS+=("$*")
}

# tap_bg CMD...: start CMD in the background and remember its pid in the caller's array PIDS,
# for the cleanup the caller registers (tap_cleanup 'for p in "${PIDS[@]}"; do kill "$p"; done').
tap_bg()
{
	"$@" &
	PIDS+=($!)
}

_tap_exit()
{
	local rc=$? i
	set +e
	for ((i = ${#TAP_CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${TAP_CLEANUPS[$i]}" >/dev/null 2>&1
	done
	if [ "$TAP_FINISHED" = 0 ]; then
		# The script died before tap_done: make that a visible failure.
		if [ "$rc" -ne 0 ]; then
			echo "Bail out! test script exited early with status $rc"
		fi
		[ -z "$TAP_PLANNED" ] && echo "1..$TAP_COUNT"
	fi
	exit "$rc"
}
trap _tap_exit EXIT
trap 'exit 130' INT TERM

# Skip the whole test file: meson's TAP parser wants "1..0 # SKIP" and exit 0 (it turns exit 77
# into an error for TAP tests); run by hand, exit 77 as automake does.
tap_skip_all()
{
	TAP_FINISHED=1
	echo "1..0 # SKIP $*"
	if [ -n "${MESON_TEST_ITERATION:-}" ]; then
		exit 0
	fi
	exit 77
}

bail_out()
{
	TAP_FINISHED=1
	echo "Bail out! $*"
	exit 1
}

tap_done()
{
	TAP_FINISHED=1
	if [ -z "$TAP_PLANNED" ]; then
		echo "1..$TAP_COUNT"
	elif [ "$TAP_PLANNED" != "$TAP_COUNT" ]; then
		diag "planned $TAP_PLANNED assertions, ran $TAP_COUNT"
		exit 1
	fi
	diag "$TAP_FAILED of $TAP_COUNT assertions failed"
	[ "$TAP_FAILED" -eq 0 ] && exit 0
	exit 1
}

#!/bin/bash
# Fault: the backend binary the policy names is missing, not executable, cannot be executed, or
# crashes (SIGSEGV) during create. Before the exec: one clear error, config.json untouched, no
# temporary file, no record. After a crash: the engine's `delete --force` leaves nothing behind.
# Usage: tests/fault/backend.sh [BUILD_DIR]   (or HEZO_BUILD=...)
set -uo pipefail

# shellcheck source=tests/fault/fault-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/fault-lib.sh"

hezo_require_root
hezo_require_tools jq runc cmp timeout
fault_setup backend
tap_plan 26

B=$FW/bundle
fault_bundle "$B" 0 || bail_out "cannot make bundle"
cp "$B/config.json" "$FW/old.json"

# refused NAME PATH ERE: create with backends.runc.path=PATH must fail before anything changes.
refused()
{
	local name=$1 path=$2 ere=$3 rc policy=$FW/policy-$1.json
	fault_policy "$policy" "$path"
	fault_shim "$policy" --root "$FW/root" --log "$FW/$name.log" --log-format json \
		create --bundle "$B" "hezo-backend-$name" >"$FW/$name.out" 2>&1
	rc=$?
	expect_ne "$rc" 0 "$name: create fails"
	if json_log_ok "$FW/$name.log" && [ "$(wc -l <"$FW/$name.log")" = 1 ]; then
		ok "$name: one JSON error line"
	else
		not_ok "$name: one JSON error line"
		diag_cmd cat "$FW/$name.log" "$FW/$name.out"
	fi
	expect_match "$(jq -r .msg "$FW/$name.log" 2>/dev/null)" "$ere" "$name: the error says why"
	check "$name: config.json is unchanged" cmp "$B/config.json" "$FW/old.json"
	expect_eq "$(temp_files "$B")" "" "$name: no temporary file is left"
	expect_eq "$(state_records)" "" "$name: no state record is left"
	no_sanitizer_report "$name" "$FW/$name.out"
	diag "$name: $(jq -r .msg "$FW/$name.log" 2>/dev/null)"
}

refused missing /nonexistent/hezo-fault/runc "runc.*/nonexistent/hezo-fault/runc"

printf '#!/bin/sh\nexit 0\n' >"$FW/noexec"
chmod 0644 "$FW/noexec"
refused noexec "$FW/noexec" "runc.*$FW/noexec"

# Executable, but execve() fails (its interpreter is missing): the shim has already rewritten
# config.json and written the record, so this checks the undo path.
printf '#!/nonexistent/hezo-fault/sh\n' >"$FW/badinterp"
chmod 0755 "$FW/badinterp"
refused badinterp "$FW/badinterp" "cannot execute $FW/badinterp"

# A backend that dies by SIGSEGV in create, and behaves like runc otherwise.
cat >"$FW/segv" <<-'EOF'
	#!/bin/bash
	for a in "$@"; do
		[ "$a" = create ] && kill -SEGV $$
	done
	exec runc "$@"
EOF
chmod 0755 "$FW/segv"
fault_policy "$FW/policy-segv.json" "$FW/segv"
fault_shim "$FW/policy-segv.json" --root "$FW/root" --log "$FW/segv.log" --log-format json \
	create --bundle "$B" hezo-backend-segv >"$FW/segv.out" 2>&1
rc=$?
# The shim execve()s the backend, so the caller sees the backend's own death (128 + SIGSEGV).
expect_eq "$rc" 139 "segv: the caller sees the backend killed by SIGSEGV"
expect_eq "$(temp_files "$B")" "" "segv: no temporary file is left"
expect_eq "$(runc --root "$FW/root" list -q 2>/dev/null)" "" "segv: no container exists"
# What an engine does after a failed create.
fault_shim "$FW/policy-segv.json" --root "$FW/root" --log "$FW/segv-delete.log" \
	--log-format json delete --force hezo-backend-segv >"$FW/segv-delete.out" 2>&1
rc=$?
expect_eq "$rc" 0 "segv: delete --force succeeds" || diag_cmd cat "$FW/segv-delete.out" \
	"$FW/segv-delete.log"
expect_eq "$(state_records)" "" "segv: no state record is left after delete --force"
tap_done

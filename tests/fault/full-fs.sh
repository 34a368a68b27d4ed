#!/bin/bash
# Fault: the filesystem under the bundle is full when `hezo-shim create` rewrites config.json.
# The shim must fail with one clear error line, leave config.json as it was, and leave neither a
# temporary file nor a state record behind.
# Usage: tests/fault/full-fs.sh [BUILD_DIR]   (or HEZO_BUILD=...)
set -uo pipefail

# shellcheck source=tests/fault/fault-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/fault-lib.sh"

hezo_require_root
hezo_require_tools jq runc cmp timeout mount umount dd
fault_setup fullfs
fault_cgroup_cleanup hezo-fullfs-stderr hezo-fullfs-json hezo-fullfs-after
tap_plan 15

MNT=$FW/mnt
POLICY=$FW/policy.json
fault_policy "$POLICY" /bin/true
mkdir -p "$MNT"
mount -t tmpfs -o size=64k,mode=0755 hezo-fault-fullfs "$MNT" || bail_out "cannot mount tmpfs"
tap_cleanup "umount -l '$MNT'"

B=$MNT/bundle
fault_bundle "$B" 0 || bail_out "cannot make bundle"
cp "$B/config.json" "$FW/old.json"

# fill: take every free block, so the rewrite (bigger than the original) cannot fit.
fill()
{
	dd if=/dev/zero of="$MNT/fill" bs=1k 2>/dev/null
	sync
	diag "tmpfs: $(df -k --output=used,avail "$MNT" | tail -1 | tr -s ' ')"
}

# run_full NAME ARGS...: a create on the full filesystem; checks what a refusal must give.
run_full()
{
	local name=$1 rc lines
	shift
	rm -f "$FW/$name.log" "$FW/$name.err"
	fault_shim "$POLICY" --root "$FW/root" "$@" create --bundle "$B" "hezo-fullfs-$name" \
		>"$FW/$name.out" 2>"$FW/$name.err"
	rc=$?
	expect_ne "$rc" 0 "$name: create on a full filesystem fails"
	if cmp -s "$B/config.json" "$FW/old.json"; then
		ok "$name: config.json is unchanged"
	else
		not_ok "$name: config.json is unchanged"
		diag "size now $(stat -c %s "$B/config.json"), was $(stat -c %s "$FW/old.json")"
	fi
	expect_eq "$(temp_files "$B")" "" "$name: no temporary file is left in the bundle"
	expect_eq "$(state_records)" "" "$name: no state record is left"
	no_sanitizer_report "$name" "$FW/$name.err" "$FW/$name.out"
}

fill
run_full stderr
lines=$(wc -l <"$FW/stderr.err")
expect_eq "$lines" 1 "stderr: the error is one line"
expect_match "$(cat "$FW/stderr.err")" 'config\.json.*(No space left|ENOSPC)' \
	"stderr: the error names config.json and the full filesystem"

run_full json --log "$FW/json.log" --log-format json
if json_log_ok "$FW/json.log" && [ "$(wc -l <"$FW/json.log")" = 1 ]; then
	ok "json: the log holds one JSON line with level, msg and time"
else
	not_ok "json: the log holds one JSON line with level, msg and time"
	diag_cmd cat "$FW/json.log"
fi
expect_match "$(jq -r 'select(.level == "error") | .msg' "$FW/json.log" 2>/dev/null)" \
	'config\.json.*No space left' "json: the error line names config.json and the full filesystem"
diag "error: $(cat "$FW/json.log")"

# With the space back, the same bundle is rewritten: the failure left nothing in the way.
rm -f "$MNT/fill"
fault_shim "$POLICY" --root "$FW/root" create --bundle "$B" hezo-fullfs-after \
	>"$FW/after.out" 2>&1
check_fails "with space again, create rewrites config.json" cmp -s "$B/config.json" "$FW/old.json"
tap_done

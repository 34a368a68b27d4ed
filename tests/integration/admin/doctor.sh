#!/bin/sh
# `doctor` reads the project files too: a file that does not layer fails naming its project, a
# project's proxy egress makes proxyd's check count; `--format json` is the same report as JSON.
# Every path is the test's own (policy, projects, sockets, engine files): the host's are not read.
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/hezo-doctor-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/projects"
jq -n --arg d "$work/projects" '{version: 1, mode: "dev", backend: "runc", allowBackends: ["runc"],
	egress: {mode: "off"}, projectsDir: $d, resources: {memory: "64m"}}' >"$work/policy.json"
doctor() { "$T" doctor --policy "$work/policy.json" --proxyd-socket "$work/none.sock" \
	--docker-config "$work/none" --containerd-config "$work/none" --podman-config "$work/none" "$@"; }

doctor >"$work/plain" 2>&1
check "no projects: proxyd's check is skipped" grep -q '^skip proxyd: neither the policy nor a project has egress proxy' "$work/plain"

# The file table: a box's memory cap pays for about 400 bytes a file it holds, so doctor warns when
# fs.file-max is below what the cap could hold (the host's value is read, never changed).
check "a memory cap whose files fs.file-max holds: the file-table check is ok" \
	grep -q '^ok   kernel: fs.file-max [0-9]* holds the files one box' "$work/plain"
fmax=$(cat /proc/sys/fs/file-max)
if [ "$fmax" -lt $((1099511627776 / 400)) ]; then
	jq '.resources = {memory: "1024g"}' "$work/policy.json" >"$work/policy-1t.json"
	"$T" doctor --policy "$work/policy-1t.json" --proxyd-socket "$work/none.sock" --docker-config "$work/none" \
		--containerd-config "$work/none" --podman-config "$work/none" >"$work/big" 2>&1
	check "a 1024 GiB memory cap above fs.file-max $fmax: doctor warns, naming the sysctl and its fix" \
		grep -q "^warn kernel: fs.file-max $fmax is below the 2748779069 files .*sysctl -p /usr/lib/sysctl.d/50-hezo-shim.conf" "$work/big"
else
	skip "fs.file-max $fmax holds what a 1 TiB cap could (a systemd host): no warning to show"
fi
printf '{"egress": {"mode": "proxy", "allow": ["a.test"]}}\n' >"$work/projects/web.json"
printf '{"egress":\n' >"$work/projects/broken.json"
doctor >"$work/out" 2>&1
check "a project that does not load fails, naming the project and its file" \
	grep -q "^FAIL project broken: policy $work/projects/broken.json: " "$work/out"
check "a project that loads is listed" grep -q '^ok   project web loads (backend runc, egress proxy)' "$work/out"
check "a project with proxy egress makes proxyd's check fail when proxyd is down, naming the project" \
	grep -q '^FAIL proxyd: cannot connect to .*(project web) will be refused' "$work/out"
check "doctor exits non-zero on a FAIL" sh -c "! '$T' doctor --policy '$work/policy.json' --proxyd-socket '$work/none.sock' --docker-config '$work/none' --containerd-config '$work/none' --podman-config '$work/none' >/dev/null 2>&1"

doctor --format json >"$work/json" 2>&1
check "--format json is one JSON document with the counts" \
	jq -e '(.checks | length) == (.ok + .failed + .warnings + .skipped) and .failed >= 2' "$work/json"
jq -r '.checks[] | "\(.status) \(.message)"' "$work/json" >"$work/json-lines"
sed '$d' "$work/out" | sed -E 's/^(ok|FAIL|warn|skip) +/\1 /' >"$work/text-lines"
check "--format json holds the same checks as the text form" cmp "$work/json-lines" "$work/text-lines"
check "--format with anything else is refused" sh -c "! '$T' doctor --format yaml --policy '$work/policy.json' 2>'$work/err' && grep -q 'text or json' '$work/err'"
finish

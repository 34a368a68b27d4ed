# OCI bundles for the tests: a busybox rootfs and a config.json that asks for MORE than the box
# allows (capabilities, writable root, no NoNewPrivs), so the shim has something to take away.

# shellcheck shell=bash

# The 38 capabilities docker exec --privileged hands the runtime (CAP_CHOWN .. CAP_AUDIT_READ).
# shellcheck disable=SC2034
HEZO_CAPS_38='["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_DAC_READ_SEARCH","CAP_FOWNER","CAP_FSETID",
"CAP_KILL","CAP_SETGID","CAP_SETUID","CAP_SETPCAP","CAP_LINUX_IMMUTABLE","CAP_NET_BIND_SERVICE",
"CAP_NET_BROADCAST","CAP_NET_ADMIN","CAP_NET_RAW","CAP_IPC_LOCK","CAP_IPC_OWNER","CAP_SYS_MODULE",
"CAP_SYS_RAWIO","CAP_SYS_CHROOT","CAP_SYS_PTRACE","CAP_SYS_PACCT","CAP_SYS_ADMIN","CAP_SYS_BOOT",
"CAP_SYS_NICE","CAP_SYS_RESOURCE","CAP_SYS_TIME","CAP_SYS_TTY_CONFIG","CAP_MKNOD","CAP_LEASE",
"CAP_AUDIT_WRITE","CAP_AUDIT_CONTROL","CAP_SETFCAP","CAP_MAC_OVERRIDE","CAP_MAC_ADMIN","CAP_SYSLOG",
"CAP_WAKE_ALARM","CAP_BLOCK_SUSPEND","CAP_AUDIT_READ"]'

# Capabilities the hostile bundle asks for (all present in this machine's bounding set).
HEZO_CAPS_GREEDY='["CAP_SYS_ADMIN","CAP_NET_ADMIN","CAP_DAC_OVERRIDE","CAP_SYS_PTRACE","CAP_KILL",
"CAP_NET_RAW","CAP_SETUID","CAP_SETGID","CAP_CHOWN","CAP_FOWNER","CAP_MKNOD"]'

# hezo_make_bundle DIR ID ARGV_JSON [JQ_FILTER]: a greedy busybox bundle with root.path "rootfs"
# (relative, as ctr and CRI write it) and cgroupsPath /hezo-test/ID; JQ_FILTER edits it further.
hezo_make_bundle()
{
	local dir=$1 id=$2 argv=$3 filter=${4:-.}
	rm -rf "$dir"
	mkdir -p "$dir"
	hezo_busybox_rootfs "$dir/rootfs" || return 1
	runc spec --bundle "$dir" || return 1
	jq --arg id "$id" --argjson argv "$argv" --argjson caps "$HEZO_CAPS_GREEDY" '
		.root = {path: "rootfs", readonly: false}
		| .process.terminal = false
		| .process.args = $argv
		| .process.env = ["PATH=/bin", "HOME=/root"]
		| .process.noNewPrivileges = false
		| .process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps,
			inheritable: $caps, ambient: $caps}
		| .hostname = "hezo-test"
		| .linux.cgroupsPath = ("/hezo-test/" + $id)
	' "$dir/config.json" | jq "$filter" >"$dir/config.json.new" || return 1
	mv -f "$dir/config.json.new" "$dir/config.json"
}

# hezo_process_json ARGV_JSON CAPS_JSON: a process for `exec --process`, asking for CAPS_JSON.
hezo_process_json()
{
	jq -n --argjson argv "$1" --argjson caps "$2" '{
		terminal: false, user: {uid: 0, gid: 0}, args: $argv, env: ["PATH=/bin"], cwd: "/",
		capabilities: {bounding: $caps, effective: $caps, permitted: $caps, inheritable: $caps,
			ambient: $caps},
		noNewPrivileges: false
	}'
}

# hezo_backend [ARGS...]: the backend under test, called directly (for checks and cleanup).
hezo_backend()
{
	"$(hezo_backend_bin)" "$@"
}

# hezo_backend_ids ROOT: container IDs the backend knows under ROOT.
hezo_backend_ids()
{
	hezo_backend --root "$1" list 2>/dev/null | awk 'NR > 1 { print $1 }'
}

# hezo_backend_status ROOT ID: the status `state` reports, or "absent".
hezo_backend_status()
{
	local s
	s=$(hezo_backend --root "$1" state "$2" 2>/dev/null) || { echo absent; return; }
	jq -r '.status // "unknown"' <<<"$s"
}

# hezo_wait_status ROOT ID STATUS [SECONDS]
hezo_wait_status()
{
	local i
	for ((i = 0; i < ${4:-20} * 5; i++)); do
		[ "$(hezo_backend_status "$1" "$2")" = "$3" ] && return 0
		sleep 0.2
	done
	return 1
}

# hezo_fill_slots ROOT STATE DIR PREFIX CMD...: two boxes that sleep, each made by
# `CMD... --root ROOT create` (CMD points the shim at STATE and an admission policy), so a
# maxActive 2 policy has no slot left; their IDs are in FILLERS, removed at exit. Bundles in DIR.
hezo_fill_slots()
{
	local root=$1 state=$2 dir=$3 prefix=$4 n id
	shift 4
	FILLERS=()
	for n in 1 2; do
		id=$prefix-fill$n-$(hezo_rand)
		FILLERS+=("$id")
		tap_cleanup "HEZO_TEST_STATE='$state' hezo_bundle_cleanup '$root' '$id'"
		hezo_make_bundle "$dir/fill$n" "$id" '["sleep", "600"]' || return 1
		"$@" --root "$root" create -b "$dir/fill$n" "$id" </dev/null >/dev/null 2>/dev/null || return 1
	done
}

# hezo_bundle_cleanup ROOT ID: force the container away and drop its test cgroups.
hezo_bundle_cleanup()
{
	local c
	hezo_backend --root "$1" kill "$2" KILL >/dev/null 2>&1
	hezo_backend --root "$1" delete --force "$2" >/dev/null 2>&1
	for c in /sys/fs/cgroup/*/hezo-test/"$2"; do
		[ -d "$c" ] && rmdir "$c" 2>/dev/null
	done
	return 0
}

# What "the box" looks like from inside a container: a probe script for busybox sh, and the
# assertions on its output shared by the bundle and docker tests.

# shellcheck shell=bash

# Prints key=value lines. Runs as the container's process, so /proc/self is the box's view.
# shellcheck disable=SC2016,SC2034
HEZO_BOX_PROBE='
grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status | tr -d "\t" | sed "s/:/=/"
awk "\$2 == \"/\" { print \"rootmount=\" \$4 }" /proc/mounts | tail -n 1
if touch /.hezo-probe 2>/dev/null; then echo rootwrite=yes; else echo rootwrite=no; fi
awk "\$2 == \"/tmp\" { print \"tmpmount=\" \$3 \",\" \$4 }" /proc/mounts | tail -n 1
echo "tmpsize=$(df -k /tmp | awk "NR == 2 { print \$2 }")"
if cp /bin/busybox /tmp/busybox 2>/dev/null; then echo tmpwrite=yes; else echo tmpwrite=no; fi
if /tmp/busybox true 2>/dev/null; then echo tmpexec=yes; else echo tmpexec=no; fi
awk "\$2 == \"/sys\" { print \"sysmount=\" \$4 }" /proc/mounts | tail -n 1
awk "\$2 == \"/proc/sys\" { print \"procsysmount=\" \$4 }" /proc/mounts | tail -n 1
echo "pidsmax=$(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || echo none)"
echo "devices=$(find /dev -maxdepth 1 \( -type c -o -type b \) 2>/dev/null | sort | tr "\n" " ")"
echo "version=$(cat /proc/version)"
echo probe=done
'

# The kernel filesystems and process limits a box shows from inside (key=value lines). A write
# test only opens the file for writing (": >>"), so nothing is written even where it is allowed.
# shellcheck disable=SC2016,SC2034
HEZO_MOUNT_PROBE='
# Whole filesystems (mount root /), not the binds of their parts that readonlyPaths makes.
fstypes() { awk "\$4 == \"/\" { for (i = 7; i <= NF; i++) if (\$i == \"-\") { print \$(i + 1); break } }" /proc/self/mountinfo; }
echo "procmounts=$(fstypes | grep -cx proc)"
echo "sysfsmounts=$(fstypes | grep -cx sysfs)"
awk "\$5 == \"/sys\" { print \"sysopts=\" \$6 }" /proc/self/mountinfo | tail -n 1
for f in /proc/sys/kernel/core_pattern /proc/sysrq-trigger; do
	k=$(basename "$f" | tr -d _-)
	if [ ! -e "$f" ]; then echo "$k=absent"; elif (: >>"$f") 2>/dev/null; then echo "$k=rw"; else echo "$k=ro"; fi
done
echo "rtprio=$(awk "/^Max realtime priority/ { print \$4 \",\" \$5 }" /proc/self/limits)"
echo "nicelimit=$(awk "/^Max nice priority/ { print \$4 \",\" \$5 }" /proc/self/limits)"
echo "oomscoreadj=$(cat /proc/self/oom_score_adj 2>/dev/null)"
if renice -n -5 -p $$ >/dev/null 2>&1; then echo renice=yes; else echo renice=no; fi
echo probe=done
'

# hezo_probe_get OUTPUT KEY: the value of KEY in the probe's output.
hezo_probe_get()
{
	sed -n "s/^$2=//p" <<<"$1" | tail -n 1 | tr -d '\r'
}

# Device nodes a box may hold in /dev: docs/policy.md's default set (pts and shm are directories).
HEZO_BOX_DEVICES='^(/dev/(null|zero|full|random|urandom|tty|console|ptmx) )*$'

# gvisor_hides VALUE DESC WHAT: under runsc, gVisor's /proc does not show some things; an empty
# VALUE there is a skip (with the reason), not a pass. Returns 0 when it skipped.
gvisor_hides()
{
	if [ "$HEZO_TEST_BACKEND" = runsc ] && [ -z "$1" ]; then
		skip "$2" "gVisor's /proc does not show $3"
		return 0
	fi
	return 1
}

# hezo_assert_creds LABEL OUTPUT: no capability in any set, NoNewPrivs, a seccomp filter.
hezo_assert_creds()
{
	local label=$1 out=$2 set v
	# A probe that did not run makes one failure, not twenty.
	expect_eq "$(hezo_probe_get "$out" probe)" "done" "[$label] probe ran to the end" || {
		diag "$out"
		return 1
	}
	for set in CapInh CapPrm CapEff CapBnd CapAmb; do
		v=$(hezo_probe_get "$out" "$set")
		gvisor_hides "$v" "[$label] $set is 0" "$set" ||
			expect_eq "$v" 0000000000000000 "[$label] $set is 0"
	done
	v=$(hezo_probe_get "$out" NoNewPrivs)
	gvisor_hides "$v" "[$label] NoNewPrivs is 1" NoNewPrivs ||
		expect_eq "$v" 1 "[$label] NoNewPrivs is 1"
	expect_eq "$(hezo_probe_get "$out" Seccomp)" 2 "[$label] Seccomp is 2 (filter)"
}

# hezo_assert_box LABEL OUTPUT: the box's properties as the probe saw them.
hezo_assert_box()
{
	local label=$1 out=$2 v mnt
	hezo_assert_creds "$label" "$out" || return 1
	mnt=$(hezo_probe_get "$out" rootmount)
	expect_match "$mnt" '^ro(,|$)' "[$label] root is mounted read-only"
	expect_eq "$(hezo_probe_get "$out" rootwrite)" no "[$label] touch / fails"
	mnt=$(hezo_probe_get "$out" tmpmount)
	expect_match "$mnt" '^tmpfs,' "[$label] /tmp is a tmpfs"
	expect_match "$mnt" "(^|,)noexec(,|$)" "[$label] /tmp is noexec"
	for v in nosuid nodev; do
		gvisor_hides "$(grep -Eo "(^|,)$v(,|$)" <<<"$mnt")" "[$label] /tmp is $v" "$v in /proc/mounts" ||
			expect_match "$mnt" "(^|,)$v(,|$)" "[$label] /tmp is $v"
	done
	# gVisor writes the size in bytes.
	expect_match "$mnt" '(^|,)size=(65536k|67108864)(,|$)' "[$label] /tmp has a 64 MiB size in /proc/mounts"
	expect_eq "$(hezo_probe_get "$out" tmpsize)" 65536 "[$label] df says /tmp has 64 MiB"
	expect_eq "$(hezo_probe_get "$out" tmpwrite)" yes "[$label] /tmp is writable"
	expect_eq "$(hezo_probe_get "$out" tmpexec)" no "[$label] a binary copied to /tmp cannot run"
}

# hezo_assert_box_engine LABEL OUTPUT: what an engine's privileged options must not undo.
hezo_assert_box_engine()
{
	local label=$1 out=$2 v devices=$HEZO_BOX_DEVICES
	[ "$(hezo_probe_get "$out" probe)" = "done" ] || return 1
	expect_match "$(hezo_probe_get "$out" sysmount)" '^ro(,|$)' "[$label] /sys is read-only"
	v=$(hezo_probe_get "$out" procsysmount)
	gvisor_hides "$v" "[$label] /proc/sys is read-only" "/proc/sys as a mount of its own" ||
		expect_match "$v" '^ro(,|$)' "[$label] /proc/sys is read-only"
	# gVisor's own /dev also has its emulated fuse device (no host device behind it).
	[ "$HEZO_TEST_BACKEND" = runsc ] && devices=${devices/ptmx)/ptmx|fuse)}
	expect_match "$(hezo_probe_get "$out" devices)" "$devices" \
		"[$label] /dev holds only the default device nodes"
}

# hezo_assert_backend LABEL OUTPUT: the container really ran under the backend under test.
hezo_assert_backend()
{
	local label=$1 out=$2 inside host
	[ "$(hezo_probe_get "$out" probe)" = "done" ] || return 1
	inside=$(hezo_probe_get "$out" version)
	host=$(cat /proc/version)
	if [ "$HEZO_TEST_BACKEND" = runsc ]; then
		expect_ne "$inside" "$host" "[$label] /proc/version is gVisor's, not the host kernel's"
	else
		expect_eq "$inside" "$host" "[$label] /proc/version is the host kernel's (runc)"
	fi
}

# hezo_assert_spec LABEL CONFIG: the config.json the backend got says "box" (a check that holds
# whatever the backend shows inside).
hezo_assert_spec()
{
	local label=$1 cfg=$2
	[ -r "$cfg" ] || { not_ok "[$label] config.json $cfg readable"; return 1; }
	expect_eq "$(jq -r '.root.readonly' "$cfg")" true "[$label] spec: root.readonly"
	expect_eq "$(jq -r '.process.noNewPrivileges' "$cfg")" true "[$label] spec: process.noNewPrivileges"
	expect_eq "$(jq -r '[.process.capabilities // {} | .[] | length] | add // 0' "$cfg")" 0 \
		"[$label] spec: every capability set empty"
	expect_eq "$(jq -r '[.mounts[] | select(.destination == "/tmp")] | length' "$cfg")" 1 \
		"[$label] spec: exactly one mount on /tmp"
	expect_eq "$(jq -r '[.mounts[] | select(.destination == "/tmp") | .type,
		(.options | index("noexec") != null, index("nosuid") != null, index("nodev") != null)]
		| map(tostring) | join(",")' "$cfg")" "tmpfs,true,true,true" \
		"[$label] spec: /tmp is tmpfs noexec,nosuid,nodev"
	expect_eq "$(jq -r '.linux.seccomp.defaultAction // "none"' "$cfg")" SCMP_ACT_ERRNO \
		"[$label] spec: a seccomp profile that denies by default"
}

# hezo_assert_cgroup LABEL CGROUPS_PATH MEMORY [PIDS]: limits from the host side (cgroup v1).
hezo_assert_cgroup()
{
	local label=$1 path=$2 mem=$3 pids=${4:-$(hezo_expected_pids)} d
	d=$(hezo_cgroup_dir memory "$path") || { not_ok "[$label] cgroupsPath '$path' is absolute"; return; }
	expect_eq "$(hezo_read "$d/memory.limit_in_bytes")" "$mem" "[$label] memory.limit_in_bytes is $mem"
	expect_eq "$(hezo_read "$d/memory.memsw.limit_in_bytes")" "$mem" \
		"[$label] memory.memsw.limit_in_bytes equals the memory limit (no swap)"
	d=$(hezo_cgroup_dir pids "$path")
	expect_eq "$(hezo_read "$d/pids.max")" "$pids" "[$label] pids.max is $pids"
}

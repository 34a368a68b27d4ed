#!/bin/bash
# The README's newcomer path ("Registering it: a newcomer's path"), run as written: every command
# line of that section's code blocks in order, with IMAGE a Debian image with a default command,
# hezo-shim installed by `meson install` under a prefix of the test's own, the shipped
# etc/policy.json as /etc/hezo/policy.json and hezo-proxyd on its default socket, as the packaged
# service runs it. Each line must do what the README says it does, and `hezo-shim uninstall
# --docker` must give daemon.json back byte for byte.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=$here/../../lib
export HEZO_SOURCE_DIR=${HEZO_SOURCE_DIR:-${HEZO_SOURCE_ROOT:-$(cd "$here/../../.." && pwd)}}
export HEZO_BUILD_DIR=${HEZO_BUILD_DIR:-${HEZO_BUILD_ROOT:-$HEZO_SOURCE_DIR/build}}
# shellcheck source=tests/lib/common.sh
. "$lib/common.sh"
# shellcheck source=tests/lib/docker.sh
. "$lib/docker.sh"
# shellcheck source=tests/lib/devimage.sh
. "$lib/devimage.sh"

README=$HEZO_SOURCE_DIR/README.md
SECTION="## Registering it: a newcomer's path"
SOCK=/run/hezo-proxyd/control.sock
WS=/srv/hezo/alpha

hezo_require_root
hezo_require_tools jq cmp timeout meson ninja runsc dockerd "$HEZO_DOCKER"

# The code lines of the section (indented four spaces), their comments cut.
mapfile -t LINES < <(awk -v s="$SECTION" '
	index($0, s) == 1 { on = 1; next }
	on && /^## / { exit }
	on && /^    [^ ]/ { sub(/^    /, ""); sub(/[ \t]+#.*$/, ""); print }' "$README")
[ "${#LINES[@]}" -ge 6 ] || bail_out "README's \"$SECTION\" has ${#LINES[@]} command lines, expected the install and project blocks"

# The names the README's lines use on this machine. A user's own of any of them is never touched:
# the test does not run there.
if [ -s "$HEZO_DAEMON_JSON" ] &&
	jq -e '.runtimes // {} | has("hezo-shim") or has("hezo-alpha")' "$HEZO_DAEMON_JSON" >/dev/null 2>&1; then
	hezo_cannot_run "daemon.json already registers hezo-shim or hezo-alpha (the user's own)"
fi
[ -e "$WS" ] && hezo_cannot_run "$WS exists (the user's own)"
[ -e "$SOCK" ] && hezo_cannot_run "$SOCK exists (a hezo-proxyd of the user's runs)"
[ -e /etc/hezo/projects/alpha.json ] && hezo_cannot_run "/etc/hezo/projects/alpha.json exists (the user's own)"
hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
hezo_devimage_docker || bail_out "cannot build $HEZO_DEV_IMAGE"

T=$(mktemp -d /var/tmp/hezo-readme.XXXXXX) || bail_out "mktemp failed"
tap_cleanup "rm -rf '$T'"
PREFIX=$T/prefix

# What this test changes, said and put back at exit whatever happens: the engines' files and
# /etc/hezo (snapshot), /srv/hezo/alpha (and /srv/hezo when the test makes it), proxyd's socket
# directory, the shim's default state directory when the test makes it.
export HEZO_ENGINE_EXTRA="/etc/hezo /etc/containers/containers.conf.d"
hezo_engine_snapshot || bail_out "cannot take a snapshot of the engines' files"
cp -a "$HEZO_DAEMON_JSON" "$T/daemon.before" 2>/dev/null || : >"$T/daemon.absent"
unset HEZO_POLICY HEZO_STATE_DIR HEZO_HOOK_PATH HEZO_PROXYD_SOCKET
[ -e /srv/hezo ] || tap_cleanup "rmdir /srv/hezo 2>/dev/null"
tap_cleanup "rm -rf --one-file-system '$WS'"
[ -e /run/hezo-proxyd ] || tap_cleanup "rm -rf /run/hezo-proxyd"
[ -e /run/hezo-shim ] ||
	tap_cleanup "[ -z \"\$(find /run/hezo-shim -type f ! -name .records.lock 2>/dev/null)\" ] &&
		rm -rf /run/hezo-shim"
# meson install writes proxyd's unit where systemd reads units, outside any prefix.
UNIT=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)/hezo-proxyd.service
if [ -e "$UNIT" ]; then
	cp -a "$UNIT" "$T/unit.before" && tap_cleanup "cp -a '$T/unit.before' '$UNIT'"
else
	tap_cleanup "rm -f '$UNIT'"
fi
rm -rf /etc/hezo

# Installed as a user installs it: meson install under a prefix (the README's tools/demo.sh and
# the package put it in /usr/local and /usr), every path compiled in that prefix's.
if ! { meson setup "$T/build" "$HEZO_SOURCE_DIR" --prefix "$PREFIX" --buildtype=release \
	-Dtests=false -Dtest_switches=false -Dwerror=false && ninja -C "$T/build" && meson install -C "$T/build"; } \
	>"$T/build.log" 2>&1; then
	bail_out "build or install failed: $(tail -n 3 "$T/build.log")"
fi
# meson install put the shipped policy in place, as on a machine with none.
cmp -s "$HEZO_SOURCE_DIR/etc/policy.json" /etc/hezo/policy.json || bail_out "meson install did not write /etc/hezo/policy.json"
diag "policy: the shipped etc/policy.json ($(jq -c '{backend, egress: .egress.mode, admission}' /etc/hezo/policy.json))"

# hezo-proxyd as its service runs it: default socket, state and log under the test's directory.
mkdir -p "$T/proxyd-state" "$T/proxyd-log"
"$PREFIX/sbin/hezo-proxyd" --state-dir "$T/proxyd-state" --log-dir "$T/proxyd-log" \
	</dev/null >"$T/proxyd.out" 2>&1 &
PROXYD_PID=$!
tap_cleanup "kill $PROXYD_PID 2>/dev/null; wait $PROXYD_PID 2>/dev/null"
for _ in $(seq 500); do
	[ -S "$SOCK" ] && break
	sleep 0.01
done
[ -S "$SOCK" ] || bail_out "hezo-proxyd did not make $SOCK: $(tail -n 3 "$T/proxyd.out")"

# IMAGE: Debian with gcc and make, and a default command (what `docker run IMAGE` runs).
IMAGE=hezo-test/readme:latest
printf 'FROM %s\nCMD ["true"]\n' "$HEZO_DEV_IMAGE" |
	timeout -k 5 120 "$HEZO_DOCKER" build -q -t "$IMAGE" - >"$T/image.log" 2>&1 ||
	bail_out "cannot build $IMAGE: $(tail -n 2 "$T/image.log")"
tap_cleanup "'$HEZO_DOCKER' rmi -f '$IMAGE' >/dev/null 2>&1"

# The project's code, as a user has it before the first box: a C program and its test.
code()
{
	mkdir -p "$WS"
	printf '#include <stdio.h>\nint main(void) { puts("hello from the box"); return 0; }\n' >"$WS/hello.c"
	printf 'check: hello\n\t./hello | grep -q "hello from the box"\nhello: hello.c\n\tcc -o hello hello.c\n' >"$WS/Makefile"
}

n=0
for line in "${LINES[@]}"; do
	n=$((n + 1))
	cmd=${line//IMAGE/$IMAGE}
	case "$cmd" in
	# create makes a missing /srv/hezo 0700 itself; one the machine had must be made so.
	"hezo-shim project create"*) [ ! -e /srv/hezo ] || chmod 0700 /srv/hezo ;;
	"docker run"*--runtime=hezo-alpha*) code ;;
	esac
	out=$(PATH="$PREFIX/bin:$PREFIX/sbin:$PATH" timeout -k 5 300 bash -c "$cmd" 2>&1) && rc=0 || rc=$?
	expect_eq "$rc" 0 "[$n: $line] exits 0" || diag "$(tail -n 15 <<<"$out")"
	case "$cmd" in
	"hezo-shim install --docker"*)
		expect_eq "$(jq -r '.runtimes["hezo-shim"].path' "$HEZO_DAEMON_JSON" 2>&1)" "$PREFIX/bin/hezo-shim" \
			"[$n] daemon.json's runtime hezo-shim is the installed hezo-shim"
		;;
	"hezo-shim doctor"*)
		expect_match "$out" '(^|[^0-9])0 failed,' "[$n] no check fails" || diag "$(grep '^fail' <<<"$out" | head -n 5)"
		;;
	"docker run"*--runtime=hezo-alpha*)
		check "[$n] the build's result stays on the host in $WS" test -x "$WS/hello"
		expect_eq "$(stat -c %a "$WS")" 700 "[$n] the workspace is its owner's alone"
		;;
	"hezo-shim project create"*)
		check "[$n] the project's file is written" test -s /etc/hezo/projects/alpha.json
		expect_eq "$(stat -c %a /srv/hezo 2>&1)" 700 "[$n] the workspace's parent /srv/hezo is 0700"
		expect_eq "$(jq -r '.runtimes | has("hezo-alpha")' "$HEZO_DAEMON_JSON" 2>&1)" true \
			"[$n] runtime hezo-alpha is registered with Docker"
		;;
	"hezo-shim project rm"*)
		check_fails "[$n] the project's file is gone" test -e /etc/hezo/projects/alpha.json
		expect_eq "$(jq -r '.runtimes | has("hezo-alpha")' "$HEZO_DAEMON_JSON" 2>&1)" false \
			"[$n] runtime hezo-alpha is gone from daemon.json"
		;;
	esac
done

# What the README says undoes the registration gives daemon.json back as it was.
out=$(PATH="$PREFIX/bin:$PATH" hezo-shim uninstall --docker 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "hezo-shim uninstall --docker exits 0" || diag "$out"
if [ -e "$T/daemon.absent" ]; then
	expect_eq "$(jq -c '.runtimes // {}' "$HEZO_DAEMON_JSON" 2>/dev/null || echo '{}')" '{}' \
		"daemon.json registers no runtime of the README's afterwards (there was no daemon.json)"
else
	check "daemon.json is back byte for byte" cmp "$T/daemon.before" "$HEZO_DAEMON_JSON"
fi
expect_eq "$("$HEZO_DOCKER" ps -aq --filter "ancestor=$IMAGE" | wc -l)" 0 "no container of the README's is left"

tap_done

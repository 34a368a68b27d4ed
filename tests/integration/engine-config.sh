#!/bin/bash
# The suite's own runtime registration and cleanup (tests/lib/docker.sh, tests/lib/engines.sh)
# against a daemon.json holding a user's own "hezo-shim" entry and other keys: after a test that
# passes, fails midway, dies under set -e or is interrupted, every engine file is byte-identical
# to before, dockerd was reloaded back to the runtimes it had, and the user's entry was never
# rewritten. Hermetic: a private daemon.json, containerd and podman file, a stand-in dockerd (a
# process that reloads its file on SIGHUP) and a stand-in `docker info`; no engine is touched.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/tap.sh
. "$here/../lib/tap.sh"
lib=$here/../lib

[ "$(id -u)" = 0 ] || tap_skip_all "needs root (the snapshots live in /run)"
for t in jq cmp stat sha256sum; do
	command -v "$t" >/dev/null 2>&1 || bail_out "missing tool $t"
done

T=$(mktemp -d /tmp/hezo-engine-config.XXXXXX) || bail_out "mktemp failed"
DAEMON_PID=
# shellcheck disable=SC2016 # expanded at exit
tap_cleanup '[ -n "$DAEMON_PID" ] && kill "$DAEMON_PID"'
tap_cleanup "rm -rf '$T'"
mkdir -p "$T/etc/docker" "$T/etc/containerd" "$T/etc/containers" "$T/bin" "$T/run"

# What a user who ran tools/demo.sh (and has settings of their own) has.
cat >"$T/user-daemon.json" <<'JSON'
{
	"log-level": "warn",
	"runtimes": {
		"hezo-shim": { "path": "/usr/local/bin/hezo-shim" },
		"runc-debug": { "path": "/usr/sbin/runc", "runtimeArgs": ["--debug"] }
	},
	"max-concurrent-downloads": 3
}
JSON
printf 'version = 2\n# the user'"'"'s containerd settings\n' >"$T/user-config.toml"
printf '[engine]\nruntime = "crun"\n' >"$T/user-containers.conf"

export HEZO_DAEMON_JSON=$T/etc/docker/daemon.json
export HEZO_CONTAINERD_CONFIG=$T/etc/containerd/config.toml
export HEZO_CONTAINERS_CONF=$T/etc/containers/containers.conf
export HEZO_DOCKERD_PIDFILE=$T/run/docker.pid
export HEZO_DOCKER=$T/bin/docker
export HEZO_TEST_LOADED=$T/run/loaded.json

# The stand-in dockerd: loads daemon.json at start and on every SIGHUP (as dockerd reloads its
# runtimes), counting the reloads.
cat >"$T/bin/dockerd" <<'EOF'
#!/bin/bash
load()
{
	if [ -e "$HEZO_DAEMON_JSON" ]; then cp "$HEZO_DAEMON_JSON" "$HEZO_TEST_LOADED.tmp"; else echo '{}' >"$HEZO_TEST_LOADED.tmp"; fi
	mv -f "$HEZO_TEST_LOADED.tmp" "$HEZO_TEST_LOADED"
	echo reload >>"$HEZO_TEST_LOADED.reloads"
}
load
trap load HUP
echo $$ >"$HEZO_DOCKERD_PIDFILE"
while :; do
	sleep 1 &
	wait $!
done
EOF
# The stand-in client: `docker info --format '{{json .Runtimes}}'` as dockerd 20.10 answers it:
# the two io.containerd.* names only until the first reload (dockerd drops them on SIGHUP).
cat >"$T/bin/docker" <<'EOF'
#!/bin/sh
[ "$1" = info ] || exit 1
if [ "$(wc -l <"$HEZO_TEST_LOADED.reloads" 2>/dev/null || echo 0)" -gt 1 ]; then
	jq -c '(.runtimes // {}) + {"runc": {"path": "runc"}}' "$HEZO_TEST_LOADED"
else
	jq -c '(.runtimes // {}) + {"io.containerd.runc.v2": {"path": "runc"},
		"io.containerd.runtime.v1.linux": {"path": "runc"}, "runc": {"path": "runc"}}' "$HEZO_TEST_LOADED"
fi
EOF
chmod 0755 "$T/bin/dockerd" "$T/bin/docker"

# The test script the scenarios run: registers the way every Docker test does, then ends as told.
cat >"$T/child.sh" <<EOF
#!/bin/bash
set -uo pipefail
[ "\$1" = set-e ] && set -e
. '$lib/common.sh'
. '$lib/docker.sh'
hezo_docker_register_runtime hezo-test-a /run/hezo-test/hezo-shim || bail_out "cannot register hezo-test-a"
hezo_docker_register_runtime hezo-test-b /run/hezo-test/hezo-shim-b --hezo-project p ||
	bail_out "cannot register hezo-test-b"
ok "registered"
# A test that also edits the other engines' files (after taking the snapshot, as it must).
printf 'edited\n' >>'$HEZO_CONTAINERD_CONFIG'
printf 'edited\n' >'$HEZO_CONTAINERS_CONF'
jq -c '.runtimes | keys' '$HEZO_DAEMON_JSON' >'$T/mid.keys'
"\$HEZO_DOCKER" info --format '{{json .Runtimes}}' | jq -c 'keys' >'$T/mid.runtimes'
if hezo_docker_register_runtime hezo-shim /run/hezo-test/hezo-shim 2>'$T/mid.refusal'; then
	echo took >'$T/mid.user-entry'
fi
cp '$HEZO_DAEMON_JSON' '$T/mid.after-refusal'
case "\$1" in
pass) tap_done ;;
fail) not_ok "an assertion fails midway"; bail_out "and the test gives up" ;;
set-e) false ;;
signal) : >'$T/ready'; sleep 60 & wait \$! ;;
esac
ok "never reached"
EOF
chmod 0755 "$T/child.sh"

# setup ABSENT: put the user's files in place (ABSENT=absent: no daemon.json at all), start the
# stand-in dockerd and record what there is.
setup()
{
	rm -f "$HEZO_DAEMON_JSON" "$HEZO_TEST_LOADED.reloads" "$T"/mid.* "$T/ready"
	[ "$1" = absent ] || cp "$T/user-daemon.json" "$HEZO_DAEMON_JSON"
	chmod 0600 "$HEZO_DAEMON_JSON" 2>/dev/null
	cp "$T/user-config.toml" "$HEZO_CONTAINERD_CONFIG"
	cp "$T/user-containers.conf" "$HEZO_CONTAINERS_CONF"
	touch -d '2020-01-02 03:04:05' "$HEZO_CONTAINERD_CONFIG"
	[ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
	rm -f "$HEZO_DOCKERD_PIDFILE"
	# A shell cannot trap a signal it was started ignoring (nohup's SIGHUP): start with the default.
	env --default-signal=HUP "$T/bin/dockerd" &
	DAEMON_PID=$!
	for _ in $(seq 50); do [ -s "$HEZO_DOCKERD_PIDFILE" ] && break; sleep 0.1; done
	BEFORE_RUNTIMES=$("$HEZO_DOCKER" info | jq -c '[keys[] | select(startswith("io.containerd.") | not)]')
	BEFORE_LS=$(cd "$T/etc" && find . -printf '%p %m\n' | sort)
	BEFORE_STAT=$(stat -c '%n %a %Y' "$HEZO_CONTAINERD_CONFIG" "$HEZO_DAEMON_JSON" 2>/dev/null)
}

# after LABEL ABSENT: every file as before, dockerd back on its runtimes, nothing left over.
after()
{
	local label=$1 f
	if [ "$2" = absent ]; then
		check "[$label] daemon.json is absent again" test ! -e "$HEZO_DAEMON_JSON"
	else
		check "[$label] daemon.json is byte-identical" cmp "$T/user-daemon.json" "$HEZO_DAEMON_JSON"
	fi
	check "[$label] containerd's config.toml is byte-identical" cmp "$T/user-config.toml" "$HEZO_CONTAINERD_CONFIG"
	check "[$label] podman's containers.conf is byte-identical" cmp "$T/user-containers.conf" "$HEZO_CONTAINERS_CONF"
	expect_eq "$(stat -c '%n %a %Y' "$HEZO_CONTAINERD_CONFIG" "$HEZO_DAEMON_JSON" 2>/dev/null)" "$BEFORE_STAT" \
		"[$label] modes and modification times as before"
	expect_eq "$(cd "$T/etc" && find . -printf '%p %m\n' | sort)" "$BEFORE_LS" \
		"[$label] no file added next to them (no backup, no temporary)"
	expect_eq "$("$HEZO_DOCKER" info | jq -c '[keys[] | select(startswith("io.containerd.") | not)]')" \
		"$BEFORE_RUNTIMES" "[$label] dockerd was reloaded and lists the runtimes it had (but the two it drops on any reload)"
	expect_eq "$(cat "$T/mid.keys" 2>&1)" \
		"$(if [ "$2" = absent ]; then echo '["hezo-test-a","hezo-test-b"]'; else echo '["hezo-shim","hezo-test-a","hezo-test-b","runc-debug"]'; fi)" \
		"[$label] while the test ran, daemon.json had its runtimes added to the user's"
	expect_match "$(cat "$T/mid.runtimes" 2>&1)" '"hezo-test-a","hezo-test-b"' \
		"[$label] while the test ran, dockerd listed them"
	if [ "$2" = absent ]; then
		check "[$label] registering hezo-shim was allowed (no user entry)" test -e "$T/mid.user-entry"
	else
		check "[$label] the user's own hezo-shim entry was not rewritten" test ! -e "$T/mid.user-entry"
		expect_match "$(cat "$T/mid.refusal" 2>&1)" "already has a runtime 'hezo-shim' that the tests did not create" \
			"[$label] the refusal says why"
		expect_eq "$(jq -c '.runtimes["hezo-shim"]' "$T/mid.after-refusal" 2>&1)" '{"path":"/usr/local/bin/hezo-shim"}' \
			"[$label] right after the refusal the user's entry still points at their shim"
	fi
	f=$(find /run -maxdepth 1 -name "hezo-engine-snapshot.$CHILD_PID*" 2>/dev/null)
	expect_eq "$f" "" "[$label] no snapshot left in /run"
}

# scenario LABEL MODE [ABSENT]
scenario()
{
	local label=$1 mode=$2 absent=${3:-} rc
	setup "$absent"
	if [ "$mode" = signal ]; then
		"$T/child.sh" signal >"$T/child.log" 2>&1 &
		CHILD_PID=$!
		for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
		kill -TERM "$CHILD_PID"
		wait "$CHILD_PID"
		rc=$?
		expect_eq "$rc" 130 "[$label] the test died of the signal (status 130)"
	else
		"$T/child.sh" "$mode" >"$T/child.log" 2>&1 &
		CHILD_PID=$!
		wait "$CHILD_PID"
		rc=$?
		if [ "$mode" = pass ]; then
			expect_eq "$rc" 0 "[$label] the test passed" || diag "$(cat "$T/child.log")"
		else
			expect_ne "$rc" 0 "[$label] the test failed" || diag "$(cat "$T/child.log")"
		fi
	fi
	after "$label" "$absent"
}

scenario pass pass
scenario "fails midway" fail
scenario "dies under set -e" set-e
scenario "interrupted (SIGTERM)" signal
scenario "no daemon.json, passes" pass absent
scenario "no daemon.json, fails midway" fail absent

# A restore that cannot finish (dockerd does not reload) is a visible failure, not a silent one.
setup ""
HEZO_ENGINE_RELOAD_WAIT=2 "$T/child.sh" signal >"$T/child.log" 2>&1 &
CHILD_PID=$!
for _ in $(seq 100); do [ -e "$T/ready" ] && break; sleep 0.1; done
kill -STOP "$DAEMON_PID"
kill -TERM "$CHILD_PID"
wait "$CHILD_PID"
kill -CONT "$DAEMON_PID"
expect_match "$(cat "$T/child.log")" "^Bail out! the engines' files were not all put back" \
	"[dockerd does not reload] the test bails out at exit" || diag "$(cat "$T/child.log")"
check "[dockerd does not reload] the file itself was put back" cmp "$T/user-daemon.json" "$HEZO_DAEMON_JSON"
f=$(find /run -maxdepth 1 -name "hezo-engine-snapshot.$CHILD_PID" 2>/dev/null)
expect_ne "$f" "" "[dockerd does not reload] the snapshot is kept for a later restore"
rm -rf "/run/hezo-engine-snapshot.$CHILD_PID"
tap_done

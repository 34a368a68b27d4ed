# The engines' configuration files as the user left them: a test that registers a runtime or edits
# an engine's file takes a snapshot first, and its exit (pass, fail or signal) puts every file back
# byte for byte and reloads dockerd, so running the tests never changes the user's machine.

# shellcheck shell=bash

HEZO_DAEMON_JSON=${HEZO_DAEMON_JSON:-/etc/docker/daemon.json}
HEZO_CONTAINERD_CONFIG=${HEZO_CONTAINERD_CONFIG:-/etc/containerd/config.toml}
HEZO_CONTAINERS_CONF=${HEZO_CONTAINERS_CONF:-/etc/containers/containers.conf}
HEZO_DOCKERD_PIDFILE=${HEZO_DOCKERD_PIDFILE:-/var/run/docker.pid}
# Runtime names the tests register start with this: a name of this form belongs to the suite.
# shellcheck disable=SC2034 # read by tests/lib/docker.sh
HEZO_TEST_RUNTIME_PREFIX=hezo-test-
# The snapshot of the running test script (one per top-level shell, so subshells see it too).
HEZO_ENGINE_SNAPSHOT=${HEZO_ENGINE_SNAPSHOT:-/run/hezo-engine-snapshot.$$}

# The paths a snapshot covers: the three engines' configs, and the files or directories named in
# HEZO_ENGINE_EXTRA (tests/run.sh adds /etc/hezo, which no test writes: the shim's HEZO_POLICY etc.
# point the tests elsewhere).
hezo_engine_files()
{
	local x
	printf '%s\n' "$HEZO_DAEMON_JSON" "$HEZO_CONTAINERD_CONFIG" "$HEZO_CONTAINERS_CONF"
	for x in ${HEZO_ENGINE_EXTRA:-}; do
		printf '%s\n' "$x"
	done
}

# _hezo_tree_sum DIR: names, modes and contents of everything under DIR, relative to it.
_hezo_tree_sum()
{
	(cd "$1" && find . -xdev -printf '%p %y %m %U:%G %l\n' | sort &&
		find . -xdev -type f -print0 | sort -z | xargs -0 -r sha256sum) | sha256sum
}

# hezo_engine_sums [PATH...]: one line per file (sha256 or "absent") and per file of each
# directory, for comparing a machine before and after a run. Default: the engines' files.
hezo_engine_sums()
{
	local f files
	if [ $# -eq 0 ]; then
		mapfile -t files < <(hezo_engine_files)
		set -- "${files[@]}"
	fi
	for f in "$@"; do
		if [ -d "$f" ]; then
			find "$f" -xdev \( -type f -o -type l \) -print0 | sort -z |
				xargs -0 -r sha256sum
		elif [ -e "$f" ] || [ -L "$f" ]; then
			sha256sum "$f"
		else
			echo "absent  $f"
		fi
	done
}

# dockerd's runtime names, sorted, one line (empty when dockerd does not answer). dockerd 20.10
# adds io.containerd.runc.v2 and io.containerd.runtime.v1.linux only when it starts and drops them
# on every SIGHUP, whoever sends it (measured: after `kill -HUP`, `docker run
# --runtime=io.containerd.runc.v2` answers "Unknown runtime specified"); no reload can bring them
# back, only a restart, which the tests never do. So they are not part of what a test must restore.
_hezo_engine_runtimes()
{
	"${HEZO_DOCKER:-/usr/bin/docker}" info --format '{{json .Runtimes}}' 2>/dev/null |
		jq -r '[keys[] | select(startswith("io.containerd.") | not)] | join(" ")' 2>/dev/null || true
}

# hezo_engine_snapshot: save every engine file (or its absence) and dockerd's runtimes, once per
# test script, and arrange for hezo_engine_restore at exit. With tests/lib/tap.sh loaded that is
# its exit trap; a script without it must call hezo_engine_restore from its own trap.
hezo_engine_snapshot()
{
	local f i=0
	[ -d "$HEZO_ENGINE_SNAPSHOT" ] && return 0
	if [ "$BASH_SUBSHELL" != 0 ]; then
		echo "hezo_engine_snapshot: call it from the test script's own shell, not a subshell" >&2
		return 1
	fi
	mkdir -p "$HEZO_ENGINE_SNAPSHOT.tmp" || return 1
	while read -r f; do
		i=$((i + 1))
		printf '%s\n' "$f" >"$HEZO_ENGINE_SNAPSHOT.tmp/$i.path"
		if [ -e "$f" ]; then
			cp -a "$f" "$HEZO_ENGINE_SNAPSHOT.tmp/$i.file" || return 1
		fi
	done < <(hezo_engine_files)
	_hezo_engine_runtimes >"$HEZO_ENGINE_SNAPSHOT.tmp/runtimes"
	mv "$HEZO_ENGINE_SNAPSHOT.tmp" "$HEZO_ENGINE_SNAPSHOT" || return 1
	if declare -F tap_cleanup >/dev/null; then
		# tap.sh runs cleanups with their output discarded: keep a way to say the restore failed.
		exec {_hezo_engine_tap_fd}>&1
		tap_cleanup _hezo_engine_restore_or_bail
	fi
}

_hezo_engine_restore_or_bail()
{
	local why
	why=$(hezo_engine_restore 2>&1) && return 0
	echo "Bail out! the engines' files were not all put back (snapshot kept in" \
		"$HEZO_ENGINE_SNAPSHOT): ${why//$'\n'/; }" >&"$_hezo_engine_tap_fd"
	return 1
}

# hezo_engine_had_runtime NAME: daemon.json held runtimes.NAME when the snapshot was taken.
hezo_engine_had_runtime()
{
	local f
	for f in "$HEZO_ENGINE_SNAPSHOT"/*.path; do
		[ "$(cat "$f")" = "$HEZO_DAEMON_JSON" ] || continue
		f=${f%.path}.file
		[ -e "$f" ] && jq -e --arg n "$1" '(.runtimes // {}) | has($n)' "$f" >/dev/null 2>&1
		return
	done
	return 1
}

# hezo_engine_restore: put every path of the snapshot back as it was (bytes, mode, owner, times;
# one that was absent is removed), reload dockerd when daemon.json changed and wait until it
# lists the runtimes it had. Safe to call twice; returns non-zero if something could not be put back.
hezo_engine_restore()
{
	local p f b changed=no absent=no rc=0 pid want i
	[ -d "$HEZO_ENGINE_SNAPSHOT" ] || return 0
	for p in "$HEZO_ENGINE_SNAPSHOT"/*.path; do
		f=$(cat "$p")
		b=${p%.path}.file
		if [ -d "$b" ]; then
			[ -d "$f" ] && [ "$(_hezo_tree_sum "$b")" = "$(_hezo_tree_sum "$f")" ] && continue
			rm -rf "$f" && cp -a "$b" "$f" || rc=1
		elif [ -e "$b" ]; then
			[ -f "$f" ] && cmp -s "$b" "$f" && continue
			rm -rf "$f.hezo-restore" && cp -a "$b" "$f.hezo-restore" &&
				{ [ ! -d "$f" ] || rm -rf "$f"; } && mv -f "$f.hezo-restore" "$f" || rc=1
		else
			[ -e "$f" ] || [ -L "$f" ] || continue
			rm -rf "$f" || rc=1
			[ "$f" = "$HEZO_DAEMON_JSON" ] && absent=yes
		fi
		[ "$f" = "$HEZO_DAEMON_JSON" ] && changed=yes
	done
	# dockerd 20.10 keeps its runtimes when SIGHUP finds no daemon.json (measured: the test's
	# runtime stayed listed): reload from an empty list, then take the file away again.
	if [ $absent = yes ]; then
		printf '{"runtimes": {}}\n' >"$HEZO_DAEMON_JSON" || rc=1
	fi
	if [ $changed = yes ] && pid=$(cat "$HEZO_DOCKERD_PIDFILE" 2>/dev/null) && [ -n "$pid" ] &&
		kill -HUP "$pid" 2>/dev/null; then
		want=$(cat "$HEZO_ENGINE_SNAPSHOT/runtimes")
		# From an empty list, an earlier run's leftover test runtimes go as well.
		[ $absent = no ] || want=$(tr ' ' '\n' <<<"$want" |
			grep -v "^$HEZO_TEST_RUNTIME_PREFIX" | paste -sd ' ')
		for ((i = 0; i < ${HEZO_ENGINE_RELOAD_WAIT:-30}; i++)); do
			[ "$(_hezo_engine_runtimes)" = "$want" ] && break
			sleep 1
		done
		if [ "$(_hezo_engine_runtimes)" != "$want" ]; then
			echo "hezo_engine_restore: dockerd lists runtimes '$(_hezo_engine_runtimes)', had '$want'" >&2
			rc=1
		fi
	fi
	[ $absent = no ] || rm -f "$HEZO_DAEMON_JSON" || rc=1
	[ $rc = 0 ] && rm -rf "$HEZO_ENGINE_SNAPSHOT"
	return $rc
}

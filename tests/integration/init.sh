#!/bin/bash
# Integration: hezo-init as PID 1 (policy "init", issue 18.1) on the backend HEZO_TEST_BACKEND:
# orphans reaped, signals forwarded, exit status passed through, and no second init where
# Docker's --init is there already. Bundles first (no engine), then Docker.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"

hezo_require_root
hezo_require_tools jq runc timeout dockerd "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim
[ -x "$HEZO_BUILD_DIR/init/hezo-init" ] || bail_out "hezo-init not built: $HEZO_BUILD_DIR/init/hezo-init"

mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-init-$HEZO_TEST_BACKEND
WORK=$(mktemp -d "$HEZO_TEST_DIR/init.XXXXXX")
tap_cleanup "rm -rf '$WORK'"

new_id()
{
	ID="hezo-ah-$1-$(hezo_rand)"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$ID'"
}

# Zombies: 100 orphans (sleeps whose parent subshell exits at once), kept alive until PID 1's
# place has gone to a process that never waits (exec cat of a FIFO), then killed together; a
# sibling lists the zombies twice, a second and a second and a half later, and counts those in
# both lists (one caught between its exit and its reaping is not left behind). Opening the FIFO
# for writing returns only once cat has it open, so the kill comes after the exec whatever the
# machine's speed: an orphan that died while the shell still ran its loop would be reaped by the
# shell itself (busybox ash waits for any child), which made the control count depend on how
# fast 100 forks run (46 of 100 on a slow machine). The sibling's exit ends cat, and the box.
ZOMBIES='mkfifo /tmp/end || exit 1
for i in $(seq 100); do (sleep 1000 & echo $! >>/tmp/orphans); done
(exec 3>/tmp/end; kill $(cat /tmp/orphans)
sleep 1; z() { grep -l "^State:.Z" /proc/[0-9]*/status 2>/dev/null | sort; }; z >/tmp/z1;
sleep 0.5; z >/tmp/z2; grep -cxFf /tmp/z1 /tmp/z2) &
exec cat /tmp/end'

# bundle_run LABEL ARGV_JSON: run it in the foreground through the shim; sets OUT and RC.
bundle_run()
{
	new_id "$1"
	hezo_make_bundle "$WORK/$1" "$ID" "$2" >/dev/null 2>&1 || bail_out "cannot make bundle"
	OUT=$(hezo_shim --root "$ROOT" run -b "$WORK/$1" "$ID" 2>"$WORK/$1.err" </dev/null) && RC=0 || RC=$?
	hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
}

# --- bundles ----------------------------------------------------------------------------------------
hezo_write_policy bundle
bundle_run pid1 '["sh", "-c", "cat /proc/1/comm; echo ppid=$PPID"]'
expect_eq "$RC" 0 "[bundle] run exits 0" || diag "$(cat "$WORK/pid1.err")"
expect_eq "$(head -n 1 <<<"$OUT")" ".hezo-init" "[bundle] PID 1 is hezo-init"
expect_eq "$(sed -n 2p <<<"$OUT")" "ppid=1" "[bundle] the workload is its child"
expect_eq "$(jq -c '.process.args[0:2]' "$WORK/pid1/config.json")" '["/dev/.hezo-init","--"]' \
	"[bundle] config.json: hezo-init in front of process.args"
expect_eq "$(jq -r '.mounts[] | select(.destination == "/dev/.hezo-init") | .options | join(",")' "$WORK/pid1/config.json")" \
	"rbind,ro,nosuid,nodev" "[bundle] config.json: bind-mounted read-only"

# What the zombie rows assume of the box: room for 100 orphans and the shell under its pids cap.
diag "zombie workload: 100 orphans + 4 processes, under the box's pids cap ($(jq -r '.resources.pids // "256, the default"' "$HEZO_TEST_POLICY"))"
bundle_run zombies "$(jq -cn --arg s "$ZOMBIES" '["sh", "-c", $s]')"
expect_eq "$RC" 0 "[bundle] zombie workload exits 0" || diag "$(cat "$WORK/zombies.err")"
expect_eq "$OUT" 0 "[bundle] 100 orphans: no zombie after a second"

for code in 0 3 42; do
	bundle_run "exit$code" "[\"sh\", \"-c\", \"exit $code\"]"
	expect_eq "$RC" "$code" "[bundle] exit $code passes through"
done
bundle_run killed '["sh", "-c", "kill -USR1 $$; sleep 5"]'
expect_eq "$RC" 138 "[bundle] a workload killed by SIGUSR1 exits 128+10"

bundle_run missing '["/no/such/program"]'
expect_eq "$RC" 127 "[bundle] a missing program exits 127"
expect_match "$(cat "$WORK/missing.err")" "hezo-init: /no/such/program: No such file" \
	"[bundle] ... saying which" || diag "$(cat "$WORK/missing.err")"

# The control: without hezo-init the same workload keeps its zombies (runc; gVisor's PID 1
# semantics differ and are not what this test is about).
hezo_write_policy bundle '.init = false'
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	bundle_run zombies-off "$(jq -cn --arg s "$ZOMBIES" '["sh", "-c", $s]')"
	expect_eq "$OUT" 100 "[bundle, init off] the control sees the 100 zombies"
else
	skip "[bundle, init off] the control sees the 100 zombies" "runsc 2022-12 reaps them itself"
fi
bundle_run pid1-off '["cat", "/proc/1/comm"]'
expect_eq "$OUT" cat "[bundle, init off] the workload is PID 1"

# The pod sandbox (containerd CRI) keeps its own PID 1.
hezo_write_policy bundle
new_id sandbox
hezo_make_bundle "$WORK/sandbox" "$ID" '["cat", "/proc/1/comm"]' \
	'.annotations["io.kubernetes.cri.container-type"] = "sandbox"' >/dev/null 2>&1 || bail_out "cannot make bundle"
out=$(hezo_shim --root "$ROOT" run -b "$WORK/sandbox" "$ID" 2>&1 </dev/null)
expect_eq "$out" cat "[bundle] a CRI pod sandbox gets no hezo-init"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- Docker --------------------------------------------------------------------------------------------
hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
hezo_image_docker || bail_out "cannot import $HEZO_TEST_IMAGE"
IMG=$HEZO_TEST_IMAGE
# A test runtime name (tests/lib/docker.sh restores daemon.json at exit).
RT=hezo-test-ah-init
hezo_make_wrapper
hezo_write_policy docker
hezo_docker_register_runtime "$RT" "$HEZO_TEST_WRAPPER" || bail_out "cannot register runtime $RT"

NAMES=()
new_name()
{
	NAME="hezo-ah-$1-$(hezo_rand)"
	NAMES+=("$NAME")
	tap_cleanup "hezo_docker rm -f '$NAME'"
}

for code in 0 3 42; do
	new_name "exit$code"
	timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT" --name "$NAME" "$IMG" sh -c "exit $code" \
		</dev/null >/dev/null 2>&1 && rc=0 || rc=$?
	expect_eq "$rc" "$code" "[docker] exit $code passes through"
done

new_name stop
hezo_docker run -d --runtime="$RT" --name "$NAME" "$IMG" sh -c 'sleep 1000' >/dev/null 2>&1 ||
	not_ok "[docker] docker run -d sh -c 'sleep 1000'"
t0=$(date +%s%N)
hezo_docker stop "$NAME" >/dev/null 2>&1
ms=$((($(date +%s%N) - t0) / 1000000))
diag "docker stop took $ms ms"
[ "$ms" -lt 5000 ] && ok "[docker] docker stop ends sh -c 'sleep 1000' in under 5 s" ||
	not_ok "[docker] docker stop ends sh -c 'sleep 1000' in under 5 s (took $ms ms)"
expect_eq "$(hezo_docker inspect -f '{{.State.ExitCode}}' "$NAME" 2>&1)" 143 "[docker] ... and it exits 143"

new_name zombies
hezo_docker run -d --runtime="$RT" --name "$NAME" "$IMG" sh -c \
	'for i in $(seq 100); do (sleep 0.2 &); done; exec sleep 1000' >/dev/null 2>&1
sleep 1.5
# Zombies that stay: in two lists half a second apart (one caught between its exit and its
# reaping is not left behind). Under runsc on a loaded machine the 100 forks can run past the
# first look, so it looks again, up to 20 times; an init that never reaps stays at 100.
for ((t = 0; t < 20; t++)); do
	z=$(timeout 60 "$HEZO_DOCKER" exec "$NAME" sh -c 'z() { grep -l "^State:.Z" /proc/[0-9]*/status 2>/dev/null | sort; }
		z >/tmp/z1; sleep 0.5; z >/tmp/z2; grep -cxFf /tmp/z1 /tmp/z2' 2>&1)
	[ "$z" = 0 ] && break
	sleep 0.5
done
expect_eq "$z" 0 "[docker] 100 orphans: no zombie stays"
n=$(timeout 60 "$HEZO_DOCKER" exec "$NAME" sh -c 'cat /proc/1/comm' 2>&1)
expect_eq "$n" .hezo-init "[docker] PID 1 is hezo-init, docker exec is not wrapped"
hezo_docker rm -f "$NAME" >/dev/null 2>&1

# Docker binds its docker-init (a symlink to tini here) from the host: the policy must allow it.
hezo_write_policy docker '.mounts.allowedSources += ["/usr/bin/docker-init", "/usr/bin/tini-static"]'
new_name init
out=$(timeout 60 "$HEZO_DOCKER" run --rm --init --runtime="$RT" --name "$NAME" "$IMG" \
	sh -c 'for f in /proc/[0-9]*/comm; do cat $f; done' 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[docker --init] docker run --init exits 0" || diag "$out"
diag "comm of every process: $(tr '\n' ' ' <<<"$out")"
expect_eq "$(grep -c -E -e '^(docker-init|tini|tini-static|\.hezo-init)$' <<<"$out")" 1 \
	"[docker --init] exactly one init"
expect_eq "$(head -n 1 <<<"$out")" docker-init "[docker --init] ... and it is Docker's, as PID 1"

for n in "${NAMES[@]}"; do
	hezo_docker rm -f "$n" >/dev/null 2>&1
done
hezo_expect_no_sanitizer_reports
tap_done

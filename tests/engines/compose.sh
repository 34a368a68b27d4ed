#!/bin/bash
# Engines: docker-compose 1.29 with `runtime: hezo-test-compose` (compose file format 2.4) on a
# two-service project: up, both services boxed (one asks for --privileged and 8g), exec, down;
# and a service with a host bind mount that fails with the shim's reason.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Docker's runtime "hezo-test-compose" is the shared test wrapper in /run/hezo-test (as in
# tests/integration/docker.sh); the brief's dev policy with the runc backend.
HEZO_TEST_BACKEND=runc
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/box.sh
. "$here/../lib/box.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"

hezo_require_root
hezo_require_tools docker-compose jq timeout dockerd "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
if ! hezo_docker image inspect "$HEZO_TEST_IMAGE" >/dev/null 2>&1; then
	hezo_image_docker || bail_out "cannot import $HEZO_TEST_IMAGE"
	tap_cleanup "hezo_docker rmi '$HEZO_TEST_IMAGE'"
fi
RT=hezo-test-compose
# dockerd hands every runtime the same --root.
DROOT=/run/docker/runtime-runc/moby
MEM=$((2048 * 1048576))

hezo_make_wrapper
# The sanitizer directory is shared: count only reports this run adds.
REPORTS_BEFORE=$(hezo_sanitizer_reports)
hezo_write_policy docker
hezo_docker_register_runtime "$RT" "$HEZO_TEST_WRAPPER" || bail_out "cannot register runtime $RT"
diag "runtime $RT -> $HEZO_TEST_WRAPPER -> $HEZO_SHIM_BIN, policy $(jq -c . "$HEZO_TEST_POLICY")"

DIR=$(mktemp -d /tmp/hezo-engines-compose.XXXXXX) || bail_out "mktemp failed"
tap_cleanup "rm -rf '$DIR'"
# Compose derives names from the project: PROJECT_SERVICE_1, network PROJECT_default.
P=hezoeng$$
PBAD=hezoengbad$$
mkdir -p "$DIR/good" "$DIR/bad"
cat >"$DIR/good/docker-compose.yml" <<EOF
version: "2.4"
services:
  plain:
    image: $HEZO_TEST_IMAGE
    runtime: $RT
    command: sleep 300
  priv:
    image: $HEZO_TEST_IMAGE
    runtime: $RT
    command: sleep 300
    privileged: true
    mem_limit: 8g
EOF
cat >"$DIR/bad/docker-compose.yml" <<EOF
version: "2.4"
services:
  hostroot:
    image: $HEZO_TEST_IMAGE
    runtime: $RT
    command: sleep 300
    volumes: ["/:/host"]
EOF

# dc PROJECT DIR ARGS...: docker-compose on that project, never longer than 300 s.
dc()
{
	local p=$1 d=$2
	shift 2
	timeout -k 5 300 docker-compose --ansi never -p "$p" -f "$d/docker-compose.yml" "$@" 2>&1 </dev/null
}

# project_containers PROJECT: ids of every container of the project, running or not.
project_containers()
{
	hezo_docker ps -aq --no-trunc --filter "label=com.docker.compose.project=$1"
}

for p in "$P:good" "$PBAD:bad"; do
	tap_cleanup "dc '${p%%:*}' '$DIR/${p#*:}' down -v --remove-orphans -t 1; " \
		"project_containers '${p%%:*}' | xargs -r '$HEZO_DOCKER' rm -f; " \
		"'$HEZO_DOCKER' network rm '${p%%:*}_default'"
done

# --- up: both services boxed ------------------------------------------------------------------------
out=$(dc "$P" "$DIR/good" up -d) && rc=0 || rc=$?
expect_eq "$rc" 0 "docker-compose up -d exits 0" || diag "$out"
IDS=()
for s in plain priv; do
	c=${P}_${s}_1
	id=$(hezo_docker inspect -f '{{.Id}}' "$c" 2>/dev/null)
	IDS+=("$id")
	expect_eq "$(hezo_docker inspect -f '{{.State.Status}} {{.HostConfig.Runtime}}' "$c" 2>&1)" "running $RT" \
		"[$s] container $c is running with runtime $RT"
	expect_ne "$(hezo_state_records "$id")" "" "[$s] the shim recorded the container"

	out=$(timeout 60 docker-compose --ansi never -p "$P" -f "$DIR/good/docker-compose.yml" exec -T "$s" \
		sh -c "$HEZO_BOX_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
	expect_eq "$rc" 0 "[$s] docker-compose exec exits 0" || diag "$out"
	hezo_assert_box "$s" "$out"
	hezo_assert_box_engine "$s" "$out"
	hezo_assert_backend "$s" "$out"
	expect_eq "$(hezo_probe_get "$out" pidsmax)" 256 "[$s] pids.max inside is the policy's"
	cg=$(hezo_docker_cgroups_path "$c" 2>/dev/null)
	diag "[$s] $c id $id cgroupsPath $cg"
	hezo_assert_cgroup "$s" "$cg" "$MEM" 256
	hezo_assert_spec "$s" "$(hezo_docker_bundle "$c")/config.json"
done
# What compose asked for on the privileged service, to show the box held against it.
expect_eq "$(hezo_docker inspect -f '{{.HostConfig.Privileged}} {{.HostConfig.Memory}}' "${P}_priv_1" 2>&1)" \
	"true $((8 * 1073741824))" "[priv] compose asked docker for privileged and 8g"

out=$(timeout 60 docker-compose --ansi never -p "$P" -f "$DIR/good/docker-compose.yml" exec -T --privileged priv \
	sh -c 'echo hello-from-compose; grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status' 2>&1 </dev/null) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[exec --privileged] docker-compose exec exits 0" || diag "$out"
expect_match "$out" '^hello-from-compose' "[exec --privileged] the output reaches compose"
expect_match "$out" 'CapEff:[[:space:]]+0{16}' "[exec --privileged] CapEff is 0"
expect_match "$out" 'NoNewPrivs:[[:space:]]+1' "[exec --privileged] NoNewPrivs is 1"
expect_match "$out" 'Seccomp:[[:space:]]+2' "[exec --privileged] Seccomp is 2"

out=$(dc "$P" "$DIR/good" ps) && rc=0 || rc=$?
expect_eq "$(grep -cE "^${P}_(plain|priv)_1 .* Up" <<<"$out")" 2 "docker-compose ps shows both services up" || diag "$out"

# A restart creates the container again from Docker's own spec: the box must come back.
out=$(dc "$P" "$DIR/good" restart -t 1 priv) && rc=0 || rc=$?
expect_eq "$rc" 0 "[restart] docker-compose restart priv exits 0" || diag "$out"
out=$(timeout 60 docker-compose --ansi never -p "$P" -f "$DIR/good/docker-compose.yml" exec -T priv \
	sh -c "$HEZO_BOX_PROBE" 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[restart] docker-compose exec exits 0" || diag "$out"
hezo_assert_creds restart "$out"
expect_eq "$(hezo_probe_get "$out" rootwrite)" no "[restart] touch / fails"
hezo_assert_cgroup restart "$(hezo_docker_cgroups_path "${P}_priv_1" 2>/dev/null)" "$MEM" 256

# --- down removes everything ------------------------------------------------------------------------
out=$(dc "$P" "$DIR/good" down -t 2) && rc=0 || rc=$?
expect_eq "$rc" 0 "docker-compose down exits 0" || diag "$out"
expect_eq "$(project_containers "$P")" "" "[down] no container of the project left"
expect_eq "$(hezo_docker network ls -q --filter "name=^${P}_default\$")" "" "[down] the project's network is gone"
for id in "${IDS[@]}"; do
	[ -n "$id" ] || continue
	expect_eq "$(hezo_state_records "$id")" "" "[down] no shim record of ${id:0:12} left"
	expect_eq "$(hezo_backend_ids "$DROOT" | grep -cxF "$id")" 0 "[down] the backend has no container ${id:0:12}"
done

# --- a service with the host's root mounted does not start ----------------------------------------------
out=$(dc "$PBAD" "$DIR/bad" up -d) && rc=0 || rc=$?
diag "compose said:"
diag "$out"
expect_ne "$rc" 0 "[/:/host] docker-compose up -d fails"
expect_match "$out" 'hezo-shim:' "[/:/host] compose's output contains the shim's reason"
expect_match "$out" 'hezo-shim: .*/host.*not under an allowed root' "[/:/host] the reason names the mount"
expect_no_match "$(hezo_docker ps -q --filter "label=com.docker.compose.project=$PBAD")" . \
	"[/:/host] no container of the project runs"
out=$(dc "$PBAD" "$DIR/bad" down -t 1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[/:/host] docker-compose down exits 0" || diag "$out"
expect_eq "$(project_containers "$PBAD")" "" "[/:/host] no container of the project left"
expect_eq "$(hezo_docker network ls -q --filter "name=^${PBAD}_default\$")" "" "[/:/host] the project's network is gone"

reports=$(comm -13 <(echo "$REPORTS_BEFORE") <(hezo_sanitizer_reports))
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done

tap_done

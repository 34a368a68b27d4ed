#!/bin/bash
# Integration: Docker's named volumes in the box (issue 15, policy/volumes.c), with hezo-shim on
# HEZO_TEST_BACKEND: a project's own volume mounts and keeps its data across two containers,
# another project's is refused with one line, a container without a project gets a volume no
# project claims and no project's, a volume something is mounted on is refused, and a
# compose file with a named volume comes up. Every volume, container and network is removed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/box.sh
. "$here/../lib/box.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"

hezo_require_root
hezo_require_tools jq timeout dockerd docker-compose "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
hezo_image_docker || bail_out "cannot import $HEZO_TEST_IMAGE"
IMG=$HEZO_TEST_IMAGE
TAG=hzv$(hezo_rand | tr -dc 'a-z0-9' | head -c 6)
PA=${TAG}a
PB=${TAG}b
V=$HEZO_TEST_DIR/volumes
mkdir -p "$V/projects"
tap_cleanup "rm -rf '$V'"
echo '{}' >"$V/projects/$PA.json"
# Project B claims the volumes named TAG-team-* besides its own PB_* (volumes.allow).
jq -n --arg t "$TAG-team-*" '{volumes: {allow: ["{project}_*", $t]}}' >"$V/projects/$PB.json"

hezo_make_wrapper
rm -rf "${HEZO_TEST_SANITIZER_DIR:?}"/*
hezo_write_policy docker ". + {projectsDir: \"$V/projects\"}"
# One wrapper per project (tests/lib/docker.sh hands runtime arguments to jq as options).
for p in a b; do
	sed "s|^exec \(.*\) \"\\\$@\"\$|exec \1 --hezo-project $TAG$p \"\\\$@\"|" "$HEZO_TEST_WRAPPER" >"$V/hezo-shim-$p"
	chmod 0755 "$V/hezo-shim-$p"
	grep -q -- "--hezo-project $TAG$p" "$V/hezo-shim-$p" || bail_out "cannot write the project $p wrapper"
done
RT_A=hezo-test-vol-a-$HEZO_TEST_BACKEND
RT_B=hezo-test-vol-b-$HEZO_TEST_BACKEND
RT_N=hezo-test-vol-n-$HEZO_TEST_BACKEND
hezo_docker_register_runtime "$RT_A" "$V/hezo-shim-a" || bail_out "cannot register $RT_A"
hezo_docker_register_runtime "$RT_B" "$V/hezo-shim-b" || bail_out "cannot register $RT_B"
hezo_docker_register_runtime "$RT_N" "$HEZO_TEST_WRAPPER" || bail_out "cannot register $RT_N"
diag "backend $HEZO_TEST_BACKEND, projects $PA ($RT_A) and $PB ($RT_B), none ($RT_N)"

VOLS=("${PA}_data" "${PA}_mnt" "${PA}_cache" "${PB}_data" "${TAG}free" "$TAG-team-x")
for v in "${VOLS[@]}"; do
	tap_cleanup "hezo_docker volume rm -f '$v' >/dev/null 2>&1"
done
tap_cleanup "hezo_docker ps -aq --filter name=$TAG | xargs -r $HEZO_DOCKER rm -f >/dev/null 2>&1"

# --- a project's own volume: mounted, and its data kept across containers --------------------------
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_A" --name "$TAG-w" -v "${PA}_data:/data" "$IMG" \
	sh -c 'echo kept-across >/data/f && echo written' 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[own volume] docker run -v ${PA}_data:/data exits 0" || diag "$out"
expect_match "$out" written "[own volume] the first container wrote to it"
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_A" --name "$TAG-r" -v "${PA}_data:/data" "$IMG" \
	cat /data/f 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[own volume] a second container mounts it" || diag "$out"
expect_eq "$out" kept-across "[own volume] and reads what the first wrote"
expect_eq "$(cat "$(hezo_docker volume inspect -f '{{.Mountpoint}}' "${PA}_data" 2>/dev/null)/f" 2>&1)" kept-across \
	"[own volume] host: the file is in the volume's _data"

# --- another project's volume: refused with one line ----------------------------------------------
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_B" --name "$TAG-x" -v "${PA}_data:/data" "$IMG" \
	cat /data/f 2>&1 </dev/null) && rc=0 || rc=$?
expect_ne "$rc" 0 "[other project's volume] docker run fails"
expect_no_match "$out" kept-across "[other project's volume] nothing of it was read"
expect_match "$out" "hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/data\\): volume ${PA}_data belongs to project $PA; this container's project is $PB" \
	"[other project's volume] the shim's reason names the volume and both projects" || diag "$out"
expect_eq "$(grep -c 'hezo-shim: ' <<<"$out")" 1 "[other project's volume] the reason is one line"
# Its own volume B may have.
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_B" --name "$TAG-y" -v "${PB}_data:/data" "$IMG" \
	sh -c 'echo b >/data/f && cat /data/f' 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc:$out" "0:b" "[own volume] project $PB mounts ${PB}_data"

# --- no project: a volume no project claims is the container's; a project's stays its own ------------
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_N" --name "$TAG-nw" -v "${TAG}free:/data" "$IMG" \
	sh -c 'echo free >/data/f && echo written' 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc:$out" 0:written "[no project, unclaimed volume] docker run -v ${TAG}free:/data writes to it" || diag "$out"
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_N" --name "$TAG-nr" -v "${TAG}free:/data" "$IMG" \
	cat /data/f 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc:$out" 0:free "[no project, unclaimed volume] a second container reads it"
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_N" --name "$TAG-nx" -v "${PA}_data:/data" "$IMG" \
	cat /data/f 2>&1 </dev/null) && rc=0 || rc=$?
expect_ne "$rc" 0 "[no project, a project's volume by name] docker run fails"
expect_no_match "$out" kept-across "[no project, a project's volume by name] nothing of it was read"
expect_match "$out" "hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/data\\): volume ${PA}_data belongs to project $PA; this container's project is none" \
	"[no project, a project's volume by name] the reason names the volume and its project" || diag "$out"
hezo_docker volume create "$TAG-team-x" >/dev/null 2>&1 || bail_out "cannot create volume $TAG-team-x"
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_N" --name "$TAG-ny" -v "$TAG-team-x:/data" "$IMG" \
	true 2>&1 </dev/null) && rc=0 || rc=$?
expect_ne "$rc" 0 "[no project, a project's volume by pattern] docker run fails"
expect_match "$out" "hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/data\\): volume $TAG-team-x is project $PB's \\(its volumes.allow\\); this container has no project" \
	"[no project, a project's volume by pattern] the reason names the claiming project" || diag "$out"
expect_eq "$(grep -c 'hezo-shim: ' <<<"$out")" 1 "[no project, a project's volume by pattern] the reason is one line"
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_B" --name "$TAG-nz" -v "$TAG-team-x:/data" "$IMG" \
	sh -c 'echo team >/data/f && cat /data/f' 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc:$out" 0:team "[own volume by pattern] project $PB mounts $TAG-team-x"

# --- a volume the engine mounts something on (driver options): refused ---------------------------
hezo_docker volume create --opt type=tmpfs --opt device=tmpfs --opt o=size=1m "${PA}_mnt" >/dev/null 2>&1 ||
	bail_out "cannot create volume ${PA}_mnt"
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_A" --name "$TAG-m" -v "${PA}_mnt:/data" "$IMG" \
	true 2>&1 </dev/null) && rc=0 || rc=$?
expect_ne "$rc" 0 "[volume with a mount] docker run fails"
expect_match "$out" "hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/data\\): volume ${PA}_mnt has something mounted on its _data" \
	"[volume with a mount] the reason names the volume" || diag "$out"

# --- elsewhere in Docker's storage: still refused -------------------------------------------------
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_A" --name "$TAG-s" -v /var/lib/docker/volumes:/data "$IMG" \
	true 2>&1 </dev/null) && rc=0 || rc=$?
expect_ne "$rc" 0 "[the volume store itself] docker run fails"
expect_match "$out" "hezo-shim: config.json: mounts\\[[0-9]+\\] \\(/data\\): bind source /var/lib/docker/volumes " \
	"[the volume store itself] refused naming the source" || diag "$out"

# --- compose: a named volume comes up in the box -------------------------------------------------
cat >"$V/compose.yml" <<-EOF
	version: "2.4"
	services:
	  app:
	    image: $IMG
	    runtime: $RT_A
	    network_mode: none
	    command: ["sh", "-c", "echo composed >/cache/f && cat /cache/f"]
	    volumes:
	      - cache:/cache
	volumes:
	  cache: {}
EOF
tap_cleanup "timeout 60 docker-compose -p '$PA' -f '$V/compose.yml' down -v >/dev/null 2>&1"
out=$(cd "$V" && timeout 120 docker-compose -p "$PA" -f compose.yml up --exit-code-from app 2>&1 </dev/null) &&
	rc=0 || rc=$?
expect_eq "$rc" 0 "[compose] up with a named volume exits 0" || diag "$out"
expect_match "$out" composed "[compose] the service wrote and read its volume"
expect_eq "$(hezo_docker volume ls -q --filter name="${PA}_cache" 2>&1)" "${PA}_cache" \
	"[compose] the volume is compose's <project>_cache"
out=$(timeout 60 "$HEZO_DOCKER" run --rm --runtime="$RT_B" --name "$TAG-c" -v "${PA}_cache:/c" "$IMG" true 2>&1 </dev/null) &&
	rc=0 || rc=$?
expect_ne "$rc" 0 "[compose] another project cannot mount the compose project's volume"
(cd "$V" && timeout 60 docker-compose -p "$PA" -f compose.yml down -v >/dev/null 2>&1)

# --- nothing left behind ---------------------------------------------------------------------------------
hezo_docker ps -aq --filter name="$TAG" | xargs -r "$HEZO_DOCKER" rm -f >/dev/null 2>&1
for v in "${VOLS[@]}"; do
	hezo_docker volume rm -f "$v" >/dev/null 2>&1
done
expect_eq "$(hezo_docker volume ls -q --filter name="$TAG")" "" "no test volume left in docker"
expect_eq "$(hezo_docker ps -aq --filter name="$TAG")" "" "no test container left in docker"
reports=$(hezo_sanitizer_reports)
expect_eq "$reports" "" "no sanitizer reports from shim runs" ||
	for r in $reports; do diag "$(head -c 4000 "$r")"; done

tap_done

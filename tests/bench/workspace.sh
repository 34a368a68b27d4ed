#!/bin/bash
# Benchmark (issue 28): work in a project's /workspace, through Docker with the dev image, in one
# run, the four sides alternating round by round so the machine's load falls on all alike:
#   hezo-shim -> runsc   against   runsc given the box's flags (--oci-seccomp --network=host) and
#                                  mounts by hand (the workspace bind, read-only root, tmpfs /tmp)
#   hezo-shim -> runc    against   runc given the same mounts
# Two workloads, each timed inside the container (start-up is not part of it): `make -j2` of 40
# generated C files, and 20,000 files created, stat'd and deleted in the workspace. Prints the
# medians and the ratios (target <= 1.05 for the runsc pair).
#
#   tests/bench/workspace.sh        (BENCH_N rounds, default 5)
#
# Needs root, dockerd, gcc on the host and the dev image (tests/lib/devimage.sh); takes
# /run/hezo-engines.lock itself. Nothing here fails on a figure.
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
N=${BENCH_N:-5}
export HEZO_SOURCE_DIR=$SRC HEZO_BUILD_DIR=${HEZO_BUILD_DIR:-$SRC/build}
export HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-bench-workspace}
# shellcheck source=tests/lib/common.sh
. "$SRC/tests/lib/common.sh"
# shellcheck source=tests/lib/docker.sh
. "$SRC/tests/lib/docker.sh"
# shellcheck source=tests/lib/devimage.sh
. "$SRC/tests/lib/devimage.sh"
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }
[ "${HEZO_BENCH_LOCKED:-}" = 1 ] || exec env HEZO_BENCH_LOCKED=1 flock /run/hezo-engines.lock "$0" "$@"
command -v gcc >/dev/null || { echo "needs gcc on the host" >&2; exit 2; }

hezo_dockerd_start || { echo "dockerd does not start" >&2; exit 2; }
hezo_devimage_docker || { echo "cannot import $HEZO_DEV_IMAGE" >&2; exit 2; }
D=$HEZO_TEST_DIR
WS=$(mktemp -d /var/tmp/hezo-bench-ws.XXXXXX) || exit 2
chmod 0755 "$WS"
P=hzbench
# tests/lib/tap.sh runs these at exit, after the engines' files are put back.
tap_cleanup "rm -rf '$WS' '$D'"
tap_cleanup "hezo_docker ps -aq --filter name=hzbench | xargs -r $HEZO_DOCKER rm -f >/dev/null 2>&1"
mkdir -p "$D/projects" "$WS/w"
jq -n --arg w "$WS/w" '{workspace: $w}' >"$D/projects/$P.json"

# One policy and wrapper per backend: the box as the test policy makes it, with the project.
for b in runsc runc; do
	HEZO_TEST_BACKEND=$b hezo_policy_json docker | jq --arg d "$D/projects" '. + {projectsDir: $d}' >"$D/policy-$b.json"
	HEZO_TEST_POLICY=$D/policy-$b.json HEZO_TEST_WRAPPER=$D/shim-$b hezo_make_wrapper
	sed -i "s|^exec \(.*\) \"\\\$@\"\$|exec \1 --hezo-project $P \"\\\$@\"|" "$D/shim-$b"
	hezo_docker_register_runtime "hezo-bench-ws-$b" "$D/shim-$b" || { echo "cannot register" >&2; exit 2; }
done
hezo_docker_register_runtime hezo-bench-plain-runsc "$(command -v runsc)" --oci-seccomp --network=host ||
	{ echo "cannot register plain runsc" >&2; exit 2; }

# The workloads' inputs, made once: 40 C files of a few hundred lines, their Makefile, and the
# file-churn program (static: it runs in the image as it is).
mkdir -p "$WS/w/src"
for i in $(seq 1 40); do
	{
		echo "#include <string.h>"
		for f in $(seq 1 60); do
			echo "int f${i}_$f(const char *s, int n) { int h = $f; for (int k = 0; k < n; k++) h = h * 31 + s[k % (int)strlen(s)]; return h ^ $i; }"
		done
	} >"$WS/w/src/m$i.c"
done
echo 'int main(void) { return 0; }' >"$WS/w/src/main.c"
# (recipe lines need a tab, which a <<- heredoc would strip)
printf '%s\n' 'OBJS = $(patsubst %.c,%.o,$(wildcard *.c))' 'prog: $(OBJS)' '\t$(CC) -o $@ $^' \
	'%.o: %.c' '\t$(CC) -O2 -c -o $@ $<' 'clean:' '\trm -f *.o prog' | sed 's/\\t/\t/' >"$WS/w/src/Makefile"
cat >"$D/churn.c" <<-'EOF'
	#include <fcntl.h>
	#include <stdio.h>
	#include <stdlib.h>
	#include <sys/stat.h>
	#include <unistd.h>
	int main(int argc, char **argv)
	{
		int n = atoi(argv[2]);
		char p[4096];
		struct stat st;
		if (mkdir(argv[1], 0755) < 0)
			return 1;
		for (int i = 0; i < n; i++) {
			snprintf(p, sizeof(p), "%s/f%d", argv[1], i);
			int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd < 0 || write(fd, "x", 1) != 1 || close(fd) < 0)
				return 1;
		}
		for (int i = 0; i < n; i++) {
			snprintf(p, sizeof(p), "%s/f%d", argv[1], i);
			if (stat(p, &st) < 0)
				return 1;
		}
		for (int i = 0; i < n; i++) {
			snprintf(p, sizeof(p), "%s/f%d", argv[1], i);
			if (unlink(p) < 0)
				return 1;
		}
		return rmdir(argv[1]) < 0;
	}
EOF
gcc -O2 -static -o "$WS/w/churn" "$D/churn.c" || { echo "cannot build the churn program" >&2; exit 2; }

# The work, timed inside: "MAKE_MS CHURN_MS".
WORK='cd /workspace/src && make -s clean && a=$(date +%s%N) && make -s -j2 >/dev/null && b=$(date +%s%N) &&
	/workspace/churn /workspace/churn.d 20000 && c=$(date +%s%N) &&
	echo $(((b - a) / 1000000)) $(((c - b) / 1000000))'
# The plain runtimes get by hand what the box gets: the workspace bind (rw, exec, nosuid, nodev),
# a read-only root, the policy's noexec tmpfs mounts. Plain runsc runs without a seccomp profile:
# it applies Docker's with every errnoRet as EPERM, so glibc 2.36's posix_spawn (clone3, which
# the profile answers ENOSYS for a fallback) fails and make cannot start a shell (docs/runsc.md,
# "errnoRet"); the box's profile is thus extra work its side alone does.
# shellcheck disable=SC2054 # the commas belong to the mount options
PLAIN=(--read-only --tmpfs /tmp:rw,noexec,nosuid,nodev,size=64m --tmpfs /run:rw,noexec,nosuid,nodev,size=16m
	--tmpfs /var/tmp:rw,noexec,nosuid,nodev,size=16m --mount "type=bind,src=$WS/w,dst=/workspace"
	--memory 2g --pids-limit 256 --cpus 2)
# side NAME: one run of the work on that side.
side()
{
	local out
	case $1 in
	hezo-runsc) out=$("$HEZO_DOCKER" run --rm --network=none --name hzbench-1 --runtime=hezo-bench-ws-runsc "$HEZO_DEV_IMAGE" bash -c "$WORK" 2>&1) ;;
	runsc) out=$("$HEZO_DOCKER" run --rm --network=none --name hzbench-2 --runtime=hezo-bench-plain-runsc "${PLAIN[@]}" \
		--security-opt seccomp=unconfined "$HEZO_DEV_IMAGE" bash -c "$WORK" 2>&1) ;;
	hezo-runc) out=$("$HEZO_DOCKER" run --rm --network=none --name hzbench-3 --runtime=hezo-bench-ws-runc "$HEZO_DEV_IMAGE" bash -c "$WORK" 2>&1) ;;
	runc) out=$("$HEZO_DOCKER" run --rm --network=none --name hzbench-4 --runtime=runc "${PLAIN[@]}" "$HEZO_DEV_IMAGE" bash -c "$WORK" 2>&1) ;;
	esac
	[[ $out =~ ^[0-9]+\ [0-9]+$ ]] || { echo "side $1 failed: $out" >&2; exit 1; }
	echo "$out"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

SIDES=(hezo-runsc runsc hezo-runc runc)
for s in "${SIDES[@]}"; do
	side "$s" >/dev/null # warm each (page cache, image layers)
	: >"$D/$s.make"
	: >"$D/$s.churn"
done
for _ in $(seq "$N"); do
	for s in "${SIDES[@]}"; do
		read -r m c < <(side "$s") || exit 1
		echo "$m" >>"$D/$s.make"
		echo "$c" >>"$D/$s.churn"
	done
done
declare -A MED
for s in "${SIDES[@]}"; do
	MED[$s.make]=$(median <"$D/$s.make")
	MED[$s.churn]=$(median <"$D/$s.churn")
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
echo "| in /workspace, $N rounds, sides alternating | hezo-shim->runsc | runsc by hand | ratio | hezo-shim->runc | runc | ratio |"
echo "|---|---|---|---|---|---|---|"
for w in make churn; do
	what="make -j2, 40 C files (ms)"
	[ $w = churn ] && what="20k files create/stat/delete (ms)"
	echo "| $what | ${MED[hezo-runsc.$w]} | ${MED[runsc.$w]} | $(ratio "${MED[hezo-runsc.$w]}" "${MED[runsc.$w]}") |" \
		"${MED[hezo-runc.$w]} | ${MED[runc.$w]} | $(ratio "${MED[hezo-runc.$w]}" "${MED[runc.$w]}") |"
done
for s in "${SIDES[@]}"; do
	echo "raw $s make: $(tr '\n' ' ' <"$D/$s.make")churn: $(tr '\n' ' ' <"$D/$s.churn")"
done
TAP_FINISHED=1 # a table, not TAP: tests/lib/tap.sh need not print a plan

#!/bin/bash
# The benchmark suite (docs/performance.md): every figure is a ratio against a baseline measured in
# the same run, median and min-max over rounds. Writes tests/bench/results.md and prints it.
#
#   sudo tests/bench/run.sh [--quick] [--only start,docker,hook,proxyd,runsc] [--build DIR] [--out FILE]
#
# Needs root, the tools named in docs/performance.md, and builds the tree (release) into
# build-bench when the binaries are missing. Traffic stays on loopback and in the network
# namespaces this script creates. No timing here fails anything: targets are reported, not asserted.
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${HEZO_BUILD_DIR:-$SRC/build-bench}
OUT=${HEZO_BENCH_OUT:-$SRC/tests/bench/results.md}
QUICK=0
KEEP=0
ONLY=start,docker,hook,proxyd,runsc

usage()
{
	sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1 ;;
	--only) ONLY=$2; shift ;;
	--only=*) ONLY=${1#--only=} ;;
	--build) BUILD=$2; shift ;;
	--out) OUT=$2; shift ;;
	--keep) KEEP=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "run.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done

if [ "$QUICK" = 1 ]; then
	ROUNDS=2 START_RUNS=5 SHIM_RUNS=30 DOCKER_RUNS=3 HOOK_RUNS=10 IPERF_SECS=2
	LAT_N=300 IDLE_N=10000 DNS_SECS=2
else
	ROUNDS=5 START_RUNS=10 SHIM_RUNS=100 DOCKER_RUNS=10 HOOK_RUNS=30 IPERF_SECS=5
	LAT_N=2000 IDLE_N=10000 DNS_SECS=5
fi

want() { [[ ",$ONLY," == *",$1,"* ]]; }
log() { printf '[bench] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (sudo tests/bench/run.sh)"
for t in hyperfine jq cc runc ip nft iperf3 haproxy dnsmasq busybox taskset; do
	command -v "$t" >/dev/null 2>&1 || die "missing tool $t (see docs/performance.md)"
done
DOCKER=${HEZO_DOCKER:-/usr/bin/docker}

# Absolute: the paths end up in runtime wrappers that dockerd runs from its own directory.
BUILD=$(realpath -m "$BUILD")
SHIM=$BUILD/shim/hezo-shim
HOOK=$BUILD/hooks/hezo-hook
PROXYD=$BUILD/proxyd/hezo-proxyd
if [ ! -x "$SHIM" ] || [ ! -x "$HOOK" ] || [ ! -x "$PROXYD" ]; then
	log "building into $BUILD (release)"
	if [ ! -e "$BUILD/build.ninja" ]; then
		meson setup "$BUILD" "$SRC" --buildtype=release -Dwerror=false >&2 || die "meson setup failed"
	fi
	ninja -C "$BUILD" >&2 || die "build failed"
fi

T=$(mktemp -d /tmp/hezo-bench.XXXXXX)
# Others may walk through it (not list it): a box in a user namespace of its own reaches its root
# through the shim's state directory, which the docker rows compile in below $T.
chmod 0711 "$T" || die "cannot chmod $T"
TAG=hzb$$
PIDS=()
NETNS=()
LINKS=()
DOCKER_RUNTIMES=()
PROXYD_PID=""

cleanup()
{
	set +e
	local p ns l m
	for p in "${PIDS[@]}" $PROXYD_PID; do
		kill "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}" $PROXYD_PID; do
		wait "$p" 2>/dev/null
	done
	for m in "$T"/proxyd/state/netns/*; do
		[ -e "$m" ] && umount -l "$m" 2>/dev/null
	done
	runc --root "$T/runc-root" delete --force bench-runc >/dev/null 2>&1
	runc --root "$T/runc-root" delete --force bench-shim >/dev/null 2>&1
	runc --root "$T/runc-root" delete --force bench-boxed >/dev/null 2>&1
	runc --root "$T/runc-root" delete --force bench-dsec >/dev/null 2>&1
	runc --root "$T/runc-root" delete --force bench-shimdsec >/dev/null 2>&1
	# The shim alone (backend /bin/true) leaves the memory cgroup it makes for TCP accounting.
	rmdir /sys/fs/cgroup/*/docker/bench-alone 2>/dev/null
	for l in "${LINKS[@]}"; do
		ip link del "$l" 2>/dev/null
	done
	for ns in "${NETNS[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	docker_restore
	if [ "$KEEP" = 1 ]; then
		log "kept $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- statistics ----

# Median, min and max of the numbers on stdin, one per line: "MED MIN MAX".
stats()
{
	sort -g | awk '{ a[NR] = $1 } END {
		if (NR == 0) { print "nan nan nan"; exit }
		m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
		print m, a[1], a[NR] }'
}

# fmt_ratio "MED MIN MAX" -> "1.02 (0.98–1.07)"
fmt_ratio()
{
	awk '{ printf "%.3f (%.3f–%.3f)", $1, $2, $3 }' <<<"$1"
}

# fmt NUMBER UNIT-SCALE DECIMALS: a number scaled (e.g. seconds to ms with 1000).
fmt() { awk -v x="$1" -v s="$2" -v d="${3:-1}" 'BEGIN { printf "%.*f", d, x * s }'; }

# verdict VALUE OP TARGET: "met" or "missed" (OP is <= or >=).
verdict()
{
	awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN {
		ok = (op == "<=") ? (v <= t) : (v >= t); print ok ? "met" : "**missed**" }'
}

ROWS=()
NOTES=()
# row AREA WHAT BASELINE HEZO RATIO TARGET VERDICT
row()
{
	local IFS='|'
	ROWS+=("| $1 | $2 | $3 | $4 | $5 | $6 | $7 |")
	log "result: $2: $4 vs $3, ratio $5 (target $6: $7)"
}
note() { NOTES+=("$*"); log "note: $*"; }
ERRORS=()
# fail AREA WHAT WHY: a row that could not run; shown in the table, and the bench exits 1.
fail()
{
	row "$1" "$2" n/a n/a n/a "—" "**error**: $3"
	ERRORS+=("$2: $3")
}

# hf_rounds NAME -- hyperfine-args...: run hyperfine ROUNDS times with the same commands; each
# round's JSON lands in $T/hf-NAME-R.json.
hf_rounds()
{
	local name=$1 r
	shift 2
	for ((r = 1; r <= ROUNDS; r++)); do
		hyperfine --style none --export-json "$T/hf-$name-$r.json" "$@" >"$T/hf-$name-$r.log" 2>&1 ||
			{ log "hyperfine $name round $r failed:"; tail -n 5 "$T/hf-$name-$r.log" >&2; return 1; }
	done
}

# hf_median NAME I: median (over rounds) of command I's median, in seconds, as "MED MIN MAX".
hf_median()
{
	local f
	for f in "$T"/hf-"$1"-*.json; do
		jq ".results[$2].median" "$f"
	done | stats
}

# hf_ratio NAME I J: per round, median(I) / median(J); "MED MIN MAX" over rounds.
hf_ratio()
{
	local f
	for f in "$T"/hf-"$1"-*.json; do
		jq ".results[$2].median / .results[$3].median" "$f"
	done | stats
}

med() { cut -d' ' -f1 <<<"$1"; }

# ---- helpers built here ----
cc -O2 -Wall -Wextra -o "$T/rusage-run" "$SRC/tests/bench/rusage-run.c" || die "cannot build rusage-run"
cc -O2 -Wall -Wextra -o "$T/bench-net" "$SRC/tests/bench/bench-net.c" || die "cannot build bench-net"
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# shellcheck source=tests/lib/image.sh
. "$SRC/tests/lib/image.sh"
# shellcheck source=tests/lib/netns.sh
. "$SRC/tests/lib/netns.sh"
# shellcheck source=tests/lib/docker.sh
. "$SRC/tests/lib/docker.sh"

MACHINE="$(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), kernel $(uname -r)"
log "machine: $MACHINE; rounds $ROUNDS; quick $QUICK"

POLICY_DEV='{"version":1,"mode":"dev","backend":"runc","allowBackends":["runc","crun","runsc"],"egress":{"mode":"off"}}'

# ---- the shared proxyd (bench 2 proxy mode, 3, 4) ----
start_proxyd()
{
	[ -n "$PROXYD_PID" ] && return 0
	mkdir -p "$T/proxyd/state" "$T/proxyd/log"
	"$PROXYD" --state-dir "$T/proxyd/state" --log-dir "$T/proxyd/log" \
		--socket "$T/proxyd/control.sock" --conn-limit 65536 --dns-rate 1000000 \
		2>>"$T/proxyd/proxyd.log" &
	PROXYD_PID=$!
	for _ in $(seq 50); do
		[ -S "$T/proxyd/control.sock" ] && return 0
		kill -0 "$PROXYD_PID" 2>/dev/null || break
		sleep 0.1
	done
	log "hezo-proxyd did not start:"
	tail -n 5 "$T/proxyd/proxyd.log" >&2
	PROXYD_PID=""
	return 1
}
ctl() { "$PROXYD" --socket "$T/proxyd/control.sock" --ctl "$@"; }

# netns_add NAME: a namespace the cleanup removes, with lo up.
netns_add()
{
	ip netns del "$1" 2>/dev/null
	ip netns add "$1" || return 1
	NETNS+=("$1")
	ip -n "$1" link set lo up
}

# netns_sleeper NAME: a process living in the namespace (the "container"); its pid in SLEEPER.
netns_sleeper()
{
	ip netns exec "$1" sleep 3600 </dev/null >/dev/null 2>&1 &
	PIDS+=($!)
	SLEEPER=$(hezo_netns_wait_pid "$1")
}

###########################################################################################
# 1. Start cost: hezo-shim -> runc against runc; crun; the shim's own CPU time and RSS
###########################################################################################
bench_start()
{
	local b r out
	log "1. start cost"
	mkdir -p "$T/start" "$T/runc-root" "$T/state"
	runc spec --bundle "$T/start" || return
	# Each bundle has its own rootfs: the shim takes root.path only inside the bundle.
	jq '.process.terminal = false | .process.args = ["true"] | .root.path = "rootfs"' \
		"$T/start/config.json" >"$T/start/config.orig.json"
	for b in runc shim boxed crun shimcrun dsec shimdsec; do
		mkdir -p "$T/b-$b"
		hezo_busybox_rootfs "$T/b-$b/rootfs" >/dev/null || {
			fail start "create+start+delete" "no busybox rootfs"
			return
		}
		cp "$T/start/config.orig.json" "$T/b-$b/config.json"
	done
	# `runc spec` sends no seccomp profile; Docker and podman always send one, and the box keeps
	# an engine's profile. The same bundle with Docker's default profile shows what the box
	# costs runc beyond what an engine's config already costs.
	jq --slurpfile d "$SRC/tests/data/config-docker.json" '.linux.seccomp = $d[0].linux.seccomp' \
		"$T/start/config.orig.json" >"$T/start/config.dsec.json"
	echo "$POLICY_DEV" >"$T/policy-dev.json"
	jq '.backend = "crun"' "$T/policy-dev.json" >"$T/policy-crun.json"
	export HEZO_STATE_DIR="$T/state" HEZO_HOOK_PATH="$HOOK"
	export HEZO_PROXYD_SOCKET="$T/proxyd/control.sock"

	# The config.json runc gets from the shim: the box's own cost, apart from the shim's.
	HEZO_POLICY="$T/policy-dev.json" "$SHIM" --root "$T/runc-root" run -b "$T/b-boxed" bench-boxed \
		>/dev/null 2>"$T/start/shim.err" || {
		fail start "create+start+delete via hezo-shim→runc" \
			"hezo-shim run failed: $(head -c 200 "$T/start/shim.err")"
		return
	}
	cp "$T/b-boxed/config.json" "$T/start/config.boxed.json"

	export HEZO_POLICY="$T/policy-dev.json"
	hf_rounds start -- --shell=none --warmup 1 --runs "$START_RUNS" \
		--prepare "cp $T/start/config.orig.json $T/b-runc/config.json" \
		--prepare "cp $T/start/config.orig.json $T/b-shim/config.json" \
		--prepare "cp $T/start/config.boxed.json $T/b-boxed/config.json" \
		--prepare "cp $T/start/config.dsec.json $T/b-dsec/config.json" \
		--prepare "cp $T/start/config.dsec.json $T/b-shimdsec/config.json" \
		"runc --root $T/runc-root run -b $T/b-runc bench-runc" \
		"$SHIM --root $T/runc-root run -b $T/b-shim bench-shim" \
		"runc --root $T/runc-root run -b $T/b-boxed bench-boxed" \
		"runc --root $T/runc-root run -b $T/b-dsec bench-dsec" \
		"$SHIM --root $T/runc-root run -b $T/b-shimdsec bench-shimdsec" || return
	local base cand boxed
	base=$(hf_median start 0)
	cand=$(hf_median start 1)
	boxed=$(hf_median start 2)
	r=$(hf_ratio start 1 0)
	row start "busybox \`true\`: create+start+delete, hezo-shim→runc vs runc (same bundle)" \
		"$(fmt "$(med "$base")" 1000) ms" "$(fmt "$(med "$cand")" 1000) ms" "$(fmt_ratio "$r")" \
		"≤ 1.03" "$(verdict "$(med "$r")" "<=" 1.03)"
	r=$(hf_ratio start 1 2)
	row start "… hezo-shim→runc vs runc given the shim's output config (the shim process alone)" \
		"$(fmt "$(med "$boxed")" 1000) ms" "$(fmt "$(med "$cand")" 1000) ms" "$(fmt_ratio "$r")" \
		"—" "info"
	r=$(hf_ratio start 2 0)
	row start "… runc on the boxed config vs runc on the engine's (what the box itself costs runc)" \
		"$(fmt "$(med "$base")" 1000) ms" "$(fmt "$(med "$boxed")" 1000) ms" "$(fmt_ratio "$r")" \
		"—" "info"
	local dsec shimdsec
	dsec=$(hf_median start 3)
	shimdsec=$(hf_median start 4)
	r=$(hf_ratio start 3 0)
	row start "… runc on the engine's config plus Docker's default seccomp profile vs without (seccomp's share of the box)" \
		"$(fmt "$(med "$base")" 1000) ms" "$(fmt "$(med "$dsec")" 1000) ms" "$(fmt_ratio "$r")" \
		"—" "info"
	r=$(hf_ratio start 2 3)
	row start "… runc on the boxed config vs runc on the engine's config plus Docker's seccomp profile" \
		"$(fmt "$(med "$dsec")" 1000) ms" "$(fmt "$(med "$boxed")" 1000) ms" "$(fmt_ratio "$r")" \
		"—" "info"
	r=$(hf_ratio start 4 3)
	row start "busybox \`true\`, the engine sent Docker's seccomp profile: hezo-shim→runc vs runc (same bundle)" \
		"$(fmt "$(med "$dsec")" 1000) ms" "$(fmt "$(med "$shimdsec")" 1000) ms" "$(fmt_ratio "$r")" \
		"—" "info"

	# crun: keep the path, show why it cannot run here.
	out=$(crun --root "$T/crun-root" run -b "$T/b-crun" bench-crun 2>&1 </dev/null)
	local crc=$?
	crun --root "$T/crun-root" delete --force bench-crun >/dev/null 2>&1
	if [ "$crc" = 0 ]; then
		HEZO_POLICY="$T/policy-crun.json" hf_rounds crun -- --shell=none --warmup 1 --runs "$START_RUNS" \
			--prepare "cp $T/start/config.orig.json $T/b-crun/config.json" \
			--prepare "cp $T/start/config.orig.json $T/b-shimcrun/config.json" \
			"crun --root $T/crun-root run -b $T/b-crun bench-crun" \
			"$SHIM --root $T/crun-root run -b $T/b-shimcrun bench-shimcrun" &&
			{
				base=$(hf_median crun 0)
				cand=$(hf_median crun 1)
				r=$(hf_ratio crun 1 0)
				row start "busybox \`true\`: hezo-shim→crun vs crun" \
					"$(fmt "$(med "$base")" 1000) ms" "$(fmt "$(med "$cand")" 1000) ms" \
					"$(fmt_ratio "$r")" "—" "info"
			}
	else
		local sout
		sout=$(HEZO_POLICY="$T/policy-crun.json" "$SHIM" --root "$T/crun-root" run -b "$T/b-shimcrun" \
			bench-shimcrun 2>&1 </dev/null | tail -n 1)
		row start "busybox \`true\`: hezo-shim→crun vs crun" "n/a" "n/a" "n/a" "—" \
			"n/a: crun cannot run here"
		note "crun $(crun --version | head -n 1 | awk '{ print $3 }') refuses the container: \`$(tail -n 1 <<<"$out" | tr -d '`' | cut -c1-160)\`; through hezo-shim: \`$(tr -d '`' <<<"$sout" | cut -c1-160)\`."
	fi

	# The shim alone: backend /bin/true, on Docker's captured config.json (bind sources made
	# real under a fake engine root).
	local eng=$T/engine/bench-alone # the engine files of this container ID
	# containerd's task bundle for the ID: only there are the engine's files of the ID its own.
	local alone=$T/engine/io.containerd.runtime.v2.task/moby/bench-alone
	mkdir -p "$eng" "$alone"
	touch "$eng/resolv.conf" "$eng/hostname" "$eng/hosts"
	# Docker's overlay is not there: the bundle's own rootfs stands in for it. Its setkey hook
	# names a dockerd that is not this one, so it goes too.
	hezo_busybox_rootfs "$alone/rootfs" >/dev/null || return
	jq --arg e "$eng" '(.mounts[] | select(.source | startswith("/var/lib/docker/containers/")) | .source) |=
		($e + "/" + (split("/") | last)) | .root.path = "rootfs" | .linux.cgroupsPath = "/docker/bench-alone" | del(.hooks)' \
		"$SRC/tests/data/config-docker.json" >"$T/start/config.docker.json"
	jq -n --argjson p "$POLICY_DEV" --arg e "$T/engine" \
		'$p + {backends: {runc: {path: "/bin/true"}}, mounts: {engineRoots: [$e]}}' >"$T/policy-true.json"
	HEZO_POLICY="$T/policy-true.json" "$T/rusage-run" "$SHIM_RUNS" \
		--copy "$T/start/config.docker.json" "$alone/config.json" -- \
		"$SHIM" --root "$T/runc-root" create -b "$alone" bench-alone >"$T/start/alone.txt"
	if awk '$5 != 0 { bad = 1 } END { exit !bad }' "$T/start/alone.txt"; then
		cp "$T/start/config.docker.json" "$alone/config.json"
		fail start "hezo-shim's own CPU per create" \
			"$(HEZO_POLICY="$T/policy-true.json" "$SHIM" --root "$T/runc-root" create -b "$alone" bench-alone 2>&1 </dev/null | head -c 200)"
		return
	fi
	"$T/rusage-run" "$SHIM_RUNS" -- /bin/true >"$T/start/true.txt"
	"$T/rusage-run" "$SHIM_RUNS" -- "$SHIM" --version >"$T/start/version.txt"
	local scpu tcpu srss trss own vcpu work
	scpu=$(awk '{ print ($1 + $2) / 1000 }' "$T/start/alone.txt" | stats)
	tcpu=$(awk '{ print ($1 + $2) / 1000 }' "$T/start/true.txt" | stats)
	vcpu=$(awk '{ print ($1 + $2) / 1000 }' "$T/start/version.txt" | stats)
	srss=$(awk '{ print $3 }' "$T/start/alone.txt" | stats)
	trss=$(awk '{ print $3 }' "$T/start/true.txt" | stats)
	own=$(awk -v a="$(med "$scpu")" -v b="$(med "$tcpu")" 'BEGIN { printf "%.2f", a - b }')
	r=$(awk -v a="$(med "$scpu")" -v b="$(med "$tcpu")" 'BEGIN { print a / b }')
	row start "CPU (user+sys) per create: hezo-shim→/bin/true vs /bin/true alone, Docker's config.json" \
		"$(fmt "$(med "$tcpu")" 1 2) ms" "$(fmt "$(med "$scpu")" 1 2) ms ($(awk '{ printf "%.2f–%.2f", $2, $3 }' <<<"$scpu"))" \
		"$(fmt "$r" 1 2)" "added < 1 ms" \
		"$(verdict "$own" "<=" 1) (added $own ms)"
	# Added = the shim's own exec (the dynamic loader, its libraries) + its work; split them.
	work=$(awk -v a="$(med "$scpu")" -v b="$(med "$tcpu")" -v v="$(med "$vcpu")" 'BEGIN { printf "%.2f", a - b - v }')
	row start "… of which exec of hezo-shim itself (\`hezo-shim --version\`, same runs) vs /bin/true" \
		"$(fmt "$(med "$tcpu")" 1 2) ms" "$(fmt "$(med "$vcpu")" 1 2) ms" \
		"$(awk -v a="$(med "$vcpu")" -v b="$(med "$tcpu")" 'BEGIN { printf "%.2f", a / b }')" "—" \
		"info: the create work itself ≈ $work ms"
	row start "peak RSS per create (same runs)" "$(med "$trss") KiB" "$(med "$srss") KiB" \
		"$(awk -v a="$(med "$srss")" -v b="$(med "$trss")" 'BEGIN { printf "%.2f", a / b }')" "—" "info"

	# Instructions the shim itself executes (user mode, up to its execve of the backend):
	# machine-independent, unlike the CPU time of this virtual machine. A build of its own:
	# valgrind needs the dynamic one (tests/bench/create-cg.sh says why).
	local cgb=$T/build-cg ir0 ir200 out0 out200
	if ! { meson setup "$cgb" "$SRC" --buildtype=release -Dwerror=false -Dtests=false \
		-Dstatic_deps=false && ninja -C "$cgb"; } >"$T/build-cg.log" 2>&1; then
		fail start "create instructions" "the dynamic build for callgrind failed: $(tail -n 1 "$T/build-cg.log")"
		return
	fi
	mkdir -p "$SRC/tests/bench/profiles"
	out0=$("$SRC/tests/bench/create-cg.sh" --build "$cgb" \
		--profile "$SRC/tests/bench/profiles/shim-create.callgrind.txt" 2>&1)
	ir0=$(awk '/^create instructions: / { print $3 }' <<<"$out0")
	[ -n "$ir0" ] || { fail start "create instructions" "$(tail -n 1 <<<"$out0")"; return; }
	rm -f "$SRC/tests/bench/profiles/shim-create.callgrind.txt.raw"
	echo "create instructions: $ir0"
	row start "instructions of one create (callgrind, Docker's config.json and seccomp profile, up to the backend's execve)" \
		"—" "$(awk -v i="$ir0" 'BEGIN { printf "%.2f M", i / 1e6 }')" "—" "≤ 2.5 M" \
		"$(verdict "$ir0" "<=" 2500000)"
	# The same create with 200 live boxes recorded and 10,000 host tasks, against none.
	local cpu
	out200=$("$SRC/tests/bench/create-cg.sh" --build "$cgb" --live 200 --tasks 10000 \
		--time "$((SHIM_RUNS / 3 + 1))" 2>&1)
	ir200=$(awk '/^create instructions: / { print $3 }' <<<"$out200")
	cpu=$(sed -n 's/^create cpu: //p' <<<"$out200")
	if [ -z "$ir200" ] || [ -z "$cpu" ]; then
		fail start "create with 200 live boxes and 10,000 host tasks" "$(tail -n 1 <<<"$out200")"
		return
	fi
	echo "create instructions with 200 live boxes and 10000 host tasks: $ir200"
	row start "instructions of one create with 200 live boxes recorded and 10,000 host tasks vs none" \
		"$(awk -v i="$ir0" 'BEGIN { printf "%.2f M", i / 1e6 }')" \
		"$(awk -v i="$ir200" 'BEGIN { printf "%.2f M", i / 1e6 }')" \
		"$(awk -v a="$ir200" -v b="$ir0" 'BEGIN { printf "%.3f", a / b }')" "≤ 1.10" \
		"$(verdict "$(awk -v a="$ir200" -v b="$ir0" 'BEGIN { print a / b }')" "<=" 1.10)"
	# "none A (a-b) ms, loaded B (c-d) ms, ratio R (e-f)"
	row start "CPU (user+sys) of one create with 200 live boxes vs none, 10,000 host tasks present in both (interleaved)" \
		"$(awk '{ print $2, "ms" }' <<<"$cpu")" "$(awk '{ print $6, "ms" }' <<<"$cpu")" \
		"$(awk '{ print $10, $11 }' <<<"$cpu" | sed 's/-/–/')" "≤ 1.10" \
		"$(verdict "$(awk '{ print $10 }' <<<"$cpu")" "<=" 1.10)"
}

###########################################################################################
# 2. docker run --rm busybox true: hezo-shim runtimes vs runc
###########################################################################################
# The runtimes the bench registers go through the suite's own helper: the first one takes the
# engines' snapshot (tests/lib/engines.sh), which docker_restore puts back byte for byte.
docker_restore()
{
	[ ${#DOCKER_RUNTIMES[@]} -eq 0 ] && return 0
	hezo_engine_restore || log "daemon.json could not be restored (snapshot kept in $HEZO_ENGINE_SNAPSHOT)"
	DOCKER_RUNTIMES=()
}

# docker_register NAME PATH [ARG...]: merge runtimes.NAME (path and runtimeArgs) into
# daemon.json, other keys kept; SIGHUP.
docker_register()
{
	hezo_docker_register_runtime "$@" || { log "cannot register runtime $1"; return 1; }
	DOCKER_RUNTIMES+=("$1")
}

bench_docker()
{
	local img=${HEZO_TEST_IMAGE:-hezo-test/busybox:latest} mode net r base cand
	log "2. docker run"
	if ! "$DOCKER" info >/dev/null 2>&1; then
		fail docker "docker run --rm busybox true" "dockerd is not running"
		return
	fi
	hezo_image_docker "$img" || { fail docker "docker run" "cannot import $img"; return; }
	start_proxyd || note "hezo-proxyd does not start: proxy mode cannot be measured"
	local cmds=() names=()
	# Installed the way packaging/ installs it: dockerd execs the shim binary itself, with its
	# paths compiled in, and the egress mode comes from a project named in runtimeArgs. A wrapper
	# script setting HEZO_POLICY would add a shell exec (about 6 ms here) to every verb, which
	# the runc baseline does not pay.
	local ib=$T/build-installed dd=$T/docker
	mkdir -p "$dd/projects" "$dd/state"
	if ! { meson setup "$ib" "$SRC" --buildtype=release -Dwerror=false -Dtests=false \
		-Dpolicy_path="$dd/policy.json" -Dstate_dir="$dd/state" -Dhook_path="$HOOK" \
		-Dproxyd_socket="$T/proxyd/control.sock" &&
		ninja -C "$ib" shim/hezo-shim shim/hezo-seccomp-exec init/hezo-init; } \
		>"$T/build-installed.log" 2>&1; then
		tail -n 5 "$T/build-installed.log" >&2
		fail docker "docker run" "the installed-paths build failed"
		return
	fi
	jq --arg p "$dd/projects" '.projectsDir = $p' <<<"$POLICY_DEV" >"$dd/policy.json"
	for mode in off deny proxy; do
		if [ "$mode" = proxy ] && [ -z "$PROXYD_PID" ]; then
			continue
		fi
		# off is the policy's own default; deny and proxy are projects.
		local pa=()
		if [ "$mode" != off ]; then
			jq -n --arg m "$mode" '{egress: {mode: $m}}' >"$dd/projects/$mode.json"
			pa=(--hezo-project "$mode")
		fi
		docker_register "$TAG-$mode" "$ib/shim/hezo-shim" "${pa[@]}" || continue
		names+=("$mode")
	done
	for net in none bridge; do
		cmds=("$DOCKER run --rm --network=$net --runtime=runc $img true")
		if ! out=$("$DOCKER" run --rm --network=$net --runtime=runc "$img" true 2>&1); then
			fail docker "\`docker run --rm --network=$net\` busybox true" \
				"fails with plain runc too: $(tail -n 1 <<<"$out" | cut -c1-160)"
			continue
		fi
		for mode in "${names[@]}"; do
			if ! out=$("$DOCKER" run --rm --network=$net --runtime="$TAG-$mode" "$img" true 2>&1); then
				fail docker "docker run --network=$net, egress $mode" \
					"$(tail -n 1 <<<"$out" | tail -c 300)"
				continue
			fi
			cmds+=("$DOCKER run --rm --network=$net --runtime=$TAG-$mode $img true")
		done
		[ ${#cmds[@]} -gt 1 ] || continue
		hf_rounds "docker-$net" -- --shell=none --warmup 1 --runs "$DOCKER_RUNS" "${cmds[@]}" || continue
		base=$(hf_median "docker-$net" 0)
		local i=1
		for c in "${cmds[@]:1}"; do
			mode=${c##*--runtime=$TAG-}
			mode=${mode%% *}
			cand=$(hf_median "docker-$net" $i)
			r=$(hf_ratio "docker-$net" $i 0)
			row docker "\`docker run --rm --network=$net\` busybox true, hezo-shim (egress $mode) vs runc" \
				"$(fmt "$(med "$base")" 1000 0) ms" "$(fmt "$(med "$cand")" 1000 0) ms" \
				"$(fmt_ratio "$r")" "≤ 1.05" "$(verdict "$(med "$r")" "<=" 1.05)"
			i=$((i + 1))
		done
	done
	bench_docker_runsc "$img" "$ib" "$dd"
	docker_restore
}

# The production pairing: hezo-shim→runsc (a project choosing runsc) against runsc registered
# by hand with the flags the shim gives it (--oci-seccomp, --network=host: shim/backend.c).
# Docker's own seccomp profile in both. `true`, and 500 sequential /bin/true inside (exec-heavy
# work, where the box's seccomp filter runs inside gVisor).
bench_docker_runsc()
{
	local img=$1 ib=$2 dd=$3 rb out w r base cand
	# shellcheck disable=SC2016
	local loop='i=0; while [ $i -lt 500 ]; do /bin/true; i=$((i + 1)); done'
	rb=$(command -v runsc) || { fail docker "hezo-shim→runsc vs runsc" "no runsc on PATH"; return; }
	# A project may choose the backend; where it lives is the main policy's to say.
	jq --arg p "$rb" '.backends.runsc.path = $p' "$dd/policy.json" >"$dd/policy.json.tmp" &&
		mv "$dd/policy.json.tmp" "$dd/policy.json" || { fail docker "hezo-shim→runsc vs runsc" "cannot write the policy"; return; }
	echo '{"backend": "runsc"}' >"$dd/projects/runsc.json"
	docker_register "$TAG-hrunsc" "$ib/shim/hezo-shim" --hezo-project runsc || {
		fail docker "hezo-shim→runsc vs runsc" "cannot register hezo-shim (runsc project)"
		return
	}
	docker_register "$TAG-runsc" "$rb" --oci-seccomp --network=host || {
		fail docker "hezo-shim→runsc vs runsc" "cannot register runsc"
		return
	}
	for rt in runsc hrunsc; do
		if ! out=$("$DOCKER" run --rm --network=none --runtime="$TAG-$rt" "$img" true 2>&1); then
			fail docker "\`docker run --rm --runtime=$TAG-$rt\` busybox true" \
				"$(tail -n 1 <<<"$out" | tail -c 300)"
			return
		fi
	done
	hf_rounds docker-runsc -- --shell=none --warmup 1 --runs "$DOCKER_RUNS" \
		"$DOCKER run --rm --network=none --runtime=$TAG-runsc $img true" \
		"$DOCKER run --rm --network=none --runtime=$TAG-hrunsc $img true" ||
		{ fail docker "hezo-shim→runsc vs runsc" "hyperfine failed"; return; }
	base=$(hf_median docker-runsc 0)
	cand=$(hf_median docker-runsc 1)
	r=$(hf_ratio docker-runsc 1 0)
	row docker "\`docker run --rm --network=none\` busybox true, hezo-shim→runsc vs runsc with the same flags" \
		"$(fmt "$(med "$base")" 1000 0) ms" "$(fmt "$(med "$cand")" 1000 0) ms" \
		"$(fmt_ratio "$r")" "≤ 1.04" "$(verdict "$(med "$r")" "<=" 1.04)"
	w=(--shell=none --warmup 1 --runs "$DOCKER_RUNS")
	hf_rounds docker-runsc-exec -- "${w[@]}" \
		"$DOCKER run --rm --network=none --runtime=$TAG-runsc $img sh -c '$loop'" \
		"$DOCKER run --rm --network=none --runtime=$TAG-hrunsc $img sh -c '$loop'" ||
		{ fail docker "500 /bin/true inside, hezo-shim→runsc vs runsc" "hyperfine failed"; return; }
	base=$(hf_median docker-runsc-exec 0)
	cand=$(hf_median docker-runsc-exec 1)
	r=$(hf_ratio docker-runsc-exec 1 0)
	row docker "500 sequential /bin/true inside the box, hezo-shim→runsc vs runsc with Docker's profile" \
		"$(fmt "$(med "$base")" 1000 0) ms" "$(fmt "$(med "$cand")" 1000 0) ms" \
		"$(fmt_ratio "$r")" "≤ 1.05" "$(verdict "$(med "$r")" "<=" 1.05)"
}

###########################################################################################
# 3. hezo-hook wire vs the same rules through nft -f
###########################################################################################
bench_hook()
{
	local pid c n egdeny egproxy r base cand
	log "3. hook wiring"
	c=$TAG-hc
	n=$TAG-hn
	netns_add "$c" && netns_add "$n" || { fail hook "wiring" "cannot create netns"; return; }
	# A container network has a device besides lo; the hook does not care, the rules match all.
	ip -n "$c" link add eth0 type veth peer name eth0p && ip -n "$c" link set eth0 up
	ip -n "$c" link set lo down
	netns_sleeper "$c"
	pid=$SLEEPER
	[ -n "$pid" ] || { fail hook "wiring" "no process in the netns"; return; }
	jq -cn --argjson pid "$pid" '{ociVersion: "1.0.2", id: "b1", status: "creating", pid: $pid, bundle: "/tmp"}' \
		>"$T/hook-state.json"
	egdeny='{"mode":"deny"}'
	if ! out=$("$HOOK" wire --egress "$egdeny" <"$T/hook-state.json" 2>&1); then
		fail hook "hezo-hook wire (deny)" "$(head -c 200 <<<"$out")"
		return
	fi
	# The rule set the hook installs, replayed by nft the way the hook replaces it (atomically).
	{
		echo "table inet hezo"
		echo "delete table inet hezo"
		ip netns exec "$c" nft list table inet hezo
	} >"$T/rules-deny.nft"
	local cmds=("nft -f $T/rules-deny.nft" "$HOOK wire --egress '$egdeny' < $T/hook-state.json")
	local havep=0
	if start_proxyd; then
		egproxy='{"mode":"proxy","allow":[],"resolvers":["127.0.0.1:5354"]}'
		if out=$(HEZO_PROXYD_SOCKET="$T/proxyd/control.sock" "$HOOK" wire --egress "$egproxy" \
			<"$T/hook-state.json" 2>&1); then
			{
				echo "table inet hezo"
				echo "delete table inet hezo"
				ip netns exec "$c" nft list table inet hezo
			} >"$T/rules-proxy.nft"
			cmds+=("nft -f $T/rules-proxy.nft"
				"HEZO_PROXYD_SOCKET=$T/proxyd/control.sock $HOOK wire --egress '$egproxy' < $T/hook-state.json")
			havep=1
		else
			note "hezo-hook wire in proxy mode failed: $(head -c 200 <<<"$out")"
		fi
	fi
	# hyperfine itself runs in namespace $n: nft installs there, the hook enters $c (it refuses
	# the namespace it runs in). Same shell around both, so both pay the same fork+exec.
	local r2
	for ((r2 = 1; r2 <= ROUNDS; r2++)); do
		ip netns exec "$n" hyperfine --style none --export-json "$T/hf-hook-$r2.json" --warmup 2 \
			--runs "$HOOK_RUNS" "${cmds[@]}" "$HOOK --version" "/bin/true" >"$T/hf-hook-$r2.log" 2>&1 ||
			{ tail -n 5 "$T/hf-hook-$r2.log" >&2; fail hook wiring "hyperfine failed"; return; }
	done
	local floor
	# The hook's own exec (dynamic loader, libnl, libnftnl, yajl): its wiring work is above that.
	floor=$(hf_median hook $((${#cmds[@]})))
	local truefl
	truefl=$(hf_median hook $((${#cmds[@]} + 1)))
	base=$(hf_median hook 0)
	cand=$(hf_median hook 1)
	r=$(hf_ratio hook 1 0)
	local net
	net=$(awk -v a="$(med "$cand")" -v b="$(med "$floor")" 'BEGIN { printf "%.2f", (a - b) * 1000 }')
	row hook "hezo-hook wire, deny: table + chains + rules + lo up in a fresh netns, vs \`nft -f\` of the same table" \
		"$(fmt "$(med "$base")" 1000 2) ms" "$(fmt "$(med "$cand")" 1000 2) ms" "$(fmt_ratio "$r")" \
		"≤ 3 ms" "$(verdict "$(med "$cand")" "<=" 0.003) ($net ms over \`hezo-hook --version\`)"
	if [ "$havep" = 1 ]; then
		base=$(hf_median hook 2)
		cand=$(hf_median hook 3)
		r=$(hf_ratio hook 3 2)
		net=$(awk -v a="$(med "$cand")" -v b="$(med "$floor")" 'BEGIN { printf "%.2f", (a - b) * 1000 }')
		row hook "hezo-hook wire, proxy: register with proxyd (6 listeners) + table, vs \`nft -f\` of the same table" \
			"$(fmt "$(med "$base")" 1000 2) ms" "$(fmt "$(med "$cand")" 1000 2) ms" "$(fmt_ratio "$r")" \
			"≤ 3 ms" "$(verdict "$(med "$cand")" "<=" 0.003) ($net ms over \`hezo-hook --version\`)"
		ctl deregister b1 >/dev/null 2>&1
	fi
	# The wiring alone, from the hook's own clock (main() to the table committed and its socket
	# closed): what the end-to-end figures above add to the exec floor below.
	local m w eg
	for m in deny proxy; do
		[ "$m" = proxy ] && [ "$havep" != 1 ] && continue
		[ "$m" = deny ] && eg=$egdeny || eg=$egproxy
		for ((r2 = 1; r2 <= ROUNDS * HOOK_RUNS; r2++)); do
			ip netns exec "$n" env HEZO_HOOK_TIMING=1 HEZO_PROXYD_SOCKET="$T/proxyd/control.sock" \
				"$HOOK" wire --egress "$eg" <"$T/hook-state.json" 2>&1 >/dev/null |
				sed -n 's/.*timing: wired \([0-9.]*\) ms.*/\1/p'
		done >"$T/hook-timing-$m.txt"
		w=$(stats <"$T/hook-timing-$m.txt")
		row hook "… $m: the wiring itself, timed inside hezo-hook (main() to table committed, socket closed)" \
			"—" "$(awk '{ printf "%.2f ms (%.2f–%.2f)", $1, $2, $3 }' <<<"$w")" "—" "≤ 3 ms" \
			"$(verdict "$(med "$w")" "<=" 3) (in-process; exec cost excluded)"
	done
	[ "$havep" = 1 ] && ctl deregister b1 >/dev/null 2>&1
	row hook "exec floor: \`hezo-hook --version\` vs \`/bin/true\`, through the same shell" \
		"$(fmt "$(med "$truefl")" 1000 2) ms" "$(fmt "$(med "$floor")" 1000 2) ms" \
		"$(fmt_ratio "$(hf_ratio hook $((${#cmds[@]})) $((${#cmds[@]} + 1)))")" "—" "info"
}

###########################################################################################
# 4. proxyd: throughput, connect latency, idle connections, DNS
###########################################################################################
bench_proxyd()
{
	local c i r pid out
	log "4. proxyd"
	start_proxyd || { fail proxyd "all" "hezo-proxyd does not start"; return; }
	c=$TAG-pc
	i=$TAG-pi
	netns_add "$c" && netns_add "$i" || { fail proxyd all "cannot create netns"; return; }
	# The internet: a namespace with the servers, one veth from the host (proxyd's upstream side).
	ip link add "$TAG-v0" type veth peer name eth0 netns "$i" || return
	LINKS+=("$TAG-v0")
	ip addr add 10.247.0.1/24 dev "$TAG-v0"
	ip link set "$TAG-v0" up
	ip -n "$i" addr add 10.247.0.2/24 dev eth0
	ip -n "$i" link set eth0 up
	# The container: a device that leads nowhere (a veth pair inside it; the dummy driver may be
	# missing) and a default route, as if its network were elsewhere: everything it sends
	# leaves through proxyd.
	ip -n "$c" link add eth0 type veth peer name eth0p
	ip -n "$c" addr add 10.247.9.2/24 dev eth0
	ip -n "$c" link set eth0p up
	ip -n "$c" link set eth0 up
	ip -n "$c" route add default dev eth0
	netns_sleeper "$c"
	pid=$SLEEPER

	local secs=$((ROUNDS * (3 * IPERF_SECS + 30) + 600))
	# Pinned as haproxy's own benchmarks are: clients and servers on CPU 0, the proxy (proxyd
	# or haproxy) alone on CPU 1.
	ip netns exec "$i" taskset -c 0 iperf3 -s -B 10.247.0.2 -p 5201 >/dev/null 2>&1 &
	PIDS+=($!)
	ip netns exec "$i" taskset -c 0 "$T/bench-net" server 10.247.0.2 7000 "$secs" &
	PIDS+=($!)
	taskset -c 0 dnsmasq --no-daemon --no-resolv --no-hosts --conf-file=/dev/null --pid-file= \
		--listen-address=127.0.0.1 --bind-interfaces --port=5354 --cache-size=0 \
		--address=/allowed.bench/10.247.0.2 >"$T/dnsmasq.log" 2>&1 &
	PIDS+=($!)
	# Idle connections at once: 10,000, or what the file limit allows. proxyd holds 2 fds per
	# idle relayed connection (its 2 sockets; pipes are pooled, at most 64 spare), haproxy 2;
	# both get the same count.
	local hard
	hard=$(ulimit -Hn)
	[ "$hard" = unlimited ] && hard=1048576
	IDLE_REAL=$(((hard - 400) / 2))
	[ "$IDLE_REAL" -gt "$IDLE_N" ] && IDLE_REAL=$IDLE_N
	[ "$IDLE_REAL" -lt "$IDLE_N" ] &&
		note "RLIMIT_NOFILE hard limit here is $hard and cannot be raised (no CAP_SYS_RESOURCE): proxyd and haproxy hold 2 fds per idle relayed connection (client and upstream sockets), so the idle test holds $IDLE_REAL connections instead of $IDLE_N."
	local hmax=$((IDLE_REAL + 100))
	cat >"$T/haproxy.cfg" <<-EOF
		global
		    maxconn $hmax
		    nbthread 1
		defaults
		    mode tcp
		    timeout connect 5s
		    timeout client 300s
		    timeout server 300s
		    maxconn $hmax
		listen iperf
		    bind 127.0.0.1:25201
		    server s1 10.247.0.2:5201
		listen echo
		    bind 127.0.0.1:27000
		    server s1 10.247.0.2:7000
	EOF
	taskset -c 1 haproxy -f "$T/haproxy.cfg" -db >"$T/haproxy.log" 2>&1 &
	local hapid=$!
	PIDS+=("$hapid")
	sleep 1

	local eg
	eg=$(jq -cn '{mode: "proxy", allow: ["allowed.bench", "10.247.0.2/32:5201", "10.247.0.2/32:7000"],
		resolvers: ["127.0.0.1:5354"], allowRanges: ["10.247.0.0/16"]}')
	jq -cn --argjson pid "$pid" '{ociVersion: "1.0.2", id: "bench-c", status: "creating", pid: $pid, bundle: "/tmp"}' \
		>"$T/proxyd-state.json"
	if ! out=$(HEZO_PROXYD_SOCKET="$T/proxyd/control.sock" "$HOOK" wire --egress "$eg" \
		<"$T/proxyd-state.json" 2>&1); then
		fail proxyd "all" "hezo-hook wire failed: $(head -c 200 <<<"$out")"
		return
	fi
	in_c() { ip netns exec "$c" "$@"; }
	if ! in_c "$T/bench-net" latency 10.247.0.2 7000 5 >/dev/null; then
		fail proxyd "all" "no connection through proxyd"
		return
	fi

	# -- throughput --
	local k f direct relay hap
	taskset -apc 1 "$PROXYD_PID" >/dev/null || log "cannot pin hezo-proxyd to CPU 1"
	note "proxyd rows: clients and servers pinned to CPU 0, hezo-proxyd and haproxy (1 thread) to CPU 1, as haproxy's own benchmarks pin them; the machine was $(awk '{ printf "at load %s", $1 }' /proc/loadavg) when they began."
	iperf_bps() { jq '.end.sum_received.bits_per_second // 0' 2>/dev/null; }
	for ((k = 1; k <= ROUNDS; k++)); do
		direct=$(taskset -c 0 iperf3 -c 10.247.0.2 -p 5201 -t "$IPERF_SECS" -J 2>/dev/null | iperf_bps)
		relay=$(in_c taskset -c 0 iperf3 -c 10.247.0.2 -p 5201 -t "$IPERF_SECS" -J 2>/dev/null | iperf_bps)
		hap=$(taskset -c 0 iperf3 -c 127.0.0.1 -p 25201 -t "$IPERF_SECS" -J 2>/dev/null | iperf_bps)
		echo "$direct $relay $hap" >>"$T/iperf.txt"
	done
	local dm rm hm
	dm=$(awk '{ print $1 / 1e9 }' "$T/iperf.txt" | stats)
	rm=$(awk '{ print $2 / 1e9 }' "$T/iperf.txt" | stats)
	hm=$(awk '{ print $3 / 1e9 }' "$T/iperf.txt" | stats)
	r=$(awk '$1 > 0 { print $2 / $1 }' "$T/iperf.txt" | stats)
	row proxyd "bulk TCP (iperf3, ${IPERF_SECS} s): through proxyd vs direct on the same veth" \
		"$(fmt "$(med "$dm")" 1 2) Gbit/s" "$(fmt "$(med "$rm")" 1 2) Gbit/s" "$(fmt_ratio "$r")" "≥ 0.90" \
		"$(verdict "$(med "$r")" ">=" 0.90)"
	r=$(awk '$3 > 0 { print $2 / $3 }' "$T/iperf.txt" | stats)
	row proxyd "bulk TCP: through proxyd vs through haproxy (TCP mode, 1 thread) on the same path" \
		"$(fmt "$(med "$hm")" 1 2) Gbit/s" "$(fmt "$(med "$rm")" 1 2) Gbit/s" "$(fmt_ratio "$r")" "> 1.00" \
		"$(verdict "$(med "$r")" ">=" 1.0)"

	# -- connect latency: connect, one byte out, its echo back --
	for ((k = 1; k <= ROUNDS; k++)); do
		direct=$(taskset -c 0 "$T/bench-net" latency 10.247.0.2 7000 "$LAT_N")
		relay=$(in_c taskset -c 0 "$T/bench-net" latency 10.247.0.2 7000 "$LAT_N")
		hap=$(taskset -c 0 "$T/bench-net" latency 127.0.0.1 27000 "$LAT_N")
		echo "$(awk '{ print $2, $4 }' <<<"$direct") $(awk '{ print $2, $4 }' <<<"$relay") $(awk '{ print $2, $4 }' <<<"$hap")" >>"$T/lat.txt"
	done
	# columns: direct p50 p99, relay p50 p99, haproxy p50 p99
	local add50 add99 hadd50
	add50=$(awk '{ print $3 - $1 }' "$T/lat.txt" | stats)
	add99=$(awk '{ print $4 - $2 }' "$T/lat.txt" | stats)
	hadd50=$(awk '{ print $5 - $1 }' "$T/lat.txt" | stats)
	row proxyd "added connect latency p50 (connect + 1-byte echo; direct p50 as baseline)" \
		"$(awk '{ print $1 }' "$T/lat.txt" | stats | awk '{ printf "%.0f µs", $1 }')" \
		"$(awk '{ print $3 }' "$T/lat.txt" | stats | awk '{ printf "%.0f µs", $1 }')" \
		"$(awk '$1 > 0 { print $3 / $1 }' "$T/lat.txt" | stats | awk '{ printf "%.2f (%.2f–%.2f)", $1, $2, $3 }')" \
		"added ≤ 50 µs" "$(verdict "$(med "$add50")" "<=" 50) (added $(awk '{ printf "%.0f µs (%.0f–%.0f)", $1, $2, $3 }' <<<"$add50"))"
	row proxyd "added connect latency p99" \
		"$(awk '{ print $2 }' "$T/lat.txt" | stats | awk '{ printf "%.0f µs", $1 }')" \
		"$(awk '{ print $4 }' "$T/lat.txt" | stats | awk '{ printf "%.0f µs", $1 }')" \
		"$(awk '$2 > 0 { print $4 / $2 }' "$T/lat.txt" | stats | awk '{ printf "%.2f (%.2f–%.2f)", $1, $2, $3 }')" \
		"—" "info (added $(awk '{ printf "%.0f µs", $1 }' <<<"$add99"))"
	row proxyd "… haproxy's added p50 on the same path, for comparison" "—" \
		"$(awk '{ printf "%.0f µs (%.0f–%.0f)", $1, $2, $3 }' <<<"$hadd50")" \
		"$(awk '{ print $3 / $5 }' "$T/lat.txt" | stats | awk '{ printf "proxyd/haproxy %.2f", $1 }')" "—" "info"

	# -- idle connections: RSS growth per connection, proxyd vs haproxy --
	rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
	idle_round()
	{
		# idle_round WHO PID NS IP PORT: RSS per connection in bytes, or nothing on failure.
		local who=$1 p=$2 ns=$3 ip=$4 port=$5 before after ready hp
		before=$(rss_kib "$p")
		if [ "$ns" = host ]; then
			"$T/bench-net" idle "$ip" "$port" "$IDLE_REAL" 300 >"$T/idle-$who.out" 2>"$T/idle-$who.err" &
		else
			ip netns exec "$ns" "$T/bench-net" idle "$ip" "$port" "$IDLE_REAL" 300 >"$T/idle-$who.out" 2>"$T/idle-$who.err" &
		fi
		hp=$!
		ready=""
		for _ in $(seq 600); do
			ready=$(awk '/^ready/ { print $2 }' "$T/idle-$who.out" 2>/dev/null)
			[ -n "$ready" ] && break
			kill -0 "$hp" 2>/dev/null || break
			sleep 0.2
		done
		sleep 1
		after=$(rss_kib "$p")
		kill "$hp" 2>/dev/null
		wait "$hp" 2>/dev/null
		if [ "${ready:-0}" != "$IDLE_REAL" ]; then
			log "idle $who: only ${ready:-0} of $IDLE_REAL connections: $(tail -n 1 "$T/idle-$who.err")"
			return 1
		fi
		awk -v a="$after" -v b="$before" -v n="$IDLE_REAL" 'BEGIN { print (a - b) * 1024 / n }'
		# Let both ends drop the connections before the next round.
		sleep 2
	}
	local iround=$((ROUNDS > 2 ? 2 : 1)) pr hr
	for ((k = 1; k <= iround; k++)); do
		pr=$(idle_round proxyd "$PROXYD_PID" "$c" 10.247.0.2 7000) || break
		hr=$(idle_round haproxy "$hapid" host 127.0.0.1 27000) || hr=0
		echo "$pr $hr" >>"$T/idle.txt"
	done
	if [ -s "$T/idle.txt" ]; then
		pr=$(awk '{ print $1 / 1024 }' "$T/idle.txt" | stats)
		hr=$(awk '{ print $2 / 1024 }' "$T/idle.txt" | stats)
		row proxyd "RSS growth per idle relayed connection, $IDLE_REAL at once: proxyd vs haproxy" \
			"$(fmt "$(med "$hr")" 1 2) KiB" "$(fmt "$(med "$pr")" 1 2) KiB" \
			"$(awk '$2 > 0 { print $1 / $2 }' "$T/idle.txt" | stats | awk '{ printf "%.2f (%.2f–%.2f)", $1, $2, $3 }')" \
			"≤ 16 KiB" "$(verdict "$(med "$pr")" "<=" 16)"
	else
		fail proxyd "RSS per idle connection" \
			"$(tail -n 1 "$T/idle-proxyd.err" 2>/dev/null | cut -c1-160)"
	fi

	# -- DNS: proxyd on CPU 1, the load generator and dnsmasq on CPU 0 --
	taskset -pc 1 "$PROXYD_PID" >/dev/null
	cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
	local hz t0 t1 q qa qd
	hz=$(getconf CLK_TCK)
	for ((k = 1; k <= ROUNDS; k++)); do
		direct=$(taskset -c 0 "$T/bench-net" dns 127.0.0.1 5354 allowed.bench 32 "$DNS_SECS")
		t0=$(cpu_ticks "$PROXYD_PID")
		qa=$(in_c taskset -c 0 "$T/bench-net" dns 127.0.0.1 15053 allowed.bench 32 "$DNS_SECS")
		t1=$(cpu_ticks "$PROXYD_PID")
		local ua=$((t1 - t0))
		t0=$(cpu_ticks "$PROXYD_PID")
		qd=$(in_c taskset -c 0 "$T/bench-net" dns 127.0.0.1 15053 denied.bench 128 "$DNS_SECS")
		t1=$(cpu_ticks "$PROXYD_PID")
		local ud=$((t1 - t0))
		echo "$(awk '{ print $2 }' <<<"$direct") $(awk '{ print $2 }' <<<"$qa") $(awk '{ print $2 }' <<<"$qd") $ua $ud $hz $DNS_SECS" >>"$T/dns.txt"
		log "dns round $k: dnsmasq direct: $direct; proxyd allowed: $qa; denied: $qd; proxyd cpu ticks $ua / $ud"
	done
	# Where proxyd's time goes, for docs/performance.md: one profiled run of each, not measured.
	if command -v perf >/dev/null 2>&1; then
		mkdir -p "$SRC/tests/bench/profiles"
		prof()
		{
			local name=$1
			shift
			perf record -q -F 4999 -g -p "$PROXYD_PID" -o "$T/perf-$name.data" -- sleep "$DNS_SECS" \
				>/dev/null 2>&1 &
			local pp=$!
			sleep 0.3
			"$@" >/dev/null 2>&1
			wait "$pp"
			perf report -i "$T/perf-$name.data" --no-children --sort sym --stdio 2>/dev/null |
				grep -E '^ +[0-9]' | head -n 25 >"$SRC/tests/bench/profiles/proxyd-$name.perf.txt"
		}
		prof dns-allowed in_c taskset -c 0 "$T/bench-net" dns 127.0.0.1 15053 allowed.bench 32 "$DNS_SECS"
		prof dns-denied in_c taskset -c 0 "$T/bench-net" dns 127.0.0.1 15053 denied.bench 128 "$DNS_SECS"
		prof connect in_c "$T/bench-net" latency 10.247.0.2 7000 2000
		prof bulk in_c iperf3 -c 10.247.0.2 -p 5201 -t "$DNS_SECS"
		note "perf profiles of proxyd (flat, top 25 symbols) in tests/bench/profiles/proxyd-{dns-allowed,dns-denied,connect,bulk}.perf.txt."
	fi
	taskset -apc 0-$(($(nproc) - 1)) "$PROXYD_PID" >/dev/null
	# qps, and qps per second of proxyd CPU (what one fully busy core would answer): the target
	# is the latter, since the generator and dnsmasq share the other core and cap the former.
	local pc
	q=$(awk '{ print $2 }' "$T/dns.txt" | stats)
	pc=$(awk '$4 > 0 { print $2 / ($4 / $6 / $7) }' "$T/dns.txt" | stats)
	row proxyd "DNS answers/s, allowed name (forwarded to dnsmasq, filtered, pinned, logged) vs dnsmasq asked directly" \
		"$(awk '{ print $1 }' "$T/dns.txt" | stats | awk '{ printf "%.0f/s", $1 }')" \
		"$(awk '{ printf "%.0f/s", $1 }' <<<"$q") ($(awk '{ printf "%.0f", $1 }' <<<"$pc")/s per proxyd CPU-second)" \
		"$(awk '$1 > 0 { print $2 / $1 }' "$T/dns.txt" | stats | awk '{ printf "%.2f (%.2f–%.2f)", $1, $2, $3 }')" \
		"≥ 50,000/s per proxyd CPU-second" "$(verdict "$(med "$pc")" ">=" 50000)"
	q=$(awk '{ print $3 }' "$T/dns.txt" | stats)
	pc=$(awk '$5 > 0 { print $3 / ($5 / $6 / $7) }' "$T/dns.txt" | stats)
	row proxyd "DNS answers/s, denied name (NXDOMAIN from proxyd, logged) vs dnsmasq asked directly" \
		"$(awk '{ print $1 }' "$T/dns.txt" | stats | awk '{ printf "%.0f/s", $1 }')" \
		"$(awk '{ printf "%.0f/s", $1 }' <<<"$q") ($(awk '{ printf "%.0f", $1 }' <<<"$pc")/s per proxyd CPU-second)" \
		"$(awk '$1 > 0 { print $3 / $1 }' "$T/dns.txt" | stats | awk '{ printf "%.2f (%.2f–%.2f)", $1, $2, $3 }')" \
		"≥ 50,000/s per proxyd CPU-second" "$(verdict "$(med "$pc")" ">=" 50000)"
	ctl deregister bench-c >/dev/null 2>&1
}

# ---- 5. runsc: gVisor's host tasks against the backstop the shim sizes ----
# hezo-shim runs a bundle under each runsc found (policy pids 256, so RLIMIT_NPROC 256 inside);
# the host's pids.current is sampled every 50 ms. Baseline: the same sandbox at rest (a shell and
# one sleep); hezo: the peak with 256 tasks held (254 sleeping, or a fork bomb). The ratio is
# peak / the host pids.max the shim chose: below 1 the workload never reaches the backstop.
runsc_peak()
{
	local bin=$1 id=$2 script=$3 b=$T/runsc/$2 cg peak=0 max=0 c pid
	rm -rf "$b"
	mkdir -p "$b"
	# The shim takes root.path only inside the bundle (or an engine's root filesystem).
	cp -a "$T/runsc/rootfs" "$b/rootfs" || return 1
	jq --arg s "$script" --arg id "$id" \
		'.root = {path: "rootfs", readonly: true} | .process.terminal = false
		| .process.args = ["sh", "-c", $s] | .process.env = ["PATH=/bin"]
		| .linux.cgroupsPath = ("/hezo-bench/" + $id)' "$T/runsc/config.json" >"$b/config.json"
	# The bench's own cgroup parent, beside the engines' ones the policy allows.
	jq --arg p "$bin" '.backend = "runsc" | .backends.runsc = {path: $p, network: "none"}
		| .cgroupParents = ["/hezo-bench"]' "$T/policy-dev.json" >"$T/runsc/policy.json"
	HEZO_POLICY="$T/runsc/policy.json" HEZO_STATE_DIR="$T/state" "$SHIM" --root "$T/runsc-root" \
		run -b "$b" "$id" >"$b/out" 2>&1 &
	pid=$!
	cg=/sys/fs/cgroup/pids/hezo-bench/$id
	while kill -0 "$pid" 2>/dev/null; do
		c=$(cat "$cg/pids.current" 2>/dev/null || echo 0)
		[ "$c" -gt "$peak" ] && peak=$c
		[ -r "$cg/pids.max" ] && max=$(cat "$cg/pids.max")
		sleep 0.05
	done
	wait "$pid" || log "runsc $id exited $?: $(tail -n 2 "$b/out")"
	"$bin" --root "$T/runsc-root" delete --force "$id" >/dev/null 2>&1
	for c in /sys/fs/cgroup/*/hezo-bench/"$id"; do rmdir "$c" 2>/dev/null; done
	echo "$peak $max"
}

bench_runsc()
{
	local bin rel r w rest peaks rest_s peaks_s per ratio max out rounds=$ROUNDS
	# shellcheck disable=SC2016,SC2034 # read through ${!w}
	local sleepers='i=0; while [ $i -lt 254 ]; do sleep 10 & i=$((i + 1)); done; sleep 6; kill -9 -1; exit 0'
	# shellcheck disable=SC2016,SC2034 # read through ${!w}
	local bomb='mkfifo /tmp/idle; exec 3<>/tmp/idle; export B='"'"'while :; do sh -c "$B" & done'"'"'
sh -c "$B" 2>/dev/null & read -t 8 x <&3; kill -9 -1; wait; exit 0'
	log "5. runsc host tasks"
	mkdir -p "$T/runsc" "$T/runsc-root" "$T/state"
	hezo_busybox_rootfs "$T/runsc/rootfs" >/dev/null || { note "runsc rows: no busybox rootfs"; return; }
	runc spec --bundle "$T/runsc" || return
	echo "$POLICY_DEV" >"$T/policy-dev.json"
	for bin in /usr/bin/runsc /opt/runsc-2022/runsc; do
		[ -x "$bin" ] || { note "runsc rows: no $bin"; continue; }
		rel=$("$bin" --version 2>/dev/null | head -n 1 | awk '{ print $3 }')
		for w in sleepers bomb; do
			rest=() peaks=()
			for ((r = 1; r <= rounds; r++)); do
				out=$(runsc_peak "$bin" "rest-$r" 'sleep 3')
				rest+=("${out% *}")
				out=$(runsc_peak "$bin" "$w-$r" "${!w}")
				peaks+=("${out% *}")
				max=${out#* }
			done
			rest_s=$(printf '%s\n' "${rest[@]}" | stats)
			per=$(for ((r = 0; r < rounds; r++)); do
				awk -v p="${peaks[$r]}" -v b="$(med "$rest_s")" 'BEGIN { print (p - b) / 254 }'
			done | stats)
			if [ "${max:-0}" -le 0 ] 2>/dev/null; then
				fail runsc "host tasks, 256 tasks inside ($w), runsc $rel" \
					"no host pids.max was seen: the sandbox did not start ($(tail -n 1 "$T/runsc/$w-$rounds/out" 2>/dev/null | cut -c1-160))"
				continue
			fi
			ratio=$(for p in "${peaks[@]}"; do awk -v p="$p" -v m="$max" 'BEGIN { print p / m }'; done | stats)
			peaks_s=$(printf '%s\n' "${peaks[@]}" | stats)
			row runsc "host tasks, 256 tasks inside ($w), runsc $rel; peak / host pids.max $max" \
				"$(med "$rest_s") at rest" \
				"$(med "$peaks_s") ($(cut -d' ' -f2 <<<"$peaks_s")–$(cut -d' ' -f3 <<<"$peaks_s")); $(fmt "$(med "$per")" 1 1) per task" \
				"$(fmt_ratio "$ratio")" "< 1.00" "$(verdict "$(cut -d' ' -f3 <<<"$ratio")" "<=" 0.99)"
		done
	done
	rmdir /sys/fs/cgroup/*/hezo-bench 2>/dev/null
}

want start && bench_start
want docker && bench_docker
want hook && bench_hook
want proxyd && bench_proxyd
want runsc && bench_runsc

{
	echo "# hezo-shim benchmarks"
	echo
	echo "Run $(date -u '+%Y-%m-%d %H:%M UTC') on $MACHINE; $(grep -m1 PRETTY_NAME /etc/os-release | cut -d'"' -f2)."
	echo "Mode: $([ "$QUICK" = 1 ] && echo quick || echo full), $ROUNDS rounds; ratio = hezo / baseline per round, median (min–max) over rounds. Commit $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)."
	echo
	echo "| area | what | baseline | hezo | ratio | target | verdict |"
	echo "|---|---|---|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
	if [ ${#NOTES[@]} -gt 0 ]; then
		echo
		echo "Notes:"
		echo
		printf -- '- %s\n' "${NOTES[@]}"
	fi
} >"$T/results.md"
cp "$T/results.md" "$OUT"
cat "$OUT"
if [ ${#ERRORS[@]} -gt 0 ]; then
	log "${#ERRORS[@]} row(s) could not run:"
	printf '[bench] error: %s\n' "${ERRORS[@]}" >&2
	exit 1
fi

#!/bin/bash
# CI fuzz smoke: build every libFuzzer target (clang-14, ASan+UBSan, the whole tree instrumented
# for coverage) and run each for FUZZ_SMOKE_SECONDS (default 20) over its committed corpus.
# Exits non-zero when a target does not build or finds a crash, leak or timeout; the input that
# did it is kept under the work directory and named in the output.
# Usage: tests/fuzz/smoke.sh [WORK_DIR]   (default: a fresh /tmp/fuzz-smoke.XXXXXX)
#   FUZZ_SMOKE_SECONDS=N  seconds per target       FUZZ_SMOKE_TARGETS="json dns"  only these
#   FUZZ_RUNS=N           a campaign: N executions per target instead of a time limit
#   FUZZ_TIMEOUT=S        seconds one input may take (10); raise it for a campaign that shares
#                         the machine, where a starved process would trip it without a real hang
#                         (the closing-note counts: FUZZ_RUNS=10000000)
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CORPUS=$SRC/tests/fuzz/corpus
SECONDS_EACH=${FUZZ_SMOKE_SECONDS:-20}
RUNS=${FUZZ_RUNS:-0}
TIMEOUT=${FUZZ_TIMEOUT:-10}
WORK=${1:-$(mktemp -d /tmp/fuzz-smoke.XXXXXX)}
BUILD=$WORK/build
CC=${FUZZ_CC:-clang-14}

command -v "$CC" >/dev/null || { echo "fuzz smoke: $CC not found" >&2; exit 2; }
command -v meson >/dev/null && command -v ninja >/dev/null ||
	{ echo "fuzz smoke: meson and ninja are needed" >&2; exit 2; }
mkdir -p "$WORK"

# -fsanitize=fuzzer-no-link on every object, not only the harness: the libraries under test must
# report coverage or libFuzzer mutates blind.
if [ ! -e "$BUILD/build.ninja" ]; then
	CC=$CC meson setup "$BUILD" "$SRC" -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link >"$WORK/setup.log" 2>&1 ||
		{ tail -n 30 "$WORK/setup.log"; echo "fuzz smoke: meson setup failed" >&2; exit 1; }
fi
mapfile -t targets < <(meson introspect --targets "$BUILD" |
	jq -r '.[] | select(.name | startswith("fuzz-")) | .name | ltrimstr("fuzz-")' | sort)
if [ -n "${FUZZ_SMOKE_TARGETS:-}" ]; then
	read -ra targets <<<"$FUZZ_SMOKE_TARGETS"
fi
[ "${#targets[@]}" -gt 0 ] || { echo "fuzz smoke: no fuzz targets configured" >&2; exit 1; }
# Build only the fuzzers: a unit test that clang rejects is not this script's business.
if ! ninja -C "$BUILD" "${targets[@]/#/tests/fuzz/fuzz-}" >"$WORK/build.log" 2>&1; then
	grep -E 'error|FAILED' "$WORK/build.log" | head -n 20
	echo "fuzz smoke: building the fuzz targets failed (log: $WORK/build.log)" >&2
	exit 1
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=0
for t in "${targets[@]}"; do
	bin=$BUILD/tests/fuzz/fuzz-$t
	# New inputs go to a scratch directory: the committed corpus is only read.
	scratch=$WORK/corpus-$t
	mkdir -p "$scratch" "$WORK/artifacts-$t"
	dict=()
	[ -f "$SRC/tests/fuzz/$t.dict" ] && dict=(-dict="$SRC/tests/fuzz/$t.dict")
	limit=(-max_total_time="$SECONDS_EACH")
	[ "$RUNS" -gt 0 ] && limit=(-runs="$RUNS")
	start=$(date +%s)
	if "$bin" "${limit[@]}" -timeout="$TIMEOUT" -rss_limit_mb=2048 -print_final_stats=1 \
		"${dict[@]}" -artifact_prefix="$WORK/artifacts-$t/" "$scratch" "$CORPUS/$t" \
		>"$WORK/$t.log" 2>&1; then
		echo "fuzz-$t: ok, $(grep -o 'stat::number_of_executed_units: [0-9]*' "$WORK/$t.log" |
			awk '{print $2}') executions in $(($(date +%s) - start)) s"
	else
		failed=$((failed + 1))
		echo "fuzz-$t: FAILED (log $WORK/$t.log)"
		grep -E '^==[0-9]+==ERROR|runtime error|SUMMARY|Test unit written' "$WORK/$t.log" |
			head -n 8 | sed 's/^/  /'
	fi
done
[ "$failed" = 0 ] || { echo "fuzz smoke: $failed target(s) failed" >&2; exit 1; }
echo "fuzz smoke: ${#targets[@]} targets clean"

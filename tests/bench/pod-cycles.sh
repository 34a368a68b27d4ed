#!/bin/bash
# Bench (issue 14.3): 20 Kubernetes pod cycles (RunPodSandbox, two app containers, StopPodSandbox,
# RemovePodSandbox) through containerd's CRI plugin under egress deny and under egress proxy, with
# leak counts before and after each series, and the time per pod cycle through hezo-shim against
# the same pods through plain runc in the same run. The suite runs 3 cycles (meson test cri-cycles);
# this runs tests/cri/cycles.sh with CRI_CYCLES (default 20). Root; takes the engines lock itself.
#   tests/bench/pod-cycles.sh [BUILD_DIR]
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export HEZO_SOURCE_DIR=$src
export HEZO_BUILD_DIR=${1:-$src/build}
export CRI_CYCLES=${CRI_CYCLES:-20}
exec flock /run/hezo-engines.lock bash "$src/tests/cri/cycles.sh"

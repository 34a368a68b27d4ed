#!/bin/bash
# Bench (issue 29): 20 gVisor pod cycles (RunPodSandbox, three app containers in the pod's one
# runsc sandbox, StopPodSandbox, RemovePodSandbox) through containerd's CRI plugin with leak
# counts before and after, time per cycle against the same pods with the backend runc, and the
# host memory of one pod against three single-container sandboxes, in one run. The suite runs 3
# cycles (meson test cri-cycles-runsc); this runs tests/cri/cycles-runsc.sh with CRI_CYCLES
# (default 20). Root; takes the engines lock itself.
#   tests/bench/pod-cycles-runsc.sh [BUILD_DIR]
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export HEZO_SOURCE_DIR=$src
export HEZO_BUILD_DIR=${1:-$src/build}
export CRI_CYCLES=${CRI_CYCLES:-20}
exec flock /run/hezo-engines.lock bash "$src/tests/cri/cycles-runsc.sh"

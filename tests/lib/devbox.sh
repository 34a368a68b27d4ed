# Tests that run boxes of the dev image (tests/lib/devimage.sh) through Docker with the shim under
# HEZO_TEST_BACKEND (noexec.sh, workspace.sh): the libraries they use and the start they share.
# Sourced, not run.

# shellcheck shell=bash

_hezo_devbox_lib=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=tests/lib/common.sh
. "$_hezo_devbox_lib/common.sh"
# shellcheck source=tests/lib/box.sh
. "$_hezo_devbox_lib/box.sh"
# shellcheck source=tests/lib/docker.sh
. "$_hezo_devbox_lib/docker.sh"
# shellcheck source=tests/lib/devimage.sh
. "$_hezo_devbox_lib/devimage.sh"

# hezo_devbox_setup [TOOL...]: root, jq, timeout, dockerd, the Docker client and TOOLs, the backend
# and the shim (else the test cannot run here); dockerd running and the dev image in it (else the
# test bails out).
hezo_devbox_setup()
{
	hezo_require_root
	hezo_require_tools jq timeout dockerd "$@" "$HEZO_DOCKER"
	hezo_require_backend
	hezo_require_shim
	hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
	hezo_devimage_docker || bail_out "cannot import the dev image $HEZO_DEV_IMAGE"
}

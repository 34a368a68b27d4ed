#!/bin/bash
# Benchmark (issue 30): what the host-side agent adds to a signed `git commit` and to an `ssh -T`
# handshake, against the same in the same box with the private key inside it (a copy in /tmp,
# used with SSH_AUTH_SOCK unset: the baseline only). Both run alternately in one `docker exec`,
# timed in the box with EPOCHREALTIME; prints the medians and their ratio (target <= 1.10), the
# least of each (noise only adds) and the CPU time proxyd spent over the run.
#
#   tests/bench/keys.sh [BUILD_DIR]   (default: build-rel, else build; HEZO_TEST_BACKEND=runc|runsc)
#
# Needs root, dockerd, the dev image (tests/lib/devimage.sh), openssh-server, dnsmasq; takes
# /run/hezo-engines.lock itself. Traffic stays in the namespace it creates. Nothing here fails on
# a figure.
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${1:-$SRC/build-rel}
[ -x "$B/shim/hezo-shim" ] || B=$SRC/build
# dockerd runs the wrapper from its own directory: a relative BUILD_DIR would name nothing there.
B=$(cd "$B" && pwd) || exit 2
N=${BENCH_N:-20}
export HEZO_SOURCE_DIR=$SRC HEZO_BUILD_DIR=$B HEZO_TEST_BACKEND=${HEZO_TEST_BACKEND:-runc}
export HEZO_TEST_DIR=${HEZO_TEST_DIR:-/run/hezo-bench-keys}
# shellcheck source=tests/lib/common.sh
. "$SRC/tests/lib/common.sh"
# shellcheck source=tests/lib/docker.sh
. "$SRC/tests/lib/docker.sh"
# shellcheck source=tests/lib/netns.sh
. "$SRC/tests/lib/netns.sh"
# shellcheck source=tests/lib/proxyd.sh
. "$SRC/tests/lib/proxyd.sh"
# shellcheck source=tests/lib/devimage.sh
. "$SRC/tests/lib/devimage.sh"
# shellcheck source=tests/lib/gitssh.sh
. "$SRC/tests/lib/gitssh.sh"
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }
[ "${HEZO_BENCH_LOCKED:-}" = 1 ] || exec env HEZO_BENCH_LOCKED=1 flock /run/hezo-engines.lock "$0" "$@"
PROXYD=$B/proxyd/hezo-proxyd

hezo_dockerd_start || { echo "dockerd does not start" >&2; exit 2; }
hezo_devimage_docker || { echo "no dev image" >&2; exit 2; }
mkdir -p "$HEZO_TEST_DIR"
E=$(mktemp -d "$HEZO_TEST_DIR/keys.XXXXXX")
chmod 0755 "$E"
INS=ky-b$$
VETH=kyb$$v
NET=ky-b$$-net
PROJ=kyb$$
RT=hezo-test-keys-bench
DNS_PORT=$((20000 + ($$ + 13) % 20000))
PFX=10.243.0
PIDS=()
BOX=ky-b$$-box
tap_cleanup "rm -rf '$E'"
tap_cleanup "ip netns del $INS 2>/dev/null; ip link del $VETH 2>/dev/null"
tap_cleanup 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done; [ -f "$E/sshd/pid" ] && kill "$(cat "$E/sshd/pid")" 2>/dev/null; for m in "$E"/proxyd/netns/*; do [ -e "$m" ] && umount -l "$m"; done; true'
tap_cleanup "hezo_docker network rm $NET >/dev/null 2>&1"
tap_cleanup "hezo_docker rm -f $BOX >/dev/null 2>&1"

mkdir -m 0700 "$E/keys"
ssh-keygen -q -t ed25519 -N '' -C deploy -f "$E/keys/deploy" || exit 1
hezo_gitssh_server "$E" "$INS" "$VETH" "$PFX" || exit 1
cp "$E/keys/deploy.pub" "$E/sshd/authorized_keys"
tap_bg dnsmasq -k -C /dev/null --port "$DNS_PORT" --listen-address 127.0.0.1 --bind-interfaces \
	--no-resolv --no-hosts --user=root --address=/git.test/$PFX.2
mkdir -p "$E/proxyd" "$E/netlog" "$E/state" "$E/projects"
hezo_proxyd_start_in "$E" --upstream "127.0.0.1:$DNS_PORT" || { echo "proxyd does not start" >&2; exit 1; }
hezo_policy_json docker | jq --arg dns "127.0.0.1:$DNS_PORT" --arg p "$E/projects" '
	.egress = {mode: "proxy", allow: ["git.test:22"], resolvers: [$dns], allowRanges: ["'"$PFX"'.0/24"]}
	| .projectsDir = $p
	| if .backends.runsc then .backends.runsc.network = "host" else . end' >"$E/policy.json" || exit 1
jq -n --arg f "$E/keys/deploy" '{keys: {deploy: {file: $f, sign: ["git"], ssh: ["git.test"]}}}' \
	>"$E/projects/$PROJ.json"
hezo_proxyd_shim_wrapper "$E/hezo-shim" "$E" --hezo-project "$PROJ"
hezo_docker_register_runtime "$RT" "$E/hezo-shim" || exit 1
hezo_docker network create --subnet 10.244.0.0/24 "$NET" >/dev/null || exit 1
hezo_docker run -d --runtime "$RT" --name "$BOX" --network "$NET" --dns "$PFX.1" "$HEZO_DEV_IMAGE" \
	sleep 3600 >/dev/null || exit 1
# The baseline's copy of the key (bench only) and known_hosts.
hezo_docker exec -i "$BOX" sh -c 'umask 077; cat >/tmp/k' <"$E/keys/deploy"
echo "git.test $(cut -d' ' -f1,2 "$E/sshd/host.pub")" | hezo_docker exec -i "$BOX" sh -c 'cat >/tmp/kh'

# proxyd's CPU time (user + system, clock ticks) so far: what the agent costs apart from the
# machine's scheduling, which on a shared machine moves a 10 ms median by a millisecond or two.
ticks() { awk '{print $14 + $15}' "/proc/$PROXYD_PID/stat"; }
T0=$(ticks)
# In the box: N rounds, each timing the seven in turn; one line "agent-commit inside-commit
# agent-ssh inside-ssh agent-keygen inside-keygen agent-commit-pubfile" of microseconds per round.
OUT=$(hezo_docker exec "$BOX" bash -c '
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@box GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@box
SSHO="-o UserKnownHostsFile=/tmp/kh -o StrictHostKeyChecking=yes -o BatchMode=yes"
cd /tmp && git init -q r && cd r || exit 1
ssh-add -L >/tmp/pub && echo message >/tmp/msg
us() { local s=$EPOCHREALTIME; "$@" >/dev/null 2>&1 || echo "failed: $*" >&2; echo $(( ${EPOCHREALTIME/./} - ${s/./} )); }
for i in $(seq '"$N"'); do
	a=$(us git commit -q --allow-empty -m a)
	b=$(SSH_AUTH_SOCK= us git -c user.signingkey=/tmp/k commit -q --allow-empty -m b)
	c=$(us ssh $SSHO -T git@git.test)
	d=$(SSH_AUTH_SOCK= us ssh $SSHO -o IdentityAgent=none -o IdentitiesOnly=yes -i /tmp/k -T git@git.test)
	e=$(us ssh-keygen -Y sign -n git -f /tmp/pub -U /tmp/msg)
	f=$(SSH_AUTH_SOCK= us ssh-keygen -Y sign -n git -f /tmp/k /tmp/msg)
	g=$(us git -c user.signingkey=/tmp/pub commit -q --allow-empty -m g)
	echo "$a $b $c $d $e $f $g"
done' 2>&1)
T1=$(ticks)
ERRS=$(grep -c failed <<<"$OUT")
# The least of each column too: noise only ever adds.
least() { awk -v c="$1" '/^[0-9]/ {print $c}' <<<"$OUT" | sort -n | head -n 1 | awk '{printf "%.1f", $1 / 1000}'; }
med() { awk -v c="$1" '/^[0-9]/ {print $c}' <<<"$OUT" | sort -n | awk '{v[NR]=$1} END {printf "%.1f", v[int((NR+1)/2)] / 1000}'; }
ac=$(med 1) ic=$(med 2) as=$(med 3) is=$(med 4) ak=$(med 5) ik=$(med 6) ap=$(med 7)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
row() { printf '| %s | %s | %s | %s | %s / %s: %s | %s |\n' "$1" "$2" "$3" "$(ratio "$2" "$3")" "$4" "$5" "$(ratio "$4" "$5")" "$6"; }
echo "## keys: the host-side agent against the key inside the box ($HEZO_TEST_BACKEND, $N rounds, medians)"
echo
echo "| what | agent (ms) | key inside (ms) | ratio | least of each (ms), ratio | target |"
echo "|---|---|---|---|---|---|"
row 'signed `git commit`' "$ac" "$ic" "$(least 1)" "$(least 2)" '<= 1.10'
row '`ssh -T` handshake' "$as" "$is" "$(least 3)" "$(least 4)" '<= 1.10'
row '`ssh-keygen -Y sign` alone (what git runs)' "$ak" "$ik" "$(least 5)" "$(least 6)" -
row 'signed `git commit`, agent, user.signingkey a .pub file instead of key::' "$ap" "$ic" "$(least 7)" "$(least 2)" -
echo
# Each round asks the agent for three signatures (a, e, g) and one ssh authentication (c).
echo "proxyd's CPU time over the run: $(( (T1 - T0) * 1000 / $(getconf CLK_TCK) )) ms for $((4 * N)) agent signatures and everything else it relayed"
[ "$ERRS" = 0 ] || { echo; echo "$ERRS operations failed:"; grep failed <<<"$OUT" | sort | uniq -c; }

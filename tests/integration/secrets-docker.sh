#!/bin/bash
# Integration (issue 17 through Docker): `docker run --runtime=<hezo wrapper>` of a container with a
# secret in egress proxy mode (hezo-hook and hezo-proxyd real), Debian's curl in the image, a test
# HTTPS upstream in a namespace of the test's own (certificate from a test CA made here; proxyd
# trusts it by --test-upstream-ca). The upstream gets the value; docker inspect, docker exec env,
# /proc/1/environ, the bundle, Docker's container dir and the shim's and proxyd's files hold the
# placeholder only. Then proxyd is killed and restarted while the container runs: in between the
# connection is refused (nothing relayed unsubstituted), after it substitution works again with the
# same CA. HEZO_TEST_BACKEND=runc|runsc (runsc in host network mode, inside Docker's namespace).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"
# shellcheck source=tests/lib/netns.sh
. "$here/../lib/netns.sh"
# shellcheck source=tests/lib/tls.sh
. "$here/../lib/tls.sh"
# shellcheck source=tests/lib/proxyd.sh
. "$here/../lib/proxyd.sh"

hezo_require_root
hezo_require_tools jq ip nft dnsmasq openssl curl python3 ldd timeout "$HEZO_DOCKER" "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim
PROXYD=${HEZO_PROXYD_BIN:-$HEZO_BUILD_DIR/proxyd/hezo-proxyd}
[ -x "$PROXYD" ] || hezo_cannot_run "no hezo-proxyd at $PROXYD"
[ -x "$HEZO_HOOK_BIN" ] || hezo_cannot_run "no hezo-hook at $HEZO_HOOK_BIN"
hezo_dockerd_start || hezo_cannot_run "dockerd does not start"

mkdir -p "$HEZO_TEST_DIR"
E=$(mktemp -d "$HEZO_TEST_DIR/secrets-docker.XXXXXX")
chmod 0755 "$E"
TAG=hzs$$
INS=$TAG-up
VETH=$TAG-v
NET=$TAG-net
IMG=hezo-test/secrets-curl:$$
RT=hezo-test-secrets-$HEZO_TEST_BACKEND
DNS_PORT=$((20000 + ($$ + 7) % 20000))
PIDS=()
CONTAINERS=()
tap_cleanup "rm -rf '$E'"
tap_cleanup "ip netns del $INS 2>/dev/null; ip link del $VETH 2>/dev/null"
tap_cleanup 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done; for m in "$E"/proxyd/netns/*; do [ -e "$m" ] && umount -l "$m"; done; true'
tap_cleanup "hezo_docker network rm $NET"
tap_cleanup "hezo_docker rmi -f '$IMG'"
tap_cleanup 'for c in "${CONTAINERS[@]}"; do hezo_docker rm -f "$c"; done'

# ---- the upstream: a namespace reached from the host by a veth (proxyd connects from the host) ----
ip netns add "$INS" || bail_out "cannot create the network namespace"
ip -n "$INS" link set lo up
hezo_netns_link_host "$VETH" "$INS" 10.217.0 2 3 || bail_out "cannot link the upstream namespace"
ip -n "$INS" route add default via 10.217.0.1

cd "$E" || bail_out "no $E"
hezo_test_ca "$E" hezo-test-upstream-CA api.test api.test other.test ||
	bail_out "openssl cannot make the test certificates"
: >up.log
tap_bg ip netns exec "$INS" python3 "$HEZO_HTTPS_UPSTREAM" "$E/up.log" 10.217.0.2 up.crt up.key
for _ in $(seq 100); do
	ip netns exec "$INS" ss -Hltn 'sport = :443' | grep -q . && break
	sleep 0.1
done
tap_bg dnsmasq -k -C /dev/null --port "$DNS_PORT" --listen-address 127.0.0.1 --bind-interfaces \
	--no-resolv --no-hosts --user=root --address=/api.test/10.217.0.2 --address=/other.test/10.217.0.2
mkdir -p "$E/proxyd" "$E/netlog" "$E/state"
start_proxyd()
{
	local rc=0
	hezo_proxyd_start "$E/proxyd" "$E/netlog" "$E/proxyd/control.sock" \
		--upstream "127.0.0.1:$DNS_PORT" --test-upstream-ca "$E/ca.crt" >>"$E/proxyd.log" 2>&1 ||
		rc=$?
	PIDS+=("$PROXYD_PID")
	return $rc
}
start_proxyd || { diag "$(tail -n 20 "$E/proxyd.log")"; bail_out "hezo-proxyd did not start"; }

# ---- the secret, the policy, the wrapper, the runtime ----
VALUE="ghp_$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
mkdir -m 0700 "$E/secrets"
printf '%s\n' "$VALUE" >"$E/secrets/gh"
chmod 0600 "$E/secrets/gh"
hezo_policy_json docker | jq --arg dns "127.0.0.1:$DNS_PORT" --arg f "$E/secrets/gh" '
	.egress = {mode: "proxy", allow: ["api.test", "other.test"], resolvers: [$dns],
		allowRanges: ["10.217.0.0/24"]}
	| .secrets = {GH_TOKEN: {hosts: ["api.test"], file: $f, in: ["header", "query"]}}
	| if .backends.runsc then .backends.runsc.network = "host" else . end' >"$E/policy.json" ||
	bail_out "cannot write the policy"
hezo_proxyd_shim_wrapper "$E/hezo-shim" "$E"
hezo_docker_register_runtime "$RT" "$E/hezo-shim" || bail_out "cannot register $RT"
diag "backend $HEZO_TEST_BACKEND, runtime $RT -> $E/hezo-shim -> $HEZO_SHIM_BIN"
# A network of our own: the test does not depend on docker0. The container reaches the upstream
# only through proxyd (the hook's redirect); Docker's bridge has no route to 10.217.0.0/24.
hezo_docker network create --subnet 10.218.0.0/24 "$NET" >/dev/null || bail_out "cannot create docker network $NET"

# ---- an image with Debian's curl and its libraries ----
RFS=$E/rootfs
hezo_busybox_rootfs "$RFS" || bail_out "cannot make the rootfs"
hezo_copy_bin "$RFS" /usr/bin/curl || bail_out "cannot copy curl into the rootfs"
printf 'hosts: dns files\n' >"$RFS/etc/nsswitch.conf"
mkdir -p "$RFS/etc/ssl/certs"
tar -C "$RFS" --numeric-owner -c . | hezo_docker import - "$IMG" >/dev/null || bail_out "cannot import $IMG"
rm -rf "$RFS"

CURL='curl -sS --max-time 15'
# dexec NAME SCRIPT: `docker exec` SCRIPT in NAME; output in OUT.
dexec() { OUT=$(timeout -k 5 60 "$HEZO_DOCKER" exec "$1" sh -c "$2" 2>&1 </dev/null); }

# ---- docker run: the process's own request ----
A=$TAG-a
CONTAINERS+=("$A")
OUT=$(timeout -k 5 120 "$HEZO_DOCKER" run -d --runtime "$RT" --name "$A" --network "$NET" --dns 10.217.0.1 \
	"$IMG" sh -c "$CURL -H \"X-Token: \$GH_TOKEN\" https://api.test/run >/tmp/run.out 2>&1; echo \$? >>/tmp/run.out; exec sleep 600" \
	2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$rc" 0 "[run] docker run -d of a container with a secret" || diag "$OUT"
for _ in $(seq 100); do
	dexec "$A" 'cat /tmp/run.out 2>/dev/null'
	[ -n "$(sed -n 2p <<<"$OUT")" ] && break
	sleep 0.2
done
expect_match "$(grep /run up.log)" "x=$VALUE " "[run] the container's own curl: the upstream got the value in the header" || diag "$OUT"
expect_match "$OUT" "x=hzph[a-z0-9]{40} " "[run] ... and its answer quoting it came back with the placeholder" || diag "$OUT"
dexec "$A" 'echo "GH=$GH_TOKEN"; env | grep -c "^GH_TOKEN=hzph"'
PH=$(sed -n 's/^GH=//p' <<<"$OUT")
expect_match "$PH" '^hzph[a-z0-9]{40}$' "[exec] docker exec env: GH_TOKEN is a placeholder" || diag "$OUT"
dexec "$A" 'tr "\000" "\n" </proc/1/environ | grep "^GH_TOKEN="'
expect_eq "$OUT" "GH_TOKEN=$PH" "[exec] /proc/1/environ: the same placeholder"
dexec "$A" "$CURL -H \"X-Token: \$GH_TOKEN\" \"https://api.test/exec?t=\$GH_TOKEN\""
expect_match "$(grep /exec up.log)" "GET /exec\\?t=$VALUE HTTP/1.1 .*x=$VALUE " "[exec] a docker exec'd curl: substituted in the query (\"in\" takes it) and the header" ||
	diag "$OUT"
expect_eq "$(grep -cF "$VALUE" <<<"$OUT")" 0 "[exec] ... and its answer quoting them came back masked" || diag "$OUT"
dexec "$A" "$CURL -k -H \"X-Token: \$GH_TOKEN\" https://other.test/x"
expect_match "$OUT" "x=$PH " "[exec] other.test, no secret's host: not intercepted, the placeholder arrives as it is" || diag "$OUT"

# ---- grep for the value: nothing ----
ID=$(hezo_docker inspect -f '{{.Id}}' "$A")
expect_eq "$(hezo_docker inspect "$A" | grep -cF "$VALUE")" 0 "[grep] docker inspect: not the value"
dexec "$A" 'env; tr "\000" "\n" </proc/1/environ; tr "\000" "\n" </proc/self/environ'
expect_eq "$(grep -cF "$VALUE" <<<"$OUT")" 0 "[grep] docker exec env, /proc/1/environ, /proc/self/environ: not the value"
expect_match "$OUT" "GH_TOKEN=$PH" "[grep] ... which hold the placeholder"
B=$(hezo_docker_bundle "$A") || B=$E/no-bundle
expect_eq "$(jq -r '.process.env[] | select(startswith("GH_TOKEN="))' "$B/config.json" 2>&1)" "GH_TOKEN=$PH" \
	"[grep] the bundle's config.json: the placeholder"
leaks=$(grep -rlF "$VALUE" "$B" "/var/lib/docker/containers/$ID" "$E/state" "$E/proxyd" "$E/netlog" /run/hezo* 2>/dev/null |
	grep -v -e "^$E/secrets/" -e "^$E/up.log$")
expect_eq "$leaks" "" "[grep] not under the bundle, Docker's container dir, the shim's state, /run/hezo*, proxyd's state or netlog"

# ---- proxyd killed while A runs, then restarted from its state dir ----
CA1=$(sha256sum <"$E/proxyd/tls/ca.crt" 2>/dev/null || echo "no ca.crt in $E/proxyd/tls")
: >up.log
kill -KILL "$PROXYD_PID"
wait "$PROXYD_PID" 2>/dev/null
dexec "$A" "$CURL --max-time 8 -H \"X-Token: \$GH_TOKEN\" https://api.test/down; echo curl=\$?"
expect_no_match "$OUT" '^curl=0$' "[restart] proxyd down: the request by name fails" || diag "$OUT"
# Without DNS (the address given): the TCP connection to the upstream's own address.
dexec "$A" "$CURL --max-time 8 --resolve api.test:443:10.217.0.2 -H \"X-Token: \$GH_TOKEN\" https://api.test/down2; echo curl=\$?"
expect_match "$OUT" '^curl=7$' "[restart] proxyd down: a connection to the upstream's address is refused (curl 7), not passed through" ||
	diag "$OUT"
expect_eq "$(cat up.log)" "" "[restart] ... and nothing reached the upstream, substituted or not"
rm -f "$E/proxyd/control.sock"
start_proxyd || { diag "$(tail -n 20 "$E/proxyd.log")"; bail_out "hezo-proxyd did not restart"; }
expect_eq "$(sha256sum <"$E/proxyd/tls/ca.crt" 2>&1)" "$CA1" "[restart] proxyd kept its CA (reloaded from its state dir)"
ok=
for _ in $(seq 20); do
	dexec "$A" "$CURL -H \"X-Token: \$GH_TOKEN\" https://api.test/up"
	# The upstream's answer quotes the value, masked on its way back: its log has it.
	grep -q "x=hzph" <<<"$OUT" && grep -qF "GET /up HTTP/1.1 auth=None x=$VALUE " up.log &&
		{ ok=1; break; }
	sleep 0.5
done
expect_eq "${ok:-no}" 1 "[restart] proxyd restarted: the next request is substituted again (CA trusted, no -k)" || diag "$OUT"
expect_eq "$(grep -vcF "x=$VALUE " up.log)" 0 "[restart] every request that reached the upstream carried the value" ||
	diag "$(cat up.log)"
expect_eq "$(grep -rlF "$VALUE" "$E/proxyd" "$E/netlog" /var/lib/docker/containers/"$ID" 2>/dev/null)" "" \
	"[restart] proxyd's state and log after the restart: not the value"

hezo_docker rm -f "$A" >/dev/null 2>&1
expect_eq "$(find "$E" -maxdepth 1 -name 'asan*' -o -maxdepth 1 -name 'ubsan*' | sort)" "" "no sanitizer reports from shim runs"
tap_done

#!/bin/bash
# Integration (issue 17, end to end): real containers (OCI bundles under HEZO_TEST_BACKEND, runc or
# runsc) in egress proxy mode, with the real hezo-hook and hezo-proxyd, reach a test HTTPS upstream
# in a namespace of the test's own (certificate from a test CA made here; proxyd trusts it by
# --test-upstream-ca). Debian's curl and git, with their libraries, are copied into the rootfs.
# The container holds placeholders only; the upstream gets the values.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"
# shellcheck source=tests/lib/netns.sh
. "$here/../lib/netns.sh"
# shellcheck source=tests/lib/tls.sh
. "$here/../lib/tls.sh"
# shellcheck source=tests/lib/proxyd.sh
. "$here/../lib/proxyd.sh"

hezo_require_root
hezo_require_tools jq runc ip nft dnsmasq openssl curl git python3 ldd timeout "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim
PROXYD=${HEZO_PROXYD_BIN:-$HEZO_BUILD_DIR/proxyd/hezo-proxyd}
[ -x "$PROXYD" ] || hezo_cannot_run "no hezo-proxyd at $PROXYD"
[ -x "$HEZO_HOOK_BIN" ] || hezo_cannot_run "no hezo-hook at $HEZO_HOOK_BIN"

diag "backend $HEZO_TEST_BACKEND ($(hezo_backend_bin)), shim $HEZO_SHIM_BIN"
mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-secrets-egress-$HEZO_TEST_BACKEND
E=$(mktemp -d "$HEZO_TEST_DIR/secrets-egress.XXXXXX")
chmod 0755 "$E"
# Named as containerd CRI names the pins it makes (an empty pin counts only under such a name).
CNS=cni-$(cat /proc/sys/kernel/random/uuid)
INS=hzx-i-$$
VETH=hzx-v$$
DNS_PORT=$((20000 + $$ % 20000))
PIDS=()
tap_cleanup "rm -rf '$E'"
tap_cleanup "ip netns del $INS 2>/dev/null; ip netns del $CNS 2>/dev/null; ip link del $VETH 2>/dev/null; rm -rf /etc/netns/$CNS"
tap_cleanup 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done; for m in "$E"/proxyd/netns/*; do [ -e "$m" ] && umount -l "$m"; done; true'

# ---- the world: an upstream namespace, the container's namespace with a route into it ----
ip netns add "$INS" && ip netns add "$CNS" || bail_out "cannot create network namespaces"
ip -n "$INS" link set lo up
ip -n "$CNS" link set lo up
hezo_netns_link_host "$VETH" "$INS" 10.205.0 2 3 && hezo_netns_link_client "$CNS" "$INS" 10.205.1 ||
	bail_out "cannot link the test's network namespaces"

cd "$E" || bail_out "no $E"
hezo_test_ca "$E" hezo-test-upstream-CA api.test api.test other.test plain.test git.test &&
	hezo_test_selfsigned "$E" untrusted.test || bail_out "openssl cannot make the test certificates"
: >up.log
: >bad.log
tap_bg ip netns exec "$INS" python3 "$HEZO_HTTPS_UPSTREAM" "$E/up.log" 10.205.0.2 up.crt up.key
tap_bg ip netns exec "$INS" python3 "$HEZO_HTTPS_UPSTREAM" "$E/bad.log" 10.205.0.3 bad.crt bad.key
tap_bg dnsmasq -k -C /dev/null --port "$DNS_PORT" --listen-address 127.0.0.1 --bind-interfaces \
	--no-resolv --no-hosts --user=root --address=/api.test/10.205.0.2 \
	--address=/other.test/10.205.0.2 --address=/plain.test/10.205.0.2 \
	--address=/git.test/10.205.0.2 --address=/untrusted.test/10.205.0.3
mkdir -p "$E/proxyd" "$E/netlog"
rc=0
hezo_proxyd_start "$E/proxyd" "$E/netlog" "$E/proxyd/control.sock" --test-upstream-ca "$E/ca.crt" ||
	rc=$?
PIDS+=("$PROXYD_PID")
[ "$rc" = 0 ] || bail_out "hezo-proxyd did not start"
export HEZO_PROXYD_SOCKET=$E/proxyd/control.sock

# ---- the secrets and the policy ----
VALUE="ghp_$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
VALUE2="two_$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
mkdir -m 0700 "$E/secrets"
printf '%s\n' "$VALUE" >"$E/secrets/gh"
printf '%s' "$VALUE2" >"$E/secrets/two"
chmod 0600 "$E/secrets/gh" "$E/secrets/two"
hezo_write_policy bundle ".egress = {mode: \"proxy\",
		allow: [\"api.test\", \"other.test\", \"plain.test\", \"git.test\", \"untrusted.test\"],
		resolvers: [\"127.0.0.1:$DNS_PORT\"], allowRanges: [\"10.205.0.0/24\"]}
	| .secrets = {GH_TOKEN: {hosts: [\"api.test\", \"git.test\", \"untrusted.test\"],
			file: \"$E/secrets/gh\"},
		TWO: {hosts: [\"other.test\"], file: \"$E/secrets/two\", otherHosts: \"pass\"}}
	| if .backends.runsc then .backends.runsc.network = \"host\" else . end"

# ---- a rootfs with Debian's curl and git and their libraries ----
RFS=$E/rootfs
hezo_busybox_rootfs "$RFS" || bail_out "cannot make the rootfs"
hezo_copy_bin "$RFS" /usr/bin/curl /usr/bin/git /usr/lib/git-core/git-remote-https \
	/usr/lib/git-core/git-remote-http || bail_out "cannot copy curl and git into the rootfs"
printf 'nameserver 10.205.1.1\n' >"$RFS/etc/resolv.conf"
printf 'hosts: dns files\n' >"$RFS/etc/nsswitch.conf"
mkdir -p "$RFS/etc/ssl/certs"

# One bundle, its rootfs inside it (root.path must be), a fresh config.json for each container.
B=$E/bundle
mkdir -p "$B"
mv "$RFS" "$B/rootfs"
RFS=$B/rootfs
runc spec --bundle "$B" >/dev/null || bail_out "runc spec"
jq --arg ns "/run/netns/$CNS" '
	.root = {path: "rootfs", readonly: true}
	| .process.terminal = false
	| .process.env = ["PATH=/bin:/usr/bin", "HOME=/tmp"]
	| .linux.namespaces = [.linux.namespaces[] | if .type == "network" then .path = $ns else . end]
' "$B/config.json" >"$E/template.json" || bail_out "cannot write the template"

# box NAME SCRIPT: run SCRIPT in a fresh container in the test's namespace; output in $OUT.
box() {
	local id
	id="hezo-it-sx-$1-$(hezo_rand)"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$id'"
	jq --arg id "$id" --arg p "$2" '.process.args = ["sh", "-c", $p]
		| .linux.cgroupsPath = ("/hezo-test/" + $id)' "$E/template.json" >"$B/config.json"
	OUT=$(hezo_shim --root "$ROOT" run -b "$B" "$id" 2>&1 </dev/null)
	hezo_backend --root "$ROOT" delete --force "$id" >/dev/null 2>&1
	return 0
}
CURL='curl -sS --max-time 15'

box env 'echo "GH=$GH_TOKEN"; cat /proc/self/environ | tr "\000" "\n" | grep -c "^GH_TOKEN=hzph"; echo "SSL=$CURL_CA_BUNDLE"'
PH=$(sed -n 's/^GH=//p' <<<"$OUT")
expect_match "$PH" '^hzph[a-z0-9]{40}$' "[env] GH_TOKEN in the container is a placeholder" || diag "$OUT"
expect_eq "$(sed -n 2p <<<"$OUT")" 1 "[env] /proc/self/environ: the placeholder"
expect_eq "$(sed -n 's/^SSL=//p' <<<"$OUT")" /etc/ssl/certs/ca-certificates.crt "[env] CURL_CA_BUNDLE points at the mounted bundle"

# A real name lookup in the box (libcurl's resolver thread, then the test's resolver through proxyd).
box resolve "$CURL -o /dev/null -w 'ip=%{remote_ip}' https://api.test/r 2>&1"
expect_match "$OUT" '^ip=10\.205\.0\.2$' "[curl] api.test resolved inside the box" || diag "$OUT"
box header "$CURL -H \"X-Token: \$GH_TOKEN\" https://api.test/h"
expect_match "$OUT" "x=$VALUE " "[curl] header: the upstream gets the value" || diag "$OUT"
box query "$CURL \"https://api.test/q?token=\$GH_TOKEN\""
expect_match "$OUT" "GET /q\\?token=$VALUE HTTP/1.1" "[curl] query string: the upstream gets the value" || diag "$OUT"
box basic "$CURL -u \"x-access-token:\$GH_TOKEN\" https://api.test/b"
want=$(printf 'x-access-token:%s' "$VALUE" | base64 -w0)
expect_match "$OUT" "auth=Basic $want " "[curl] Basic auth: the upstream gets the value" || diag "$OUT"
box keepalive "$CURL -H \"X-Token: \$GH_TOKEN\" https://api.test/k1 https://api.test/k2"
expect_eq "$(grep -c "x=$VALUE " <<<"$OUT")" 2 "[curl] keep-alive: the second request substituted too" || diag "$OUT"
box git "GIT_TERMINAL_PROMPT=0 timeout 20 git -c credential.helper= ls-remote \"https://x-access-token:\$GH_TOKEN@git.test/r.git\"; true"
expect_match "$(grep 'info/refs' up.log | tail -n 1)" "auth=Basic $want " "[git] ls-remote: Basic x-access-token:<value> reached the upstream" ||
	diag "$OUT"
: >up.log
box other "$CURL -w ' code=%{http_code}' -H \"X-Token: \$GH_TOKEN\" https://other.test/x"
expect_match "$OUT" "code=403" "[refuse] GH_TOKEN toward other.test: 403" || diag "$OUT"
expect_eq "$(cat up.log)" "" "[refuse] ... the upstream got nothing"
box hostsni "$CURL -w ' code=%{http_code}' -H 'Host: other.test' -H \"X-Token: \$GH_TOKEN\" https://api.test/"
expect_match "$OUT" "Host does not match the TLS server name" "[refuse] Host different from SNI: refused naming it" || diag "$OUT"
expect_match "$OUT" "code=403" "[refuse] ... with a 403"
box untrusted "$CURL -w ' code=%{http_code}' -H \"X-Token: \$GH_TOKEN\" https://untrusted.test/"
expect_match "$OUT" "not trusted for this name" "[refuse] upstream with an untrusted certificate: refused naming it" || diag "$OUT"
expect_match "$OUT" "code=502" "[refuse] ... with a 502"
expect_eq "$(cat bad.log)" "" "[refuse] ... and it got no byte"
box plain "$CURL -v -k -o /dev/null https://plain.test/ 2>&1 | grep -i 'issuer:'; $CURL -k -H \"X-Token: \$GH_TOKEN\" https://plain.test/p"
expect_match "$OUT" "issuer: CN=hezo-test-upstream-CA" "[plain.test] no secret names it: not intercepted (the upstream's own certificate)" || diag "$OUT"
expect_match "$OUT" "x=hzph[a-z0-9]{40} " "[plain.test] ... and the placeholder arrives as it is (worthless)"

# ---- grep for the values: nothing outside the secret files and the upstream's log ----
box grep "cat /proc/self/environ | tr '\\000' '\\n'; env; cat /proc/1/environ 2>/dev/null | tr '\\000' '\\n'"
expect_eq "$(grep -cF -e "$VALUE" -e "$VALUE2" <<<"$OUT")" 0 "[grep] not in the container's env or /proc/*/environ"
expect_match "$OUT" "GH_TOKEN=hzph" "[grep] ... which holds the placeholder"
leaks=$(grep -rlF -e "$VALUE" -e "$VALUE2" "$B" "$HEZO_TEST_STATE" /run/hezo* "$E/proxyd" "$E/netlog" 2>/dev/null |
	grep -v -e "^$E/secrets/" -e "^$E/up.log$")
expect_eq "$leaks" "" "[grep] not under the bundle, the shim's state, /run/hezo*, proxyd's state or netlog"
sleep 1.2
expect_match "$(cat "$E"/netlog/* 2>/dev/null)" '"secrets":"GH_TOKEN","substitutions":1' "[netlog] substitutions recorded by name"
tap_done

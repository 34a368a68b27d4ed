#!/bin/bash
# Integration (issues 17 and 27, end to end): real containers (OCI bundles under HEZO_TEST_BACKEND,
# runc or runsc) in egress proxy mode, with the real hezo-hook and hezo-proxyd, reach test HTTPS
# upstreams in a namespace of the test's own (certificate from a test CA made here; proxyd trusts
# it by --test-upstream-ca): one that logs, one that echoes every request back (echo-upstream.py,
# ports 443 and 8443) and Python's unmodified http.server. Debian's curl, git and openssl, with
# their libraries, are copied into the rootfs. The container holds placeholders only; the
# upstream gets the values, and no value comes back into the box.
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
# The HTTP/2 upstream needs Debian's python3 with python3-h2 (another python3 may come first).
H2PY=/usr/bin/python3
"$H2PY" -c 'import h2.connection' 2>/dev/null && [ -d /usr/lib/python3.11 ] ||
	hezo_cannot_run "no python3-h2 for $H2PY (Debian 12's python3.11)"
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
hezo_netns_link_host "$VETH" "$INS" 10.205.0 2 3 4 5 6 && hezo_netns_link_client "$CNS" "$INS" 10.205.1 ||
	bail_out "cannot link the test's network namespaces"

cd "$E" || bail_out "no $E"
hezo_test_ca "$E" hezo-test-upstream-CA api.test api.test other.test plain.test git.test \
	sec.test httpd.test h2.test &&
	hezo_test_selfsigned "$E" untrusted.test || bail_out "openssl cannot make the test certificates"
: >up.log
: >bad.log
: >echo.log
mkdir -p "$E/www/dir"
tap_bg ip netns exec "$INS" python3 "$here/../lib/echo-upstream.py" "$E/echo.log" 10.205.0.4 up.crt \
	up.key 443 8443
tap_bg ip netns exec "$INS" python3 "$here/../lib/httpd-tls.py" 10.205.0.5 up.crt up.key "$E/www"
: >h2.log
tap_bg ip netns exec "$INS" "$H2PY" "$here/../lib/h2-echo-upstream.py" "$E/h2.log" 10.205.0.6 up.crt \
	up.key 443
tap_bg ip netns exec "$INS" python3 "$HEZO_HTTPS_UPSTREAM" "$E/up.log" 10.205.0.2 up.crt up.key
tap_bg ip netns exec "$INS" python3 "$HEZO_HTTPS_UPSTREAM" "$E/bad.log" 10.205.0.3 bad.crt bad.key
tap_bg dnsmasq -k -C /dev/null --port "$DNS_PORT" --listen-address 127.0.0.1 --bind-interfaces \
	--no-resolv --no-hosts --user=root --address=/api.test/10.205.0.2 \
	--address=/other.test/10.205.0.2 --address=/plain.test/10.205.0.2 \
	--address=/git.test/10.205.0.2 --address=/untrusted.test/10.205.0.3 \
	--address=/sec.test/10.205.0.4 --address=/httpd.test/10.205.0.5 --address=/h2.test/10.205.0.6
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
VTOK="tok_$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
VQ="qtk_$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
VK8="k8_$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
# A long value (101 characters, as many API keys): its placeholder pads a Basic credential.
VLONG="long_$(head -c 120 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 96)"
mkdir -m 0700 "$E/secrets"
printf '%s\n' "$VALUE" >"$E/secrets/gh"
printf '%s' "$VALUE2" >"$E/secrets/two"
printf '%s' "$VTOK" >"$E/secrets/tok"
printf '%s' "$VQ" >"$E/secrets/q"
printf '%s' "$VK8" >"$E/secrets/k8"
printf '%s' "$VLONG" >"$E/secrets/long"
chmod 0600 "$E/secrets/gh" "$E/secrets/two" "$E/secrets/tok" "$E/secrets/q" "$E/secrets/k8" \
	"$E/secrets/long"
hezo_write_policy bundle ".egress = {mode: \"proxy\",
		allow: [\"api.test\", \"other.test\", \"plain.test\", \"git.test\", \"untrusted.test\",
			\"sec.test\", \"sec.test:8443\", \"httpd.test\", \"h2.test\"],
		resolvers: [\"127.0.0.1:$DNS_PORT\"], allowRanges: [\"10.205.0.0/24\"]}
	| .secrets = {GH_TOKEN: {hosts: [\"api.test\", \"git.test\", \"untrusted.test\"],
			file: \"$E/secrets/gh\", in: [\"header\", \"query\"]},
		TWO: {hosts: [\"other.test\"], file: \"$E/secrets/two\", otherHosts: \"pass\"},
		TOK: {hosts: [\"sec.test\", \"httpd.test\", \"h2.test\"], file: \"$E/secrets/tok\"},
		QTOK: {hosts: [\"httpd.test\"], file: \"$E/secrets/q\", in: [\"header\", \"query\"]},
		KEY8: {hosts: [\"sec.test:8443\"], file: \"$E/secrets/k8\", headers: [\"X-Api-Key\"]},
		LONGK: {hosts: [\"sec.test\"], file: \"$E/secrets/long\"}}
	| if .backends.runsc then .backends.runsc.network = \"host\" else . end"

# ---- a rootfs with Debian's curl and git and their libraries ----
RFS=$E/rootfs
hezo_busybox_rootfs "$RFS" || bail_out "cannot make the rootfs"
hezo_copy_bin "$RFS" /usr/bin/curl /usr/bin/git /usr/bin/openssl /usr/lib/git-core/git-remote-https \
	/usr/lib/git-core/git-remote-http || bail_out "cannot copy curl and git into the rootfs"
# Debian's python3 with python3-h2 (pure Python) for the gRPC-style client of the HTTP/2 rows.
hezo_copy_bin "$RFS" "$H2PY" /usr/lib/python3.11/lib-dynload/*.so &&
	cp -a /usr/lib/python3.11 "$RFS/usr/lib/" && mkdir -p "$RFS/usr/lib/python3/dist-packages" &&
	cp -a /usr/lib/python3/dist-packages/h2 /usr/lib/python3/dist-packages/hpack \
		/usr/lib/python3/dist-packages/hyperframe "$RFS/usr/lib/python3/dist-packages/" &&
	cp "$here/../lib/h2-grpc-client.py" "$RFS/usr/lib/" || bail_out "cannot copy python3-h2 into the rootfs"
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
expect_match "$(tail -n 1 up.log)" "x=$VALUE " "[curl] header: the upstream gets the value" || diag "$OUT"
expect_match "$OUT" "x=hzph[a-z0-9]{40} " "[curl] ... and its answer quoting it comes back with the placeholder" || diag "$OUT"
box query "$CURL \"https://api.test/q?token=\$GH_TOKEN\""
expect_match "$(tail -n 1 up.log)" "GET /q\\?token=$VALUE HTTP/1.1" "[curl] query string (GH_TOKEN takes \"query\"): the upstream gets the value" || diag "$OUT"
box basic "$CURL -u \"x-access-token:\$GH_TOKEN\" https://api.test/b"
want=$(printf 'x-access-token:%s' "$VALUE" | base64 -w0)
expect_match "$(tail -n 1 up.log)" "auth=Basic $want " "[curl] Basic auth: the upstream gets the value" || diag "$OUT"
expect_eq "$(grep -c "$want" <<<"$OUT")" 0 "[curl] ... and its answer quoting the credentials comes back without them" || diag "$OUT"
box keepalive "$CURL -H \"X-Token: \$GH_TOKEN\" https://api.test/k1 https://api.test/k2"
expect_eq "$(tail -n 2 up.log | grep -c "x=$VALUE ")" 2 "[curl] keep-alive: the second request substituted too" || diag "$OUT"
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

# ---- issue 27: no value comes back into the box; placeholders only in header values; ports ----
# nv NAME: none of the values in $OUT (every byte the box printed, heads included).
nv() {
	expect_eq "$(grep -cF -e "$VALUE" -e "$VALUE2" -e "$VTOK" -e "$VQ" -e "$VK8" -e "$VLONG" <<<"$OUT")" 0 "$1"
}
CI="$CURL -i"
: >echo.log
box echo11 "$CI -H \"X-Api-Key: \$TOK\" https://sec.test/e"
expect_match "$(cat echo.log)" "port=443 key=$VTOK " "[echo] HTTP/1.1: the upstream gets the value" || diag "$(cat echo.log)"
expect_match "$OUT" "HTTP/1.1 200 OK hzph[a-z0-9]{40}" "[echo] ... and its echo comes back with the placeholder in the status line" || diag "$OUT"
expect_match "$OUT" "Location: /r\\?k=hzph[a-z0-9]{40}" "[echo] ... in a Location" || diag "$OUT"
expect_match "$OUT" "X-Api-Key: hzph[a-z0-9]{40}" "[echo] ... in the body"
nv "[echo] HTTP/1.1: no value in any byte the box receives"
box chunked "$CI -H \"X-Api-Key: \$TOK\" https://sec.test/chunked"
expect_match "$OUT" "X-Api-Key: hzph[a-z0-9]{40}" "[echo] chunked in 5-byte chunks: the body comes back whole" || diag "$OUT"
nv "[echo] chunked: no value (split across chunks) in any byte the box receives"
box http10 "$CI -0 -H \"X-Api-Key: \$TOK\" https://sec.test/e"
expect_match "$OUT" "X-Api-Key: hzph[a-z0-9]{40}" "[echo] HTTP/1.0: the body comes back" || diag "$OUT"
nv "[echo] HTTP/1.0: no value in any byte the box receives"
box gzip "$CI --compressed -H \"X-Api-Key: \$TOK\" https://sec.test/gzip"
expect_match "$OUT" "Accept-Encoding: identity" "[echo] gzip: the request asks for identity" || diag "$OUT"
nv "[echo] gzip when accepted: no value in any byte the box receives"
box gzipalways "$CI -w ' code=%{http_code}' --compressed -H \"X-Api-Key: \$TOK\" https://sec.test/gzip-always"
expect_match "$OUT" "code=502" "[echo] gzip anyway: refused (502)" || diag "$OUT"
expect_match "$OUT" "compressed an answer" "[echo] ... naming the reason"
nv "[echo] gzip anyway: no value in any byte the box receives"
REQ='GET /e HTTP/1.1\r\nHost: sec.test\r\nX-Api-Key: %s\r\n\r\nGET /chunked HTTP/1.1\r\nHost: sec.test\r\nX-Api-Key: %s\r\n\r\nHEAD /e HTTP/1.1\r\nHost: sec.test\r\nX-Api-Key: %s\r\n\r\nGET /e HTTP/1.1\r\nHost: sec.test\r\nX-Api-Key: %s\r\nConnection: close\r\n\r\n'
box pipeline "printf '$REQ' \"\$TOK\" \"\$TOK\" \"\$TOK\" \"\$TOK\" | timeout 15 openssl s_client -quiet -connect sec.test:443 -servername sec.test -CAfile /etc/ssl/certs/ca-certificates.crt 2>/dev/null"
expect_eq "$(grep -c '^HTTP/1.1 200 OK hzph' <<<"$OUT")" 4 "[echo] four pipelined requests: four answers" || diag "$OUT"
nv "[echo] pipelined: no value in any byte the box receives"
# Basic credentials that took a value are masked back until every answer that may echo them is
# done: six pipelined, written apart so proxyd reads them head by head, toward a slow upstream
# (red team F1: a fifth pushed the first off a four-slot list while its answer was due).
SC='timeout 15 openssl s_client -quiet -connect sec.test:443 -servername sec.test -CAfile /etc/ssl/certs/ca-certificates.crt 2>/dev/null'
box basic6 '(for i in 1 2 3 4 5 6; do a=$(printf "u$i:%s" "$TOK" | base64 | tr -d "\n"); c=""; [ $i = 6 ] && c="Connection: close\r\n"; printf "GET /slow$i HTTP/1.1\r\nHost: sec.test\r\nX-Api-Key: x\r\nAuthorization: Basic $a\r\n$c\r\n"; sleep 0.03; done; sleep 4) | '"$SC"
expect_eq "$(grep -c '^HTTP/1.1 200' <<<"$OUT")" 6 "[basic] six pipelined Basic credentials toward a slow upstream: six answers" || diag "$OUT"
seen=0
for i in 1 2 3 4 5 6; do
	grep -qF "$(printf "u$i:%s" "$VTOK" | base64 -w0)" <<<"$OUT" && seen=$((seen + 1))
done
expect_eq "$seen" 0 "[basic] ... none brings base64(user:value) back to the box" || diag "$OUT"
nv "[basic] ... no value in any byte the box receives"
# Five Basic credentials with values in one head: more than are masked at once, so refused.
box basic5 'H=""; for i in 1 2 3 4 5; do H="${H}Authorization: Basic $(printf "u$i:%s" "$TOK" | base64 | tr -d "\n")\r\n"; done; printf "GET /e HTTP/1.1\r\nHost: sec.test\r\nX-Api-Key: x\r\n${H}Connection: close\r\n\r\n" | '"$SC"
expect_match "$OUT" "cannot all be masked" "[basic] five Basic credentials with values in one head: refused naming it" || diag "$OUT"
seen=0
for i in 1 2 3 4 5; do
	grep -qF "$(printf "u$i:%s" "$VTOK" | base64 -w0)" <<<"$OUT" && seen=$((seen + 1))
done
expect_eq "$seen" 0 "[basic] ... none brings base64(user:value) back to the box" || diag "$OUT"
# A Basic credential padded with a long value's placeholder past what the masking holds, with
# base64(":" placeholder) written in its text (red team F2, F2b): refused, never half masked.
: >echo.log
for k in LONGK TOK; do
	box "basicpad-$k" 'T=""; i=0; while [ $i -lt 130 ]; do T="$T$LONGK"; i=$((i+1)); done; T="$T$(printf ":%s" "$'"$k"'" | base64 | tr -d "\n")"; printf "GET /e HTTP/1.1\r\nHost: sec.test\r\nX-Api-Key: x\r\nAuthorization: Basic $T\r\nConnection: close\r\n\r\n" | '"$SC"
	[ "$k" = LONGK ] && v=$VLONG || v=$VTOK
	expect_match "$OUT" "HTTP/1.1 400" "[basic] $k behind 130 LONGK placeholders: 400" || diag "$(head -c 600 <<<"$OUT")"
	expect_eq "$(grep -cF -e "$(printf ':%s' "$v" | base64 -w0)" -e "$(printf '%s' "$v" | base64 -w0)" <<<"$OUT")" 0 "[basic] ... no base64 of :value or value comes back" || diag "$(head -c 600 <<<"$OUT")"
	nv "[basic] ... no value in any byte the box receives"
done
expect_eq "$(grep -c "$VLONG\|$VTOK" echo.log)" 0 "[basic] ... and the upstream got neither value"
: >echo.log
box method "$CI -w ' code=%{http_code}' -X \"\$TOK\" https://sec.test/"
expect_match "$OUT" "code=400" "[place] placeholder as the method: 400" || diag "$OUT"
expect_match "$OUT" "placeholder in the method" "[place] ... naming it"
box path "$CI -w ' code=%{http_code}' \"https://sec.test/dir/\$TOK\""
expect_match "$OUT" "code=400" "[place] in the path: 400" || diag "$OUT"
expect_match "$OUT" "placeholder in the request path" "[place] ... naming it"
box query2 "$CI -w ' code=%{http_code}' \"https://sec.test/dir?x=\$TOK\""
expect_match "$OUT" "placeholder in the query string" "[place] in the query of a secret without \"query\": 400 naming it" || diag "$OUT"
box fname "$CI -w ' code=%{http_code}' -H \"X-\$TOK: 1\" https://sec.test/"
expect_match "$OUT" "placeholder in a header field name" "[place] in a field name: 400 naming it" || diag "$OUT"
expect_eq "$(cat echo.log)" "" "[place] ... and the upstream got none of them"
nv "[place] no value in any byte the box receives"
box httpd501 "$CI -X \"\$TOK\" https://httpd.test/"
expect_match "$OUT" "400 Bad Request" "[http.server] method = placeholder: 400 from proxyd, not 501 with the value" || diag "$OUT"
nv "[http.server] ... no value in any byte the box receives"
box httpd301 "$CI \"https://httpd.test/dir?x=\$QTOK\""
expect_match "$OUT" "Location: /dir/\\?x=hzph[a-z0-9]{40}" "[http.server] /dir?x=\$QTOK (\"query\" taken): 301 Location with the placeholder" || diag "$OUT"
nv "[http.server] ... no value in any byte the box receives"
: >echo.log
box port8443 "$CI -w ' code=%{http_code}' -H \"X-Api-Key: \$KEY8\" https://sec.test:8443/e"
expect_match "$(cat echo.log)" "port=8443 key=$VK8 " "[port] sec.test:8443's secret on 8443 (Host: sec.test:8443): delivered" || diag "$OUT"
nv "[port] ... and masked back"
: >echo.log
box tok8443 "$CI -w ' code=%{http_code}' -H 'Host: sec.test' -H \"X-Api-Key: \$TOK\" https://sec.test:8443/e"
expect_match "$OUT" "code=403" "[port] sec.test's secret (443) toward sec.test:8443: 403" || diag "$OUT"
expect_eq "$(grep -c "$VTOK" echo.log)" 0 "[port] ... and port 8443 never got its value"
box k8on443 "$CI -w ' code=%{http_code}' -H \"X-Api-Key: \$KEY8\" https://sec.test/e"
expect_match "$OUT" "code=403" "[port] sec.test:8443's secret toward port 443: 403" || diag "$OUT"
box k8auth "$CI -w ' code=%{http_code}' -H \"Authorization: Bearer \$KEY8\" https://sec.test:8443/e"
expect_match "$OUT" "placeholder in a header its secret does not allow" "[headers] KEY8 (headers: X-Api-Key) in Authorization: 400 naming it" || diag "$OUT"
expect_eq "$(grep -c "$VK8" echo.log)" 0 "[headers] ... and the upstream never got it"

# ---- HTTP/2 (issue 27): h2.test speaks h2 by ALPN (python3-h2) and echoes every request ----
# h2m REGEX DESC: the answer came over HTTP/2 (curl -i: "HTTP/2 NNN") and matches REGEX.
h2m() {
	if grep -q '^HTTP/2 ' <<<"$OUT"; then expect_match "$OUT" "$1" "$2"; else expect_match "$OUT" '^HTTP/2 ' "$2"; fi
}
# h2nv DESC: the answer came over HTTP/2 and no value is in any byte the box received.
h2nv() {
	if grep -q '^HTTP/2 ' <<<"$OUT"; then nv "$1"; else expect_match "$OUT" '^HTTP/2 ' "$1"; fi
}
: >h2.log
box h2echo "$CI --http2 -H \"X-Api-Key: \$TOK\" https://h2.test/e"
expect_match "$(cat h2.log)" "proto=h2 path=/e key=$VTOK" "[h2] curl --http2: the upstream gets the value over HTTP/2" || diag "$OUT"
expect_match "$OUT" "HTTP/2 200" "[h2] ... and the box speaks HTTP/2 too" || diag "$OUT"
h2m "x-echo: hzph[a-z0-9]{40}" "[h2] ... its echo comes back with the placeholder in a field"
h2m "location: /r\\?k=hzph[a-z0-9]{40}" "[h2] ... in a location"
h2m "x-api-key: hzph[a-z0-9]{40}" "[h2] ... in the body"
h2nv "[h2] no value in any byte the box receives"
box h2split "$CI --http2 -H \"X-Api-Key: \$TOK\" https://h2.test/split"
h2m "x-api-key: hzph[a-z0-9]{40}" "[h2] body in 5-byte DATA frames: comes back whole" || diag "$OUT"
h2nv "[h2] ... no value (split across DATA frames) in any byte the box receives"
box h2gzip "$CI --http2 -w ' code=%{http_code}' -H \"X-Api-Key: \$TOK\" https://h2.test/gzip-always"
h2m "code=502" "[h2] a compressed answer anyway: 502" || diag "$OUT"
h2m "compressed an answer" "[h2] ... naming the reason"
h2nv "[h2] ... no value in any byte the box receives"
: >h2.log
box h2path "$CI --http2 -w ' code=%{http_code}' \"https://h2.test/dir/\$TOK\""
h2m "HTTP/2 400" "[h2] placeholder in :path: 400 on its stream" || diag "$OUT"
h2m "placeholder in the request path" "[h2] ... naming it"
box h2method "$CI --http2 -w ' code=%{http_code}' -X \"\$TOK\" https://h2.test/"
h2m "HTTP/2 400" "[h2] placeholder as :method: 400 on its stream" || diag "$OUT"
h2m "placeholder in the method" "[h2] ... naming it"
box h2name "$CI --http2 -w ' code=%{http_code}' -H \"X-\$TOK: 1\" https://h2.test/"
h2m "placeholder in a header field name" "[h2] placeholder in a field name: 400 naming it" || diag "$OUT"
box h2auth "$CI --http2 -w ' code=%{http_code}' -H 'Host: other.test' -H \"X-Api-Key: \$TOK\" https://h2.test/e"
h2m "HTTP/2 403" "[h2] :authority other than the SNI: 403" || diag "$OUT"
h2m ":authority does not match the TLS server name" "[h2] ... naming it"
expect_eq "$(cat h2.log)" "" "[h2] ... and the upstream got none of the refused streams"
# A gRPC-style call: the box sends its second message only once the first one's echo is back, so
# it passes only if request and response DATA interleave on one long-lived stream.
box h2stream 'mkfifo /tmp/f; timeout 20 curl -sS -N --http2 -T . -H "X-Api-Key: $TOK" https://h2.test/stream </tmp/f >/tmp/o 2>/tmp/e & exec 3>/tmp/f; echo "one" >&3; i=0; while ! grep -q "echo:one" /tmp/o && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done; echo "two" >&3; i=0; while ! grep -q "echo:two" /tmp/o && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done; exec 3>&-; wait; cat /tmp/o /tmp/e'
expect_match "$OUT" "echo:one" "[h2] streaming call: the first message's echo comes back while the stream is open" || diag "$OUT"
expect_match "$OUT" "echo:two" "[h2] ... then the second's" || diag "$OUT"
expect_eq "$(grep -oE "key=hzph[a-z0-9]{40}" <<<"$OUT" | wc -l)" 3 "[h2] ... each of the three echoes masked (the value went up, the placeholder back)" || diag "$OUT"
expect_match "$(cat h2.log)" "proto=h2 path=/stream key=$VTOK" "[h2] ... and the upstream got the value"
expect_eq "$(grep -c "echo:two" <<<"$OUT") $(grep -cF -e "$VTOK" -e "$VALUE" <<<"$OUT")" "1 0" "[h2] ... the call done, and no value in any byte the box receives"
# The same call from Python (python3-h2), gRPC's shape: a POST stream, trailers at its end.
: >h2.log
box h2grpc "PYTHONPATH=/usr/lib/python3/dist-packages timeout 20 $H2PY /usr/lib/h2-grpc-client.py h2.test one two 2>&1"
expect_match "$(cat h2.log)" "proto=h2 path=/stream key=$VTOK" "[h2] python3-h2 gRPC-style client: the upstream gets the value in a header" || diag "$OUT"
expect_match "$OUT" "alpn h2" "[h2] ... over HTTP/2 from the box"
expect_eq "$(grep -cE "^data echo:(one|two) key=hzph[a-z0-9]{40}$" <<<"$OUT")" 2 "[h2] ... both messages echoed while the stream is open, masked" || diag "$OUT"
expect_match "$OUT" "trailer x-trailer: hzph[a-z0-9]{40}" "[h2] ... the trailers come, masked" || diag "$OUT"
expect_match "$OUT" "trailer grpc-status: 0" "[h2] ... grpc-status among them"
expect_match "$OUT" "done" "[h2] ... and the stream ends"
h2py_nv() { expect_eq "$(grep -c "^alpn h2" <<<"$OUT") $(grep -cF -e "$VTOK" -e "$VALUE" <<<"$OUT")" "1 0" "$1"; }
h2py_nv "[h2] ... no value in any byte the box receives"

: >h2.log
box h2h1 "$CI --http1.1 -H \"X-Api-Key: \$TOK\" https://h2.test/e"
expect_match "$(cat h2.log)" "proto=http/1.1 path=/e key=$VTOK" "[h2] an HTTP/1.1 client toward the same upstream: HTTP/1.1 both ways" || diag "$OUT"
expect_match "$OUT" "X-Echo: hzph[a-z0-9]{40}" "[h2] ... masked back" || diag "$OUT"
nv "[h2] ... no value in any byte the box receives"

# ---- grep for the values: nothing outside the secret files and the upstream's log ----
box grep "cat /proc/self/environ | tr '\\000' '\\n'; env; cat /proc/1/environ 2>/dev/null | tr '\\000' '\\n'"
expect_eq "$(grep -cF -e "$VALUE" -e "$VALUE2" <<<"$OUT")" 0 "[grep] not in the container's env or /proc/*/environ"
expect_match "$OUT" "GH_TOKEN=hzph" "[grep] ... which holds the placeholder"
leaks=$(grep -rlF -e "$VALUE" -e "$VALUE2" "$B" "$HEZO_TEST_STATE" /run/hezo* "$E/proxyd" "$E/netlog" 2>/dev/null |
	grep -v -e "^$E/secrets/" -e "^$E/up.log$" -e "^$E/echo.log$" -e "^$E/h2.log$")
expect_eq "$leaks" "" "[grep] not under the bundle, the shim's state, /run/hezo*, proxyd's state or netlog"
sleep 1.2
expect_match "$(cat "$E"/netlog/* 2>/dev/null)" '"secrets":"GH_TOKEN","substitutions":1' "[netlog] substitutions recorded by name"
expect_match "$(cat "$E"/netlog/* 2>/dev/null)" '"name":"sec.test".*"masks":[1-9]' "[netlog] masks counted on the connection's line"
expect_match "$(cat "$E"/netlog/* 2>/dev/null)" '"proto":"h2".*"name":"h2.test".*"method":"GET","path":"/e","secrets":"TOK","substitutions":1,"masks":[1-9]' "[netlog] an h2 stream's own line: method, path, secret, masks" ||
	diag "$(grep '"h2"' "$E"/netlog/* | head -3)"
expect_match "$(cat "$E"/netlog/* 2>/dev/null)" '"proto":"h2".*"verdict":"deny","reason":"a secret.s placeholder in the request path' "[netlog] ... and a refused stream's, with the reason"
tap_done

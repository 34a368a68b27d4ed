#!/bin/bash
# hezo-proxyd's memory budget for intercepted connections (issue 27): a box that opens many
# HTTP/2 connections to a secret's host, each with as many streams as proxyd allows, and keeps
# them open, gets REFUSED_STREAM once its registration's share is spent; proxyd's RSS stays
# bounded, the refusals are in the netlog and the metrics, and another box still gets through.
# Without Docker: two fake containers (network namespaces hzm-c1, hzm-c2 with hezo-hook's redirect
# rules), an "internet" namespace (hzm-inet) with tests/lib/h2-echo-upstream.py and a test CA that
# proxyd trusts by --test-upstream-ca, dnsmasq on loopback. TAP output. Contacts only loopback and
# the namespaces it creates. Needs Debian's python3 with python3-h2 (the client and the upstream).
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/netns.sh
. "$HERE/../../lib/netns.sh"
# shellcheck source=tests/lib/tls.sh
. "$HERE/../../lib/tls.sh"
# shellcheck source=tests/lib/proxyd.sh
. "$HERE/../../lib/proxyd.sh"
hezo_netns_exclusive

PROXYD=$(realpath -m "${HEZO_PROXYD:-$(dirname "$0")/../../../build/proxyd/hezo-proxyd}")
H2PY=/usr/bin/python3

skip_all() {
	echo "1..0 # SKIP $1"
	[ "${HEZO_REQUIRE_INTEGRATION:-0}" = 1 ] && exit 1
	[ -n "${HEZO_UNDER_MESON:-}" ] && exit 0
	exit 77
}
[ "$(id -u)" = 0 ] || skip_all "needs root"
for tool in ip nft dnsmasq openssl curl jq; do
	command -v $tool >/dev/null 2>&1 || skip_all "$tool not installed"
done
"$H2PY" -c 'import h2' 2>/dev/null || skip_all "python3-h2 not installed"
[ -x "$PROXYD" ] || skip_all "no hezo-proxyd at $PROXYD"

T=$(mktemp -d /tmp/hzm-test.XXXXXX)
chmod 0755 "$T"
PIDS=()
PROXYD_PID=
n=0
failed=0
cleanup() {
	set +e
	trap '' INT TERM
	[ -n "$PROXYD_PID" ] && kill "$PROXYD_PID" 2>/dev/null && wait "$PROXYD_PID" 2>/dev/null
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	for m in "$T"/state/netns/*; do [ -e "$m" ] && umount -l "$m" 2>/dev/null; done
	ip link del hzm-veth0 2>/dev/null
	for ns in hzm-c1 hzm-c2 hzm-inet; do
		ip netns del $ns 2>/dev/null
		rm -rf /etc/netns/$ns
	done
	[ -n "${HZM_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
	[ -n "${2:-}" ] && echo "$2" | sed 's/^/# /'
}
expect_eq() { if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3" "got:  '$1'
want: '$2'"; fi; }
expect_match() { if [[ $1 =~ $2 ]]; then ok "$3"; else not_ok "$3" "got: '$1'
want /$2/"; fi; }
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY \
	SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE

# ---- the world ----
for ns in hzm-c1 hzm-c2 hzm-inet; do
	ip netns del $ns 2>/dev/null
	ip netns add $ns
	ip -n $ns link set lo up
done
ip link del hzm-veth0 2>/dev/null
hezo_netns_link_host hzm-veth0 hzm-inet 10.203.0 2 3
hezo_netns_link_client hzm-c1 hzm-inet 10.203.1
# The second client's link by hand: hezo_netns_link_client names its far end c0 in hzm-inet.
ip -n hzm-c2 link add eth0 type veth peer name c2 netns hzm-inet &&
	ip -n hzm-c2 addr add 10.203.2.2/24 dev eth0 && ip -n hzm-c2 link set eth0 up &&
	ip -n hzm-c2 route add default via 10.203.2.1 &&
	ip -n hzm-inet addr add 10.203.2.1/24 dev c2 && ip -n hzm-inet link set c2 up ||
	{ echo "Bail out! the second client's link"; exit 1; }
for ns in hzm-c1 hzm-c2; do
	ip netns exec $ns sleep 100000 &
	PIDS+=($!)
	hezo_jail_rules | ip netns exec $ns nft -f -
done
cd "$T" || exit 1
hezo_test_ca "$T" hezo-test-upstream-CA h2.test h2.test
: >up.log
ip netns exec hzm-inet "$H2PY" "$HERE/../../lib/h2-echo-upstream.py" "$T/up.log" 10.203.0.2 \
	up.crt up.key 443 2>"$T/up.err" &
PIDS+=($!)
dnsmasq --no-daemon --no-resolv --no-hosts --conf-file=/dev/null --pid-file= \
	--listen-address=127.0.0.1 --bind-interfaces --port=5357 \
	--address=/h2.test/10.203.0.2 >"$T/dnsmasq.log" 2>&1 &
PIDS+=($!)

# ---- two boxes, each with a secret for h2.test ----
mkdir -m 0700 "$T/secrets"
VA="va_$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
VB="vb_$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
printf '%s' "$VA" >"$T/secrets/a"
printf '%s' "$VB" >"$T/secrets/b"
chmod 0600 "$T/secrets/a" "$T/secrets/b"
ph() {
	local p=
	while [ ${#p} -ne 44 ]; do p="hzph$(head -c 256 /dev/urandom | tr -dc 'a-z0-9' | head -c 40)"; done
	echo "$p"
}
PHA=$(ph)
PHB=$(ph)
egress() {
	jq -cn --arg f "$1" --arg p "$2" '{mode: "proxy", allow: ["h2.test"],
		resolvers: ["127.0.0.1:5357"], allowRanges: ["10.203.0.0/24"],
		secrets: {TOK: {hosts: ["h2.test"], file: $f, placeholder: $p}}}'
}
hezo_wait_listen hzm-inet tcp 10.203.0.2 443 && hezo_wait_listen - udp 127.0.0.1 5357 ||
	{ echo "Bail out! the test upstream or dnsmasq does not listen"; exit 1; }
# The budget under test: 64 MiB in all, 16 MiB a registration's share. A connection reserves
# 384 KiB and each of its HTTP/2 streams 160 KiB (proxyd/intercept.c), so a share holds about
# five connections with 16 streams each.
if hezo_proxyd_start "$T/state" "$T/log" "$T/control.sock" --test-upstream-ca "$T/ca.crt" \
	--intercept-memory 64 --intercept-share 16 --metrics 127.0.0.1:9357 >>"$T/proxyd.log" 2>&1; then
	ok "proxyd starts with --intercept-memory 64 --intercept-share 16"
else
	not_ok "proxyd starts with --intercept-memory 64 --intercept-share 16" "$(cat "$T/proxyd.log")"
fi
ctl() { "$PROXYD" --socket "$T/control.sock" --ctl "$@"; }
ctl register boxa /run/netns/hzm-c1 "$(egress "$T/secrets/a" "$PHA")" projA >/dev/null &&
	ctl register boxb /run/netns/hzm-c2 "$(egress "$T/secrets/b" "$PHB")" projB >/dev/null ||
	{ echo "Bail out! registration failed"; exit 1; }
BUNDLE=$T/state/tls/bundle.crt

# The flood: N connections, each opening 16 streams (/stream answers at once and stays open
# until the box ends it) and holding them; prints how many streams were answered and how many
# were refused, then waits for a line on stdin before it lets go.
cat >flood.py <<'PY'
import socket, ssl, sys
import h2.config, h2.connection, h2.errors, h2.events
ca, nconn, ph = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
ctx.set_alpn_protocols(["h2"])
answered = refused = other = closed = 0
held = []
for _ in range(nconn):
    try:
        s = ctx.wrap_socket(socket.create_connection(("h2.test", 443), timeout=10),
                            server_hostname="h2.test")
    except OSError:
        closed += 1  # refused before its handshake
        continue
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    s.sendall(c.data_to_send())
    sids = []
    # What proxyd allows at once: its SETTINGS come before the streams.
    while c.remote_settings.max_concurrent_streams > 1000:
        for ev in c.receive_data(s.recv(65536)):
            pass
        s.sendall(c.data_to_send())
    for _ in range(c.remote_settings.max_concurrent_streams):
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, [(":method", "POST"), (":scheme", "https"),
                             (":authority", "h2.test"), (":path", "/stream"),
                             ("x-api-key", ph)])
        sids.append(sid)
    s.sendall(c.data_to_send())
    left = set(sids)
    while left:
        d = s.recv(65536)
        if not d:
            break
        for ev in c.receive_data(d):
            if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id in left:
                left.discard(ev.stream_id); answered += 1
            elif isinstance(ev, h2.events.StreamReset) and ev.stream_id in left:
                left.discard(ev.stream_id)
                if ev.error_code == h2.errors.ErrorCodes.REFUSED_STREAM:
                    refused += 1
                else:
                    other += 1
        s.sendall(c.data_to_send())
    other += len(left)
    held.append(s)
print("answered=%d refused=%d other=%d closed=%d" % (answered, refused, other, closed), flush=True)
sys.stdin.readline()
PY
rss() { awk '/^VmRSS/ { print $2 }' /proc/"$PROXYD_PID"/status; }
NCONN=24
before=$(rss)
coproc FLOOD { ip netns exec hzm-c1 "$H2PY" flood.py "$BUNDLE" "$NCONN" "$PHA" 2>&1; }
read -r -t 120 flood <&"${FLOOD[0]}"
sleep 0.5
after=$(rss)
expect_match "$flood" "^answered=[0-9]+ refused=[0-9]+ other=0 closed=[0-9]+$" "box A: $NCONN HTTP/2 connections of 16 streams: each stream answered or refused"
answered=$(sed -n 's/^answered=\([0-9]*\) .*/\1/p' <<<"$flood")
refused=$(sed -n 's/.* refused=\([0-9]*\) .*/\1/p' <<<"$flood")
closed=$(sed -n 's/.* closed=\([0-9]*\)$/\1/p' <<<"$flood")
# The connections come one after another: five with 16 streams take 5 x 2944 KiB, the sixth
# 384 KiB and 8 streams (16 MiB full), the rest are refused before their handshake.
expect_eq "$answered $refused" "88 8" "box A: 88 streams answered, then REFUSED_STREAM for the rest of the sixth connection's"
expect_eq "$closed" $((NCONN - 6)) "box A: its connections past the share are refused"
# What those streams hold in proxyd (ASan's own overhead included), against the 16 MiB share.
grown=$(( (after - before) / 1024 ))
if [ "$grown" -le 32 ]; then ok "proxyd's RSS grew by $grown MiB (bound: 32 MiB, twice the share)"
else not_ok "proxyd's RSS grew by $grown MiB (bound: 32 MiB, twice the share)"; fi
# Box B, while box A holds all it got: its request goes through with its value, masked back.
: >up.log
out=$(ip netns exec hzm-c2 curl -sS --max-time 10 --http2 --cacert "$BUNDLE" \
	-H "x-api-key: $PHB" -D - https://h2.test/b 2>&1)
expect_match "$out" "^HTTP/2 200" "box B: its HTTP/2 request is answered while box A is over its share"
expect_match "$(grep 'path=/b ' up.log)" "key=$VB" "box B: the upstream got box B's value"
if [[ $out == *"$VB"* ]]; then not_ok "box B: its value never comes back into the box"
else ok "box B: its value never comes back into the box"; fi
echo >&"${FLOOD[1]}"
wait "$FLOOD_PID" 2>/dev/null
sleep 1.2
log=$(cat "$T"/log/* 2>/dev/null)
expect_match "$log" '"container":"boxa"[^}]*"proto":"h2"[^}]*"verdict":"deny","reason":"interception memory budget spent \(this registration.s share\)"' "netlog: box A's refused streams, with the reason"
metric=$(curl -sS --max-time 5 http://127.0.0.1:9357/metrics 2>&1 |
	sed -n 's/^hezo_proxyd_intercept_over_budget_total{id="boxa"[^}]*} \([0-9]*\)$/\1/p')
expect_eq "$metric" "$((refused + closed))" "metric: hezo_proxyd_intercept_over_budget_total counts them"
# Once box A let go, its share is back: a new stream of its own goes through.
out=$(ip netns exec hzm-c1 curl -sS --max-time 10 --http2 --cacert "$BUNDLE" \
	-H "x-api-key: $PHA" -o /dev/null -w '%{http_code}' https://h2.test/a 2>&1)
expect_eq "$out" 200 "box A: its share is given back when its connections end"
# ---- the global bound: 4 MiB for all of proxyd, under the 16 MiB share ----
# proxyd restarts with its registrations (state file). Each registration's first 1 MiB (a
# connection and four streams) is its own, outside the global 4 MiB. Box A's flood takes its
# floor and the whole global budget (a connection of 16 streams is 2944 KiB, the second
# connection and 11 streams reach 5088 KiB), its next stream and connection are refused, named
# as the global budget's; box B still gets its own floor (s13 red team F2: boxes that spend the
# global budget between them, four at the default 512/128 MiB, locked every other box out; one
# box over 4 MiB here is the same, scaled down).
kill "$PROXYD_PID"; wait "$PROXYD_PID" 2>/dev/null; PROXYD_PID=
if hezo_proxyd_start "$T/state" "$T/log" "$T/control.sock" --test-upstream-ca "$T/ca.crt" \
	--intercept-memory 4 --intercept-share 16 >>"$T/proxyd.log" 2>&1; then
	ok "proxyd restarts with --intercept-memory 4 --intercept-share 16"
else
	not_ok "proxyd restarts with --intercept-memory 4 --intercept-share 16" "$(cat "$T/proxyd.log")"
fi
# The registrations come back from the state file; wait for both before any connection.
for _ in $(seq 50); do
	[ "$(ctl list 2>/dev/null | grep -Eo '"(boxa|boxb)"' | sort -u | wc -l)" -ge 2 ] && break
	sleep 0.1
done
coproc FLOOD { ip netns exec hzm-c1 "$H2PY" flood.py "$BUNDLE" 3 "$PHA" 2>&1; }
read -r -t 120 flood <&"${FLOOD[0]}"
expect_eq "$flood" "answered=27 refused=5 other=0 closed=1" "box A: 27 streams in its 1 MiB floor and the 4 MiB, the rest refused"
: >up.log
out=$(ip netns exec hzm-c2 curl -sS --max-time 10 --http2 --cacert "$BUNDLE" \
	-H "x-api-key: $PHB" -o /dev/null -w '%{http_code}' https://h2.test/b2 2>&1)
expect_eq "$out" 200 "F2: box B is answered from its floor while box A holds proxyd's whole budget"
expect_match "$(grep 'path=/b2 ' up.log)" "key=$VB" "F2: ... with its value"
echo >&"${FLOOD[1]}"
wait "$FLOOD_PID" 2>/dev/null
sleep 1.2
expect_match "$(cat "$T"/log/*)" '"container":"boxa"[^}]*"verdict":"deny","reason":"interception memory budget spent \(all registrations\)"' "netlog: box A's refusal past the global budget names it"
echo "1..$n"
[ $failed -eq 0 ] && exit 0
echo "# $failed of $n failed"
exit 1

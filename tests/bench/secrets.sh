#!/bin/bash
# Benchmarks of proxyd's TLS interception (issues 17 and 27), as ratios measured in one run: latency
# of a request (p50/p99) intercepted (value substituted, answer masked and framed again) against
# the plain relay and against direct, a 10 MiB download through interception with masking against
# the relay, a handshake with a leaf minted cold against a cached
# one, proxyd's memory per idle intercepted connection, and a request over HTTP/2 against one over
# HTTP/1.1, both intercepted, to the same upstream (tests/lib/h2-echo-upstream.py). Prints a
# Markdown table.
#
#   sudo tests/bench/secrets.sh [PROXYD]     (default: build-rel/proxyd/hezo-proxyd, else build/)
#
# Needs root, ip, nft, dnsmasq, openssl, python3, and Debian's python3 with python3-h2 (for the
# HTTP/2 upstream and client). Traffic stays in the namespaces it creates.
# Nothing here fails on a figure: targets are reported, not asserted.
set -uo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib/netns.sh
. "$SRC/tests/lib/netns.sh"
# shellcheck source=tests/lib/tls.sh
. "$SRC/tests/lib/tls.sh"
# shellcheck source=tests/lib/proxyd.sh
. "$SRC/tests/lib/proxyd.sh"
PROXYD=${1:-$SRC/build-rel/proxyd/hezo-proxyd}
[ -x "$PROXYD" ] || PROXYD=$SRC/build/proxyd/hezo-proxyd
[ -x "$PROXYD" ] || { echo "no hezo-proxyd (build first)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }
N=${BENCH_N:-300}
T=$(mktemp -d /tmp/hzb-bench.XXXXXX)
chmod 0755 "$T"
PIDS=()
cleanup() {
	set +e
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	for m in "$T"/state/netns/*; do [ -e "$m" ] && umount -l "$m"; done
	ip link del hzb-veth0 2>/dev/null
	ip netns del hzb-c1 2>/dev/null
	ip netns del hzb-inet 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
bg() { "$@" & PIDS+=($!); }

ip netns add hzb-c1 && ip netns add hzb-inet || exit 1
ip -n hzb-c1 link set lo up
ip -n hzb-inet link set lo up
hezo_netns_link_host hzb-veth0 hzb-inet 10.206.0 2 3
hezo_netns_link_client hzb-c1 hzb-inet 10.206.1

cd "$T" || exit 1
hezo_test_ca "$T" bench-CA api.test api.test plain.test '*.mint.test' h2.test
bg ip netns exec hzb-inet python3 "$HEZO_HTTPS_UPSTREAM" "$T/up.log" 10.206.0.2 up.crt up.key
H2PY=/usr/bin/python3
bg ip netns exec hzb-inet "$H2PY" "$SRC/tests/lib/h2-echo-upstream.py" /dev/null 10.206.0.3 up.crt \
	up.key 443
bg dnsmasq -k -C /dev/null --port 5355 --listen-address 127.0.0.1 --bind-interfaces --no-resolv \
	--no-hosts --user=root --address=/api.test/10.206.0.2 --address=/plain.test/10.206.0.2 \
	--address=/mint.test/10.206.0.2 --address=/h2.test/10.206.0.3
hezo_jail_rules nat | ip netns exec hzb-c1 nft -f -
printf 'benchvalue1234567890\n' >"$T/secret"
chmod 0600 "$T/secret"
PH=hzph0123456789abcdefghijklmnopqrstuvwxyz0123
EG=$(python3 -c 'import json,sys; print(json.dumps({"mode":"proxy","allow":["api.test","plain.test","*.mint.test","h2.test"],
 "resolvers":["127.0.0.1:5355"],"allowRanges":["10.206.0.0/24"],
 "secrets":{"T":{"hosts":["api.test","*.mint.test","h2.test"],"file":sys.argv[1],"placeholder":sys.argv[2]}}}))' "$T/secret" "$PH")
hezo_proxyd_start "$T/state" "$T/log" "$T/control.sock" --test-upstream-ca "$T/ca.crt" \
	--conn-limit 4096
PIDS+=("$PROXYD_PID")
"$PROXYD" --socket "$T/control.sock" --ctl register c1 /run/netns/hzb-c1 "$EG" bench >/dev/null || exit 1
PDPID=$PROXYD_PID
sleep 0.5

cat >client.py <<'PY'
import os, socket, ssl, statistics, sys, time
mode, ca, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.create_default_context(cafile=ca)
ctx.set_alpn_protocols(["http/1.1"])
def conn(host, addr=None):
    s = socket.create_connection((addr or host, 443))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx.wrap_socket(s, server_hostname=host)
def get(s, host, path, hdr=""):
    # Intercepted answers come chunked (proxyd masks them and frames them again): read up to the
    # last chunk (the test bodies hold no "0\r\n\r\n" of their own).
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (path, host, hdr)).encode())
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    at = buf.index(b"\r\n\r\n") + 4
    head, body = bytes(buf[:at]), buf[at:]
    cl = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    if not cl:
        while body[-5:] != b"0\r\n\r\n":
            body += s.recv(1 << 20)
        return len(body)
    ln = int(cl[0].split(b":")[1])
    while len(body) < ln:
        d = s.recv(1 << 20)
        if not d:
            break
        body += d
    return len(body)
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]
if mode in ("lat", "latd"):
    host, addr = sys.argv[4], (sys.argv[5] if len(sys.argv) > 5 else None)
    hdr = "X-Api-Key: %s\r\n" % os.environ.get("PH", "") if host in ("api.test", "h2.test") else ""
    s = conn(host, addr)
    get(s, host, "/ping", hdr)
    t = []
    for _ in range(n):
        a = time.perf_counter(); get(s, host, "/ping", hdr); t.append(time.perf_counter() - a)
    print("%.3f %.3f" % (pct(t, 0.5) * 1e3, pct(t, 0.99) * 1e3))
elif mode == "h2lat":
    # The same request as lat, over HTTP/2 (python3-h2), one stream after another.
    import h2.config, h2.connection, h2.events
    host, addr = sys.argv[4], (sys.argv[5] if len(sys.argv) > 5 else None)
    c2 = ssl.create_default_context(cafile=ca)
    c2.set_alpn_protocols(["h2"])
    raw = socket.create_connection((addr or host, 443))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s = c2.wrap_socket(raw, server_hostname=host)
    assert s.selected_alpn_protocol() == "h2"
    h = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    h.initiate_connection()
    s.sendall(h.data_to_send())
    def one():
        sid = h.get_next_available_stream_id()
        h.send_headers(sid, [(":method", "GET"), (":scheme", "https"), (":authority", host),
                             (":path", "/ping"), ("x-api-key", os.environ.get("PH", ""))],
                       end_stream=True)
        s.sendall(h.data_to_send())
        while True:
            for ev in h.receive_data(s.recv(65536)):
                if isinstance(ev, h2.events.DataReceived):
                    h.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                if isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                    s.sendall(h.data_to_send())
                    return
            s.sendall(h.data_to_send())
    one()
    t = []
    for _ in range(n):
        a = time.perf_counter(); one(); t.append(time.perf_counter() - a)
    print("%.3f %.3f" % (pct(t, 0.5) * 1e3, pct(t, 0.99) * 1e3))
elif mode == "big":
    host = sys.argv[4]
    s = conn(host); best = 0
    for _ in range(5):
        a = time.perf_counter(); b = get(s, host, "/big"); d = time.perf_counter() - a
        best = max(best, b / d)
    print("%.1f" % (best / (1 << 20)))
elif mode == "mint":
    cold, warm = [], []
    for i in range(n):
        h = "h%d-%d.mint.test" % (os.getpid(), i)
        socket.getaddrinfo(h, 443)
        a = time.perf_counter(); conn(h).close(); cold.append(time.perf_counter() - a)
        a = time.perf_counter(); conn(h).close(); warm.append(time.perf_counter() - a)
    print("%.3f %.3f" % (statistics.median(cold) * 1e3, statistics.median(warm) * 1e3))
elif mode == "idle":
    socks = [conn("api.test") for _ in range(n)]
    print("open", flush=True)
    sys.stdin.readline()
PY
B=$T/state/tls/bundle.crt
run_c() { ip netns exec hzb-c1 env PH="$PH" python3 "$T/client.py" "$@"; }
# DNS for the names first (proxyd pins what it answered).
ip netns exec hzb-c1 python3 -c 'import socket; [socket.getaddrinfo(h, 443) for h in ("api.test", "plain.test", "h2.test")]'
read -r h2p50 h2p99 < <(ip netns exec hzb-c1 env PH="$PH" "$H2PY" "$T/client.py" h2lat "$B" "$N" h2.test ||
	echo "- -")
read -r h1p50 h1p99 < <(run_c lat "$B" "$N" h2.test)
# The same two clients straight to the upstream: what HTTP/2 costs without proxyd (python3-h2 on
# both ends is slower than the plain HTTP/1.1 client and server).
read -r d2p50 _ < <(PH="$PH" "$H2PY" "$T/client.py" h2lat "$T/ca.crt" "$N" h2.test 10.206.0.3 ||
	echo "- -")
read -r d1p50 _ < <(PH="$PH" python3 "$T/client.py" lat "$T/ca.crt" "$N" h2.test 10.206.0.3 ||
	echo "- -")
read -r ip50 ip99 < <(run_c lat "$B" "$N" api.test)
read -r rp50 rp99 < <(run_c lat "$T/ca.crt" "$N" plain.test)
read -r dp50 dp99 < <(python3 "$T/client.py" lat "$T/ca.crt" "$N" plain.test 10.206.0.2 2>/dev/null ||
	echo "- -")
# proxyd's own CPU time for the five downloads (ns on CPU, /proc/PID/schedstat): what masking
# costs proxyd, apart from the clients' and the upstream's share of the two shared cores.
cpu() { awk '{ printf "%d\n", $1 / 1000000 }' /proc/"$PDPID"/schedstat; }
c0=$(cpu)
read -r ibig < <(run_c big "$B" 1 api.test)
c1=$(cpu)
read -r rbig < <(run_c big "$T/ca.crt" 1 plain.test)
c2=$(cpu)
read -r mcold mwarm < <(run_c mint "$B" 40)
rss() { awk '/^VmRSS/ { print $2 }' /proc/"$PDPID"/status; }
IDLE=200
before=$(rss)
coproc IDLEC { ip netns exec hzb-c1 python3 "$T/client.py" idle "$B" "$IDLE"; }
read -r _ <&"${IDLEC[0]}"
sleep 0.5
after=$(rss)
echo >&"${IDLEC[1]}"
wait "$IDLEC_PID" 2>/dev/null
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print('%.2f' % (a / b) if b else '-')" "$1" "$2"; }
add() { python3 -c "import sys; print('%.3f' % (float(sys.argv[1]) - float(sys.argv[2])))" "$1" "$2"; }
cat <<MD
| measure (proxyd $(basename "$(dirname "$(dirname "$PROXYD")")"), $N requests) | intercepted | relay | direct | figure | target |
|---|---|---|---|---|---|
| request on a kept-alive connection, p50 ms | $ip50 | $rp50 | $dp50 | added vs relay $(add "$ip50" "$rp50") ms, vs direct $(add "$ip50" "$dp50") ms | added p50 <= 1 ms |
| same, p99 ms | $ip99 | $rp99 | $dp99 | added vs relay $(add "$ip99" "$rp99") ms | - |
| 10 MiB download, best of 5, MiB/s | $ibig | $rbig | - | ratio $(ratio "$ibig" "$rbig") | >= 0.8 |
| proxyd CPU for those 5 downloads, ms | $((c1 - c0)) | $((c2 - c1)) | - | ratio $(ratio "$((c1 - c0))" "$((c2 - c1))") | - |
| TLS handshake through proxyd, leaf minted cold / cached, median ms | $mcold / $mwarm | - | - | ratio $(ratio "$mcold" "$mwarm") | - |
| proxyd RSS per idle intercepted connection ($IDLE open), KiB | $(( (after - before) / IDLE )) | - | - | - | <= 64 KiB |
| request to one upstream (h2.test), HTTP/2 / HTTP/1.1, p50 ms | $h2p50 / $h1p50 | - | $d2p50 / $d1p50 | ratio h2/h1 intercepted $(ratio "$h2p50" "$h1p50"), direct $(ratio "$d2p50" "$d1p50"); added by proxyd h2 $(add "$h2p50" "$d2p50") ms, h1 $(add "$h1p50" "$d1p50") ms | - |
| same, p99 ms | $h2p99 / $h1p99 | - | - | - | - |
MD

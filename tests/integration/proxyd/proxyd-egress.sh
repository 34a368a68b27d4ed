#!/bin/bash
# hezo-proxyd end to end without Docker: fake containers (network namespaces hzp-c1, hzp-c2) with
# nft redirect rules like hezo-hook's, an "internet" namespace (hzp-inet) with HTTP, HTTPS, a
# plain TCP service and UDP echo, dnsmasq on host loopback as the upstream resolver. TAP output.
#
# Needs root, ip, nft, dnsmasq, busybox, openssl, curl, python3. Contacts only loopback and the
# namespaces it creates. Environment: HEZO_PROXYD (the daemon), HEZO_NETLOG_TOOL (a binary running
# hezo_netlog_main), HEZO_REQUIRE_INTEGRATION=1 to fail instead of skipping when not root.
set -u

PROXYD=${HEZO_PROXYD:-$(dirname "$0")/../../../build/proxyd/hezo-proxyd}
NETLOG=${HEZO_NETLOG_TOOL:-$(dirname "$0")/../../../build/proxyd/hezo-netlog-test}
LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../lib" && pwd)
# shellcheck source=tests/lib/proxyd.sh
. "$LIB/proxyd.sh"
# shellcheck source=tests/lib/netns.sh
. "$LIB/netns.sh"
hezo_netns_exclusive

skip_all() {
	echo "1..0 # SKIP $1"
	if [ "${HEZO_REQUIRE_INTEGRATION:-0}" = 1 ]; then
		echo "# HEZO_REQUIRE_INTEGRATION=1: failing instead" >&2
		exit 1
	fi
	# meson's TAP runner counts exit 77 as an error, so under meson the SKIP plan says it.
	[ -n "${HEZO_UNDER_MESON:-}" ] && exit 0
	exit 77
}

[ "$(id -u)" = 0 ] || skip_all "needs root"
for tool in ip nft dnsmasq busybox openssl curl python3; do
	command -v $tool >/dev/null 2>&1 || skip_all "$tool not installed"
done
[ -x "$PROXYD" ] || skip_all "no hezo-proxyd at $PROXYD"

T=$(mktemp -d /tmp/hzp-test.XXXXXX)
PIDS=()
PROXYD_PID=
n=0
failed=0

cleanup() {
	set +e
	trap '' INT TERM # a second signal must not cut the clean-up short
	[ -n "$PROXYD_PID" ] && kill "$PROXYD_PID" 2>/dev/null && wait "$PROXYD_PID" 2>/dev/null
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	for m in "$T"/state/netns/*; do
		[ -e "$m" ] && umount -l "$m" 2>/dev/null
	done
	ip link del hzp-veth0 2>/dev/null
	for ns in hzp-c1 hzp-c2 hzp-inet; do
		ip netns del $ns 2>/dev/null
		rm -rf /etc/netns/$ns
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -n "${2:-}" ] && echo "$2" | sed 's/^/# /'
}
# check "description" command...: passes when the command succeeds
check() {
	local d=$1 out
	shift
	if out=$("$@" 2>&1); then ok "$d"; else not_ok "$d" "$out"; fi
}
# refute "description" command...: passes when the command fails
refute() {
	local d=$1 out
	shift
	if out=$("$@" 2>&1); then not_ok "$d" "unexpectedly succeeded: $out"; else ok "$d"; fi
}
in_c1() { ip netns exec hzp-c1 "$@"; }
in_c2() { ip netns exec hzp-c2 "$@"; }
CURL=(curl -sS --max-time 5)
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

# ---- the test world ----

for ns in hzp-c1 hzp-c2 hzp-inet; do
	ip netns del $ns 2>/dev/null
	ip netns add $ns
	ip -n $ns link set lo up
done
ip link del hzp-veth0 2>/dev/null

# host <-> internet: proxyd's upstream connections leave from here
ip link add hzp-veth0 type veth peer name inet0 netns hzp-inet
ip addr add 10.201.0.1/24 dev hzp-veth0
ip -6 addr add fd00:201::1/64 dev hzp-veth0 nodad
ip link set hzp-veth0 up
ip -n hzp-inet addr add 10.201.0.2/24 dev inet0
ip -n hzp-inet addr add 10.201.0.3/24 dev inet0
ip -n hzp-inet addr add 10.201.0.4/24 dev inet0
ip -n hzp-inet -6 addr add fd00:201::2/64 dev inet0 nodad
ip -n hzp-inet link set inet0 up

# each fake container has a direct link into the internet namespace, so without the jail it
# could reach every server there (checked below before the rules go in)
i=1
for c in hzp-c1 hzp-c2; do
	ip -n $c link add eth0 type veth peer name c$i netns hzp-inet
	ip -n $c addr add 10.201.$i.2/24 dev eth0
	ip -n $c -6 addr add fd00:201:$i::2/64 dev eth0 nodad
	ip -n $c link set eth0 up
	ip -n $c route add default via 10.201.$i.1
	ip -n $c -6 route add default via fd00:201:$i::1
	ip -n hzp-inet addr add 10.201.$i.1/24 dev c$i
	ip -n hzp-inet -6 addr add fd00:201:$i::1/64 dev c$i nodad
	ip -n hzp-inet link set c$i up
	mkdir -p /etc/netns/$c
	printf 'nameserver 10.201.%s.1\noptions timeout:2 attempts:2\n' $i >/etc/netns/$c/resolv.conf
	# the "container's" process: a namespace nobody lives in counts as dead on restart
	ip netns exec $c sleep 100000 &
	PIDS+=($!)
	i=$((i + 1))
done

mkdir -p "$T/www" "$T/www2" "$T/state" "$T/log"
echo "hello from allowed" >"$T/www/index.html"
head -c 8388608 /dev/urandom >"$T/www/big"
echo "plain tcp service" >"$T/www2/index.html"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-subj /CN=allowed.test -keyout "$T/key.pem" -out "$T/cert.pem" >/dev/null 2>&1

ip netns exec hzp-inet busybox httpd -f -p 80 -h "$T/www" &
PIDS+=($!)
ip netns exec hzp-inet busybox httpd -f -p 10.201.0.3:7777 -h "$T/www2" &
PIDS+=($!)
ip netns exec hzp-inet openssl s_server -quiet -www -accept 443 -cert "$T/cert.pem" \
	-key "$T/key.pem" >/dev/null 2>&1 &
PIDS+=($!)
# an HTTP/1.1 keep-alive server (port 8081), as a CDN serves many names from one address
# (cdn.test and other.test): it logs the Host and request line of every request it reads. Python's parser also
# splits header lines at a bare CR.
: >"$T/upstream.log"
ip netns exec hzp-inet python3 "$LIB/http-upstream.py" "$T/upstream.log" 10.201.0.4 8081 &
PIDS+=($!)
# A client for the keep-alive cases: sends each argument (Python escapes) on one connection,
# reading one response after each; prints what came back, then "closed" or "open".
cat >"$T/hclient.py" <<'PY'
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
out = b""
for req in sys.argv[3:]:
    s.sendall(req.encode().decode("unicode_escape").encode("latin-1"))
    time.sleep(0.3)
    try:
        d = s.recv(65536)
    except (ConnectionResetError, socket.timeout):
        d = b""
    out += d
    if not d:
        break
end = "open"
try:
    s.settimeout(3)
    while True:
        d = s.recv(65536)
        if not d:
            end = "closed"
            break
        out += d
except ConnectionResetError:
    end = "closed"
except socket.timeout:
    pass
sys.stdout.write(out.decode("latin-1") + "\n" + end + "\n")
PY
ip netns exec hzp-inet python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 7))
while True:
    d, a = s.recvfrom(2048)
    s.sendto(d, a)
' &
PIDS+=($!)
dnsmasq --no-daemon --no-resolv --no-hosts --conf-file=/dev/null --pid-file= \
	--listen-address=127.0.0.1 --bind-interfaces --port=5353 \
	--address=/allowed.test/10.201.0.2 --address=/allowed.test/fd00:201::2 \
	--address=/denied.test/10.201.0.2 --address=/rebind.test/127.0.0.1 \
	--address=/private.test/192.168.77.7 --address=/hostaddr.test/10.201.0.1 \
	--host-record=cdn.target.test,10.201.0.2 --cname=alias.test,cdn.target.test \
	--address=/cdn.test/10.201.0.4 --address=/other.test/10.201.0.4 \
	>"$T/dnsmasq.log" 2>&1 &
PIDS+=($!)

udp_echo() {
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
s.sendto(b"ping", ("10.201.0.2", 7))
sys.exit(0 if s.recvfrom(100)[0] == b"ping" else 1)
'
}

sleep 1
echo "1..89"
# What this script leans on: the restart rows resolve through the namespaces' resolv.conf
# (timeout 2 s, 2 attempts), so proxyd must answer within that once its control socket is back.
echo "# assumes: $(ulimit -n) open files (soft), $(nproc) CPUs; resolv.conf in hzp-c1: $(tr '\n' ' ' </etc/netns/hzp-c1/resolv.conf)"

# ---- 1: the world works without the jail ----
check "world: c1 reaches the HTTP server directly without rules" \
	in_c1 "${CURL[@]}" http://10.201.0.2/
check "world: c1 reaches UDP echo directly without rules" in_c1 bash -c "$(declare -f udp_echo); udp_echo"

# ---- the jail (what hezo-hook installs, written with nft here) ----
hezo_jail_rules | ip netns exec hzp-c1 nft -f - && hezo_jail_rules | ip netns exec hzp-c2 nft -f -

start_proxyd() { hezo_proxyd_start "$T/state" "$T/log" "$T/control.sock" --metrics "unix:$T/metrics.sock" >>"$T/proxyd.log" 2>&1; }
ctl() { "$PROXYD" --socket "$T/control.sock" --ctl "$@"; }

if start_proxyd; then ok "proxyd starts"; else not_ok "proxyd starts"; fi
status_is() { grep -q "^$2:[[:space:]]*$3\$" /proc/$1/status; }
# (its control socket may answer a moment before the last of these is in place: up to 2 s)
check "proxyd keeps no capability, no_new_privs, seccomp filter" \
	bash -c "$(declare -f status_is); for i in \$(seq 20); do
		status_is $PROXYD_PID CapEff 0000000000000000 &&
		status_is $PROXYD_PID CapPrm 0000000000000000 &&
		status_is $PROXYD_PID CapBnd 0000000000000000 &&
		status_is $PROXYD_PID NoNewPrivs 1 && status_is $PROXYD_PID Seccomp 2 && exit 0
		sleep 0.1; done; exit 1"
check "its netns helper keeps only CAP_SYS_ADMIN, under seccomp" \
	bash -c "$(declare -f status_is); h=\$(pgrep -P $PROXYD_PID) && [ -n \"\$h\" ] &&
		status_is \$h CapEff 0000000000200000 && status_is \$h CapBnd 0000000000200000 &&
		status_is \$h NoNewPrivs 1 && status_is \$h Seccomp 2"
EG1='{"mode":"proxy","allow":["allowed.test","cdn.test:8081","rebind.test","private.test","hostaddr.test","alias.test","10.201.0.3/32:7777"],"resolvers":["127.0.0.1:5353"],"allowRanges":["10.201.0.0/24","fd00:201::/64"]}'
EG2='{"mode":"proxy","allow":["10.201.0.3:7777"],"resolvers":["127.0.0.1:5353"]}'
check "register c1" ctl register c1 /run/netns/hzp-c1 "$EG1" projA
check "register c2" ctl register c2 /run/netns/hzp-c2 "$EG2" projB
refute "register refuses a bad allow entry" \
	ctl register c3 /run/netns/hzp-c2 '{"allow":["b\u00fccher.de"]}'
refute "register refuses a non-namespace fd" ctl register c3 /etc/hostname "$EG2"
check "list shows both" bash -c "$(declare -f ctl); PROXYD=$PROXYD T=$T; ctl list | grep -q '\"id\":\"c2\"'"

# ---- DNS ----
check "c1: allowed.test resolves (UDP, server named)" \
	bash -c "ip netns exec hzp-c1 busybox nslookup allowed.test 127.0.0.1 | grep -q 10.201.0.2"
check "c1: allowed.test resolves via any server address (redirected)" \
	bash -c "ip netns exec hzp-c1 busybox nslookup allowed.test 9.9.9.9 | grep -q 10.201.0.2"
check "c1: allowed.test AAAA answered (range allowed)" \
	bash -c "ip netns exec hzp-c1 busybox nslookup -type=aaaa allowed.test 127.0.0.1 | grep -q fd00:201::2"
check "c1: denied.test gets NXDOMAIN" \
	bash -c "ip netns exec hzp-c1 busybox nslookup denied.test 127.0.0.1 2>&1 | grep -q NXDOMAIN"
refute "c1: rebind.test does not resolve to 127.0.0.1" \
	bash -c "ip netns exec hzp-c1 busybox nslookup rebind.test 127.0.0.1 | sed -n '/^Name:/,\$p' | grep -q 127.0.0.1"
refute "c1: private.test does not resolve to 192.168.77.7" \
	bash -c "ip netns exec hzp-c1 busybox nslookup private.test 127.0.0.1 | sed -n '/^Name:/,\$p' | grep -q 192.168.77.7"
refute "c1: hostaddr.test does not resolve to the host's own address" \
	bash -c "ip netns exec hzp-c1 busybox nslookup hostaddr.test 127.0.0.1 | sed -n '/^Name:/,\$p' | grep -q 10.201.0.1"
check "c1: CNAME chain alias.test -> cdn.target.test answered" \
	bash -c "ip netns exec hzp-c1 busybox nslookup alias.test 127.0.0.1 | grep -q 10.201.0.2"
check "c1: DNS over TCP works" \
	bash -c "ip netns exec hzp-c1 python3 -c '
import socket, struct, sys
q = struct.pack(\">HHHHHH\", 0x1234, 0x0100, 1, 0, 0, 0) + b\"\\x07allowed\\x04test\\x00\" + struct.pack(\">HH\", 1, 1)
s = socket.create_connection((\"10.201.1.1\", 53), timeout=3)
s.sendall(struct.pack(\">H\", len(q)) + q)
l = struct.unpack(\">H\", s.recv(2))[0]
r = b\"\"
while len(r) < l: r += s.recv(l - len(r))
sys.exit(0 if bytes([10, 201, 0, 2]) in r and r[3] & 15 == 0 else 1)
'"

# ---- TCP ----
check "c1: HTTP to allowed.test works" \
	bash -c "ip netns exec hzp-c1 ${CURL[*]} -4 http://allowed.test/ | grep -q 'hello from allowed'"
check "c1: HTTP to allowed.test over IPv6 works" \
	bash -c "ip netns exec hzp-c1 ${CURL[*]} -6 http://allowed.test/ | grep -q 'hello from allowed'"
check "c1: HTTPS to allowed.test works (SNI)" \
	bash -c "ip netns exec hzp-c1 ${CURL[*]} -4 -k https://allowed.test/ | grep -qi 'openssl\|cipher'"
check "c1: busybox wget through the proxy works" \
	bash -c "ip netns exec hzp-c1 timeout 10 busybox wget -q -O - http://allowed.test/ | grep -q hello"
check "c1: HTTP to alias.test (CNAME) works" \
	bash -c "ip netns exec hzp-c1 ${CURL[*]} -4 http://alias.test/ | grep -q hello"
refute "c1: direct connection to the server's IP is refused" in_c1 "${CURL[@]}" http://10.201.0.2/
refute "c1: direct connection to an IP never resolved is refused" \
	in_c1 "${CURL[@]}" http://10.201.0.3/
refute "c1: IPv6 direct is refused" in_c1 "${CURL[@]}" -g "http://[fd00:201::2]/"
refute "c1: Host header naming a denied host is refused" \
	in_c1 "${CURL[@]}" -4 -H "Host: denied.test" http://allowed.test/
refute "c1: SNI naming a denied host at the allowed IP is refused" \
	in_c1 "${CURL[@]}" -k --resolve denied.test:443:10.201.0.2 https://denied.test/
refute "c1: allowed name on a port not allowed is refused" \
	in_c1 "${CURL[@]}" -4 http://allowed.test:7777/
check "c1: literal CIDR:port entry reaches a plain TCP service" \
	bash -c "ip netns exec hzp-c1 ${CURL[*]} http://10.201.0.3:7777/ | grep -q 'plain tcp'"
refute "c1: UDP echo is unreachable" in_c1 bash -c "$(declare -f udp_echo); udp_echo"
# The relays above went through upstream connects, and the DNS answers through the resolver: both
# latency histograms (docs/metrics.md) have them.
SCRAPE=$(curl -sS --max-time 5 --unix-socket "$T/metrics.sock" http://localhost/metrics 2>&1)
for h in upstream_connect dns_upstream; do
	hcount=$(sed -n "s/^hezo_proxyd_${h}_duration_seconds_count //p" <<<"$SCRAPE")
	hinf=$(sed -n "s/^hezo_proxyd_${h}_duration_seconds_bucket{le=\"+Inf\"} //p" <<<"$SCRAPE")
	if [ "${hcount:-0}" -ge 1 ] && [ "$hinf" = "$hcount" ]; then
		ok "metrics: hezo_proxyd_${h}_duration_seconds observed the relays above ($hcount, le=+Inf $hinf)"
	else
		not_ok "metrics: hezo_proxyd_${h}_duration_seconds observed the relays above (${hcount:-none}, le=+Inf ${hinf:-none})"
	fi
done
check "c1: a silent client is cut off after the 10 s header limit" \
	bash -c "ip netns exec hzp-c1 busybox nslookup allowed.test 127.0.0.1 >/dev/null; ip netns exec hzp-c1 python3 -c '
import socket, time
s = socket.create_connection((\"10.201.0.2\", 443), timeout=30)
t = time.time()
try:
    d = s.recv(10)
except ConnectionResetError:
    d = b\"\"
el = time.time() - t
print(el)
raise SystemExit(0 if d == b\"\" and 8 <= el <= 14 else 1)
'"

# ---- plain HTTP: every request on a connection is checked, its framing followed ----
hc() { ip netns exec hzp-c1 python3 "$T/hclient.py" 10.201.0.4 8081 "$@"; }
ip netns exec hzp-c1 busybox nslookup cdn.test 127.0.0.1 >/dev/null
check "c1: keep-alive, two requests for cdn.test on one connection both served" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'GET /ka1 HTTP/1.1\r\nHost: cdn.test\r\n\r\n' \
		'GET /ka2 HTTP/1.1\r\nHost: cdn.test\r\n\r\n') && [ \$(echo \"\$out\" | grep -c 'host=cdn.test') = 2 ] &&
		grep -q '\"GET /ka2 HTTP/1.1\"' $T/upstream.log"
check "c1: keep-alive second request naming other.test gets 403, upstream never sees it" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'GET / HTTP/1.1\r\nHost: cdn.test\r\n\r\n' \
		'GET /second HTTP/1.1\r\nHost: other.test\r\n\r\n') && echo \"\$out\" | grep -q 'host=cdn.test' &&
		echo \"\$out\" | grep -q '^HTTP/1.1 403' && echo \"\$out\" | grep -q '^closed' &&
		! grep -q 'other.test\|/second' $T/upstream.log"
check "netlog: the second-Host connection is a deny with the reason" \
	grep -q '"name":"cdn.test","verdict":"deny","reason":"a later request'"'"'s Host names another host' "$T/log/c1.jsonl"
check "c1: pipelined requests in one write: the other.test one never reaches upstream" \
	bash -c "$(declare -f hc); T=$T; hc 'GET /p1 HTTP/1.1\r\nHost: cdn.test\r\n\r\nGET /p2 HTTP/1.1\r\nHost: other.test\r\n\r\n' >/dev/null &&
		grep -q '\"GET /p1 HTTP/1.1\"' $T/upstream.log && ! grep -q '/p2' $T/upstream.log"
check "c1: a bare CR hiding a second Host is refused, upstream serves nothing" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'GET /?t=bareCR HTTP/1.1\r\nX-A: a\rHost: other.test\r\nHost: cdn.test\r\n\r\n') &&
		! echo \"\$out\" | grep -q 'host=' && ! grep -q 'bareCR' $T/upstream.log"
check "netlog: the bare-CR request is a deny for its framing" \
	grep -q '"verdict":"deny","reason":"not an HTTP/1 request with one Host header and unambiguous framing"' "$T/log/c1.jsonl"
check "c1: Content-Length with Transfer-Encoding is refused, upstream serves nothing" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'POST /clte HTTP/1.1\r\nHost: cdn.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n') &&
		! echo \"\$out\" | grep -q 'host=' && ! grep -q 'clte' $T/upstream.log"
check "c1: a body that looks like a request passes as the body; the next request is checked" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'POST /b HTTP/1.1\r\nHost: cdn.test\r\nContent-Length: 42\r\n\r\nGET /inbody HTTP/1.1\r\nHost: other.test\r\n\r\n' \
		'GET /after-body HTTP/1.1\r\nHost: other.test\r\n\r\n') && echo \"\$out\" | grep -q '^HTTP/1.1 403' &&
		grep -q '\"POST /b HTTP/1.1\" body=42' $T/upstream.log && ! grep -q 'after-body\|GET /inbody' $T/upstream.log"
check "c1: a chunked body passes by its framing; the request after it is checked" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'POST /chunked HTTP/1.1\r\nHost: cdn.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n20\r\nGET / HTTP/1.1\r\nHost: x.test\r\n\r\n\r\n0\r\n\r\n' \
		'GET /after-chunked HTTP/1.1\r\nHost: other.test\r\n\r\n') && echo \"\$out\" | grep -q 'host=cdn.test' &&
		echo \"\$out\" | grep -q '^HTTP/1.1 403' && grep -q '\"POST /chunked HTTP/1.1\" body=37' $T/upstream.log &&
		! grep -q 'after-chunked' $T/upstream.log"
check "c1: a WebSocket upgrade the server accepts (101) relays the rest as it comes" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'GET /ws HTTP/1.1\r\nHost: cdn.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n' \
		'frame-bytes\r\n\r\nnot http') && echo \"\$out\" | grep -q '^HTTP/1.1 101' &&
		echo \"\$out\" | grep -q 'echo:frame-bytes'"
check "c1: an Upgrade the server declines keeps every later request checked" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'GET /ws-declined HTTP/1.1\r\nHost: cdn.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n' \
		'GET /after-declined HTTP/1.1\r\nHost: other.test\r\n\r\n') && echo \"\$out\" | grep -q 'host=cdn.test' &&
		echo \"\$out\" | grep -q '^HTTP/1.1 403' && ! grep -q 'after-declined' $T/upstream.log"
# An Upgrade request with a body (red team F3), to a server that answers as soon as the head is
# read and reads the body after (/early): the body passes as the body, and the request after it
# is judged whatever the answer, never the body's own bytes.
check "c1: an Upgrade with a body the server declines: the request hidden past its body is judged (403)" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'POST /early-up HTTP/1.1\r\nHost: cdn.test\r\nUpgrade: foo\r\nConnection: Upgrade\r\nContent-Length: 63\r\n\r\nPOST /inner-f3 HTTP/1.1\r\nHost: cdn.test\r\nContent-Length: 45\r\n\r\nGET /hidden-f3 HTTP/1.1\r\nHost: other.test\r\n\r\n') &&
		echo \"\$out\" | grep -q 'host=cdn.test' && echo \"\$out\" | grep -q '^HTTP/1.1 403' &&
		grep -q '\"POST /early-up HTTP/1.1\" body=63' $T/upstream.log && ! grep -q 'hidden-f3\|inner-f3' $T/upstream.log"
check "c1: an Upgrade with a body the server declines: the next request is served" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'POST /early-up2 HTTP/1.1\r\nHost: cdn.test\r\nUpgrade: foo\r\nConnection: Upgrade\r\nContent-Length: 5\r\n\r\nhello' \
		'GET /after-up-body HTTP/1.1\r\nHost: cdn.test\r\n\r\n') && [ \$(echo \"\$out\" | grep -c 'host=cdn.test') = 2 ] &&
		grep -q '\"POST /early-up2 HTTP/1.1\" body=5' $T/upstream.log && grep -q '\"GET /after-up-body HTTP/1.1\"' $T/upstream.log"
# Every request head judged is a netlog line of its own ("proto":"http"), allowed or not.
sleep 0.2
check "netlog: each request of the keep-alive connection is a line, the second one too" \
	grep -q '"proto":"http",.*"name":"cdn.test","verdict":"allow","reason":"host","method":"GET","path":"/ka2"' "$T/log/c1.jsonl"
check "netlog: the pipelined request naming other.test is a deny line of its own" \
	grep -q '"proto":"http",.*"name":"other.test","verdict":"deny","reason":"a later request'"'"'s Host names another host than the connection was allowed for","method":"GET","path":"/p2"' "$T/log/c1.jsonl"
# A body on GET, HEAD, OPTIONS, TRACE or DELETE is refused with a 400 before any of it goes: this
# upstream, like python's http.server, ignores such a body and reads it as the next request,
# whose Host proxyd would never have judged.
SMUG='GET /smuggled HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n'
SMUG_LEN=$(printf '%b' "$SMUG" | wc -c)
for m in GET HEAD OPTIONS TRACE DELETE; do
	check "c1: a $m whose Content-Length body is a request for other.test gets proxyd's 400; upstream sees neither" \
		bash -c "$(declare -f hc); T=$T; out=\$(hc '$m /smug-$m HTTP/1.1\r\nHost: cdn.test\r\nContent-Length: $SMUG_LEN\r\n\r\n$SMUG') &&
			echo \"\$out\" | grep -q '^HTTP/1.1 400 Bad Request' && echo \"\$out\" | grep -q 'hezo-proxyd' &&
			! echo \"\$out\" | grep -q 'host=' && ! grep -q 'smug-$m\|/smuggled' $T/upstream.log"
done
check "netlog: the GET with a body is a deny line naming the reason, method and path" \
	grep -q '"proto":"http",.*"name":"cdn.test","verdict":"deny","reason":"a body on a GET, HEAD, OPTIONS, TRACE or DELETE request (a server may read it as another request)","method":"GET","path":"/smug-GET"' "$T/log/c1.jsonl"
check "c1: a later GET with a body on a kept-alive connection gets the 400 after the first answer" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'GET /first HTTP/1.1\r\nHost: cdn.test\r\n\r\n' \
		'GET /smug-later HTTP/1.1\r\nHost: cdn.test\r\nContent-Length: $SMUG_LEN\r\n\r\n$SMUG') &&
		echo \"\$out\" | grep -q 'host=cdn.test' && echo \"\$out\" | grep -q '^HTTP/1.1 400 Bad Request' &&
		grep -q '\"GET /first HTTP/1.1\"' $T/upstream.log && ! grep -q 'smug-later\|/smuggled' $T/upstream.log"
check "c1: a DELETE with a chunked body gets proxyd's 400; upstream sees nothing of it" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'DELETE /smug-te HTTP/1.1\r\nHost: cdn.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n') &&
		echo \"\$out\" | grep -q '^HTTP/1.1 400 Bad Request' && echo \"\$out\" | grep -q 'hezo-proxyd' &&
		! grep -q 'smug-te' $T/upstream.log"
check "c1: a later request with a folded header line gets 400 after the first answer; upstream never sees it" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'GET /before-fold HTTP/1.1\r\nHost: cdn.test\r\n\r\n' \
		'GET /folded HTTP/1.1\r\nHost: cdn.test\r\nX-A: a\r\n Host: other.test\r\n\r\n') &&
		echo \"\$out\" | grep -q 'host=cdn.test' && echo \"\$out\" | grep -q '^HTTP/1.1 400 Bad Request' &&
		grep -q 'before-fold' $T/upstream.log && ! grep -q '/folded' $T/upstream.log"
sleep 0.2
check "netlog: the unreadable later request is an http deny line with its reason" \
	grep -q '"proto":"http",.*"name":"cdn.test","verdict":"deny","reason":"a later request is not HTTP/1 with one Host header and unambiguous framing"' "$T/log/c1.jsonl"
check "c1: Expect: 100-continue: the body passes by its Content-Length, the request after it is judged" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'PUT /expect HTTP/1.1\r\nHost: cdn.test\r\nExpect: 100-continue\r\nContent-Length: 41\r\n\r\n' \
		'GET /in-expect HTTP/1.1\r\nHost: x.test\r\n\r\n' 'GET /after-expect HTTP/1.1\r\nHost: other.test\r\n\r\n') &&
		echo \"\$out\" | grep -q '^HTTP/1.1 100' && echo \"\$out\" | grep -q '^HTTP/1.1 403' &&
		grep -q '\"PUT /expect HTTP/1.1\" body=41' $T/upstream.log && ! grep -q 'in-expect\|after-expect' $T/upstream.log"
check "c1: a GET with Content-Length: 0 has no body and is served" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'GET /cl0 HTTP/1.1\r\nHost: cdn.test\r\nContent-Length: 0\r\n\r\n') &&
		echo \"\$out\" | grep -q 'host=cdn.test' && grep -q '\"GET /cl0 HTTP/1.1\" body=0' $T/upstream.log"
check "c1: HTTP/1.0 keep-alive: a POST body and the GET after it are both served" \
	bash -c "$(declare -f hc); T=$T; out=\$(hc 'POST /k10 HTTP/1.0\r\nHost: cdn.test\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhelloGET /k10b HTTP/1.0\r\nHost: cdn.test\r\n\r\n') &&
		[ \$(echo \"\$out\" | grep -c 'host=cdn.test') = 2 ] && grep -q '\"POST /k10 HTTP/1.0\" body=5' $T/upstream.log &&
		grep -q '\"GET /k10b HTTP/1.0\"' $T/upstream.log"
check "c1: a port no entry allows is refused at accept (netlog reason, no wait)" \
	bash -c "ip netns exec hzp-c1 python3 -c '
import socket, time
t = time.time()
try:
    s = socket.create_connection((\"10.201.0.2\", 8080), timeout=5)
    d = s.recv(10)
except ConnectionResetError:
    d = b\"\"
raise SystemExit(0 if d == b\"\" and time.time() - t < 0.4 else 1)
' && python3 -c '
import json, sys
import time
for _ in range(30):  # netlog lines are written in batches
    hit = [o for o in map(json.loads, open(\"$T/log/c1.jsonl\")) if o[\"dst\"] == \"10.201.0.2:8080\"]
    if hit:
        break
    time.sleep(0.1)
sys.exit(0 if hit and all(o[\"verdict\"] == \"deny\" and o[\"reason\"] == \"port not allowed for any name resolved to this address\" and o[\"durationMs\"] < 100 for o in hit) else 1)
'"
check "c1: 8 MiB through the relay arrive intact" \
	bash -c "[ \"\$(ip netns exec hzp-c1 curl -sS --max-time 20 -4 http://allowed.test/big | sha256sum)\" = \"\$(sha256sum <$T/www/big)\" ]"

# ---- limits: one container's flood does not starve another ----
check "c1 at its connection limit: extra connections refused, c2 still served" \
	bash -c "ip netns exec hzp-c1 busybox nslookup allowed.test 127.0.0.1 >/dev/null
ip netns exec hzp-c1 python3 -c '
import socket, subprocess, sys
held = []
for i in range(300):
    try:
        held.append(socket.create_connection((\"10.201.0.2\", 80), timeout=2))
    except OSError:
        pass
r = subprocess.run([\"ip\", \"netns\", \"exec\", \"hzp-c2\", \"curl\", \"-sS\", \"--max-time\", \"5\", \"http://10.201.0.3:7777/\"], capture_output=True)
sys.exit(0 if b\"plain tcp\" in r.stdout else 1)
' && grep -q 'connection limit reached' $T/log/c1.jsonl"
check "c2 flooding DNS: rate-limited, c1 still resolves" \
	bash -c "ip netns exec hzp-c2 python3 -c '
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
q = struct.pack(\">HHHHHH\", 1, 0x0100, 1, 0, 0, 0) + b\"\\x05flood\\x04test\\x00\" + struct.pack(\">HH\", 1, 1)
for i in range(3000):
    s.sendto(q, (\"127.0.0.1\", 53))
' && ip netns exec hzp-c1 busybox nslookup allowed.test 127.0.0.1 | grep -q 10.201.0.2 && $PROXYD --socket $T/control.sock --ctl stats | python3 -c '
import json, sys
st = json.load(sys.stdin)
c2 = [c for c in st[\"perContainer\"] if c[\"id\"] == \"c2\"][0]
sys.exit(0 if c2[\"dnsRateLimited\"] > 0 else 1)
'"

# ---- identity: c2 cannot use c1's allow-list or pins ----
check "c2: allowed.test is NXDOMAIN for c2" \
	bash -c "ip netns exec hzp-c2 busybox nslookup allowed.test 127.0.0.1 2>&1 | grep -q NXDOMAIN"
refute "c2: HTTP to allowed.test fails" in_c2 "${CURL[@]}" http://allowed.test/
refute "c2: allowed.test at the IP c1 resolved is refused" \
	in_c2 "${CURL[@]}" --resolve allowed.test:80:10.201.0.2 http://allowed.test/

# ---- proxyd down: nothing gets out; back up: works without re-registering ----
{
	kill -9 "$PROXYD_PID"
	wait "$PROXYD_PID"
} 2>/dev/null
PROXYD_PID=
rm -f "$T/control.sock"
refute "proxyd killed: c1 HTTP via the pinned IP fails" \
	in_c1 "${CURL[@]}" --resolve allowed.test:80:10.201.0.2 http://allowed.test/
refute "proxyd killed: c1 direct IP fails" in_c1 "${CURL[@]}" http://10.201.0.2/
refute "proxyd killed: c1 DNS gets no answer" \
	bash -c "ip netns exec hzp-c1 timeout 8 busybox nslookup allowed.test 127.0.0.1 | grep -q 10.201.0.2"
if start_proxyd; then ok "proxyd restarts"; else not_ok "proxyd restarts"; fi
# A caller (the hook, an operator, this test) takes the control socket as the sign that proxyd
# serves again, so the running containers' listeners must be back before it appears; what they
# send meanwhile waits in those listeners' queues. Looked at once, at once.
check "restarted: c1's and c2's DNS and TCP listeners are back when its control socket appears" \
	bash -c "for c in hzp-c1 hzp-c2; do ip netns exec \$c ss -Hlun src 127.0.0.1:15053 | grep -q . &&
		ip netns exec \$c ss -Hltn src 127.0.0.1:15001 | grep -q . || exit 1; done"
check "restarted: c1 HTTP to allowed.test works again" \
	bash -c "ip netns exec hzp-c1 ${CURL[*]} -4 http://allowed.test/ | grep -q 'hello from allowed'"
refute "restarted: c1 direct IP still refused" in_c1 "${CURL[@]}" http://10.201.0.2/
check "restarted: c2 still jailed (NXDOMAIN)" \
	bash -c "ip netns exec hzp-c2 busybox nslookup allowed.test 127.0.0.1 2>&1 | grep -q NXDOMAIN"

# ---- netlog ----
check "netlog: c1 has allowed and refused connections" \
	bash -c "grep -q '\"proto\":\"tcp\".*\"verdict\":\"allow\"' $T/log/c1.jsonl && grep -q '\"verdict\":\"deny\",\"reason\":\"SNI names a host not allowed\"' $T/log/c1.jsonl"
check "netlog: c1 has DNS lines with answers and NXDOMAIN" \
	bash -c "grep -q '\"name\":\"allowed.test\",\"qtype\":\"A\",\"verdict\":\"allow\"' $T/log/c1.jsonl && grep -q '\"name\":\"denied.test\".*NXDOMAIN' $T/log/c1.jsonl"
check "netlog: every line is JSON with the documented fields" \
	bash -c "python3 -c '
import json, sys
for l in open(\"$T/log/c1.jsonl\"):
    o = json.loads(l)
    for k in (\"time\", \"container\", \"project\", \"proto\", \"src\", \"dst\", \"name\", \"verdict\", \"reason\", \"durationMs\"):
        assert k in o, (k, l)
    assert o[\"container\"] == \"c1\" and o[\"project\"] == \"projA\"
'"
# Addresses, ports and times are formatted by hand (no printf): each must read back as itself.
check "netlog: times, addresses and answers are canonical" \
	bash -c "python3 -c '
import ipaddress, json, re
n6 = 0
for l in open(\"$T/log/c1.jsonl\"):
    o = json.loads(l)
    assert re.fullmatch(r\"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z\", o[\"time\"]), l
    for k in (\"src\", \"dst\"):
        if o[k] == \"-\":
            continue
        m = re.fullmatch(r\"(?:\\[([0-9a-f:.]+)\\]|([0-9.]+)):(\\d+)\", o[k])
        assert m, (k, l)
        ip = m.group(1) or m.group(2)
        assert str(ipaddress.ip_address(ip)) == ip and 0 < int(m.group(3)) < 65536, (k, l)
        assert str(int(m.group(3))) == m.group(3), (k, l)
        n6 += m.group(1) is not None
    for a in o.get(\"answers\", []):
        assert str(ipaddress.ip_address(a)) == a, (a, l)
    assert isinstance(o[\"durationMs\"], int)
assert n6 > 0, \"no IPv6 address in the log\"
'"
if [ -x "$NETLOG" ]; then
	check "netlog CLI --blocked prints only refused lines" \
		bash -c "HEZO_NETLOG_DIR=$T/log $NETLOG --blocked c1 | grep -q deny && ! HEZO_NETLOG_DIR=$T/log $NETLOG --blocked c1 | grep -q '\"verdict\":\"allow\"'"
	check "netlog CLI --follow prints lines as they are written" \
		bash -c "HEZO_NETLOG_DIR=$T/log $NETLOG --follow c1 >$T/follow.out & f=\$!; sleep 0.5
			ip netns exec hzp-c1 busybox nslookup follow-marker.test 127.0.0.1 >/dev/null 2>&1
			sleep 1; kill \$f; grep -q follow-marker.test $T/follow.out"
	refute "netlog CLI refuses an ambiguous id prefix" env HEZO_NETLOG_DIR="$T/log" "$NETLOG" c
else
	ok "netlog CLI --blocked prints only refused lines # SKIP no netlog tool"
	ok "netlog CLI --follow prints lines as they are written # SKIP no netlog tool"
	ok "netlog CLI refuses an ambiguous id prefix # SKIP no netlog tool"
fi

# ---- port 0 (after the netlog checks above, which read every port as 1..65535) ----
check "c1: port 0 at an allowed name's address is refused at accept, never relayed" \
	bash -c "ip netns exec hzp-c1 busybox nslookup cdn.test 127.0.0.1 >/dev/null; ip netns exec hzp-c1 python3 -c '
import socket
try:
    s = socket.create_connection((\"10.201.0.4\", 0), timeout=5)
    s.recv(10)
except OSError:
    pass
'; python3 -c '
import json, sys
import time
for _ in range(30):  # netlog lines are written in batches
    hit = [o for o in map(json.loads, open(\"$T/log/c1.jsonl\")) if o[\"dst\"] == \"10.201.0.4:0\"]
    if hit:
        break
    time.sleep(0.1)
sys.exit(0 if hit and all(o[\"verdict\"] == \"deny\" and o[\"reason\"] == \"port not allowed for any name resolved to this address\" for o in hit) else 1)
'"

# ---- deregistration ----
check "deregister c2" ctl deregister c2
check "deregistered: state and namespace mount gone" \
	bash -c "[ ! -e $T/state/containers/c2.json ] && [ ! -e $T/state/netns/c2 ]"

refute "proxyd's log shows no sanitizer report or error" \
	grep -E "Sanitizer|runtime error|\"level\":\"error\"" "$T/proxyd.log"

echo "# proxyd log:"
sed 's/^/#   /' "$T/proxyd.log" | tail -n 20
exit $((failed > 0))

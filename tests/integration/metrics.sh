#!/bin/bash
# Integration: hezo-proxyd's Prometheus endpoint (--metrics, docs/metrics.md, issues 18.3 and 32).
# Two boxes (network namespaces this test makes) registered with a real proxyd send it a refused
# DNS query, an allowed one that fails (no resolver) and a refused connection over their own
# loopback; the scrape, on a loopback port and on a root-only unix socket, is parsed with
# python3-prometheus-client's parser and a line-by-line lint of the naming guide, and its figures
# are compared with `--ctl stats`. No traffic leaves the test's namespaces.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/proxyd.sh
. "$here/../lib/proxyd.sh"

PROXYD=${HEZO_PROXYD_BIN:-$HEZO_BUILD_DIR/proxyd/hezo-proxyd}
PY=/usr/bin/python3
hezo_require_root
hezo_require_tools ip curl jq "$PY"
[ -x "$PROXYD" ] || hezo_cannot_run "hezo-proxyd not built: $PROXYD"
"$PY" -c 'import prometheus_client.parser' 2>/dev/null ||
	hezo_cannot_run "python3-prometheus-client missing (tests/setup.sh installs it)"

mkdir -p "$HEZO_TEST_DIR"
T=$(mktemp -d "$HEZO_TEST_DIR/metrics.XXXXXX")
tap_cleanup "rm -rf '$T'"
NS=(hzah-m1-$$ hzah-m2-$$)
for ns in "${NS[@]}"; do
	ip netns add "$ns" || bail_out "cannot create netns $ns"
	tap_cleanup "ip netns del '$ns'"
	ip -n "$ns" link set lo up
done
PORT=$((20000 + $$ % 20000))
SOCK=$T/metrics.sock

# start PROXYD_ARGS...: proxyd in the background; sets PID.
start()
{
	local rc=0
	hezo_proxyd_start "$T/state" "$T/log" "$T/control.sock" "$@" >>"$T/proxyd.log" 2>&1 || rc=$?
	PID=$PROXYD_PID
	tap_cleanup "kill $PID"
	return $rc
}
ctl() { "$PROXYD" --socket "$T/control.sock" --ctl "$@"; }

# --- refused addresses ------------------------------------------------------------------------------
out=$("$PROXYD" --state-dir "$T/x" --log-dir "$T/x" --socket "$T/x.sock" --metrics 10.1.2.3:9100 2>&1 </dev/null) && rc=0 || rc=$?
expect_ne "$rc" 0 "--metrics on a non-loopback address is refused"
expect_match "$out" "--metrics 10.1.2.3:9100: only a loopback address or unix:PATH" "... saying why"
out=$("$PROXYD" --state-dir "$T/x" --log-dir "$T/x" --socket "$T/x.sock" --metrics localhost 2>&1 </dev/null) && rc=0 || rc=$?
expect_ne "$rc" 0 "--metrics without a port is refused"

# --- off by default -----------------------------------------------------------------------------------
start || bail_out "proxyd does not start: $(tail -n 5 "$T/proxyd.log")"
ss -Hltn "sport = :$PORT" | grep -q . && not_ok "no metrics port without --metrics" || ok "no metrics port without --metrics"
kill "$PID"
wait "$PID" 2>/dev/null

# --- a loopback port ----------------------------------------------------------------------------------
start --metrics "127.0.0.1:$PORT" || bail_out "proxyd --metrics does not start: $(tail -n 5 "$T/proxyd.log")"
EG='{"allow":["allowed.test"]}'
check "register box m1 (project pa)" ctl register m1 "/run/netns/${NS[0]}" "$EG" pa
check "register box m2 (project pb)" ctl register m2 "/run/netns/${NS[1]}" "$EG" pb
# m1: a DNS query for a name it may not resolve, and a connection to a host it may not reach, both to
# proxyd's listeners on m1's own loopback.
ip netns exec "${NS[0]}" "$PY" - <<'EOF'
import socket, struct
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p.encode() for p in "denied.test".split(".")) + b"\0"
q += struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(q, ("127.0.0.1", 15053))
try:
    s.recv(512)
except OSError:
    pass
# A name it may resolve: proxyd has no resolver, so the query fails (SERVFAIL) the upstream way.
q = struct.pack(">HHHHHH", 0x1235, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p.encode() for p in "allowed.test".split(".")) + b"\0"
q += struct.pack(">HH", 1, 1)
s.sendto(q, ("127.0.0.1", 15053))
try:
    s.recv(512)
except OSError:
    pass
try:
    c = socket.create_connection(("127.0.0.1", 15001), timeout=3)
    c.sendall(b"GET / HTTP/1.0\r\nHost: denied.test\r\n\r\n")
    c.recv(512)
except OSError:
    pass  # refused with a reset: what is counted
EOF
sleep 0.5
SCRAPE=$T/scrape.txt
curl -sS --max-time 5 -D "$T/headers" -o "$SCRAPE" "http://127.0.0.1:$PORT/metrics" && rc=0 || rc=$?
expect_eq "$rc" 0 "scrape http://127.0.0.1:$PORT/metrics"
expect_match "$(cat "$T/headers")" "Content-Type: text/plain; version=0.0.4" "... served as text format 0.0.4"
STATS=$(ctl stats)

# parse FILE: every sample as "NAME{id,project} VALUE" lines, and every family's TYPE and HELP,
# through the real parser (it raises on anything malformed).
parse()
{
	"$PY" - "$1" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
for fam in text_string_to_metric_families(text):
    print("family %s %s %s" % (fam.name, fam.type, "help" if fam.documentation else "nohelp"))
    for s in fam.samples:
        lab = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
        print("sample %s{%s} %d" % (s.name, lab, s.value))
EOF
}
P=$(parse "$SCRAPE" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "python3-prometheus-client parses the scrape" || diag "$P"
expect_eq "$(grep -c '^family .* nohelp$' <<<"$P")" 0 "every family has # HELP"
expect_eq "$(grep -c '^# TYPE ' "$SCRAPE")" "$(grep -c '^# HELP ' "$SCRAPE")" "every family has # TYPE"
for f in connections_accepted connections sent_bytes received_bytes secrets_substituted \
	secrets_masked agent_requests h2_streams dns_queries registrations deregistrations control_requests \
	tls_leaf_lookups; do
	expect_match "$P" "^family hezo_proxyd_$f counter help$" "counter hezo_proxyd_${f}_total"
done
for f in connections_open registered_boxes; do
	expect_match "$P" "^family hezo_proxyd_$f gauge help$" "gauge hezo_proxyd_$f"
done
for f in hezo_proxyd_upstream_connect_duration_seconds hezo_proxyd_dns_upstream_duration_seconds; do
	expect_match "$P" "^family $f histogram help$" "histogram $f"
done
for f in process_open_fds process_resident_memory_bytes process_start_time_seconds; do
	expect_match "$P" "^family $f gauge help$" "gauge $f"
done
VERSION=$(sed -n "s/^ *version : '\([^']*\)',$/\1/p" "$HEZO_SOURCE_DIR/meson.build")
expect_match "$P" "^sample hezo_build_info\{commit=[^,]+,version=$VERSION\} 1$" "hezo_build_info{version=$VERSION,commit} 1"

# lint FILE: the exposition by the Prometheus naming guide and the text format's rules, line by
# line (the client parser lets much of this pass): every family has # HELP and # TYPE before its
# samples, counters' samples end in _total and nothing else does, outcomes are a label rather than
# a family each, histograms' le rise with their counts, and le="+Inf" equals _count.
lint()
{
	"$PY" - "$1" <<'EOF'
import re, sys
bad, helps, types, hist = [], {}, {}, {}
for line in open(sys.argv[1]).read().splitlines():
    m = re.match(r'^# (HELP|TYPE) (\S+) ?(.*)$', line)
    if m:
        (helps if m.group(1) == 'HELP' else types)[m.group(2)] = m.group(3)
        continue
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
    if not m:
        bad.append('malformed: ' + line)
        continue
    name, labels, value = m.group(1), m.group(3) or '', float(m.group(4))
    fam = name
    for suf in ('_bucket', '_sum', '_count'):
        if name.endswith(suf) and types.get(name[:-len(suf)]) == 'histogram':
            fam = name[:-len(suf)]
    if fam not in helps or fam not in types:
        bad.append('no HELP and TYPE before ' + name)
        continue
    if (types[fam] == 'counter') != name.endswith('_total'):
        bad.append('%s %s: _total is for counters' % (types[fam], name))
    if re.search(r'_(allowed|refused|denied|failed|errors|ratelimited|rate_limited)(_total)?$', fam):
        bad.append('an outcome in a name, not a result label: ' + fam)
    if 'ratelimited' in line:
        bad.append('spelled ratelimited: ' + line)
    if types[fam] == 'histogram':
        h = hist.setdefault(fam, {'b': [], 'count': None})
        if name.endswith('_bucket'):
            le = re.search(r'le="([^"]*)"', labels).group(1)
            h['b'].append((float('inf') if le == '+Inf' else float(le), value))
        elif name.endswith('_count'):
            h['count'] = value
for fam, h in hist.items():
    les, counts = [le for le, _ in h['b']], [c for _, c in h['b']]
    if les != sorted(set(les)):
        bad.append(fam + ': le does not rise')
    if counts != sorted(counts):
        bad.append(fam + ': bucket counts fall')
    if not les or les[-1] != float('inf') or counts[-1] != h['count']:
        bad.append(fam + ': le="+Inf" is not _count')
for fam in types:
    if fam not in helps:
        bad.append('TYPE without HELP: ' + fam)
print('\n'.join(bad) if bad else 'clean')
EOF
}
L=$(lint "$SCRAPE" 2>&1)
expect_eq "$L" clean "the exposition by the naming guide: HELP/TYPE, _total, result labels, histograms" || diag "$L"

# same_stat NAME ID FIELD [RESULT]: the scrape's sample (with that result label) equals --ctl
# stats' field for that box.
same_stat()
{
	local want got res=${4:+,result=$4}
	want=$(jq -r --arg id "$2" --arg f "$3" '.perContainer[] | select(.id == $id) | .[$f]' <<<"$STATS")
	got=$(sed -n "s/^sample hezo_proxyd_$1_total{id=$2,project=[a-z]*$res} //p" <<<"$P")
	expect_eq "$got" "$want" "[$2] hezo_proxyd_$1_total{${res#,}} = --ctl stats .$3 ($want)"
}
same_stat dns_queries m1 dnsRefused refused
same_stat dns_queries m1 dnsFailed failed
same_stat dns_queries m1 dnsRateLimited rate_limited
same_stat connections_accepted m1 connsAccepted
same_stat connections m1 connsRefused refused
same_stat dns_queries m2 dnsRefused refused
expect_match "$P" '^sample hezo_proxyd_dns_queries_total\{id=m1,project=pa,result=refused\} [1-9]' "[m1] its DNS query was refused"
expect_match "$P" '^sample hezo_proxyd_dns_queries_total\{id=m1,project=pa,result=failed\} [1-9]' "[m1] its allowed query failed (no resolver)"
expect_match "$P" '^sample hezo_proxyd_dns_upstream_duration_seconds_count\{\} [1-9]' "... and is in the DNS latency histogram"
expect_match "$P" '^sample hezo_proxyd_connections_total\{id=m1,project=pa,result=refused\} [1-9]' "[m1] its connection was refused"
expect_match "$P" '^sample hezo_proxyd_dns_queries_total\{id=m2,project=pb,result=refused\} 0$' "[m2] sent nothing"
expect_match "$P" '^sample hezo_proxyd_registered_boxes\{\} 2$' "2 boxes registered"
expect_match "$P" '^sample hezo_proxyd_registrations_total\{result=accepted\} 2$' "2 registrations"
expect_match "$P" '^sample process_open_fds\{\} [1-9]' "process_open_fds counts proxyd's fds"
expect_match "$P" '^sample process_resident_memory_bytes\{\} [1-9]' "process_resident_memory_bytes is read"
start_s=$(sed -n 's/^sample process_start_time_seconds{} //p' <<<"$P")
now_s=$(date +%s)
expect_eq "$((${start_s:-0} <= now_s && ${start_s:-0} > now_s - 600))" 1 "process_start_time_seconds is proxyd's start ($start_s, now $now_s)"
ctl register m3 /etc/hostname "$EG" >/dev/null 2>&1
ctl deregister m2 >/dev/null 2>&1
P=$(parse <(curl -sS --max-time 5 "http://127.0.0.1:$PORT/metrics") 2>&1)
expect_match "$P" '^sample hezo_proxyd_registrations_total\{result=refused\} 1$' "a refused registration counts"
expect_match "$P" '^sample hezo_proxyd_deregistrations_total\{\} 1$' "a deregistration counts"
expect_no_match "$P" 'id=m2,' "a deregistered box has no series"
expect_eq "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PORT/other")" 404 "another path: 404"
kill "$PID"
wait "$PID" 2>/dev/null

# --- a root-only unix socket --------------------------------------------------------------------------
start --metrics "unix:$SOCK" || bail_out "proxyd --metrics unix: does not start: $(tail -n 5 "$T/proxyd.log")"
expect_eq "$(stat -c '%a %U' "$SOCK" 2>&1)" "600 root" "the unix socket is mode 0600, root's"
P=$(parse <(curl -sS --max-time 5 --unix-socket "$SOCK" http://localhost/metrics) 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "scrape over the unix socket parses"
# (A restarted proxyd drops registrations whose namespace has no process: these have none.)
expect_match "$P" '^family hezo_proxyd_registered_boxes gauge help$' "... with the same families"
if id nobody >/dev/null 2>&1; then
	out=$(setpriv --reuid nobody --regid nogroup --clear-groups curl -sS --max-time 5 --unix-socket "$SOCK" \
		http://localhost/metrics 2>&1) && rc=0 || rc=$?
	expect_ne "$rc" 0 "a non-root client gets nothing from the unix socket"
fi
tap_done

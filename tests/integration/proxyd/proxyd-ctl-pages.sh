#!/bin/bash
# `hezo-proxyd --ctl list` and `stats` with more registrations than one control message holds:
# proxyd answers in pages and the client prints one merged document. Registers HEZO_PAGES_REGS
# containers (default 1500, each its own network namespace, each with a long allow list), then
# checks that list and stats parse as JSON and name every id exactly once, that a page stays
# under 64 KiB, and that paging while containers come and go shows no id twice. TAP output.
#
# Needs root, ip, python3. Creates network namespaces hzpg-* and contacts nothing. Environment:
# HEZO_PROXYD (the daemon), HEZO_REQUIRE_INTEGRATION=1 to fail instead of skipping when not root.
set -u

# shellcheck source=tests/lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/tap.sh"

PROXYD=${HEZO_PROXYD:-$(dirname "$0")/../../../build/proxyd/hezo-proxyd}
REGS=${HEZO_PAGES_REGS:-1500}

skip_all() {
	if [ "${HEZO_REQUIRE_INTEGRATION:-0}" = 1 ]; then
		echo "# HEZO_REQUIRE_INTEGRATION=1: failing instead of skipping ($1)" >&2
		bail_out "$1"
	fi
	tap_skip_all "$1"
}

[ "$(id -u)" = 0 ] || skip_all "needs root"
for tool in ip python3; do
	command -v $tool >/dev/null 2>&1 || skip_all "$tool not installed"
done
[ -x "$PROXYD" ] || skip_all "no hezo-proxyd at $PROXYD"

T=$(mktemp -d /tmp/hzpg-test.XXXXXX)
PROXYD_PID=

cleanup() {
	set +e
	trap '' INT TERM
	[ -n "$PROXYD_PID" ] && kill "$PROXYD_PID" 2>/dev/null && wait "$PROXYD_PID" 2>/dev/null
	for m in "$T"/state/netns/*; do
		[ -e "$m" ] && umount -l "$m" 2>/dev/null
	done
	ip netns list | awk '/^hzpg-/ {print "netns del", $1}' >"$T/del.batch"
	ip -force -batch "$T/del.batch" 2>/dev/null
	rm -rf "$T"
}
tap_cleanup cleanup

ctl() { timeout 120 "$PROXYD" --socket "$T/control.sock" --ctl "$@"; }

tap_plan 12

# Leftovers of an interrupted run would make the namespace names clash.
ip netns list | awk '/^hzpg-/ {print "netns del", $1}' >"$T/del.batch"
ip -force -batch "$T/del.batch" 2>/dev/null
for ((i = 0; i < REGS + 2; i++)); do echo "netns add hzpg-$i"; done >"$T/add.batch"
check "$((REGS + 2)) network namespaces created" ip -batch "$T/add.batch"

mkdir -p "$T/state" "$T/log"
"$PROXYD" --state-dir "$T/state" --log-dir "$T/log" --socket "$T/control.sock" \
	</dev/null >"$T/proxyd.log" 2>&1 &
PROXYD_PID=$!
for _ in $(seq 100); do
	[ -S "$T/control.sock" ] && break
	sleep 0.1
done
check "proxyd starts" test -S "$T/control.sock"

# Ids in an order unlike their sort order, mixed case and punctuation, so paging by id is tested
# rather than registration order. Each allow list is ~1 KiB: list pages hold ~30 entries.
egress() {
	local i=$1 allow=() k
	for ((k = 0; k < 24; k++)); do allow+=("\"h$k-c$i.allowed-pages.test\""); done
	local IFS=,
	echo "{\"mode\":\"proxy\",\"allow\":[${allow[*]}],\"resolvers\":[\"127.0.0.1:5353\"]}"
}
id_of() { printf 'Pg_%04d.%s' $(((($1 * 7919) % REGS))) "$(($1 % 3))-x"; }
# The first few through `--ctl register` (the operator's way), the rest from one process sending
# what the hook sends, so that sanitizer builds (slow to exec) finish in time.
VIA_CTL=20
fails=0
: >"$T/ids"
for ((i = 0; i < REGS; i++)); do
	id=$(id_of "$i")
	echo "$id" >>"$T/ids"
	[ "$i" -lt "$VIA_CTL" ] || continue
	ctl register "$id" "/run/netns/hzpg-$i" "$(egress "$i")" "proj$((i % 5))" >/dev/null 2>&1 ||
		fails=$((fails + 1))
done
# send_fds: python3 >= 3.9
python3 - "$T/control.sock" "$T/ids" "$VIA_CTL" >"$T/reg.out" 2>&1 <<-'EOF'
	import json, os, socket, sys
	s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
	s.connect(sys.argv[1])
	bad = 0
	for i, cid in enumerate(open(sys.argv[2]).read().split()):
	    if i < int(sys.argv[3]):
	        continue
	    egress = {"mode": "proxy", "allow": ["h%d-c%d.allowed-pages.test" % (k, i) for k in range(24)],
	              "resolvers": ["127.0.0.1:5353"]}
	    req = {"op": "register", "id": cid, "project": "proj%d" % (i % 5), "egress": egress}
	    fd = os.open("/run/netns/hzpg-%d" % i, os.O_RDONLY)
	    socket.send_fds(s, [json.dumps(req).encode()], [fd])
	    os.close(fd)
	    rep = json.loads(s.recv(65536))
	    if not rep["ok"]:
	        bad += 1
	        print(cid, rep)
	sys.exit(1 if bad else 0)
EOF
[ $? = 0 ] || fails=$((fails + 1))
check "$REGS registrations accepted" \
	bash -c "test $fails = 0 -a \"\$(sort -u $T/ids | wc -l)\" = $REGS || { cat $T/reg.out; exit 1; }"

ctl list >"$T/list.json" 2>"$T/list.err"
check "ctl list succeeds ($(wc -c <"$T/list.json") bytes)" test -s "$T/list.json"
check "ctl list is one JSON document naming every id exactly once, with its allow list" \
	python3 - "$T/list.json" "$T/ids" <<-'EOF'
		import json, sys
		doc = json.load(open(sys.argv[1]))
		want = open(sys.argv[2]).read().split()
		assert doc["ok"] is True and "next" not in doc, "not ok or a cursor left over"
		got = [c["id"] for c in doc["containers"]]
		assert len(got) == len(set(got)), "an id is listed twice"
		assert sorted(got) == sorted(want), "ids differ: %d listed, %d registered" % (len(got), len(want))
		for c in doc["containers"]:
		    assert len(c["allow"]) == 24 and c["allow"][0].startswith("h0-c"), c["id"]
		    assert c["project"].startswith("proj"), c["id"]
	EOF
check "the list is longer than one control message could carry" \
	test "$(wc -c <"$T/list.json")" -gt 131072

ctl stats >"$T/stats.json" 2>"$T/stats.err"
check "ctl stats is one JSON document naming every id exactly once" \
	python3 - "$T/stats.json" "$T/ids" <<-'EOF'
		import json, sys
		doc = json.load(open(sys.argv[1]))
		want = open(sys.argv[2]).read().split()
		assert doc["ok"] is True and "next" not in doc
		got = [c["id"] for c in doc["perContainer"]]
		assert len(got) == len(set(got)), "an id is counted twice"
		assert sorted(got) == sorted(want), "ids differ"
		assert doc["containers"] == len(want), doc["containers"]
		assert "total" in doc and "connsOpen" in doc
	EOF

# The protocol itself, one page at a time: each page is one message well under 64 KiB, pages come
# in id order, and registrations that come and go between pages neither repeat nor hide ids
# that stay registered throughout.
check "pages: each under 64 KiB, in id order; churn between pages shows no id twice" \
	python3 - "$T/control.sock" "$T/ids" "$REGS" <<-'EOF'
		import json, os, socket, sys
		path, ids, regs = sys.argv[1], open(sys.argv[2]).read().split(), int(sys.argv[3])
		s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
		s.connect(path)
		def call(req, fd=None):
		    data = json.dumps(req).encode()
		    if fd is None:
		        s.send(data)
		    else:
		        socket.send_fds(s, [data], [fd])
		    n = len(s.recv(1 << 20, socket.MSG_PEEK | socket.MSG_TRUNC))
		    return s.recv(n + 1), n
		gone = set(sorted(ids)[regs // 2 : regs // 2 + 20])
		after, seen, pages, big = None, [], 0, 0
		while True:
		    req = {"op": "list"}
		    if after:
		        req["after"] = after
		    raw, size = call(req)
		    big = max(big, size)
		    page = json.loads(raw)
		    assert page["ok"], page
		    got = [c["id"] for c in page["containers"]]
		    assert got == sorted(got) and (not after or got[0] > after), "page out of order"
		    seen += got
		    pages += 1
		    if pages == 2:
		        # ids ahead of the cursor leave, a new one arrives ahead and one behind
		        for g in gone:
		            assert json.loads(call({"op": "deregister", "id": g})[0])["ok"]
		        for new, ns in (("zz-late", regs), ("AA-early", regs + 1)):
		            fd = os.open("/run/netns/hzpg-%d" % ns, os.O_RDONLY)
		            rep = json.loads(call({"op": "register", "id": new, "project": None,
		                                   "egress": {"mode": "proxy", "allow": ["late.test"]}}, fd)[0])
		            os.close(fd)
		            assert rep["ok"], rep
		    if "next" not in page:
		        break
		    after = page["next"]
		    assert after == got[-1], "next is not the last id of the page"
		assert len(seen) == len(set(seen)), "an id came twice"
		assert set(ids) - gone <= set(seen), "an id that stayed registered was missed"
		assert not gone & set(seen), "an id deregistered ahead of the cursor was listed"
		assert "zz-late" in seen and "AA-early" not in seen
		assert pages > 10 and big < 65536, (pages, big)
		print("%d pages, largest %d bytes" % (pages, big))
	EOF

check "a malformed cursor is refused" \
	bash -c "$(declare -f ctl); PROXYD=$PROXYD T=$T; python3 -c '
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(b\"{\\\"op\\\":\\\"list\\\",\\\"after\\\":\\\"../x\\\"}\")
r = json.loads(s.recv(65536))
sys.exit(0 if r[\"ok\"] is False and \"after\" in r[\"error\"] else 1)
' $T/control.sock"

dfails=0
for id in $(head -n "$VIA_CTL" "$T/ids") zz-late AA-early; do
	ctl deregister "$id" >/dev/null 2>&1 || dfails=$((dfails + 1))
done
python3 - "$T/control.sock" "$T/ids" "$VIA_CTL" <<-'EOF' || dfails=$((dfails + 1))
	import json, socket, sys
	s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
	s.connect(sys.argv[1])
	for cid in open(sys.argv[2]).read().split()[int(sys.argv[3]):]:
	    s.send(json.dumps({"op": "deregister", "id": cid}).encode())
	    assert json.loads(s.recv(65536))["ok"], cid
EOF
check "every registration removed" test "$dfails" = 0
check "ctl list is empty afterwards and stats count 0" \
	bash -c "$(declare -f ctl); PROXYD=$PROXYD T=$T
		ctl list | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d[\"containers\"] == [] else 1)' &&
		ctl stats | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d[\"containers\"] == 0 and d[\"perContainer\"] == [] else 1)'"

if grep -qE 'Sanitizer|runtime error|"level":"error"' "$T/proxyd.log"; then
	not_ok "proxyd's log shows no sanitizer report or error"
	diag "$(tail -n 20 "$T/proxyd.log")"
else
	ok "proxyd's log shows no sanitizer report or error"
fi
tap_done

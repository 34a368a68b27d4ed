#!/bin/bash
# Integration: hezo-proxyd under a service manager (issue 32), without systemd: a Python listener
# on a unix datagram socket stands in as $NOTIFY_SOCKET and must see READY=1 only once the control
# socket accepts, and STOPPING=1 at SIGTERM; a file whose device and inode are in JOURNAL_STREAM
# stands in for the journal's stream, where every line carries sd-daemon(3)'s <N> priority, and
# a stream that is not the named one keeps the plain lines. No network, no namespace.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"

PROXYD=${HEZO_PROXYD_BIN:-$HEZO_BUILD_DIR/proxyd/hezo-proxyd}
PY=/usr/bin/python3
hezo_require_root
hezo_require_tools "$PY" stat
[ -x "$PROXYD" ] || hezo_cannot_run "hezo-proxyd not built: $PROXYD"

mkdir -p "$HEZO_TEST_DIR"
T=$(mktemp -d "$HEZO_TEST_DIR/proxyd-service.XXXXXX")
tap_cleanup "rm -rf '$T'"
# The test's own proxyd, unset JOURNAL_STREAM and NOTIFY_SOCKET unless a row sets them: the
# test may itself run under systemd.
unset JOURNAL_STREAM NOTIFY_SOCKET
# Called as "$PROXYD" "${DIRS[@]}" directly, not through a function, so that $! is proxyd's pid.
DIRS=(--state-dir "$T/state" --log-dir "$T/log")
ctl() { "$PROXYD" --socket "$T/control.sock" --ctl "$@"; }

# --- Type=notify ---------------------------------------------------------------------------------
# The listener writes one line per datagram; at READY=1 it connects to the control socket at once
# and says whether that was accepted. It gives up after 30 s without STOPPING=1 (a failure, not a
# timing: a proxyd that never notifies).
"$PY" - "$T/notify.sock" "$T/control.sock" >"$T/notify.out" 2>&1 <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(30)
open(sys.argv[1] + ".bound", "w").close()
while True:
    try:
        msg = s.recv(4096).decode()
    except socket.timeout:
        print("timeout", flush=True)
        break
    for line in msg.splitlines():
        if line == "READY=1":
            c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                c.connect(sys.argv[2])
                print("READY=1 control=accepts", flush=True)
            except OSError as e:
                print("READY=1 control=%s" % e.strerror, flush=True)
            c.close()
        else:
            print(line, flush=True)
    if "STOPPING=1" in msg.splitlines():
        break
EOF
LPID=$!
tap_cleanup "kill $LPID 2>/dev/null"
for _ in $(seq 500); do [ -e "$T/notify.sock.bound" ] && break; sleep 0.01; done
NOTIFY_SOCKET=$T/notify.sock "$PROXYD" "${DIRS[@]}" --socket "$T/control.sock" </dev/null 2>"$T/notify.err" &
PID=$!
tap_cleanup "kill $PID 2>/dev/null"
for _ in $(seq 3000); do grep -q '^READY=1' "$T/notify.out" && break; sleep 0.01; done
expect_eq "$(grep '^READY=1' "$T/notify.out")" "READY=1 control=accepts" \
	"NOTIFY_SOCKET gets READY=1, and the control socket accepts when it comes"
expect_match "$(ctl list 2>&1)" '"ok": *true|"containers"' "... and answers a request"
kill -TERM "$PID"
wait "$PID" 2>/dev/null
wait "$LPID" 2>/dev/null
expect_eq "$(grep -c -e '^STOPPING=1$' "$T/notify.out")" 1 "SIGTERM: STOPPING=1 before proxyd exits"
expect_eq "$(grep -c -e '^READY=1' "$T/notify.out")" 1 "... and READY=1 was sent once" || diag "$(cat "$T/notify.out")"
"$PROXYD" "${DIRS[@]}" --socket "$T/control2.sock" </dev/null 2>"$T/plain.err" &
PID2=$!
tap_cleanup "kill $PID2 2>/dev/null"
for _ in $(seq 500); do [ -S "$T/control2.sock" ] && break; sleep 0.01; done
expect_eq "$(kill -0 "$PID2" 2>/dev/null && echo running)" running "without NOTIFY_SOCKET proxyd runs as before"
kill -TERM "$PID2"
wait "$PID2" 2>/dev/null

# --- journald priorities -------------------------------------------------------------------------
# journal_run FILE: proxyd with stderr to FILE and JOURNAL_STREAM naming FILE; until
# its control socket is there, then one refused registration (a warning), then SIGTERM.
journal_run()
{
	local f=$1 pid js
	: >"$f"
	js=$(stat -c '%d:%i' "$f")
	JOURNAL_STREAM=$js "$PROXYD" "${DIRS[@]}" --socket "$T/control.sock" </dev/null 2>>"$f" &
	pid=$!
	tap_cleanup "kill $pid 2>/dev/null"
	for _ in $(seq 500); do [ -S "$T/control.sock" ] && break; sleep 0.01; done
	ctl register j1 /etc/hostname '{"allow":[]}' >/dev/null 2>&1
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null
}
journal_run "$T/journal.err"
J=$(cat "$T/journal.err")
expect_match "$J" '^<6>\{"level":"info","msg":"hezo-proxyd ' "JOURNAL_STREAM = stderr: the start line is <6> (info)" || diag "$J"
expect_match "$J" '^<4>\{"level":"warning","msg":"register j1: ' "... a refused registration is <4> (warning)"
# (An ASan build adds LeakSanitizer's own lines at exit: only proxyd's JSON lines are counted.)
expect_eq "$(grep -c '^{' "$T/journal.err")" 0 "... no line of proxyd's without a priority"
# An error: a control socket that cannot be made is fatal at start.
: >"$T/journal-fatal.err"
js=$(stat -c '%d:%i' "$T/journal-fatal.err")
JOURNAL_STREAM=$js "$PROXYD" "${DIRS[@]}" --socket "$T/no/such/dir/control.sock" </dev/null 2>>"$T/journal-fatal.err"
expect_match "$(cat "$T/journal-fatal.err")" '^<3>hezo-proxyd: ' "... a fatal error at start is <3> (error)"
# JOURNAL_STREAM inherited but stderr elsewhere (a file of its own): no prefix.
: >"$T/other.err"
JOURNAL_STREAM=$(stat -c '%d:%i' "$T/journal.err") "$PROXYD" "${DIRS[@]}" --socket "$T/control.sock" </dev/null 2>"$T/other.err" &
PID3=$!
tap_cleanup "kill $PID3 2>/dev/null"
for _ in $(seq 500); do [ -S "$T/control.sock" ] && grep -q . "$T/other.err" && break; sleep 0.01; done
kill -TERM "$PID3"
wait "$PID3" 2>/dev/null
expect_match "$(cat "$T/other.err")" '^\{"level":"info","msg":"hezo-proxyd ' \
	"JOURNAL_STREAM naming another stream: lines unchanged"
expect_eq "$(grep -c '^<[0-7]>' "$T/other.err")" 0 "... none with a priority"
tap_done

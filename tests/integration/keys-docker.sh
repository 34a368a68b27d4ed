#!/bin/bash
# Integration (issue 30 through Docker): a project's ssh key stays on the host, proxyd's agent
# signs for the box. An sshd of the test's own (Debian's openssh-server, in a network namespace
# made here, user "git" only in sshd's own mount namespace) serves a bare repository; the box (the
# dev image: git and openssh-client, no git configuration) clones it over ssh://git@git.test,
# commits (signed through the agent: the shim's GIT_CONFIG_* only) and pushes; on the host `git
# verify-commit` passes with an allowed-signers file and the server has that commit. The private
# key is in no file, environment or log of the box, the bundle, the shim, proxyd or Docker. Each
# refusal is a row: namespace "file", ssh toward a host the key does not allow, add/remove/lock,
# arbitrary data, another box on the socket, a key file open to the group, a missing key file,
# the agent down. Under runc, every box in a user namespace of its own (shim/userns.c): box A as
# root and a box as --user 1000 use the agent; a process in A's namespaces but not its cgroups is
# A's; the other box's own root cannot reach A's socket nor, handed it, pass proxyd's peer check.
# The keys red team's findings: a flood of refused requests grows the netlog by
# lines at a few a second (F4); another box of A's ID (cgroups of that name under another parent,
# a registration from another namespace, a create under another --root) gets nothing of A's (F1);
# a key path through a symlink or a directory someone else may change is refused (F3); one
# userauth signature per live SSH connection to an allowed host (F2, narrowed).
# HEZO_TEST_BACKEND=runc|runsc (runsc in host network mode, --host-uds=open).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/docker.sh
. "$here/../lib/docker.sh"
# shellcheck source=tests/lib/netns.sh
. "$here/../lib/netns.sh"
# shellcheck source=tests/lib/proxyd.sh
. "$here/../lib/proxyd.sh"
# shellcheck source=tests/lib/devimage.sh
. "$here/../lib/devimage.sh"
# shellcheck source=tests/lib/gitssh.sh
. "$here/../lib/gitssh.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"

hezo_require_root
hezo_require_tools jq ip nft dnsmasq python3 git ssh-keygen unshare nsenter timeout runuser runc du /usr/sbin/sshd "$HEZO_DOCKER"
hezo_require_backend
hezo_require_shim
PROXYD=${HEZO_PROXYD_BIN:-$HEZO_BUILD_DIR/proxyd/hezo-proxyd}
[ -x "$PROXYD" ] || hezo_cannot_run "no hezo-proxyd at $PROXYD"
[ -x "$HEZO_HOOK_BIN" ] || hezo_cannot_run "no hezo-hook at $HEZO_HOOK_BIN"
hezo_dockerd_start || hezo_cannot_run "dockerd does not start"
hezo_devimage_docker || hezo_cannot_run "no dev image ($HEZO_DEV_IMAGE)"

mkdir -p "$HEZO_TEST_DIR"
E=$(mktemp -d "$HEZO_TEST_DIR/keys-docker.XXXXXX")
chmod 0755 "$E"
TAG=ky$$
INS=ky-$$-up
VETH=ky$$v
NET=ky-$$-net
PROJ=ky$$a
RT=hezo-test-keys-$HEZO_TEST_BACKEND
RT_N=hezo-test-keys-n-$HEZO_TEST_BACKEND
DNS_PORT=$((20000 + ($$ + 11) % 20000))
PFX=10.241.0
PIDS=()
CONTAINERS=()
tap_cleanup "rm -rf '$E'"
tap_cleanup "ip netns del $INS 2>/dev/null; ip link del $VETH 2>/dev/null"
tap_cleanup 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done; [ -f "$E/sshd/pid" ] && kill "$(cat "$E/sshd/pid")" 2>/dev/null; for m in "$E"/proxyd/netns/*; do [ -e "$m" ] && umount -l "$m"; done; true'
tap_cleanup "hezo_docker network rm $NET"
tap_cleanup 'for c in "${CONTAINERS[@]}"; do hezo_docker rm -f "$c"; done'

# ---- the key, the repository, the sshd in a namespace of its own ----
mkdir -m 0700 "$E/keys"
ssh-keygen -q -t ed25519 -N '' -C deploy -f "$E/keys/deploy" || bail_out "ssh-keygen cannot make the key"
chmod 0600 "$E/keys/deploy"
PUB=$(cut -d' ' -f1,2 "$E/keys/deploy.pub")
FPR=$(ssh-keygen -l -f "$E/keys/deploy.pub" | awk '{print $2}')
hezo_gitssh_server "$E" "$INS" "$VETH" "$PFX" 2>"$E/gitssh.err" || bail_out "$(cat "$E/gitssh.err")"
cp "$E/keys/deploy.pub" "$E/sshd/authorized_keys"
tap_bg dnsmasq -k -C /dev/null --port "$DNS_PORT" --listen-address 127.0.0.1 --bind-interfaces \
	--no-resolv --no-hosts --user=root --address=/git.test/$PFX.2 --address=/other.test/$PFX.3
KH="git.test $(cut -d' ' -f1,2 "$E/sshd/host.pub")
other.test $(cut -d' ' -f1,2 "$E/sshd/host.pub")"

mkdir -p "$E/proxyd" "$E/netlog" "$E/state" "$E/projects"
start_proxyd() { hezo_proxyd_start_in "$E" --upstream "127.0.0.1:$DNS_PORT"; }
start_proxyd || { diag "$(tail -n 20 "$E/proxyd.log")"; bail_out "hezo-proxyd did not start"; }

# ---- the policy: egress to both hosts on 22; the project's key may authenticate to git.test ----
hezo_policy_json docker | jq --arg dns "127.0.0.1:$DNS_PORT" --arg p "$E/projects" '
	.egress = {mode: "proxy", allow: ["git.test:22", "other.test:22"], resolvers: [$dns],
		allowRanges: ["'"$PFX"'.0/24"]}
	| .projectsDir = $p
	| if .backends.runsc then .backends.runsc.network = "host" else . end' >"$E/policy.json" ||
	bail_out "cannot write the policy"
jq -n --arg f "$E/keys/deploy" '{keys: {deploy: {file: $f, sign: ["git"], ssh: ["git.test"]}}}' \
	>"$E/projects/$PROJ.json"
hezo_proxyd_shim_wrapper "$E/hezo-shim" "$E" --hezo-project "$PROJ"
hezo_proxyd_shim_wrapper "$E/hezo-shim-n" "$E"
hezo_docker_register_runtime "$RT" "$E/hezo-shim" || bail_out "cannot register $RT"
hezo_docker_register_runtime "$RT_N" "$E/hezo-shim-n" || bail_out "cannot register $RT_N"
diag "backend $HEZO_TEST_BACKEND, runtime $RT (project $PROJ) -> $HEZO_SHIM_BIN"
hezo_docker network create --subnet 10.242.0.0/24 "$NET" >/dev/null || bail_out "cannot create docker network $NET"

# dexec NAME SCRIPT: `docker exec` SCRIPT in NAME (bash); output in OUT, status in RC.
dexec() { OUT=$(timeout -k 5 120 "$HEZO_DOCKER" exec "$1" bash -c "$2" 2>&1 </dev/null) && RC=0 || RC=$?; }
# drun RUNTIME NAME: a box of the dev image that sleeps; output in OUT, status in RC.
drun()
{
	OUT=$(timeout -k 5 120 "$HEZO_DOCKER" run -d --runtime "$1" --name "$2" --network "$NET" \
		--dns "$PFX.1" "$HEZO_DEV_IMAGE" sleep 900 2>&1 </dev/null) && RC=0 || RC=$?
}

A=$TAG-a
CONTAINERS+=("$A")
drun "$RT" "$A"
expect_eq "$RC" 0 "[run] docker run -d of a box whose project has a key" || diag "$OUT"
IDA=$(hezo_docker inspect -f '{{.Id}}' "$A")
dexec "$A" "printf '%s\n' '$KH' >/tmp/kh; echo \"\$SSH_AUTH_SOCK\"; env | grep -c '^GIT_CONFIG_'"
expect_eq "$OUT" "/run/hezo-agent/agent.sock
7" "[env] SSH_AUTH_SOCK is the agent's socket, git's configuration in 7 GIT_CONFIG_* variables" || diag "$OUT"
dexec "$A" 'ssh-add -L'
expect_eq "$OUT" "$PUB deploy" "[agent] ssh-add -L in the box lists the project's key, and only it" ||
	{ diag "$OUT"; diag "$(tail -n 5 "$E/proxyd.log")"; }

# ---- clone, signed commit, push; verified on the host ----
SSHC='ssh -o UserKnownHostsFile=/tmp/kh -o StrictHostKeyChecking=yes -o BatchMode=yes'
dexec "$A" "cd /tmp && GIT_SSH_COMMAND='$SSHC' git clone -q ssh://git@git.test/repo.git && echo cloned"
expect_eq "$(tail -n 1 <<<"$OUT")" cloned "[git] git clone ssh://git@git.test/repo.git from the box" ||
	{ diag "$OUT"; diag "$(cat "$E"/netlog/*.jsonl)"; }
dexec "$A" "cd /tmp/repo && echo from-the-box >f && git add f &&
	GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@box GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@box \
	git commit -q -m 'signed in the box' && git cat-file commit HEAD | grep -c '^gpgsig -----BEGIN SSH SIGNATURE-----' && git rev-parse HEAD"
expect_eq "$RC" 0 "[git] git commit in the box (no git configuration in the image)" || diag "$OUT"
expect_eq "$(head -n 1 <<<"$OUT")" 1 "[git] ... the commit carries an SSH signature" || diag "$OUT"
COMMIT=$(tail -n 1 <<<"$OUT")
dexec "$A" "cd /tmp/repo && GIT_SSH_COMMAND='$SSHC' git push -q origin main && echo pushed"
expect_eq "$(tail -n 1 <<<"$OUT")" pushed "[git] git push over ssh from the box" || diag "$OUT"
expect_eq "$(git -C "$E/srv/repo.git" -c safe.directory="*" rev-parse main 2>&1)" "$COMMIT" "[git] the server's main is the commit signed in the box"
printf 'agent@box namespaces="git" %s\n' "$PUB" >"$E/allowed_signers"
OUT=$(git -C "$E/srv/repo.git" -c safe.directory="*" -c gpg.ssh.allowedSignersFile="$E/allowed_signers" verify-commit "$COMMIT" 2>&1) && rc=0 || rc=$?
expect_eq "$rc" 0 "[git] on the host: git verify-commit of the pushed commit passes" || diag "$OUT"
expect_eq "$(grep -cF "Good \"git\" signature for agent@box with ED25519 key $FPR" <<<"$OUT")" 1 \
	"[git] ... signed by the project's key" || diag "$OUT"
dexec "$A" "GIT_SSH_COMMAND='$SSHC' $SSHC -T git@git.test"
expect_eq "$OUT" "hello from git.test" "[ssh] ssh -T git@git.test from the box" || diag "$OUT"

# ---- refusals ----
dexec "$A" 'echo data >/tmp/d && ssh-add -L >/tmp/pub && ssh-keygen -Y sign -n file -f /tmp/pub /tmp/d; echo rc=$?'
expect_match "$OUT" 'rc=[1-9]' "[refuse] ssh-keygen -Y sign -n file: refused (namespace not allowed)" || diag "$OUT"
dexec "$A" "$SSHC -T git@other.test; echo rc=\$?"
expect_match "$OUT" 'agent refused operation' "[refuse] ssh toward other.test (egress allows it, the key does not): the agent refuses" || diag "$OUT"
expect_match "$OUT" '^rc=255$' "[refuse] ... and ssh fails (Permission denied)" || diag "$OUT"
dexec "$A" 'ssh-keygen -q -t ed25519 -N "" -f /tmp/mine && ssh-add /tmp/mine; echo add=$?; ssh-add -d /tmp/pub; echo remove=$?; ssh-add -D; echo removeall=$?'
expect_match "$OUT" 'add=1' "[refuse] ssh-add KEY: refused" || diag "$OUT"
expect_match "$OUT" 'remove=1' "[refuse] ssh-add -d: refused" || diag "$OUT"
expect_match "$OUT" 'removeall=1' "[refuse] ssh-add -D: refused" || diag "$OUT"
cat >"$E/agent.py" <<'EOF'
# A raw ssh-agent client: each request named on the command line, its answer's type printed.
import os, socket, struct, sys

def msg(t, body=b""):
    return struct.pack(">I", len(body) + 1) + bytes([t]) + body

def s(b):
    return struct.pack(">I", len(b)) + b

def call(m):
    try:
        return call1(m)
    except (BrokenPipeError, ConnectionResetError):
        return "closed"

def call1(m):
    c = socket.socket(socket.AF_UNIX)
    path = sys.argv[1] if len(sys.argv) > 2 else os.environ["SSH_AUTH_SOCK"]
    # A state dir's path may be longer than sun_path: connect from the socket's directory.
    os.chdir(os.path.dirname(path))
    c.connect(os.path.basename(path))
    c.sendall(m)
    d = b""
    while len(d) < 4:
        x = c.recv(4 - len(d))
        if not x:
            return "closed"
        d += x
    n = struct.unpack(">I", d)[0]
    d = b""
    while len(d) < n:
        x = c.recv(n - len(d))
        if not x:
            return "closed"
        d += x
    return d

ids = call(msg(11))
blob = b""
if not isinstance(ids, str) and ids[0] == 12 and struct.unpack(">I", ids[1:5])[0] > 0:
    n = struct.unpack(">I", ids[5:9])[0]
    blob = ids[9:9 + n]
for what in sys.argv[-1].split(","):
    if what == "ids":
        r = ids
    elif what == "lock":
        r = call(msg(22, s(b"pw")))
    elif what == "data":
        r = call(msg(13, s(blob) + s(b"arbitrary bytes to sign") + struct.pack(">I", 0)))
    print(what, r if isinstance(r, str) else r[0])
EOF
timeout 60 "$HEZO_DOCKER" exec -i "$A" sh -c 'cat >/tmp/agent.py' <"$E/agent.py"
dexec "$A" 'python3 /tmp/agent.py lock,data'
expect_match "$OUT" 'lock 5' "[refuse] lock: SSH_AGENT_FAILURE" || diag "$OUT"
expect_match "$OUT" 'data 5' "[refuse] a sign request for arbitrary data (neither SSHSIG nor userauth): SSH_AGENT_FAILURE" || diag "$OUT"
# One userauth signature per live SSH connection to an allowed host (red team keys, F2): an idle
# connection that sent an identification string no longer makes the agent an oracle for as many
# sessions as a party outside the box asks to have signed.
cat >"$E/ua.py" <<'EOF'
import os, socket, struct

def s(b):
    return struct.pack(">I", len(b)) + b

def call(m):
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(20)
    c.connect(os.environ["SSH_AUTH_SOCK"])
    c.sendall(m)
    d = b""
    while len(d) < 4 or len(d) < 4 + struct.unpack(">I", d[:4])[0]:
        x = c.recv(4096)
        if not x:
            return None
        d += x
    return d[4:]

idle = socket.create_connection(("git.test", 22), timeout=20)
idle.sendall(b"SSH-2.0-idle\r\n")
idle.recv(256)  # the server's banner: the relay is up
ids = call(struct.pack(">I", 1) + b"\x0b")
blob = ids[9:9 + struct.unpack(">I", ids[5:9])[0]]
for _ in range(2):
    data = (s(os.urandom(32)) + b"\x32" + s(b"git") + s(b"ssh-connection") + s(b"publickey")
            + b"\x01" + s(b"ssh-ed25519") + s(blob))
    body = b"\x0d" + s(blob) + s(data) + struct.pack(">I", 0)
    r = call(struct.pack(">I", len(body)) + body)
    print("userauth", r[0] if r else "closed")
EOF
timeout 60 "$HEZO_DOCKER" exec -i "$A" sh -c 'cat >/tmp/ua.py' <"$E/ua.py"
dexec "$A" 'python3 /tmp/ua.py'
expect_eq "$OUT" "userauth 14
userauth 5" "[once] one idle SSH connection to git.test: the first userauth request is signed, a second refused" || diag "$OUT"

# Another box (no project) reaching A's socket by its host path from its own namespace.
N=$TAG-n
CONTAINERS+=("$N")
drun "$RT_N" "$N"
expect_eq "$RC" 0 "[other] a second box, of no project" || diag "$OUT"
PIDN=$(hezo_docker inspect -f '{{.State.Pid}}' "$N")
SOCKA=$E/proxyd/agent/$IDA/agent.sock
expect_eq "$(test -S "$SOCKA" && echo yes)" yes "[other] A's agent socket is at STATE/agent/ID/agent.sock on the host"
OUT=$(nsenter -t "$PIDN" -n python3 "$E/agent.py" "$SOCKA" ids 2>&1)
expect_eq "$OUT" "ids closed" "[refuse] a process in the other box's network namespace on A's socket: closed, nothing listed" || diag "$OUT"
OUT=$(python3 "$E/agent.py" "$SOCKA" ids 2>&1)
expect_eq "$OUT" "ids closed" "[refuse] a host process (not in A's namespace) on A's socket: closed" || diag "$OUT"
dexec "$N" 'echo "SSH_AUTH_SOCK=${SSH_AUTH_SOCK:-none}"; ls /run/hezo-agent 2>&1 | head -n 1'
expect_match "$OUT" 'SSH_AUTH_SOCK=none' "[other] the box of no project has no agent" || diag "$OUT"

# ---- boxes in user namespaces of their own (shim/userns.c, runc): the agent's peer check reads
# the network namespace the peer's socket was made in (and its pid's cgroups), never its uid ----
U=$TAG-u
CONTAINERS+=("$U")
# OpenSSH's tools refuse to run for a uid without a passwd entry ("No user exists for uid 1000"),
# agent or not, and the box's root is read-only: the entry goes in before the box starts, as an
# image made for that user would have it.
OUT=$(timeout -k 5 120 "$HEZO_DOCKER" create --runtime "$RT" --name "$U" --user 1000 --network "$NET" \
	--dns "$PFX.1" "$HEZO_DEV_IMAGE" sleep 900 2>&1 </dev/null) &&
	OUT=$(timeout -k 5 60 "$HEZO_DOCKER" cp "$U:/etc/passwd" "$E/passwd" 2>&1 </dev/null) &&
	echo "u:x:1000:1000::/tmp:/bin/sh" >>"$E/passwd" &&
	OUT=$(timeout -k 5 60 "$HEZO_DOCKER" cp "$E/passwd" "$U:/etc/passwd" 2>&1 </dev/null) &&
	OUT=$(timeout -k 5 120 "$HEZO_DOCKER" start "$U" 2>&1 </dev/null) && RC=0 || RC=$?
expect_eq "$RC" 0 "[userns] a box of the project as --user 1000 (a passwd entry for it in the image)" || diag "$OUT"
# The ids as the box sees them, then its uid_map: inside 0, outside at or above 0x80000000 (the
# shim's ranges), 65536 long; a box without one reads "0 0 4294967295".
maps='echo "$(id -u) $SSH_AUTH_SOCK"; awk "{print \$1, (\$2 >= 2147483648), \$3}" /proc/self/uid_map'
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	dexec "$A" "$maps"
	expect_eq "$OUT" "0 /run/hezo-agent/agent.sock
0 1 65536" "[userns] box A (root in the image) runs in a user namespace of its own: uid 0 is a host uid of the shim's ranges" ||
		diag "$OUT"
	dexec "$U" "$maps"
	expect_eq "$OUT" "1000 /run/hezo-agent/agent.sock
0 1 65536" "[userns] the --user 1000 box: uid 1000 in a user namespace of its own" || diag "$OUT"
else
	skip "[userns] box A's uid_map: the shim gives user namespaces to runc boxes (runsc's Sentry is the box's kernel)"
	skip "[userns] the --user 1000 box's uid_map: runc only, as above"
fi
dexec "$U" 'ssh-add -L'
expect_eq "$OUT" "$PUB deploy" "[userns] ssh-add -L as uid 1000: the agent lists the project's key" ||
	{ diag "$OUT"; diag "$(tail -n 5 "$E/proxyd.log")"; }
dexec "$U" "cd /tmp && git init -q -b main r && cd r && echo u >f && git add f &&
	HOME=/tmp GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@box GIT_COMMITTER_NAME=u GIT_COMMITTER_EMAIL=u@box \
	git commit -q -m 'as uid 1000' && git cat-file commit HEAD | grep -c '^gpgsig -----BEGIN SSH SIGNATURE-----'"
expect_eq "$OUT" 1 "[userns] git commit as uid 1000: signed through the agent" || diag "$OUT"
dexec "$U" "printf '%s\n' '$KH' >/tmp/kh && HOME=/tmp $SSHC -T git@git.test"
expect_eq "$OUT" "hello from git.test" "[userns] ssh -T git@git.test as uid 1000: authenticated through the agent" ||
	diag "$OUT"
if [ "$HEZO_TEST_BACKEND" = runc ]; then
	# A process that joins A's user, network and mount namespaces (A's root, a host uid of A's
	# range) but stays in the host's cgroups: proxyd, without CAP_SYS_PTRACE, cannot read the
	# namespace of another uid's process, so only the namespace its socket was made in tells.
	PIDA=$(hezo_docker inspect -f '{{.State.Pid}}' "$A")
	OUT=$(nsenter -t "$PIDA" -U -n -m python3 /tmp/agent.py /run/hezo-agent/agent.sock ids 2>&1)
	expect_eq "$OUT" "ids 12" "[userns] a process in A's user and network namespaces, outside its cgroups: the agent knows it by its socket's namespace" ||
		diag "$OUT"
	# The other box's root (a host uid of another range) does not even reach the path: proxyd's
	# agent directory is root's alone.
	OUT=$(nsenter -t "$PIDN" -U -n python3 "$E/agent.py" "$SOCKA" ids 2>&1)
	expect_match "$OUT" "PermissionError" "[userns] the other box's root (its own host uid) on A's socket path: EACCES" ||
		diag "$OUT"
	# Handed host uid 0's credentials there (as a socket passed in, or one opened before it came
	# in, would be), it connects, and proxyd's peer check still tells it from A by its namespace.
	OUT=$(nsenter -t "$PIDN" -U -n --preserve-credentials python3 "$E/agent.py" "$SOCKA" ids 2>&1)
	expect_eq "$OUT" "ids closed" "[userns] a process in the other box's user and network namespaces on A's socket: closed" ||
		diag "$OUT"
else
	skip "[userns] A's namespaces outside its cgroups: runc only"
	skip "[userns] the other box's root on A's socket path: runc only"
	skip "[userns] the other box's user namespace on A's socket: runc only"
fi

# ---- the netlog: one line per signature and per refusal ----
sleep 0.3
NL=$("$HEZO_SHIM_BIN" netlog --keys --log-dir "$E/netlog" "$IDA" 2>&1)
expect_eq "$(jq -c 'select(.verdict=="allow" and .kind=="sign") | [.key,.fingerprint,.name]' <<<"$NL" 2>&1 | sort -u)" \
	"[\"deploy\",\"$FPR\",\"git\"]" "[netlog] the commit's signature: key, fingerprint, namespace git" || diag "$NL"
expect_match "$(jq -r 'select(.verdict=="allow" and .kind=="sign") | .signed' <<<"$NL" 2>&1)" '^sha512:[0-9a-f]{128}$' \
	"[netlog] ... and the hash it signed" || diag "$NL"
expect_eq "$(jq -r 'select(.verdict=="allow" and .kind=="ssh") | .name' <<<"$NL" 2>&1 | sort -u)" "git.test:22" \
	"[netlog] clone, push and ssh -T: userauth signatures toward git.test:22" || diag "$NL"
expect_match "$(jq -r 'select(.verdict=="allow" and .kind=="ssh") | .signed' <<<"$NL" 2>&1 | head -n 1)" '^session:[0-9a-f]{40,128}$' \
	"[netlog] ... each with its session id" || diag "$NL"
expect_eq "$(jq -r 'select(.verdict=="deny" and .kind=="sign" and .name=="file") | .reason' <<<"$NL" 2>&1)" \
	"namespace not allowed for this key" "[netlog] namespace file: a deny line" || diag "$NL"
expect_match "$(jq -r 'select(.verdict=="deny" and .kind=="ssh") | .reason' <<<"$NL" 2>&1)" \
	"no live SSH connection to a host this key allows" "[netlog] ssh toward other.test: a deny line" || diag "$NL"
expect_match "$(jq -r 'select(.verdict=="deny" and .kind=="request") | .reason' <<<"$NL" 2>&1 | sort -u | tr '\n' ,)" \
	'add identity refused,.*lock refused,.*remove all identities refused,remove identity refused' \
	"[netlog] add, remove, remove all, lock: deny lines" || diag "$NL"
expect_eq "$(jq -r 'select(.kind=="connect") | .reason' <<<"$NL" 2>&1 | sort -u)" \
	"peer is not in the box's network namespace" "[netlog] the other namespace's connections: deny lines" || diag "$NL"
expect_eq "$("$HEZO_SHIM_BIN" netlog --log-dir "$E/netlog" "$IDA" | jq -r 'select(.proto=="tcp" and .name=="git.test") | .reason' | sort -u)" \
	"ssh" "[egress] the SSH connections: relayed by name (the pin), netlog reason ssh"

# ---- a flood of refused requests does not fill the host's disk (red team keys, F4) ----
# LOCK requests, pipelined, on connection after connection for 3 s; the netlog may grow by lines
# at a few a second, not by one per request (before: 170 MB in 5 s).
cat >"$E/flood.py" <<'EOF'
import os, socket, time
m = b"\0\0\0\x01\x16" * 200
end = time.time() + 3
answered = conns = 0
while time.time() < end:
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(5)
    c.connect(os.environ["SSH_AUTH_SOCK"])
    conns += 1
    got = 0
    try:
        c.sendall(m)
        # Until all 200 are answered or the agent closes the connection.
        while got < len(m):
            d = c.recv(4096)
            if not d:
                break
            got += len(d)
    except OSError:
        pass
    answered += got // 5
    c.close()
print(answered, conns)
EOF
timeout 60 "$HEZO_DOCKER" exec -i "$A" sh -c 'cat >/tmp/flood.py' <"$E/flood.py"
sleep 0.3
before=$(du -sb "$E/netlog" | cut -f1)
dexec "$A" 'python3 /tmp/flood.py'
diag "flood: $OUT (requests answered, connections)"
read -r answered conns <<<"$OUT"
expect_eq "$((${conns:-0} > 1 && ${answered:-0} <= 16 * ${conns:-0}))" 1 \
	"[flood] a connection is closed after 16 refused requests (${answered:-?} answered on ${conns:-?} connections)" || diag "$OUT"
sleep 1.2
grown=$(($(du -sb "$E/netlog" | cut -f1) - before))
diag "flood: the netlog grew by $grown bytes"
expect_eq "$((grown < 1000000))" 1 "[flood] 3 s of refused requests grow the netlog by less than 1 MB ($grown bytes)"
dexec "$A" 'python3 /tmp/agent.py lock'
sleep 0.3
expect_match "$(jq -r 'select(.kind=="request" and .verdict=="deny") | .reason' "$E/netlog/$IDA.jsonl" 2>&1 | grep 'not logged' | tail -n 1)" \
	'^[0-9]+ refusals not logged \(rate limit\)$' "[flood] the next refusal's line is preceded by the count of those not logged"
dexec "$A" 'ssh-add -L && cd /tmp/repo && GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=agent@box GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=agent@box git commit -q --allow-empty -m after-flood && git cat-file commit HEAD | grep -c "^gpgsig"'
expect_eq "$OUT" "$PUB deploy
1" "[flood] after it, a fresh connection lists the key and a commit is signed" || diag "$OUT"

# ---- no private key anywhere ----
mapfile -t PRIV < <(python3 - "$E/keys/deploy" <<'EOF'
import base64, sys
lines = [l.strip() for l in open(sys.argv[1]) if l.strip() and not l.startswith("-----")]
body = base64.b64decode("".join(lines))
i = body.index(b"ssh-ed25519", body.index(b"ssh-ed25519") + 1)  # the private section's copy
seed = body[i + 11 + 4 + 32 + 4:][:32]
print(seed.hex())
for k in range(3):  # base64 of the seed at each alignment, inner characters only
    print(base64.b64encode(b"\0" * k + seed).decode()[4:40])
for l in lines[2:-1]:  # the file's own lines that hold the private section
    print(l)
EOF
)
expect_eq "${#PRIV[@]}" "$((4 + $(grep -vc -- '-----' "$E/keys/deploy") - 3))" "[leak] patterns of the private key: the seed (hex, base64) and the file's lines"
leaks()
{
	local f=$1 p
	for p in "${PRIV[@]}"; do grep -qF -- "$p" "$f" && echo "$p"; done
}
timeout -k 5 300 "$HEZO_DOCKER" exec "$A" bash -c 'env; tr "\000" "\n" </proc/1/environ; for p in /proc/[0-9]*; do tr "\000" "\n" <$p/environ; tr "\000" " " <$p/cmdline; done 2>/dev/null; find / -xdev \( -path /proc -o -path /sys \) -prune -o -type f -size -2M -print0 2>/dev/null | xargs -0 cat 2>/dev/null; find /tmp /run -type f -print0 | xargs -0 cat 2>/dev/null' </dev/null 2>&1 | tr -d '\000' >"$E/box.dump"
expect_eq "$(leaks "$E/box.dump")" "" "[leak] the box: environment, /proc/*/environ and cmdline, every file (/tmp, /run included)"
B=$(hezo_docker_bundle "$A") || B=$E/no-bundle
found=$(for p in "${PRIV[@]}"; do grep -rlF -- "$p" "$B" "/var/lib/docker/containers/$IDA" "$E/state" "$E/proxyd" "$E/netlog" "$E/proxyd.log" /run/hezo* 2>/dev/null; done |
	grep -v "^$E/keys/" | sort -u)
expect_eq "$found" "" "[leak] the bundle, Docker's container dir, the shim's state, proxyd's state, log and netlog"

# ---- one ID, one box: another box of A's ID (red team keys, F1) ----
# A process whose cgroups all end in A's ID, under a parent of its own (as a box of the same ID
# under another --root has them): the last name alone does not make it A.
FAKE_CG=()
while IFS=: read -r _ ctl path; do
	case $ctl in
	'') mnt=/sys/fs/cgroup/unified && [ -d "$mnt" ] || mnt=/sys/fs/cgroup ;;
	name=*) mnt=/sys/fs/cgroup/${ctl#name=} ;;
	*) mnt=/sys/fs/cgroup/$ctl ;;
	esac
	# Hierarchies at the root stay there (a root path is no name); pids and the unified one move.
	[ "$path" = / ] && [ -n "$ctl" ] && [ "$ctl" != pids ] && continue
	dir=$mnt${path%/}/ky-$$/$IDA
	mkdir -p "$dir" && FAKE_CG+=("$dir")
	tap_cleanup "rmdir '$dir' '${dir%/*}' 2>/dev/null"
done </proc/self/cgroup
OUT=$(bash -c 'while [ "$1" != -- ]; do echo $$ >"$1/cgroup.procs" || exit 9; shift; done; shift; cat /proc/self/cgroup >&2; exec "$@"' \
	_ "${FAKE_CG[@]}" -- python3 "$E/agent.py" "$SOCKA" ids 2>"$E/fakecg.err")
expect_eq "$OUT" "ids closed" "[one id] a process in cgroups named for A's ID under another parent, on A's socket: closed" ||
	diag "$OUT $(cat "$E/fakecg.err")"
# proxyd: a registration of A's ID from another namespace while A lives is refused, not a takeover.
ip netns add "ky-$$-dup" && tap_cleanup "ip netns del ky-$$-dup 2>/dev/null"
OUT=$("$PROXYD" --socket "$E/proxyd/control.sock" --ctl register "$IDA" "/run/netns/ky-$$-dup" \
	'{"mode":"proxy","allow":["git.test:22"]}' "ky$$b" 2>&1) && rc=0 || rc=$?
expect_ne "$rc" 0 "[one id] proxyd: a registration of A's ID from another network namespace is refused" || diag "$OUT"
expect_match "$OUT" "id $IDA is registered for a live box of project [^ ]*${PROJ}[^ ]* in another network namespace: refused, not replaced" \
	"[one id] ... saying whose it is" || diag "$OUT"
expect_eq "$("$PROXYD" --socket "$E/proxyd/control.sock" --ctl list 2>&1 | jq -r --arg id "$IDA" '.containers[] | select(.id == $id) | .project' 2>&1)" \
	"$PROJ" "[one id] ... A's registration is still A's project's"
# The shim: a create of A's ID under another --root (a raw caller of the project's runtime).
ROOT2=$E/root2
hezo_make_bundle "$E/dup" "$IDA" '["true"]' || bail_out "cannot make bundle"
tap_cleanup "hezo_bundle_cleanup '$ROOT2' '$IDA'"
"$E/hezo-shim" --root "$ROOT2" create -b "$E/dup" "$IDA" >"$E/dup.out" 2>"$E/dup.err" </dev/null && rc=0 || rc=$?
expect_ne "$rc" 0 "[one id] the shim: create of A's running ID under another --root is refused"
expect_match "$(cat "$E/dup.err")" "^hezo-shim: container $IDA: the ID is a container of hezo-shim's under --root [^ ]+, still recorded" \
	"[one id] ... in one line naming the other --root" || diag "$(cat "$E/dup.err")"
expect_eq "$(wc -l <"$E/dup.err" | tr -d ' ')" 1 "[one id] ... exactly one line" || diag "$(cat "$E/dup.err")"
dexec "$A" 'ssh-add -L'
expect_eq "$OUT" "$PUB deploy" "[one id] A's agent still lists A's key" || diag "$OUT"
# A stopped record of an ID under one --root: its delete unwires by the ID alone, so a box of that
# ID made meanwhile under another --root would lose its registration and agent (red team keys2,
# F1). Such a create is refused until the stopped record is deleted.
IDS=ky$$stop
ROOT3=$E/root3
hezo_make_bundle "$E/stop1" "$IDS" '["true"]' || bail_out "cannot make bundle"
# Its own cgroup parent: runsc leaves the stopped box's cgroup, which the shim would refuse first.
hezo_make_bundle "$E/stop2" "$IDS" '["true"]' '.linux.cgroupsPath = "/hezo-test/'"$IDS"'-3/'"$IDS"'"' ||
	bail_out "cannot make bundle"
tap_cleanup "rmdir /sys/fs/cgroup/*/hezo-test/'$IDS-3' /sys/fs/cgroup/hezo-test/'$IDS-3' 2>/dev/null"
tap_cleanup "hezo_bundle_cleanup '$ROOT2' '$IDS'; hezo_bundle_cleanup '$ROOT3' '$IDS'"
"$E/hezo-shim" --root "$ROOT2" create -b "$E/stop1" "$IDS" >"$E/stop1.out" 2>&1 </dev/null &&
	"$E/hezo-shim" --root "$ROOT2" start "$IDS" >>"$E/stop1.out" 2>&1 </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[one id] a box that ends at once is created and started under one --root" ||
	diag "$(cat "$E/stop1.out")"
for _ in $(seq 50); do
	[ "$("$E/hezo-shim" --root "$ROOT2" state "$IDS" 2>/dev/null | jq -r .status)" = stopped ] && break
	sleep 0.1
done
"$E/hezo-shim" --root "$ROOT3" create -b "$E/stop2" "$IDS" >"$E/stop2.out" 2>"$E/stop2.err" </dev/null && rc=0 || rc=$?
expect_ne "$rc" 0 "[one id] a create of a stopped box's ID under another --root is refused"
expect_match "$(cat "$E/stop2.err")" "^hezo-shim: container $IDS: the ID is a container of hezo-shim's under --root [^ ]+, still recorded \\(delete it first\\)" \
	"[one id] ... saying to delete it first" || diag "$(cat "$E/stop2.err")"
"$E/hezo-shim" --root "$ROOT2" delete "$IDS" >/dev/null 2>&1
"$E/hezo-shim" --root "$ROOT3" create -b "$E/stop2" "$IDS" >"$E/stop2.out" 2>"$E/stop2.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[one id] ... and once it is deleted, the create goes ahead" || diag "$(cat "$E/stop2.err")"
"$E/hezo-shim" --root "$ROOT3" delete --force "$IDS" >/dev/null 2>&1

# ---- fail closed ----
kill -KILL "$PROXYD_PID"
wait "$PROXYD_PID" 2>/dev/null
dexec "$A" 'ssh-add -L; echo rc=$?; cd /tmp/repo && git commit -q --allow-empty -m down; echo commit=$?'
expect_match "$OUT" 'rc=2' "[down] proxyd down: ssh-add -L cannot reach the agent" || diag "$OUT"
expect_match "$OUT" 'commit=[1-9]' "[down] ... and a commit is not signed (it fails, nothing falls back)" || diag "$OUT"
rm -f "$E/proxyd/control.sock"
start_proxyd || { diag "$(tail -n 20 "$E/proxyd.log")"; bail_out "hezo-proxyd did not restart"; }
ok=
for _ in $(seq 20); do
	dexec "$A" 'ssh-add -L'
	[ "$OUT" = "$PUB deploy" ] && { ok=1; break; }
	sleep 0.3
done
expect_eq "${ok:-no}" 1 "[down] proxyd restarted: the agent answers in the running box again" || diag "$OUT"

chmod 0640 "$E/keys/deploy"
OUT=$(timeout -k 5 120 "$HEZO_DOCKER" run --rm --runtime "$RT" --network "$NET" "$HEZO_DEV_IMAGE" true 2>&1 </dev/null) && rc=0 || rc=$?
expect_ne "$rc" 0 "[refuse] a key file readable by its group: docker run fails" || diag "$OUT"
expect_match "$OUT" "key deploy: file $E/keys/deploy: mode 0640 lets group or others in" "[refuse] ... in one line naming the key, file and mode" || diag "$OUT"
chmod 0600 "$E/keys/deploy"
mv "$E/keys/deploy" "$E/keys/deploy.away"
OUT=$(timeout -k 5 120 "$HEZO_DOCKER" run --rm --runtime "$RT" --network "$NET" "$HEZO_DEV_IMAGE" true 2>&1 </dev/null) && rc=0 || rc=$?
expect_ne "$rc" 0 "[refuse] a key file missing: docker run fails" || diag "$OUT"
expect_match "$OUT" "key deploy: file $E/keys/deploy: No such file" "[refuse] ... naming it" || diag "$OUT"
dexec "$A" 'ssh-add -L >/dev/null; cd /tmp/repo && git commit -q --allow-empty -m gone; echo commit=$?'
expect_match "$OUT" 'commit=[1-9]' "[refuse] the running box once its key file is gone: nothing signed" || diag "$OUT"
mv "$E/keys/deploy.away" "$E/keys/deploy"

# ---- the key file's path: no symlink, every directory root's alone (red team keys, F3) ----
# Whoever may change a directory on the way, or made a symlink there, would choose which root-only
# ed25519 key (root's own, the host's) the project's boxes sign with.
project_key() { jq -n --arg f "$1" '{keys: {deploy: {file: $f, sign: ["git"], ssh: ["git.test"]}}}' >"$E/projects/$PROJ.json"; }
run_refused()
{
	OUT=$(timeout -k 5 120 "$HEZO_DOCKER" run --rm --runtime "$RT" --network "$NET" "$HEZO_DEV_IMAGE" true 2>&1 </dev/null) && rc=0 || rc=$?
	expect_ne "$rc" 0 "[key path] $1: docker run fails" || diag "$OUT"
	expect_match "$OUT" "$2" "[key path] ... $3" || diag "$OUT"
}
mkdir -m 0755 "$E/userdir" && chown 65534 "$E/userdir"
runuser -u nobody -- ln -s "$E/keys/deploy" "$E/userdir/deploy"
project_key "$E/userdir/deploy"
run_refused "the key path in a directory of uid 65534's (a symlink it made to a root-only key)" \
	"key deploy: file $E/userdir/deploy: directory $E/userdir is owned by uid 65534, not root" "naming the directory and its owner"
chown 0 "$E/userdir"
run_refused "the key file a symlink to a root-only key" \
	"key deploy: file $E/userdir/deploy: a symlink \\(not followed\\)" "naming it a symlink"
ln -s keys "$E/keylink"
project_key "$E/keylink/deploy"
run_refused "a symlink among the key path's directories" \
	"key deploy: file $E/keylink/deploy: $E/keylink is a symlink" "naming the symlink"
chmod 0775 "$E/keys"
project_key "$E/keys/deploy"
run_refused "the key's directory writable by its group" \
	"key deploy: file $E/keys/deploy: directory $E/keys is writable by group or others \\(mode 0775\\)" "naming the directory and its mode"
chmod 0700 "$E/keys"
OUT=$(timeout -k 5 120 "$HEZO_DOCKER" run --rm --runtime "$RT" --network "$NET" "$HEZO_DEV_IMAGE" ssh-add -L 2>&1 </dev/null) && rc=0 || rc=$?
expect_eq "$OUT" "$PUB deploy" "[key path] the key back in its root-only directory: a box gets it" || diag "$OUT"

for c in "${CONTAINERS[@]}"; do hezo_docker rm -f "$c" >/dev/null 2>&1; done
expect_eq "$(ls "$E/proxyd/agent" 2>&1)" "" "[cleanup] the agents' directories went with their boxes"
expect_eq "$(find "$E" -maxdepth 1 -name 'asan*' -o -maxdepth 1 -name 'ubsan*' | sort)" "" "no sanitizer reports from shim runs"
tap_done

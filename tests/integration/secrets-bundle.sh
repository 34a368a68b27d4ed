#!/bin/bash
# Integration (issue 17, shim side): a container with secrets gets placeholders in its process
# environment and every exec, the record and the hook's --egress carry names, hosts, files and
# placeholders only, and an exposed or missing secret file refuses the container with one line.
# The egress hook is a stand-in that keeps its --egress argument (proxyd's part has its own test).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=tests/lib/bundle.sh
. "$here/../lib/bundle.sh"

hezo_require_root
hezo_require_tools jq runc timeout grep "$HEZO_BUSYBOX"
hezo_require_backend
hezo_require_shim

diag "backend $HEZO_TEST_BACKEND ($(hezo_backend_bin)), shim $HEZO_SHIM_BIN"
mkdir -p "$HEZO_TEST_DIR"
ROOT=$HEZO_TEST_DIR/root-secrets-$HEZO_TEST_BACKEND
WORK=$(mktemp -d "$HEZO_TEST_DIR/secrets.XXXXXX")
tap_cleanup "rm -rf '$WORK'"
chmod 0755 "$WORK"

# The values: random, so a grep for them finds only a leak.
VALUE="real-$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
VALUE2="other-$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
mkdir -m 0700 "$WORK/secrets"
printf '%s' "$VALUE" >"$WORK/secrets/gh" && chmod 0600 "$WORK/secrets/gh"
printf '%s' "$VALUE2" >"$WORK/secrets/two" && chmod 0400 "$WORK/secrets/two"

# The stand-in hook: wire keeps its arguments, unwire does nothing.
HOOK=$WORK/hook
cat >"$HOOK" <<HOOKEOF
#!/bin/sh
cat >/dev/null
[ "\$1" = wire ] && printf '%s\n' "\$3" >>'$WORK/hook-egress'
exit 0
HOOKEOF
chmod 0755 "$HOOK"
HEZO_HOOK_BIN=$HOOK

# hezo_write_policy passes one filter to jq; give it the file paths as literals instead.
write_policy()
{
	hezo_write_policy bundle ".egress = {mode: \"proxy\", allow: [\"api.test\", \"*.git.test\"]}
		| .secrets = {GH_TOKEN: {hosts: [\"api.test\"], file: \"$WORK/secrets/gh\"},
			TWO: {hosts: [\"*.git.test\"], file: \"$WORK/secrets/two\", otherHosts: \"pass\"}}
		| ${1:-.}"
}
write_policy
# proxyd's CA bundle as the shim mounts it (proxyd itself has its own test, proxyd-secrets.sh).
export HEZO_PROXYD_CA_BUNDLE=$WORK/bundle.crt
printf -- '-----BEGIN CERTIFICATE-----\nhezo-test-bundle-%s\n-----END CERTIFICATE-----\n' "$(hezo_rand)" \
	>"$HEZO_PROXYD_CA_BUNDLE"

new_id()
{
	ID="hezo-it-sec-$1-$(hezo_rand)"
	tap_cleanup "hezo_bundle_cleanup '$ROOT' '$ID'"
}
PH_RE='^hzph[a-z0-9]{40}$'
ENV_PROBE='echo "GH=$GH_TOKEN"; echo "TWO=$TWO"; cat /proc/self/environ | tr "\000" "\n" | grep -c "^GH_TOKEN="; true'

# --- run: placeholders in the environment, the value nowhere ------------------------------------
new_id run
B=$WORK/run
# The engine (or image) sets GH_TOKEN itself: the placeholder replaces it.
hezo_make_bundle "$B" "$ID" "$(jq -cn --arg p "$ENV_PROBE" '["sh", "-c", $p]')" \
	'.process.env += ["GH_TOKEN=from-the-engine"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/run.out" 2>"$WORK/run.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[run] exits 0" || diag "stderr: $(cat "$WORK/run.err")"
gh=$(sed -n 's/^GH=//p' "$WORK/run.out")
two=$(sed -n 's/^TWO=//p' "$WORK/run.out")
expect_match "$gh" "$PH_RE" "[run] GH_TOKEN is a placeholder (hzph + 40 of [a-z0-9])"
expect_match "$two" "$PH_RE" "[run] TWO is a placeholder"
expect_ne "$gh" "$two" "[run] each secret has its own placeholder"
expect_eq "$(sed -n 3p "$WORK/run.out")" 1 "[run] /proc/self/environ holds GH_TOKEN once (the engine's value is gone)"
expect_eq "$(jq -r '.process.env[] | select(startswith("GH_TOKEN="))' "$B/config.json")" "GH_TOKEN=$gh" \
	"[run] config.json's env has the placeholder"
eg=$(tail -n 1 "$WORK/hook-egress" 2>/dev/null)
expect_eq "$(jq -c '.secrets.GH_TOKEN | {hosts, file, otherHosts}' <<<"$eg" 2>&1)" \
	"{\"hosts\":[\"api.test\"],\"file\":\"$WORK/secrets/gh\",\"otherHosts\":\"refuse\"}" \
	"[run] the hook's --egress names the secret's hosts and file"
expect_eq "$(jq -r '.secrets.GH_TOKEN.placeholder' <<<"$eg" 2>&1)" "$gh" "[run] ... and its placeholder"
expect_eq "$(jq -r '.secrets.TWO.otherHosts' <<<"$eg" 2>&1)" pass "[run] ... and otherHosts"
# grep for the value: the bundle, the shim's state, the hook's arguments, the output.
leaks=$(grep -rlF -e "$VALUE" -e "$VALUE2" "$B" "$HEZO_TEST_STATE" "$WORK/hook-egress" "$WORK/run.out" \
	"$WORK/run.err" /run/hezo* --exclude-dir=secrets 2>/dev/null | grep -v "^$WORK/secrets/")
expect_eq "$leaks" "" "[run] no file under the bundle, the state dir, /run/hezo* or the hook's args holds a value"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- the container trusts proxyd's CA: the bundle over the usual path, and the clients' variables
new_id ca
B=$WORK/ca
CA_PROBE='cat /etc/ssl/certs/ca-certificates.crt; for v in SSL_CERT_FILE NODE_EXTRA_CA_CERTS REQUESTS_CA_BUNDLE CURL_CA_BUNDLE GIT_SSL_CAINFO PIP_CERT AWS_CA_BUNDLE NPM_CONFIG_CAFILE; do eval "echo $v=\$$v"; done; (echo x >/etc/ssl/certs/ca-certificates.crt) 2>/dev/null && echo WRITABLE; true'
hezo_make_bundle "$B" "$ID" "$(jq -cn --arg p "$CA_PROBE" '["sh", "-c", $p]')" || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/ca.out" 2>"$WORK/ca.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[ca] run exits 0" || diag "stderr: $(cat "$WORK/ca.err")"
expect_eq "$(head -n 3 "$WORK/ca.out")" "$(cat "$HEZO_PROXYD_CA_BUNDLE")" "[ca] /etc/ssl/certs/ca-certificates.crt is proxyd's bundle"
expect_eq "$(grep -c '=/etc/ssl/certs/ca-certificates.crt$' "$WORK/ca.out")" 8 \
	"[ca] SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO, PIP_CERT, AWS_CA_BUNDLE, NPM_CONFIG_CAFILE point at it"
expect_eq "$(grep -c WRITABLE "$WORK/ca.out")" 0 "[ca] the bundle is read-only"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# --- create, exec (process file and command line), inspect ---------------------------------------
new_id life
B=$WORK/life
hezo_make_bundle "$B" "$ID" '["sleep", "600"]' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" create -b "$B" "$ID" > >(cat >"$WORK/life.out") 2> >(cat >"$WORK/life.err") </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[life] create exits 0" || diag "stderr: $(cat "$WORK/life.err")"
check "[life] start" hezo_shim --root "$ROOT" start "$ID"
check "[life] running" hezo_wait_status "$ROOT" "$ID" running 20
ph=$(jq -r '.process.env[] | select(startswith("GH_TOKEN=")) | sub("^GH_TOKEN="; "")' "$B/config.json")
expect_match "$ph" "$PH_RE" "[life] config.json has GH_TOKEN's placeholder"
jq -n --arg p "$ENV_PROBE" '{terminal: false, user: {uid: 0, gid: 0}, args: ["sh", "-c", $p],
	env: ["PATH=/bin", "GH_TOKEN=caller-set"], cwd: "/"}' >"$WORK/proc.json"
out=$(hezo_shim --root "$ROOT" exec --process "$WORK/proc.json" "$ID" 2>"$WORK/exec.err" </dev/null)
expect_eq "$(sed -n 's/^GH=//p' <<<"$out")" "$ph" "[exec --process] the process gets the container's placeholder" ||
	diag "$out $(cat "$WORK/exec.err")"
expect_eq "$(sed -n 3p <<<"$out")" 1 "[exec --process] GH_TOKEN once in /proc/self/environ (the caller's is gone)"
out=$(hezo_shim --root "$ROOT" exec --env GH_TOKEN=caller-set "$ID" sh -c "$ENV_PROBE" 2>"$WORK/exec2.err" </dev/null)
expect_eq "$(sed -n 's/^GH=//p' <<<"$out")" "$ph" "[exec ARGS] the command-line form gets it too" ||
	diag "$out $(cat "$WORK/exec2.err")"
ins=$(hezo_shim --root "$ROOT" inspect "$ID" 2>&1)
expect_eq "$(jq -c .secrets <<<"$ins" 2>&1)" '{"GH_TOKEN":{"hosts":["api.test"]},"TWO":{"hosts":["*.git.test"]}}' \
	"[inspect] shows the secrets' names and hosts only"
leaks=$(grep -rlF -e "$VALUE" -e "$VALUE2" "$B" "$HEZO_TEST_STATE" /run/hezo* --exclude-dir=secrets 2>/dev/null |
	grep -v "^$WORK/secrets/")
expect_eq "$leaks" "" "[life] after exec: no file holds a value"
expect_eq "$(grep -cF -e "$VALUE" <<<"$ins$out")" 0 "[life] inspect and exec output hold no value"
hezo_bundle_cleanup "$ROOT" "$ID"

# --- the annotation drops secrets, never adds -----------------------------------------------------
new_id drop
B=$WORK/drop
hezo_make_bundle "$B" "$ID" "$(jq -cn --arg p "$ENV_PROBE" '["sh", "-c", $p]')" \
	'.annotations["org.hezo.secrets"] = "TWO"' || bail_out "cannot make bundle"
hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/drop.out" 2>"$WORK/drop.err" </dev/null && rc=0 || rc=$?
expect_eq "$rc" 0 "[drop] run exits 0" || diag "stderr: $(cat "$WORK/drop.err")"
expect_eq "$(sed -n 's/^GH=//p' "$WORK/drop.out")" "" "[drop] org.hezo.secrets=TWO: no GH_TOKEN"
new_id none
B=$WORK/none
hezo_make_bundle "$B" "$ID" '["sh", "-c", "echo SSL=$SSL_CERT_FILE; cat /etc/ssl/certs/ca-certificates.crt 2>&1 | head -n 1"]' \
	'.annotations["org.hezo.secrets"] = ""' || bail_out "cannot make bundle"
out=$(hezo_shim --root "$ROOT" run -b "$B" "$ID" 2>&1 </dev/null)
expect_eq "$(head -n 1 <<<"$out")" "SSL=" "[none] no secrets: no CA variables"
expect_eq "$(grep -c hezo-test-bundle <<<"$out")" 0 "[none] no secrets: no bundle mounted"
expect_eq "$(jq '[.mounts[] | select(.destination == "/etc/ssl/certs/ca-certificates.crt")] | length' "$B/config.json")" 0 \
	"[none] no secrets: config.json has no bundle mount"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
expect_match "$(sed -n 's/^TWO=//p' "$WORK/drop.out")" "$PH_RE" "[drop] TWO kept"
hezo_backend --root "$ROOT" delete --force "$ID" >/dev/null 2>&1

# refused: one line on stderr naming what is wrong, config.json untouched, nothing left
refused()
{
	local tag=$1 want=$2 filter=${3:-.}
	new_id "$tag"
	B=$WORK/$tag
	hezo_make_bundle "$B" "$ID" '["true"]' "$filter" || bail_out "cannot make bundle"
	cp "$B/config.json" "$WORK/$tag.orig"
	hezo_shim --root "$ROOT" run -b "$B" "$ID" >"$WORK/$tag.out" 2>"$WORK/$tag.err" </dev/null && rc=0 || rc=$?
	expect_ne "$rc" 0 "[$tag] refused"
	expect_eq "$(wc -l <"$WORK/$tag.err" | tr -d ' ')" 1 "[$tag] one line on stderr" || diag "$(cat "$WORK/$tag.err")"
	expect_match "$(cat "$WORK/$tag.err")" "$want" "[$tag] it says why"
	check "[$tag] config.json unchanged" cmp -s "$WORK/$tag.orig" "$B/config.json"
	expect_eq "$(hezo_state_records "$ID")" "" "[$tag] no state record"
}
refused add "\"NEW\" is not one of the policy's secrets" '.annotations["org.hezo.secrets"] = "GH_TOKEN,NEW"'
refused narrowed "secrets.GH_TOKEN.hosts\\[0\\]: api.test is not allowed by egress.allow" \
	'.annotations["org.hezo.egress.allow"] = "*.git.test"'
chmod 0640 "$WORK/secrets/gh"
refused groupread "secret GH_TOKEN: file $WORK/secrets/gh: mode 0640 lets group or others in"
chmod 0600 "$WORK/secrets/gh"
chown 65534 "$WORK/secrets/two"
refused owner "secret TWO: file $WORK/secrets/two: owned by uid 65534, not root"
chown 0 "$WORK/secrets/two"
mv "$WORK/secrets/gh" "$WORK/secrets/gh.away"
refused missing "secret GH_TOKEN: file $WORK/secrets/gh: No such file"
mv "$WORK/secrets/gh.away" "$WORK/secrets/gh"
# A symlink for the file, or a directory on its path that someone other than root may change:
# whoever made it would choose which root-only file a box's secret is read from (red team keys, F3).
mv "$WORK/secrets/gh" "$WORK/secrets/gh.real" && ln -s gh.real "$WORK/secrets/gh"
refused symlink "secret GH_TOKEN: file $WORK/secrets/gh: a symlink \\(not followed\\)"
rm -f "$WORK/secrets/gh" && mv "$WORK/secrets/gh.real" "$WORK/secrets/gh"
chmod 0770 "$WORK/secrets"
refused dirmode "secret [A-Z_]+: file $WORK/secrets/[a-z]+: directory $WORK/secrets is writable by group or others \\(mode 0770\\)"
chmod 0700 "$WORK/secrets"
chown 65534 "$WORK/secrets"
refused dirowner "secret [A-Z_]+: file $WORK/secrets/[a-z]+: directory $WORK/secrets is owned by uid 65534, not root"
chown 0 "$WORK/secrets"
mv "$HEZO_PROXYD_CA_BUNDLE" "$HEZO_PROXYD_CA_BUNDLE.away"
refused nobundle "secrets: hezo-proxyd's CA bundle $HEZO_PROXYD_CA_BUNDLE is missing"
mv "$HEZO_PROXYD_CA_BUNDLE.away" "$HEZO_PROXYD_CA_BUNDLE"
expect_eq "$(grep -rlF -e "$VALUE" -e "$VALUE2" "$WORK" | grep -v "^$WORK/secrets/")" "" \
	"[refused] no message or file holds a value"

# A policy whose secret host egress does not allow: refused at load, naming the key.
write_policy '.egress.allow = ["other.test"]'
refused policy "secrets.GH_TOKEN.hosts\\[0\\]: api.test is not allowed by egress.allow"
write_policy '.egress.mode = "deny"'
refused deny "secrets need egress.mode \"proxy\""
tap_done

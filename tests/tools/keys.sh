#!/bin/bash
# Differential test of key spelling against Go itself: every document the shim's policy accepts
# must read the same to runc's decoder (encoding/json into the runtime-spec types, built here as
# tests/tools/specdiff) as its exactly spelled keys say; every field of those Go types, spelled
# with one letter's case flipped, must be refused; every hostile spelling in
# tests/data/keys/*-bad-* must be refused, and on the raw document Go must disagree (so a shim
# that let it through would fail this test). Benign inputs: the engine captures in tests/data,
# tests/data/keys/*-ok-*, and the fuzz corpora of exec process, update resources and config.json.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/common.sh
. "$here/../lib/common.sh"

SPECS_GO=/usr/share/gocode/src/github.com/opencontainers/runtime-spec/specs-go
hezo_require_tools go
[ -d "$SPECS_GO" ] || hezo_cannot_run "missing $SPECS_GO (golang-github-opencontainers-specs-dev)"
apply=$HEZO_BUILD_DIR/tests/tools/keys-apply
[ -x "$apply" ] || bail_out "not built: $apply"

work=$(mktemp -d /tmp/hezo-keys.XXXXXX)
tap_cleanup rm -rf "$work"

# Offline, from Debian's GOPATH only.
if ! (cd "$here/specdiff" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$work/cache \
	GOFLAGS='' GOPROXY=off go build -o "$work/specdiff" . >"$work/go-build.log" 2>&1); then
	diag "$(cat "$work/go-build.log")"
	bail_out "specdiff does not build"
fi
diag "$(go version), specs-go $(dpkg-query -W -f '${Version}' golang-github-opencontainers-specs-dev 2>/dev/null)"

kind_of()
{
	case "$(basename "$1")" in
	config-*) echo spec ;;
	process-*) echo process ;;
	resources-*) echo resources ;;
	esac
}

# The captures' bind sources (engine files, -v /tmp:/host) do not exist here: move them under a
# tree of this test's own, which the policy allows. The namespace files they join (podman's
# /run/netns/...) are gone too, and with no shim to vouch for them policy refuses any: such a
# namespace is made new instead. Nothing else changes.
host=$work/host
printf '{"mounts": {"allowedSources": ["%s"]}}\n' "$host" >"$work/policy.json"
relocate_binds()
{
	python3 - "$1" "$host" <<'PY'
import collections, json, os, sys
doc = json.load(open(sys.argv[1]), object_pairs_hook=collections.OrderedDict)
host = sys.argv[2]
for m in doc.get("mounts") or []:
    if not isinstance(m, dict) or "source" not in m:
        continue
    if m.get("type") != "bind" and "bind" not in (m.get("options") or []) and "rbind" not in (m.get("options") or []):
        continue
    src = host + m["source"]
    os.makedirs(os.path.dirname(src), exist_ok=True)
    if m["destination"] in ("/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/run/.containerenv"):
        open(src, "a").close()
    else:
        os.makedirs(src, exist_ok=True)
    m["source"] = src
for ns in (doc.get("linux") or {}).get("namespaces") or []:
    if isinstance(ns, dict):
        ns.pop("path", None)
sys.stdout.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))
PY
}

# accepted_agrees KIND FILE: the shim accepts FILE and Go reads its applied form as written.
accepted_agrees()
{
	local kind=$1 f=$2 name out
	name=${f#"$HEZO_SOURCE_DIR"/}
	if ! relocate_binds "$f" >"$work/doc.json"; then
		not_ok "$name: bind sources relocated"
		return
	fi
	if ! "$apply" "$kind" "$work/doc.json" "$work/policy.json" >"$work/applied.json" 2>"$work/err"; then
		not_ok "$name: accepted by policy"
		diag "$(cat "$work/applied.json" "$work/err")"
		return
	fi
	out=$("$work/specdiff" "$kind" "$work/applied.json" 2>&1)
	expect_eq "$out" agree "$name: accepted, and runc's decoder reads the applied document as written"
}

for f in "$HEZO_SOURCE_DIR"/tests/data/{config,process,resources}-*.json \
	"$HEZO_SOURCE_DIR"/tests/data/keys/*-ok-*.json; do
	accepted_agrees "$(kind_of "$f")" "$f"
done

bad=0
for f in "$HEZO_SOURCE_DIR"/tests/data/keys/*-bad-*.json; do
	bad=$((bad + 1))
	kind=$(kind_of "$f")
	name=${f#"$HEZO_SOURCE_DIR"/}
	# Relocated as the benign ones, so that nothing but the key spelling stands in the way.
	relocate_binds "$f" >"$work/doc.json" || not_ok "$name: bind sources relocated"
	out=$("$apply" "$kind" "$work/doc.json" "$work/policy.json" 2>&1)
	rc=$?
	if [ "$rc" = 1 ] && grep -Eq "^refused: [a-z.]+: .*\"(: differs from the spec's field \"| and \".* differ only in case)" <<<"$out"; then
		ok "$name: refused naming the key"
	else
		not_ok "$name: refused naming the key"
		diag "exit $rc: $out"
	fi
	out=$("$work/specdiff" "$kind" "$f" 2>&1)
	expect_match "$out" '^disagree: ' "$name: raw, runc's decoder reads it other than its exact keys say"
	diag "$out"
done
[ "$bad" -ge 20 ] || not_ok "at least 20 hostile documents (found $bad)"

# The schema against Go's types: each field of specs.Spec, Process and LinuxResources, at any
# depth, alone in a document with the case of its first letter flipped, must be refused.
for kind in spec process resources; do
	n=0 missed=()
	while IFS=$'\t' read -r path doc; do
		n=$((n + 1))
		printf '%s\n' "$doc" >"$work/field.json"
		out=$("$apply" "$kind" "$work/field.json" 2>&1)
		grep -q "differs from the spec's field" <<<"$out" || missed+=("$path: $out")
	done < <("$work/specdiff" fields "$kind")
	if [ "$n" -gt 0 ] && [ "${#missed[@]}" = 0 ]; then
		ok "every field of the Go type for $kind ($n), spelled with its first letter flipped, is refused"
	else
		not_ok "every field of the Go type for $kind ($n), spelled with its first letter flipped, is refused"
		diag "${#missed[@]} accepted or refused for another reason, e.g.: ${missed[*]:0:5}"
	fi
done

# The fuzz corpora: whatever policy accepts must read the same to Go, or not decode at all (runc
# refuses a document it cannot decode). One assertion per corpus, with counts. Each input starts
# with a selector byte; MOD/WANT keep those whose byte % MOD is WANT (fuzz-policy: 1 = config).
fuzz_corpus()
{
	local kind=$1 dir=$2 mod=$3 want=$4 n=0 acc=0 agree=0 undec=0 refused=0 bad_list=() f out b
	for f in "$dir"/*; do
		b=$(head -c 1 "$f" | od -An -tu1 | tr -d ' ')
		if [ -z "$b" ] || [ $((b % mod)) != "$want" ]; then
			continue
		fi
		tail -c +2 "$f" >"$work/doc.json"
		n=$((n + 1))
		if ! "$apply" "$kind" "$work/doc.json" >"$work/applied.json" 2>/dev/null; then
			refused=$((refused + 1))
			continue
		fi
		acc=$((acc + 1))
		out=$("$work/specdiff" "$kind" "$work/applied.json" 2>&1)
		case "$out" in
		agree) agree=$((agree + 1)) ;;
		undecodable:*) undec=$((undec + 1)) ;;
		*) bad_list+=("$(basename "$f"): $out") ;;
		esac
	done
	if [ "$n" -gt 0 ] && [ "$acc" -gt 0 ] && [ "${#bad_list[@]}" = 0 ]; then
		ok "fuzz corpus ${dir#"$HEZO_SOURCE_DIR"/}: $n documents, $acc accepted ($agree agree, $undec undecodable by Go), $refused refused"
	else
		not_ok "fuzz corpus ${dir#"$HEZO_SOURCE_DIR"/}: $n documents, some accepted, every accepted one agrees"
		diag "$acc accepted; ${bad_list[*]:0:5}"
	fi
}
fuzz_corpus process "$HEZO_SOURCE_DIR/tests/fuzz/corpus/process" 1 0
fuzz_corpus resources "$HEZO_SOURCE_DIR/tests/fuzz/corpus/resources" 1 0
fuzz_corpus spec "$HEZO_SOURCE_DIR/tests/fuzz/corpus/policy" 3 1
tap_done

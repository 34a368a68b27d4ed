#!/bin/sh
# `policy check` and `policy show [--project]` on the shipped policy and on broken ones.
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d /tmp/hezo-policy-XXXXXX)
trap 'rm -rf "$work"' EXIT
check "policy check accepts etc/policy.json" sh -c "'$T' policy check '$SRC/etc/policy.json' | grep -q ': ok'"
printf '{"version": 1, "resources": {"memory": "2 GB"}}\n' >"$work/bad.json"
check "policy check names the bad field and fails" sh -c "! '$T' policy check '$work/bad.json' 2>'$work/err' && grep -q 'resources.memory' '$work/err'"
printf '{"version": 1, "capabilites": []}\n' >"$work/typo.json"
check "policy check refuses a misspelt key" sh -c "! '$T' policy check '$work/typo.json' 2>'$work/err' && grep -q 'capabilites' '$work/err'"
mkdir -p "$work/projects"
jq --arg d "$work/projects" '.projectsDir = $d' "$SRC/etc/policy.json" >"$work/policy.json"
printf '{"resources": {"memory": "256m"}}\n' >"$work/projects/web.json"
check "policy show prints the defaults as JSON" sh -c "'$T' policy show --policy '$work/policy.json' | jq -e '.mode == \"production\"' >/dev/null"
check "policy show --project applies the project file" sh -c "HEZO_POLICY='$work/policy.json' '$T' policy show --project web | jq -e '[.. | strings, numbers] | map(tostring) | any(. == \"268435456\" or . == \"256m\")' >/dev/null"
check "policy show --project refuses a project without a file" sh -c "! HEZO_POLICY='$work/policy.json' '$T' policy show --project nope 2>'$work/err' && grep -q nope '$work/err'"
finish

#!/bin/sh
# The files packaging/ ships, checked offline by the tools that consume them: kubectl (RuntimeClass),
# docker-compose (the example), containerd (the snippet), systemd-analyze (the unit), man (pages).
. "$(dirname "$0")/lib.sh"
P=$SRC/packaging
work=$(mktemp -d /tmp/hezo-manifests-XXXXXX)
trap 'rm -rf "$work"' EXIT

# kubectl without a cluster: `label --local` parses the manifest client-side (create/apply
# --dry-run=client still ask a server for the API mapping). Field checks follow with jq.
if command -v kubectl >/dev/null; then
	check "kubectl parses runtimeclass.yaml offline" sh -c "kubectl label --local -f '$P/kubernetes/runtimeclass.yaml' -o json hezo-check=1 >'$work/rc.json'"
	check "RuntimeClass node.k8s.io/v1 named hezo with handler hezo" jq -e '.apiVersion == "node.k8s.io/v1" and .kind == "RuntimeClass" and .metadata.name == "hezo" and .handler == "hezo"' "$work/rc.json"
	check "RuntimeClass has only fields the v1 schema knows" jq -e '(keys - ["apiVersion","kind","metadata","handler","overhead","scheduling"]) == [] and ((.overhead // {}) | keys - ["podFixed"]) == []' "$work/rc.json"
	check "handler is a DNS label, as the API requires" sh -c "jq -r .handler '$work/rc.json' | grep -Eqx '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?'"
	check "the example pod parses and names runtimeClassName hezo" sh -c "kubectl label --local -f '$P/kubernetes/example-pod.yaml' -o json hezo-check=1 | jq -e '.spec.runtimeClassName == \"hezo\"' >/dev/null"
else
	skip "kubectl is not installed (Debian: kubernetes-client)"
fi

# The containerd snippet, appended to a default config, is read by containerd itself.
if command -v containerd >/dev/null; then
	check "containerd reads hezo.toml appended to its default config" sh -c "
		containerd config default >'$work/c.toml' && cat '$P/containerd/hezo.toml' >>'$work/c.toml' &&
		containerd --config '$work/c.toml' config dump | grep -A12 'runtimes.hezo\]' | grep -q 'runtime_type = \"io.containerd.runc.v2\"'"
	check "containerd reads containerd-gvisor-default.toml, whose default runtime is hezo on hezo-shim" sh -c "
		containerd --config '$P/kubernetes/containerd-gvisor-default.toml' config dump >'$work/g.toml' &&
		grep -q 'default_runtime_name = \"hezo\"' '$work/g.toml' &&
		grep -A12 'runtimes.hezo.options\]' '$work/g.toml' | grep -q 'BinaryName = \"/usr/bin/hezo-shim\"'"
else
	skip "containerd is not installed"
fi

if command -v docker-compose >/dev/null; then
	check "docker-compose accepts the example (format 2.4, runtime key)" sh -c "docker-compose -f '$P/compose/docker-compose.yml' config >'$work/compose.out' 2>&1"
	check "both services use runtime hezo-shim" sh -c "test \$(grep -c 'runtime: hezo-shim' '$work/compose.out') -eq 2"
else
	skip "docker-compose is not installed"
fi

if command -v systemd-analyze >/dev/null; then
	sed 's|@SBINDIR@|/usr/sbin|' "$P/systemd/hezo-proxyd.service.in" >"$work/hezo-proxyd.service"
	# verify complains about a missing ExecStart binary; everything else must be clean.
	check "systemd-analyze verify: the unit parses without unknown settings" sh -c "
		systemd-analyze verify '$work/hezo-proxyd.service' 2>&1 | grep -v -e 'hezo-proxyd: No such file' -e 'is not executable' -e 'Command /usr/sbin/hezo-proxyd' -e 'Command .man ' -e '^\$' >'$work/verify.out'; ! test -s '$work/verify.out' || { cat '$work/verify.out'; false; }"
	check "the unit is hardened as documented" sh -c "
		for k in Type=notify ProtectSystem=strict ProtectHome=yes PrivateTmp=yes NoNewPrivileges=yes CapabilityBoundingSet=CAP_SYS_ADMIN RuntimeDirectory=hezo-proxyd LogsDirectory=hezo-proxyd Restart=always SystemCallArchitectures=native ReadWritePaths=/run/hezo-proxyd; do grep -qx \"\$k\" '$work/hezo-proxyd.service' || { echo missing \$k; exit 1; }; done; ! grep -q '^PrivateNetwork' '$work/hezo-proxyd.service'"
else
	skip "systemd-analyze is not installed"
fi

for m in "$P"/man/*.[58]; do
	check "man $(basename "$m") renders without warnings" sh -c "LC_ALL=C.UTF-8 MANWIDTH=100 man --warnings -l '$m' 2>&1 >/dev/null | { ! grep .; }"
done
finish

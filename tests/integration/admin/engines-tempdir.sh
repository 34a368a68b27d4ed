#!/bin/sh
# install/uninstall on copies of the real engine files in a temp root, each result read back by
# the engine itself (containerd config dump, podman info), and byte-identical round trips.
. "$(dirname "$0")/lib.sh"
need_root
dir=$(mktemp -d /tmp/hezo-engines-XXXXXX)
trap 'rm -rf "$dir"' EXIT
shim=$dir/bin/hezo-shim
mkdir -p "$dir/bin"
# Any executable will do for the engines' checks; they only need the path to exist.
ln -s /usr/sbin/runc "$shim"

# --- containerd -------------------------------------------------------------------------------
containerd config default >"$dir/default.toml"
cp /etc/containerd/config.toml "$dir/debian.toml" 2>/dev/null || printf 'version = 2\n' >"$dir/debian.toml"
{
	cat "$dir/default.toml"
	printf '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc]\n'
	printf '  runtime_type = "io.containerd.runsc.v1"'
} >"$dir/others.toml"
for f in default debian others; do
	cp "$dir/$f.toml" "$dir/$f.orig"
	check "containerd $f: install" "$T" install --containerd --config "$dir/$f.toml" --shim "$shim"
	check "containerd $f: containerd reads it and sees runtime hezo with our BinaryName" sh -c "
		containerd --config '$dir/$f.toml' config dump >'$dir/dump' 2>&1 &&
		grep -q 'containerd.runtimes.hezo\]' '$dir/dump' &&
		grep -q 'BinaryName = \"$shim\"' '$dir/dump' &&
		grep -q 'Root = \"/run/hezo-shim/containerd-runc\"' '$dir/dump' &&
		grep -q 'runtime_type = \"io.containerd.runc.v2\"' '$dir/dump'"
	if [ "$f" = others ]; then
		check "containerd $f: the other runtime is still there" grep -q 'containerd.runtimes.runsc\]' "$dir/dump"
	fi
	cp "$dir/$f.toml" "$dir/$f.once"
	check "containerd $f: install twice changes nothing" sh -c "'$T' install --containerd --config '$dir/$f.toml' --shim '$shim' && cmp '$dir/$f.toml' '$dir/$f.once'"
	check "containerd $f: uninstall" "$T" uninstall --containerd --config "$dir/$f.toml"
	check "containerd $f: byte-identical after uninstall" cmp "$dir/$f.toml" "$dir/$f.orig"
done
printf 'version = 1\n[plugins.cri]\n' >"$dir/v1.toml"
cp "$dir/v1.toml" "$dir/v1.orig"
check "containerd: a version 1 config is refused, untouched" sh -c "! '$T' install --containerd --config '$dir/v1.toml' --shim '$shim' 2>'$dir/err' && grep -q 'version 2' '$dir/err' && cmp '$dir/v1.toml' '$dir/v1.orig'"
check "containerd: --dry-run writes nothing" sh -c "'$T' install --containerd --dry-run --config '$dir/default.toml' --shim '$shim' | grep -q BinaryName && cmp '$dir/default.toml' '$dir/default.orig'"
check "containerd: absent file: install creates it, uninstall deletes it" sh -c "
	'$T' install --containerd --config '$dir/new.toml' --shim '$shim' &&
	containerd --config '$dir/new.toml' config dump | grep -q 'runtimes.hezo\]' &&
	'$T' uninstall --containerd --config '$dir/new.toml' && test ! -e '$dir/new.toml'"

# --- podman ------------------------------------------------------------------------------------
cp /usr/share/containers/containers.conf "$dir/shipped.conf"
cp "$SRC/tests/unit/admin/data/podman-engine.conf" "$dir/admin.conf"
for f in shipped admin new; do
	[ -e "$dir/$f.conf" ] && cp "$dir/$f.conf" "$dir/$f.orig"
	check "podman $f: install" "$T" install --podman --config "$dir/$f.conf" --shim "$shim"
	check "podman $f: podman resolves --runtime hezo-shim to our path" sh -c "
		CONTAINERS_CONF='$dir/$f.conf' podman --runtime hezo-shim info --format '{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Path}}' 2>&1 | grep -qx 'hezo-shim $shim'"
	check "podman $f: uninstall" "$T" uninstall --podman --config "$dir/$f.conf"
	if [ "$f" = new ]; then
		check "podman $f: the file install created is gone" test ! -e "$dir/$f.conf"
	else
		check "podman $f: byte-identical after uninstall" cmp "$dir/$f.conf" "$dir/$f.orig"
	fi
done

# --- docker (file only; the live daemon is dockerd.sh) -----------------------------------------
printf '{\n  "log-level": "warn",\n  "runtimes": {"runsc": {"path": "/usr/bin/runsc"}},\n  "max-concurrent-downloads": 3\n}\n' >"$dir/daemon.json"
cp "$dir/daemon.json" "$dir/daemon.orig"
check "docker: install" "$T" install --docker --no-reload --config "$dir/daemon.json" --shim "$shim"
check "docker: keys and order kept, ours added" sh -c "jq -c 'keys_unsorted, (.runtimes|keys_unsorted), .runtimes[\"hezo-shim\"].path' '$dir/daemon.json' | tr -d '\n' | grep -qxF '[\"log-level\",\"runtimes\",\"max-concurrent-downloads\"][\"runsc\",\"hezo-shim\"]\"$shim\"'"
check "docker: uninstall restores byte-identical" sh -c "'$T' uninstall --docker --no-reload --config '$dir/daemon.json' && cmp '$dir/daemon.json' '$dir/daemon.orig' && test ! -e '$dir/daemon.json.hezo-backup'"
printf '{"log-level": "warn",}\n' >"$dir/bad.json"
cp "$dir/bad.json" "$dir/bad.orig"
check "docker: invalid JSON reported with the parse error, never overwritten" sh -c "! '$T' install --docker --no-reload --config '$dir/bad.json' --shim '$shim' 2>'$dir/err' && grep -q 'not valid JSON' '$dir/err' && cmp '$dir/bad.json' '$dir/bad.orig' && test ! -e '$dir/bad.json.hezo-backup'"
check "docker: edited after install: only our key goes, the edit stays" sh -c "
	'$T' install --docker --no-reload --config '$dir/daemon.json' --shim '$shim' >/dev/null &&
	jq '.debug = true' '$dir/daemon.json' >'$dir/edit' && cp '$dir/edit' '$dir/daemon.json' &&
	'$T' uninstall --docker --no-reload --config '$dir/daemon.json' | grep -q 'kept the other changes' &&
	jq -e '.debug == true and (.runtimes | has(\"hezo-shim\") | not) and .runtimes.runsc.path == \"/usr/bin/runsc\"' '$dir/daemon.json' >/dev/null"
finish

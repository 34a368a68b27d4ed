#!/bin/bash
# What noexec on the box's tmpfs stops, under HEZO_TEST_BACKEND, through Docker and the dev image:
# execve of a file there, the loader run on it (`ld.so FILE`), dlopen of a library there,
# mmap(PROT_EXEC) of it, mprotect to PROT_EXEC of a read-only mapping of it, and a copy run from
# a memfd (no mount at all). Each row asserts what docs/hardening.md ("noexec under runsc") claims
# for the backend: under runc the kernel refuses all but the memfd; under runsc gVisor refuses
# execve only. Also that `hezo-shim doctor` and `inspect` state the runsc limit.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/devbox.sh
. "$here/../lib/devbox.sh"

hezo_devbox_setup
RT=hezo-test-noexec-$HEZO_TEST_BACKEND
hezo_make_wrapper
rm -rf "${HEZO_TEST_SANITIZER_DIR:?}"/*
# The default: exec.tmpfs false, so /tmp (the policy's) and --tmpfs /x are noexec.
hezo_write_policy docker
hezo_docker_register_runtime "$RT" "$HEZO_TEST_WRAPPER" || bail_out "cannot register runtime $RT"
diag "backend $HEZO_TEST_BACKEND, runtime $RT, image $HEZO_DEV_IMAGE"

# The probe: key=value lines, "ran"/"refused ERRNO" per route, for a noexec directory $1.
# shellcheck disable=SC2016
PROBE='
import ctypes, mmap, os, shutil, subprocess, sys
d = sys.argv[1]
def run(key, argv, fds=()):
    try:
        r = subprocess.run(argv, capture_output=True, timeout=60, pass_fds=fds)
        print(key + "=" + ("ran" if r.returncode == 0 else "refused %d %s" % (r.returncode, r.stderr.decode(errors="replace").strip().splitlines()[-1:] )))
    except OSError as e:
        print(key + "=refused " + (os.strerror(e.errno) if e.errno else str(e)))
shutil.copy("/usr/bin/true", d + "/t")
os.chmod(d + "/t", 0o755)
run("execve", [d + "/t"])
run("ldso", ["/lib64/ld-linux-x86-64.so.2", d + "/t"])
lib = [p for p in ("/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1") if os.path.exists(p)]
libc = ctypes.CDLL(None, use_errno=True)
if lib:
    shutil.copy(lib[0], d + "/l.so")
    try:
        ctypes.CDLL(d + "/l.so")
        print("dlopen=ran")
    except OSError as e:
        print("dlopen=refused " + str(e).split(":")[-1].strip())
fd = os.open(d + "/t", os.O_RDONLY)
try:
    m = mmap.mmap(fd, 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
    print("mmap_exec=ran")
    m.close()
except OSError as e:
    print("mmap_exec=refused " + os.strerror(e.errno))
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
a = libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_PRIVATE, fd, 0)
if a in (None, ctypes.c_void_p(-1).value):
    print("mprotect_exec=refused mmap " + os.strerror(ctypes.get_errno()))
elif libc.mprotect(a, 4096, mmap.PROT_READ | mmap.PROT_EXEC) == 0:
    print("mprotect_exec=ran")
else:
    print("mprotect_exec=refused " + os.strerror(ctypes.get_errno()))
os.close(fd)
mfd = os.memfd_create("x", 0)
with open("/usr/bin/true", "rb") as f:
    os.write(mfd, f.read())
run("memfd_exec", ["/proc/self/fd/%d" % mfd], (mfd,))
print("probe=done")
'

# probe LABEL DIR [DOCKER RUN OPTIONS...]: run the probe on DIR in a fresh box; sets OUT.
probe()
{
	local label=$1 dir=$2 name
	shift 2
	name=hezo-it-noexec-$label-$(hezo_rand)
	tap_cleanup "hezo_docker rm -f '$name' >/dev/null 2>&1"
	OUT=$(timeout -k 5 180 "$HEZO_DOCKER" run --rm --runtime="$RT" --name "$name" "$@" \
		"$HEZO_DEV_IMAGE" python3 -c "$PROBE" "$dir" 2>&1 </dev/null)
	diag "[$label] $(tr '\n' ' ' <<<"$OUT")"
}

# What docs/hardening.md claims, per backend: route=ran or refused.
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	CLAIM=(execve=refused ldso=ran dlopen=ran mmap_exec=ran mprotect_exec=ran memfd_exec=ran)
else
	CLAIM=(execve=refused ldso=refused dlopen=refused mmap_exec=refused mprotect_exec=refused
		memfd_exec=ran)
fi

for where in "/tmp" "/x"; do
	if [ "$where" = /x ]; then
		probe tmpfs /x --tmpfs /x:rw,exec,size=16m
	else
		probe tmp /tmp
	fi
	expect_eq "$(hezo_probe_get "$OUT" probe)" "done" "[$where] the probe ran to its end" || continue
	for c in "${CLAIM[@]}"; do
		key=${c%%=*} want=${c#*=}
		got=$(hezo_probe_get "$OUT" "$key")
		expect_eq "${got%% *}" "$want" "[$HEZO_TEST_BACKEND $where noexec] $key: $want (docs/hardening.md)"
	done
done

# The limits are said where an admin looks: doctor, and inspect of a box.
out=$(hezo_shim doctor 2>&1)
expect_match "$out" "^warn $HEZO_TEST_BACKEND: noexec does not stop a copy run from a memfd" \
	"doctor states the memfd limit of $HEZO_TEST_BACKEND"
name=hezo-it-noexec-insp-$(hezo_rand)
tap_cleanup "hezo_docker rm -f '$name' >/dev/null 2>&1"
timeout -k 5 60 "$HEZO_DOCKER" run -d --runtime="$RT" --name "$name" "$HEZO_DEV_IMAGE" \
	sleep 300 >/dev/null 2>&1
id=$(hezo_docker inspect -f '{{.Id}}' "$name" 2>/dev/null)
lim=$(hezo_shim --root /run/docker/runtime-runc/moby inspect "$id" 2>&1 | jq -r '.box.limits[]?' 2>&1)
expect_match "$lim" "memfd" "inspect of a $HEZO_TEST_BACKEND box states the memfd limit" || diag "$lim"
expect_match "$lim" "^named volumes and mounts.allowedSources binds are writable and executable" \
	"inspect of a $HEZO_TEST_BACKEND box states that volumes and allowed binds execute (ws2, L1)" || diag "$lim"
if [ "$HEZO_TEST_BACKEND" = runsc ]; then
	expect_match "$out" "^warn runsc: noexec under runsc stops execve only" \
		"doctor states the runsc noexec limit"
	expect_match "$lim" "noexec under runsc stops execve only" \
		"inspect of a runsc box states the noexec limit" || diag "$lim"
else
	expect_no_match "$lim" "execve only" "inspect of a runc box claims no runsc limit"
fi
hezo_docker rm -f "$name" >/dev/null 2>&1

hezo_expect_no_sanitizer_reports
tap_done

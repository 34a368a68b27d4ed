#!/bin/sh
# Capture runtime used to record tests/data/*.json: keeps a copy of what the engine hands to
# runc (config.json on create/run, --process on exec, the resources on update), then runs runc.
# Register it as a runtime (docker daemon.json "runtimes", ctr --runc-binary, podman --runtime).
out=${HEZO_CAPTURE_DIR:-/tmp/hezo-capture}
real=${HEZO_CAPTURE_RUNC:-/usr/sbin/runc}
mkdir -p "$out"
stamp=$(date +%s%N)
verb='' bundle='' process='' resources=''
prev=
for a in "$@"; do
	case "$prev" in
	--bundle|-b) bundle=$a ;;
	--process|-p) process=$a ;;
	-r|--resources) resources=$a ;;
	esac
	case "$a" in
	--bundle=*) bundle=${a#--bundle=} ;;
	--process=*) process=${a#--process=} ;;
	--resources=*) resources=${a#--resources=} ;;
	create|run|exec|update) [ -z "$verb" ] && verb=$a ;;
	esac
	prev=$a
done
echo "$stamp $verb $*" >>"$out/calls.log"
case "$verb" in
create|run)
	[ -n "$bundle" ] || bundle=.
	cp "$bundle/config.json" "$out/config-$stamp.json" ;;
exec)
	[ -n "$process" ] && cp "$process" "$out/process-$stamp.json" ;;
update)
	if [ "$resources" = - ]; then
		cat >"$out/resources-$stamp.json"
		exec "$real" "$@" <"$out/resources-$stamp.json"
	fi
	[ -n "$resources" ] && cp "$resources" "$out/resources-$stamp.json" ;;
esac
exec "$real" "$@"

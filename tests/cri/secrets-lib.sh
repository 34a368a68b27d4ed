# The world of the CRI secrets tests (pod-secrets.sh, pod-secrets-runsc.sh): secrets TOKA and TOKB
# with random values (VALUE_A, VALUE_B) in root's files under S, a test CA that proxyd trusts for
# api.test, Debian's curl in the image, and a TLS echo upstream at api.test in the egress world's
# "internet" namespace logging each request to UPLOG. Source after tests/lib/image.sh, tls.sh and
# egress-lib.sh; call cri_secrets_world before `cri_setup egress`, cri_secrets_up after it.

# shellcheck shell=bash

S=
VALUE_A=
VALUE_B=
UPLOG=

# The certificates and secrets live beside the test directory: proxyd needs the CA at start.
cri_secrets_world()
{
	hezo_require_tools openssl python3 curl ldd
	S=$(mktemp -d /tmp/hezo-pod-secrets.XXXXXX) || bail_out "mktemp failed"
	tap_cleanup "rm -rf '$S'"
	chmod 0700 "$S"
	hezo_test_ca "$S" hezo-test-upstream-CA api.test api.test ||
		bail_out "openssl cannot make the test certificates"
	VALUE_A="va_$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
	VALUE_B="vb_$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
	printf '%s\n' "$VALUE_A" >"$S/toka"
	printf '%s\n' "$VALUE_B" >"$S/tokb"
	chmod 0600 "$S/toka" "$S/tokb"
	# (Read by egress-lib.sh's cri_egress_world.)
	# shellcheck disable=SC2034
	CRI_PROXYD_ARGS=(--test-upstream-ca "$S/ca.crt")
	# shellcheck disable=SC2034
	CRI_EGRESS_DNS_ARGS=(--address=/api.test/"$CRI_ALLOWED_IP")
}

# The image gets Debian's curl; the shim mounts proxyd's CA bundle at /etc/ssl/certs.
cri_image_extra()
{
	hezo_copy_bin "$1" /usr/bin/curl && mkdir -p "$1/etc/ssl/certs" &&
		printf 'hosts: dns files\n' >"$1/etc/nsswitch.conf"
}

# cri_secrets_up: the policy (egress proxy, api.test allowed, TOKA and TOKB for it) and the
# upstream, listening before it returns.
cri_secrets_up()
{
	hezo_write_policy docker "$(cri_policy_filter) | $(cri_egress_filter) |
		.egress.allow += [\"api.test\"] |
		.secrets = {TOKA: {hosts: [\"api.test\"], file: \"$S/toka\"},
			TOKB: {hosts: [\"api.test\"], file: \"$S/tokb\"}}"
	UPLOG=$CRI_EGRESS/up.log
	: >"$UPLOG"
	_cri_egress_bg ip netns exec "$CRI_EGRESS_INET" python3 "$HEZO_HTTPS_UPSTREAM" "$UPLOG" \
		"$CRI_ALLOWED_IP" "$S/up.crt" "$S/up.key"
	for _ in $(seq 100); do
		_cri_in_inet ss -Hltn 'sport = :443' | grep -q . && return 0
		sleep 0.1
	done
	bail_out "the TLS upstream did not start"
}

# cri_secrets_get ID PATH HEADER_VALUE: container ID's GET of https://api.test/PATH carrying
# X-Token; the answer it got and curl's status, on one line.
cri_secrets_get()
{
	cri_exec "$1" "curl -sS --max-time 15 -o - -w ' status=%{http_code}' -H 'X-Token: $3' \
		https://api.test/$2 2>&1 | tr '\n' ' '"
}

# cri_secrets_host_get NETNS PATH HEADER_VALUE: the same from the pod's namespace NETNS but from
# the host (nsenter), outside every container; trusts both the upstream's CA and proxyd's.
cri_secrets_host_get()
{
	[ -e "$S/both.crt" ] || cat "$S/ca.crt" "$CRI_EGRESS/proxyd/tls/bundle.crt" >"$S/both.crt"
	nsenter --net="$1" curl -sS --max-time 15 --cacert "$S/both.crt" \
		--resolve "api.test:443:$CRI_ALLOWED_IP" -H "X-Token: $3" "https://api.test/$2" 2>&1 |
		tr '\n' ' '
}

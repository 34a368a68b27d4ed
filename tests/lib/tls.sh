# The test CA and the certificates of the HTTPS upstreams (https-upstream.py) that the secrets
# tests and benchmarks serve from a namespace of their own. Sourced, not run.

# shellcheck shell=bash

# hezo_test_ca DIR CA_CN LEAF_CN NAME...: in DIR, a P-256 test CA (ca.key, ca.crt) and a leaf
# for LEAF_CN signed by it (up.key, up.crt) whose subjectAltName lists DNS:NAME for each NAME.
# Both last two days. Fails when openssl cannot make them.
hezo_test_ca()
{
	local dir=$1 ca_cn=$2 cn=$3 san="" name
	shift 3
	for name in "$@"; do
		san+="${san:+,}DNS:$name"
	done
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=$ca_cn" -keyout "$dir/ca.key" -out "$dir/ca.crt" >/dev/null 2>&1 &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$cn" \
			-keyout "$dir/up.key" -out "$dir/up.csr" >/dev/null 2>&1 &&
		printf 'subjectAltName=%s\n' "$san" >"$dir/san.ext" &&
		openssl x509 -req -in "$dir/up.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
			-CAcreateserial -days 2 -extfile "$dir/san.ext" -out "$dir/up.crt" >/dev/null 2>&1
}

# hezo_test_selfsigned DIR NAME [BASE]: a self-signed P-256 certificate for NAME (no CA trusts
# it) in DIR/BASE.crt and DIR/BASE.key (BASE: bad).
hezo_test_selfsigned()
{
	local dir=$1 name=$2 base=${3:-bad}
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=$name" -addext "subjectAltName=DNS:$name" -keyout "$dir/$base.key" \
		-out "$dir/$base.crt" >/dev/null 2>&1
}

# The HTTPS upstream: python3 "$HEZO_HTTPS_UPSTREAM" LOG ADDRESS CERT KEY (port 443).
# shellcheck disable=SC2034 # run by the scripts that source this file
HEZO_HTTPS_UPSTREAM=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/https-upstream.py

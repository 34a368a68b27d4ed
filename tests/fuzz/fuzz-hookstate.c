/*
 * libFuzzer target for what hezo-hook reads from others: every input goes through the OCI state
 * parser (with and without a required pid), the --egress argument parser and the proxyd reply
 * parser, and whatever any of them accepts must satisfy what the hook then relies on.
 *
 * Build and run by hand from the top of the checkout:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec -Ihooks \
 *       tests/fuzz/fuzz-hookstate.c hooks/state.c hooks/control.c spec/json.c base/error.c \
 *       -lyajl -o /tmp/fuzz-hookstate
 *   mkdir -p /tmp/fuzz-hookstate-corpus && /tmp/fuzz-hookstate -max_total_time=60 \
 *       /tmp/fuzz-hookstate-corpus tests/fuzz/corpus/hookstate
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-hook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Errors end up on one stderr line of the hook (and in the engine's error): one printable line. */
static void check_error(int r, struct hezo_error *err, const char *prefix)
{
	if (r >= 0)
		abort();
	if (!err || !err->msg || err->errnum <= 0 || r != -err->errnum ||
	    strncmp(err->msg, prefix, strlen(prefix)) != 0)
		abort();
	for (const unsigned char *p = (const unsigned char *)err->msg; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			abort();
}

static void check_state(const uint8_t *data, size_t size)
{
	struct hezo_hook_state any, running;
	int r, r2;

	{
		_cleanup_error_ struct hezo_error *err = NULL;

		r = hezo_hook_parse_state((const char *)data, size, false, &any, &err);
		if (r < 0) {
			check_error(r, err, "state");
			if (any.id || any.status || any.bundle || any.pid)
				abort();
		} else {
			/* The id names nft tables, proxyd state files and bind mounts. */
			if (err || !any.id || !hezo_hook_id_valid(any.id))
				abort();
			if (any.bundle && any.bundle[0] != '/')
				abort();
			if (any.pid < 0 || any.pid > HEZO_HOOK_PID_MAX)
				abort();
		}
	}
	{
		_cleanup_error_ struct hezo_error *err = NULL;

		r2 = hezo_hook_parse_state((const char *)data, size, true, &running, &err);
		if (r2 < 0) {
			check_error(r2, err, "state");
		} else {
			/* Requiring a pid only ever refuses more, and changes nothing it accepts.
			 */
			if (r < 0 || running.pid < 1 || running.pid != any.pid ||
			    strcmp(running.id, any.id) != 0)
				abort();
			if (!running.bundle != !any.bundle ||
			    (any.bundle && strcmp(running.bundle, any.bundle) != 0))
				abort();
		}
	}
	hezo_hook_state_clear(&any);
	hezo_hook_state_clear(&running);
	if (any.id || running.id)
		abort();
}

static void check_egress(const uint8_t *data, size_t size)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *arg = strndup((const char *)data, size);
	_cleanup_free_ char *req = NULL;
	_cleanup_json_ struct hezo_json *back = NULL;
	struct hezo_hook_egress eg;
	size_t reqlen;
	int r;

	if (!arg)
		return;
	r = hezo_hook_parse_egress(arg, &eg, &err);
	if (r < 0) {
		check_error(r, err, "--egress");
		if (eg.json || eg.project)
			abort();
		return;
	}
	if (!eg.json || eg.json->type != HEZO_JSON_OBJECT)
		abort();
	if (eg.mode != HEZO_HOOK_MODE_OFF && eg.mode != HEZO_HOOK_MODE_DENY &&
	    eg.mode != HEZO_HOOK_MODE_PROXY)
		abort();
	if (eg.project && !eg.project[0])
		abort();

	/* What the hook then sends proxyd must carry the section unchanged. */
	if (hezo_hook_build_register("fuzz-id", &eg, size, &req, &reqlen, &err) < 0 || !req ||
	    strlen(req) != reqlen)
		abort();
	if (hezo_json_parse(req, reqlen, &back, &err) < 0)
		abort();
	if (!hezo_json_equal(hezo_json_get(back, "egress"), eg.json))
		abort();
	if (eg.project && strcmp(hezo_json_string(hezo_json_get(back, "project")), eg.project))
		abort();
	hezo_hook_egress_clear(&eg);
}

static void check_reply(const uint8_t *data, size_t size)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_hook_reply rep;
	int r;

	r = hezo_hook_parse_reply((const char *)data, size, &rep, &err);
	if (r < 0) {
		check_error(r, err, "proxyd reply");
		hezo_hook_reply_clear(&rep);
		return;
	}
	if (rep.ok) {
		if (rep.error || rep.tcp_port < 0 || rep.tcp_port > 65535 || rep.dns_port < 0 ||
		    rep.dns_port > 65535)
			abort();
	} else {
		/* proxyd's reason is printed by the hook on one line. */
		if (!rep.error || strlen(rep.error) > 300)
			abort();
		for (const unsigned char *p = (const unsigned char *)rep.error; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				abort();
	}
	hezo_hook_reply_clear(&rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_state(data, size);
	check_egress(data, size);
	check_reply(data, size);
	return 0;
}

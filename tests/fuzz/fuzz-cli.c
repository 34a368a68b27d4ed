/*
 * libFuzzer target for the shim's argument parser (shim/cli.c): the input is a command line, one
 * word a line, after "hezo-shim". Global flags, then the verb's flags and positionals, are parsed
 * as main.c does. What is accepted points into argv and names a verb within it; a refusal is one
 * line; an ID the shim accepts is one the backends' state directories can hold.
 *
 * Build and run by hand (or through tests/fuzz/smoke.sh, which builds every fuzz-* target):
 *   meson setup /tmp/fz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
 *       -Dc_args=-fsanitize=fuzzer-no-link && ninja -C /tmp/fz tests/fuzz/fuzz-cli
 *   /tmp/fz/tests/fuzz/fuzz-cli -max_total_time=60 tests/fuzz/corpus/cli
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WORDS 64

static void check_refusal(const struct hezo_error *e)
{
	if (!e || !e->msg || !e->msg[0] || strchr(e->msg, '\n'))
		abort();
}

static bool in_argv(const char *s, char **argv, int argc)
{
	for (int i = 0; i < argc; i++)
		if (s >= argv[i] && s <= argv[i] + strlen(argv[i]))
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *text = malloc(size + 1);
	struct shim_globals g = {0};
	struct shim_args a = {0};
	char *argv[MAX_WORDS + 2];
	int argc = 0, r;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	argv[argc++] = "hezo-shim";
	for (char *s = text; argc <= MAX_WORDS;) {
		char *nl = strchr(s, '\n');

		argv[argc++] = s;
		if (!nl)
			break;
		*nl = '\0';
		s = nl + 1;
	}
	argv[argc] = NULL;

	r = shim_parse_globals(argc, argv, &g, &e);
	if (r < 0) {
		check_refusal(e);
		shim_globals_done(&g);
		return 0;
	}
	if (g.verb < 1 || g.verb > argc)
		abort();
	if (g.root && !in_argv(g.root, argv, argc))
		abort();
	if (g.verb < argc) {
		const char *verb = argv[g.verb];
		int n = argc - g.verb - 1;
		const char *id;

		r = shim_parse_args(shim_verb_spec(verb), n, argv + g.verb + 1, &a, &e);
		if (r < 0) {
			check_refusal(e);
		} else {
			if (a.npos > (size_t)n || a.positional < 0 || a.positional > n)
				abort();
			for (size_t i = 0; i < a.npos; i++) {
				const char *p = shim_args_positional(&a, i);

				if (!p || !in_argv(p, argv, argc))
					abort();
			}
			id = shim_args_positional(&a, 0);
			if (id) {
				_cleanup_error_ struct hezo_error *ie = NULL;

				if (shim_validate_id(id, &ie) == 0) {
					if (!id[0] || strchr(id, '/') || strcmp(id, ".") == 0 ||
					    strcmp(id, "..") == 0)
						abort();
				} else {
					check_refusal(ie);
				}
			}
		}
		shim_args_done(&a);
	}
	shim_globals_done(&g);
	return 0;
}

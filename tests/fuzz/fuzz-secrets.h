/* The three secrets the interception fuzzers (fuzz-subst.c, fuzz-h2.c) substitute and mask. */
#ifndef HEZO_FUZZ_SECRETS_H
#define HEZO_FUZZ_SECRETS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static const char *const ph[3] = {
	"hzph0123456789abcdefghijklmnopqrstuvwxyz0123",
	"hzphaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"hzph9999999999999999999999999999999999999999",
};
/* No value shares a character run with a placeholder's ends, and none holds CR or LF: a value in
 * the output can only be one the masking missed. */
static const char *const val[3] = {"ghp_realtoken", "x?y#z/%41", "p@ss:w0rd"};

static inline bool contains(const uint8_t *b, size_t len, const char *s)
{
	return memmem(b, len, s, strlen(s)) != NULL;
}

#endif

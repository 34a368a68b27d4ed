/* Base64 (RFC 4648, the standard alphabet, padded) for the programs' wire formats. */
#ifndef HEZO_B64_H
#define HEZO_B64_H

#include <stddef.h>
#include <stdint.h>

/* Encoded length of len bytes. */
#define HEZO_B64_LEN(len) (((len) + 2) / 3 * 4)

/* Strict base64 (padding required, no whitespace) into out; -1 when it is not that or when it
 * would not fit in size bytes. */
long hezo_b64_decode(const uint8_t *s, size_t len, uint8_t *out, size_t size);
/* HEZO_B64_LEN(len) characters into out, no NUL; their count. */
size_t hezo_b64_encode(const uint8_t *s, size_t len, char *out);

#endif

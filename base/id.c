/* The container id rule (hezo-id.h): one copy for the shim, the hook and proxyd. */
#include <string.h>

#include "hezo-id.h"

bool hezo_id_valid(const char *id)
{
	size_t n;

	if (!id)
		return false;
	n = strnlen(id, HEZO_ID_MAX + 1);
	if (n == 0 || n > HEZO_ID_MAX || id[0] == '.' || id[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '+' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

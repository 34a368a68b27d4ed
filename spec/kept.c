/* The shim's side file in a bundle: the config.json it wrote there and the caller's original. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-kept.h"
#include "hezo-spec.h"

int hezo_spec_kept_join(const char *written, size_t wlen, const char *original, size_t olen,
			char **out, size_t *len, struct hezo_error **err)
{
	static const char head[] = "{\"version\":" HEZO_SPEC_KEPT_VERSION_TEXT ",\"written\":",
			  mid[] = ",\"original\":";
	size_t n;
	char *buf;

	if (wlen > HEZO_SPEC_KEPT_MAX_SIZE || olen > HEZO_SPEC_KEPT_MAX_SIZE)
		return hezo_error_set(err, EFBIG, "larger than %u bytes", HEZO_SPEC_KEPT_MAX_SIZE);
	n = sizeof(head) - 1 + wlen + sizeof(mid) - 1 + olen + 1;
	buf = malloc(n + 1);
	if (!buf)
		return hezo_error_set(err, ENOMEM, "out of memory");
	*out = buf;
	memcpy(buf, head, sizeof(head) - 1);
	buf += sizeof(head) - 1;
	memcpy(buf, written, wlen);
	buf += wlen;
	memcpy(buf, mid, sizeof(mid) - 1);
	buf += sizeof(mid) - 1;
	memcpy(buf, original, olen);
	buf += olen;
	*buf++ = '}';
	*buf = '\0';
	*len = n;
	return 0;
}

int hezo_spec_kept_dump(const struct hezo_json *written, const struct hezo_json *original,
			char **out, size_t *len, struct hezo_error **err)
{
	_cleanup_free_ char *w = NULL, *o = NULL;
	size_t wlen, olen;
	int r;

	if (!written || !original)
		return hezo_error_set(err, EINVAL, "missing value");
	r = hezo_json_dump(written, false, &w, &wlen, err);
	r = r ?: hezo_json_dump(original, false, &o, &olen, err);
	return r ?: hezo_spec_kept_join(w, wlen, o, olen, out, len, err);
}

int hezo_spec_kept_input(const struct hezo_json *config, const char *kept, size_t len,
			 struct hezo_json **input)
{
	_cleanup_json_ struct hezo_json *doc = NULL;
	struct hezo_json *written, *original;
	int64_t version = 0;

	*input = NULL;
	if (!config || !kept)
		return 0;
	/* Garbage is no side file: config.json is the input, judged as it stands. */
	if (hezo_json_parse(kept, len, &doc, NULL) < 0 || doc->type != HEZO_JSON_OBJECT)
		return 0;
	if (hezo_json_get_int64(hezo_json_get(doc, "version"), &version) < 0 ||
	    version != HEZO_SPEC_KEPT_VERSION)
		return 0;
	written = hezo_json_get_type(doc, "written", HEZO_JSON_OBJECT);
	original = hezo_json_get_type(doc, "original", HEZO_JSON_OBJECT);
	if (!written || !original || !hezo_json_equal(config, written))
		return 0;
	*input = hezo_json_clone(original);
	return *input ? 1 : -ENOMEM;
}

int hezo_spec_kept_read_at(int dirfd, char **out, size_t *len)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	/* Never followed, never waited on: a symlink fails with ELOOP, a FIFO opens at once. */
	fd = openat(dirfd, HEZO_SPEC_KEPT_NAME,
		    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if ((size_t)st.st_size > HEZO_SPEC_KEPT_MAX_SIZE)
		return -EFBIG;
	return hezo_read_fd(fd, HEZO_SPEC_KEPT_MAX_SIZE, out, len, NULL);
}

/*
 * The side file create keeps in a bundle beside the config.json it rewrote: that document and the
 * caller's original, so that the same bundle run again (runc's own workflow: `run` after the
 * container exited, `create` after `delete`) is judged on the caller's input, not on the shim's
 * output (docs/policy.md, "The bundle's config.json").
 *
 * Why it grants nothing: whichever document is taken as the input, config.json or the kept
 * original, is then judged in full by the same checks, as if the caller had written it into
 * config.json. Whoever can plant or edit the side file can write config.json in the same
 * directory, so it lets a caller ask for nothing they could not ask for there. It only decides
 * which of two documents is the caller's: the kept original is taken only while config.json is
 * still (as a parsed document) the one the shim wrote; once the caller edits config.json, that edit
 * is the input and the side file is ignored.
 */
#ifndef HEZO_KEPT_H
#define HEZO_KEPT_H

#include <stddef.h>

#include "hezo-error.h"
#include "hezo-json.h"
#include "hezo-spec.h"

#define HEZO_SPEC_KEPT_NAME	    ".hezo-config.json"
#define HEZO_SPEC_KEPT_VERSION	    1
#define HEZO_SPEC_KEPT_VERSION_TEXT "1"
/* Two documents of at most HEZO_SPEC_MAX_SIZE each (the written one is a little larger). */
#define HEZO_SPEC_KEPT_MAX_SIZE (2 * HEZO_SPEC_MAX_SIZE + (1u << 20))

/*
 * The side file's bytes: {"version": 1, "written": WRITTEN, "original": ORIGINAL}, compact.
 */
int hezo_spec_kept_dump(const struct hezo_json *written, const struct hezo_json *original,
			char **out, size_t *len, struct hezo_error **err);
/*
 * The same bytes from the two documents' compact dumps (hezo_json_dump, pretty false), for a
 * caller that has them already: create writes config.json from the same bytes.
 */
int hezo_spec_kept_join(const char *written, size_t wlen, const char *original, size_t olen,
			char **out, size_t *len, struct hezo_error **err);

/*
 * Which document is the input, given config.json's tree and the side file's bytes (kept NULL
 * when there is none). 1 with *input a copy of the kept original when config is equal
 * (hezo_json_equal) to the kept written document; 0 with *input NULL when the side file is
 * absent, not JSON, of another version or shape, or config differs from it; -ENOMEM. Pure.
 */
int hezo_spec_kept_input(const struct hezo_json *config, const char *kept, size_t len,
			 struct hezo_json **input);

/*
 * Read dirfd/HEZO_SPEC_KEPT_NAME without following a symlink or waiting on a FIFO: 0 with the
 * bytes (NUL-terminated, malloc'd); -ENOENT when absent, -ELOOP for a symlink, -EISDIR for a
 * directory, -EINVAL for anything else that is not a regular file, -EFBIG above
 * HEZO_SPEC_KEPT_MAX_SIZE, another -errno when it cannot be read.
 */
int hezo_spec_kept_read_at(int dirfd, char **out, size_t *len);

#endif

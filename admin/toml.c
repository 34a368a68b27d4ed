/*
 * containerd's config.toml and podman's containers.conf, edited as text: we have no TOML library,
 * so every line we add sits between BEGIN/END comment markers that record what else we changed,
 * and removing the blocks gives back the original bytes.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hezo-install.h"
#include "hezo-str.h"
#include "hezo-strv.h"

/*
 * Tags on the BEGIN line say what the block did besides adding its own lines:
 *   +file  the file did not exist before (removing the last block deletes it)
 *   +nl    a newline was added before the block (the text before it did not end in one)
 *   -eol   the single line the block replaced had no final newline
 * A block line "#< TEXT" is an original line the block stands in for; removal puts it back.
 */
#define TAG_FILE "+file"
#define TAG_NL	 "+nl"
#define TAG_EOL	 "-eol"
#define ORIG	 "#< "
#define HELP	 "# Added by `hezo-shim install`; `hezo-shim uninstall` removes this block exactly.\n"

struct buf {
	char *p;
	size_t len, alloc;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->alloc) {
		size_t a = (b->len + n + 1) * 2;
		char *p = realloc(b->p, a);

		if (!p)
			return -ENOMEM;
		b->p = p;
		b->alloc = a;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static int buf_str(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

static int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int buf_printf(struct buf *b, const char *fmt, ...)
{
	_cleanup_free_ char *s = NULL;
	int n = HEZO_VASPRINTF(&s, fmt);

	return n < 0 ? n : buf_add(b, s, (size_t)n);
}

/* Length of the line at p (up to, not including, '\n'), within end. */
static size_t line_len(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return nl ? (size_t)(nl - p) : (size_t)(end - p);
}

static bool line_is(const char *p, size_t n, const char *marker)
{
	size_t m = strlen(marker);

	return n >= m && memcmp(p, marker, m) == 0 && (n == m || p[m] == ' ' || p[m] == '\t');
}

static bool has_tag(const char *line, size_t n, const char *tag)
{
	size_t t = strlen(tag);

	for (size_t i = 0; i + t <= n; i++)
		if (memcmp(line + i, tag, t) == 0 && (i == 0 || line[i - 1] == ' ') &&
		    (i + t == n || line[i + t] == ' '))
			return true;
	return false;
}

static bool any_line_is(const char *text, size_t len, const char *marker)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		size_t n = line_len(p, end);

		if (line_is(p, n, marker))
			return true;
		p += n + 1;
	}
	return false;
}

bool hezo_install_blocks_present(const char *cur, size_t len)
{
	return any_line_is(cur, len, HEZO_INSTALL_BLOCK_BEGIN);
}

/* Remove the blocks between lines begin and end (hezo_install_blocks_remove's rules). */
static int remove_marked(const char *cur, size_t len, const char *begin_marker,
			 const char *end_marker, char **out, size_t *outlen, bool *changed,
			 bool *delete_file, struct hezo_error **err)
{
	struct buf b = {0};
	const char *p = cur, *end = cur + len;
	unsigned lineno = 0;
	bool file_tag = false;
	int r = 0;

	*changed = false;
	*delete_file = false;
	if (buf_add(&b, "", 0) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	while (p < end) {
		size_t n = line_len(p, end);
		const char *begin = p;
		unsigned begin_line = ++lineno;
		bool nl, eol;

		if (!line_is(p, n, begin_marker)) {
			r = buf_add(&b, p, p + n < end ? n + 1 : n);
			if (r < 0)
				goto oom;
			p += n + 1;
			continue;
		}
		nl = has_tag(begin, n, TAG_NL);
		eol = has_tag(begin, n, TAG_EOL);
		file_tag |= has_tag(begin, n, TAG_FILE);
		if (nl) {
			/* Undo the newline we put before the block. */
			if (b.len == 0 || b.p[b.len - 1] != '\n') {
				free(b.p);
				return hezo_error_set(
					err, EINVAL,
					"line %u: the hezo-shim block should follow a "
					"line break it added, but does not",
					begin_line);
			}
			b.p[--b.len] = '\0';
		}
		p += n + 1;
		for (;;) {
			if (p >= end) {
				free(b.p);
				return hezo_error_set(err, EINVAL,
						      "line %u: \"%s\" without a matching \"%s\"",
						      begin_line, begin_marker, end_marker);
			}
			n = line_len(p, end);
			lineno++;
			if (line_is(p, n, end_marker))
				break;
			if (line_is(p, n, begin_marker)) {
				free(b.p);
				return hezo_error_set(err, EINVAL, "line %u: nested \"%s\"", lineno,
						      begin_marker);
			}
			if (n >= strlen(ORIG) && memcmp(p, ORIG, strlen(ORIG)) == 0) {
				r = buf_add(&b, p + strlen(ORIG), n - strlen(ORIG));
				if (r >= 0 && !eol)
					r = buf_add(&b, "\n", 1);
				if (r < 0)
					goto oom;
			}
			p += n + 1;
		}
		p += n + 1;
		*changed = true;
	}
	if (*changed && file_tag) {
		/* The file was ours; delete it only if nothing but our blocks was ever in it. */
		bool blank = true;

		for (size_t i = 0; i < b.len; i++)
			if (!isspace((unsigned char)b.p[i]))
				blank = false;
		*delete_file = b.len == 0 || blank;
	}
	*out = b.p;
	*outlen = b.len;
	return 0;
oom:
	free(b.p);
	return hezo_error_set(err, ENOMEM, "out of memory");
}

int hezo_install_blocks_remove(const char *cur, size_t len, char **out, size_t *outlen,
			       bool *changed, bool *delete_file, struct hezo_error **err)
{
	return remove_marked(cur, len, HEZO_INSTALL_BLOCK_BEGIN, HEZO_INSTALL_BLOCK_END, out,
			     outlen, changed, delete_file, err);
}

/* One insertion into the original text; applied last to first so offsets stay valid. */
struct edit {
	size_t pos; /* where the new text goes */
	size_t cut; /* bytes of the original replaced from pos */
	struct buf text;
};

static void edits_free(struct edit *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].text.p);
}

static int apply_edits(const char *old, size_t len, struct edit *e, size_t n, char **out,
		       size_t *outlen)
{
	struct buf b = {0};
	size_t at = 0;

	/* Edits are few: sort by position with a simple insertion sort. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && e[j - 1].pos > e[j].pos; j--) {
			struct edit t = e[j];

			e[j] = e[j - 1];
			e[j - 1] = t;
		}
	if (buf_add(&b, "", 0) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (buf_add(&b, old + at, e[i].pos - at) < 0 ||
		    buf_add(&b, e[i].text.p, e[i].text.len) < 0)
			goto oom;
		at = e[i].pos + e[i].cut;
	}
	if (buf_add(&b, old + at, len - at) < 0)
		goto oom;
	*out = b.p;
	*outlen = b.len;
	return 0;
oom:
	free(b.p);
	return -ENOMEM;
}

/* Start a block at pos: "+nl" when the text before pos does not end with a newline. */
static int block_begin(struct edit *e, const char *old, size_t pos, bool created, bool eol_tag)
{
	bool nl = pos > 0 && old[pos - 1] != '\n';

	e->pos = pos;
	if (nl && buf_str(&e->text, "\n") < 0)
		return -ENOMEM;
	return buf_printf(&e->text, "%s%s%s%s\n" HELP, HEZO_INSTALL_BLOCK_BEGIN,
			  created ? " " TAG_FILE : "", nl ? " " TAG_NL : "",
			  eol_tag ? " " TAG_EOL : "");
}

static int block_end(struct edit *e)
{
	return buf_str(&e->text, HEZO_INSTALL_BLOCK_END "\n");
}

/* A TOML basic string for s (paths: escape quotes, backslashes and control bytes). */
static int toml_string(struct buf *b, const char *s)
{
	if (buf_str(b, "\"") < 0)
		return -ENOMEM;
	for (; *s; s++) {
		int r;

		if (*s == '"' || *s == '\\')
			r = buf_printf(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			r = buf_printf(b, "\\u%04x", (unsigned char)*s);
		else
			r = buf_add(b, s, 1);
		if (r < 0)
			return r;
	}
	return buf_str(b, "\"");
}

struct line {
	const char *p;
	size_t n;    /* without the newline */
	size_t off;  /* offset of the line in the file */
	bool has_nl; /* followed by '\n' */
};

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/*
 * If the line is a table header "[a.b]" (spaces allowed around parts, a trailing comment), copy
 * its name without blanks into name and return true. Arrays of tables "[[x]]" count as headers
 * too (they end the table before them) but get a name starting with '['.
 */
static bool table_header(const struct line *l, char *name, size_t size)
{
	const char *p = skip_ws(l->p, l->p + l->n), *end = l->p + l->n;
	size_t k = 0;
	bool quoted = false;

	if (p >= end || *p != '[')
		return false;
	p++;
	if (p < end && *p == '[') {
		if (k + 1 < size)
			name[k++] = '[';
		p++;
	}
	for (; p < end; p++) {
		if (*p == '"')
			quoted = !quoted;
		if (!quoted && *p == ']')
			break;
		if (!quoted && (*p == ' ' || *p == '\t'))
			continue;
		if (k + 1 < size)
			name[k++] = *p;
	}
	name[k] = '\0';
	return p < end;
}

/* If the line assigns key (bare key at the start of the line), point *val at the value. */
static bool key_line(const struct line *l, const char *key, const char **val)
{
	const char *p = skip_ws(l->p, l->p + l->n), *end = l->p + l->n;
	size_t k = strlen(key);

	if ((size_t)(end - p) < k || memcmp(p, key, k) != 0)
		return false;
	p = skip_ws(p + k, end);
	if (p >= end || *p != '=')
		return false;
	*val = skip_ws(p + 1, end);
	return true;
}

/*
 * If the line assigns a key, bare, quoted or dotted ("runtimes.hezo.runtime_type = ..."), copy
 * the key without the blanks around its dots into key and return true.
 */
static bool key_path(const struct line *l, char *key, size_t size)
{
	const char *p = skip_ws(l->p, l->p + l->n), *end = l->p + l->n;
	size_t k = 0;
	char quote = 0;

	if (p >= end || *p == '#' || *p == '[')
		return false;
	for (; p < end; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
			else if (*p == '\\' && quote == '"' && p + 1 < end && k + 1 < size)
				key[k++] = *p++;
		} else if (*p == '"' || *p == '\'') {
			quote = *p;
		} else if (*p == '=') {
			break;
		} else if (*p == ' ' || *p == '\t') {
			continue;
		} else if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.') {
			return false; /* not a key: a value's continuation line, say */
		}
		if (k + 1 < size)
			key[k++] = *p;
	}
	key[k] = '\0';
	return p < end && k > 0;
}

/* Does this full key or table name define runtime, or something below it? */
static bool names_runtime(const char *name, const char *runtime)
{
	static const char quotes[] = {0, '"', '\''};

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(quotes); i++) {
		char spelled[160];
		size_t s;

		if (quotes[i])
			snprintf(spelled, sizeof(spelled), ".runtimes.%c%s%c", quotes[i], runtime,
				 quotes[i]);
		else
			snprintf(spelled, sizeof(spelled), ".runtimes.%s", runtime);
		s = strlen(spelled);
		for (const char *at = strstr(name, spelled); at; at = strstr(at + 1, spelled))
			if (at[s] == '\0' || at[s] == '.')
				return true;
	}
	return false;
}

static int split_lines(const char *text, size_t len, struct line **out, size_t *count)
{
	const char *p = text, *end = text + len;
	struct line *v = NULL;
	size_t n = 0;

	while (p < end) {
		size_t l = line_len(p, end);
		struct line *g = realloc(v, (n + 1) * sizeof(*v));

		if (!g) {
			free(v);
			return -ENOMEM;
		}
		v = g;
		v[n].p = p;
		v[n].n = l;
		v[n].off = (size_t)(p - text);
		v[n].has_nl = p + l < end;
		n++;
		p += l + 1;
	}
	*out = v;
	*count = n;
	return 0;
}

/* Offset just after line i (its newline included), where a block inside its table goes. */
static size_t after_line(const struct line *l, size_t i)
{
	return l[i].off + l[i].n + (l[i].has_nl ? 1 : 0);
}

static bool only_comments(const struct line *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *p = skip_ws(l[i].p, l[i].p + l[i].n);

		if (p < l[i].p + l[i].n && *p != '#')
			return false;
	}
	return true;
}

/* Strip our old blocks first so that install twice, or with a new shim path, is one block. */
static int strip_blocks(const char *old, size_t len, bool exists, char **base, size_t *base_len,
			bool *created, struct hezo_error **err)
{
	const char *nul = exists ? memchr(old, '\0', len) : NULL;
	bool changed = false, del = false;
	int r;

	/* TOML has no NUL; the line edits below read C strings and would see less than there is. */
	if (nul)
		return hezo_error_set(err, EINVAL,
				      "byte %zu: a NUL byte, which TOML does not allow",
				      (size_t)(nul - old));
	*created = !exists;
	if (!exists) {
		*base = strdup("");
		*base_len = 0;
		return *base ? 0 : hezo_error_set(err, ENOMEM, "out of memory");
	}
	r = hezo_install_blocks_remove(old, len, base, base_len, &changed, &del, err);
	if (r < 0)
		return r;
	if (del)
		*created = true;
	return 0;
}

static int finish(const char *old, size_t len, bool exists, char *res, size_t res_len, char **out,
		  size_t *outlen, bool *changed)
{
	*changed = !exists || res_len != len || memcmp(res, old, len) != 0;
	*out = res;
	*outlen = res_len;
	return 0;
}

/*
 * The file's "version" (before its first table; -1 when none) in *version, and -EEXIST when a
 * table or key, dotted keys included, names ...runtimes.RUNTIME or below it: someone else's,
 * which our table beside it would define twice.
 */
static int scan_runtime(const struct line *lines, size_t count, const char *runtime, long *version,
			struct hezo_error **err)
{
	size_t first_header = (size_t)-1;
	char table[512] = "";

	*version = -1;
	for (size_t i = 0; i < count; i++) {
		char name[512], key[512], full[1100];
		const char *val;

		if (table_header(&lines[i], name, sizeof(name))) {
			if (first_header == (size_t)-1)
				first_header = i;
			snprintf(table, sizeof(table), "%s", name[0] == '[' ? name + 1 : name);
			snprintf(full, sizeof(full), ".%s", table);
			if (names_runtime(full, runtime))
				return hezo_error_set(err, EEXIST,
						      "line %zu: a runtime \"%s\" is already "
						      "defined outside hezo-shim's block ([%s])",
						      i + 1, runtime, name);
			continue;
		}
		if (first_header == (size_t)-1 && key_line(&lines[i], "version", &val))
			*version = strtol(val, NULL, 10);
		if (key_path(&lines[i], key, sizeof(key))) {
			snprintf(full, sizeof(full), "%s%s.%s", table[0] ? "." : "", table, key);
			if (names_runtime(full, runtime))
				return hezo_error_set(err, EEXIST,
						      "line %zu: a runtime \"%s\" is already "
						      "defined outside hezo-shim's block (%s)",
						      i + 1, runtime, full + 1);
		}
	}
	return 0;
}

/* The CRI runtime table for key (a TOML key: bare or quoted) running binary. */
static int cri_runtime(struct buf *b, const char *key, const char *binary)
{
	static const char cri[] = "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes";
	int r = buf_printf(b,
			   "[%s.%s]\n"
			   "  runtime_type = \"io.containerd.runc.v2\"\n"
			   /* Else containerd hands the runtime no org.hezo.* annotation. */
			   "  pod_annotations = [\"org.hezo.*\"]\n"
			   "  container_annotations = [\"org.hezo.*\"]\n"
			   "  [%s.%s.options]\n"
			   "    BinaryName = ",
			   cri, key, cri, key);

	if (r >= 0)
		r = toml_string(b, binary);
	if (r >= 0)
		r = buf_str(b, "\n    Root = \"" HEZO_INSTALL_CONTAINERD_ROOT "\"\n");
	return r;
}

int hezo_install_containerd_add(const char *old, size_t len, bool exists, const char *shim,
				char **out, size_t *outlen, bool *changed, struct hezo_error **err)
{
	_cleanup_free_ char *base = NULL;
	_cleanup_free_ struct line *lines = NULL;
	struct edit e = {0};
	size_t base_len = 0, count = 0;
	long version = -1;
	bool created = false;
	char *res = NULL;
	size_t res_len = 0;
	int r;

	*changed = false;
	if (!shim || shim[0] != '/')
		return hezo_error_set(err, EINVAL, "shim path \"%s\" is not absolute",
				      shim ? shim : "");
	r = strip_blocks(old, len, exists, &base, &base_len, &created, err);
	if (r < 0)
		return r;
	if (split_lines(base, base_len, &lines, &count) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");

	r = scan_runtime(lines, count, HEZO_INSTALL_CONTAINERD_RUNTIME, &version, err);
	if (r < 0)
		return r;
	if (version == 1 || (version < 0 && !only_comments(lines, count)))
		return hezo_error_set(err, EINVAL,
				      "%s: hezo-shim registers with config version 2 only "
				      "(containerd 1.6 reads a file without \"version = 2\" as the "
				      "deprecated version 1); convert the file first",
				      version == 1 ? "version = 1" : "no \"version = 2\"");
	if (version > 2)
		return hezo_error_set(err, EINVAL,
				      "version = %ld: only config version 2 (containerd 1.6) is "
				      "supported",
				      version);

	r = block_begin(&e, base, base_len, created, false);
	if (r >= 0 && version < 0)
		r = buf_str(&e.text, "version = 2\n");
	if (r >= 0)
		r = cri_runtime(&e.text, HEZO_INSTALL_CONTAINERD_RUNTIME, shim);
	if (r >= 0)
		r = block_end(&e);
	if (r >= 0)
		r = apply_edits(base, base_len, &e, 1, &res, &res_len);
	edits_free(&e, 1);
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	return finish(old, len, exists, res, res_len, out, outlen, changed);
}

/* podman's built-in runtime_supports_json (containers/common for podman 4.3). */
static const char *const podman_json_default[] = {"crun", "runc", "kata", "runsc", "krun"};

/* Parse a one-line TOML array of basic strings: ["a", "b"] (a trailing comment allowed). */
static int parse_string_array(const char *p, const char *end, struct hezo_strv *out)
{
	_cleanup_strv_ struct hezo_strv v = {0};

	p = skip_ws(p, end);
	if (p >= end || *p != '[')
		return -EINVAL;
	p++;
	for (;;) {
		_cleanup_free_ char *name = NULL;
		const char *s;

		p = skip_ws(p, end);
		if (p < end && *p == ']')
			break;
		if (p >= end || (*p != '"' && *p != '\''))
			return -EINVAL;
		s = ++p;
		while (p < end && *p != s[-1] && *p != '\\')
			p++;
		if (p >= end || *p == '\\')
			return -EINVAL;
		name = strndup(s, (size_t)(p - s));
		if (!name || hezo_strv_push(&v, name) < 0)
			return -EINVAL;
		p = skip_ws(p + 1, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p < end && *p == ']')
			break;
		return -EINVAL;
	}
	p = skip_ws(p + 1, end);
	if (p < end && *p != '#')
		return -EINVAL;
	*out = TAKE_STRUCT(v);
	return 0;
}

static int supports_json_line(struct buf *b, const char *const *names, size_t n)
{
	bool ours = false;
	int r = buf_str(b, "runtime_supports_json = [");

	for (size_t i = 0; r >= 0 && i < n; i++) {
		ours |= strcmp(names[i], HEZO_INSTALL_PODMAN_RUNTIME) == 0;
		if (i > 0)
			r = buf_str(b, ", ");
		if (r >= 0)
			r = toml_string(b, names[i]);
	}
	if (r >= 0 && !ours)
		r = buf_printf(b, "%s\"%s\"", n ? ", " : "", HEZO_INSTALL_PODMAN_RUNTIME);
	if (r >= 0)
		r = buf_str(b, "]\n");
	return r;
}

static int runtime_line(struct buf *b, const char *shim)
{
	int r = buf_str(b, HEZO_INSTALL_PODMAN_RUNTIME " = [");

	if (r >= 0)
		r = toml_string(b, shim);
	if (r >= 0)
		r = buf_str(b, "]\n");
	return r;
}

int hezo_install_podman_add(const char *old, size_t len, bool exists, const char *shim, char **out,
			    size_t *outlen, bool *changed, struct hezo_error **err)
{
	_cleanup_free_ char *base = NULL;
	_cleanup_free_ struct line *lines = NULL;
	struct edit e[3] = {0};
	size_t ne = 0, base_len = 0, count = 0;
	size_t engine = (size_t)-1, runtimes = (size_t)-1, json_line = (size_t)-1;
	size_t table = (size_t)-1; /* header index of the table the current line is in */
	bool created = false;
	char *res = NULL;
	size_t res_len = 0;
	int r = 0;

	*changed = false;
	if (!shim || shim[0] != '/')
		return hezo_error_set(err, EINVAL, "shim path \"%s\" is not absolute",
				      shim ? shim : "");
	r = strip_blocks(old, len, exists, &base, &base_len, &created, err);
	if (r < 0)
		return r;
	if (split_lines(base, base_len, &lines, &count) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");

	for (size_t i = 0; i < count; i++) {
		char name[256];
		const char *val;

		if (table_header(&lines[i], name, sizeof(name))) {
			table = i;
			if (strcmp(name, "engine") == 0)
				engine = i;
			else if (strcmp(name, "engine.runtimes") == 0)
				runtimes = i;
			else if (strcmp(name, "engine.runtimes." HEZO_INSTALL_PODMAN_RUNTIME) == 0)
				return hezo_error_set(err, EEXIST,
						      "line %zu: [engine.runtimes.%s] is defined "
						      "outside hezo-shim's block",
						      i + 1, HEZO_INSTALL_PODMAN_RUNTIME);
			continue;
		}
		if (table == (size_t)-1)
			continue;
		if (table == engine && key_line(&lines[i], "runtime_supports_json", &val))
			json_line = i;
		if (table == runtimes &&
		    (key_line(&lines[i], HEZO_INSTALL_PODMAN_RUNTIME, &val) ||
		     key_line(&lines[i], "\"" HEZO_INSTALL_PODMAN_RUNTIME "\"", &val)))
			return hezo_error_set(err, EEXIST,
					      "line %zu: [engine.runtimes] already names a runtime "
					      "\"%s\" outside hezo-shim's block",
					      i + 1, HEZO_INSTALL_PODMAN_RUNTIME);
	}

	if (json_line != (size_t)-1) {
		/* The admin's own list: replace that one line, keeping the original inside. */
		const struct line *l = &lines[json_line];
		const char *val = NULL;
		_cleanup_strv_ struct hezo_strv names = {0};

		key_line(l, "runtime_supports_json", &val);
		if (parse_string_array(val, l->p + l->n, &names) < 0)
			return hezo_error_set(err, EINVAL,
					      "line %zu: runtime_supports_json is not a one-line "
					      "list of strings; add \"%s\" to it by hand and run "
					      "install again",
					      json_line + 1, HEZO_INSTALL_PODMAN_RUNTIME);
		if (!hezo_strv_contains(&names, HEZO_INSTALL_PODMAN_RUNTIME)) {
			r = block_begin(&e[ne], base, l->off, created, !l->has_nl);
			e[ne].cut = l->n + (l->has_nl ? 1 : 0);
			if (r >= 0)
				r = buf_printf(&e[ne].text, ORIG "%.*s\n", (int)l->n, l->p);
			if (r >= 0)
				r = supports_json_line(&e[ne].text, (const char *const *)names.v,
						       names.n);
			if (r >= 0)
				r = block_end(&e[ne]);
			ne++;
		}
	} else if (engine != (size_t)-1) {
		r = block_begin(&e[ne], base, after_line(lines, engine), created, false);
		if (r >= 0)
			r = supports_json_line(&e[ne].text, podman_json_default,
					       HEZO_ARRAY_SIZE(podman_json_default));
		if (r >= 0)
			r = block_end(&e[ne]);
		ne++;
	}
	if (r >= 0 && runtimes != (size_t)-1) {
		r = block_begin(&e[ne], base, after_line(lines, runtimes), created, false);
		if (r >= 0)
			r = runtime_line(&e[ne].text, shim);
		if (r >= 0)
			r = block_end(&e[ne]);
		ne++;
	}
	if (r >= 0 && (engine == (size_t)-1 || runtimes == (size_t)-1)) {
		/* Tables the file lacks go at the end, in one block. */
		r = block_begin(&e[ne], base, base_len, created, false);
		if (r >= 0 && engine == (size_t)-1)
			r = buf_str(&e[ne].text, "[engine]\n");
		if (r >= 0 && engine == (size_t)-1)
			r = supports_json_line(&e[ne].text, podman_json_default,
					       HEZO_ARRAY_SIZE(podman_json_default));
		if (r >= 0 && runtimes == (size_t)-1)
			r = buf_str(&e[ne].text, "[engine.runtimes]\n");
		if (r >= 0 && runtimes == (size_t)-1)
			r = runtime_line(&e[ne].text, shim);
		if (r >= 0)
			r = block_end(&e[ne]);
		ne++;
	}
	if (r >= 0)
		r = apply_edits(base, base_len, e, ne, &res, &res_len);
	edits_free(e, ne);
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	return finish(old, len, exists, res, res_len, out, outlen, changed);
}

/*
 * Project runtimes (`hezo-shim project create`): one block per runtime, marked with its name so
 * that `install`/`uninstall` and other projects never take it, and a shared block holding
 * "version = 2" for a file that had none (absent, or only comments), which goes with the last
 * project block.
 */
#define PROJECT_BEGIN "# BEGIN hezo-project"
#define PROJECT_END   "# END hezo-project"
#define VERSION_BEGIN "# BEGIN hezo-projects-version"
#define VERSION_END   "# END hezo-projects-version"

int hezo_install_containerd_project_add(const char *old, size_t len, bool exists,
					const char *runtime, const char *binary, char **out,
					size_t *outlen, bool *changed, struct hezo_error **err)
{
	_cleanup_free_ char *base = NULL, *begin = NULL, *end = NULL, *quoted = NULL;
	_cleanup_free_ struct line *lines = NULL;
	struct edit e = {0};
	size_t base_len = 0, count = 0;
	bool ch = false, del = false;
	long version = -1;
	char *res = NULL;
	size_t res_len = 0;
	int r;

	*changed = false;
	if (!binary || binary[0] != '/')
		return hezo_error_set(err, EINVAL, "runtime binary \"%s\" is not absolute",
				      binary ? binary : "");
	if (asprintf(&begin, PROJECT_BEGIN " %s", runtime) < 0 ||
	    asprintf(&end, PROJECT_END " %s", runtime) < 0 ||
	    asprintf(&quoted, "\"%s\"", runtime) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	if (exists && memchr(old, '\0', len))
		return hezo_error_set(err, EINVAL, "a NUL byte, which TOML does not allow");
	if (exists)
		r = remove_marked(old, len, begin, end, &base, &base_len, &ch, &del, err);
	else
		r = (base = strdup("")) ? 0 : hezo_error_set(err, ENOMEM, "out of memory");
	if (r < 0)
		return r;
	if (split_lines(base, base_len, &lines, &count) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = scan_runtime(lines, count, runtime, &version, err);
	if (r < 0)
		return r;
	if (version == 1 || (version < 0 && !only_comments(lines, count)) || version > 2)
		return hezo_error_set(err, EINVAL,
				      "hezo-shim registers with config version 2 only (containerd "
				      "1.6 reads a file without \"version = 2\" as version 1); "
				      "convert the file first");

	r = 0;
	if (version < 0) {
		/* The shared block: the project block after it never carries the version. */
		bool nl = base_len > 0 && base[base_len - 1] != '\n';

		e.pos = base_len;
		r = buf_printf(&e.text, "%s%s%s%s\nversion = 2\n%s\n", nl ? "\n" : "",
			       VERSION_BEGIN, exists ? "" : " " TAG_FILE, nl ? " " TAG_NL : "",
			       VERSION_END);
	} else if (base_len > 0 && base[base_len - 1] != '\n') {
		return hezo_error_set(err, EINVAL, "the file does not end with a line break");
	}
	if (r >= 0)
		r = buf_printf(&e.text,
			       "%s\n# Added by `hezo-shim project create`; `hezo-shim project rm` "
			       "removes this block exactly.\n",
			       begin);
	if (r >= 0)
		r = quoted ? cri_runtime(&e.text, quoted, binary) : -ENOMEM;
	if (r >= 0)
		r = buf_printf(&e.text, "%s\n", end);
	e.pos = base_len;
	if (r >= 0)
		r = apply_edits(base, base_len, &e, 1, &res, &res_len);
	edits_free(&e, 1);
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	return finish(old, len, exists, res, res_len, out, outlen, changed);
}

int hezo_install_containerd_project_remove(const char *cur, size_t len, const char *runtime,
					   char **out, size_t *outlen, bool *changed,
					   bool *delete_file, struct hezo_error **err)
{
	_cleanup_free_ char *begin = NULL, *end = NULL, *mid = NULL;
	size_t mid_len = 0;
	bool del = false;
	int r;

	*changed = false;
	*delete_file = false;
	if (asprintf(&begin, PROJECT_BEGIN " %s", runtime) < 0 ||
	    asprintf(&end, PROJECT_END " %s", runtime) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = remove_marked(cur, len, begin, end, &mid, &mid_len, changed, &del, err);
	if (r < 0 || !*changed || any_line_is(mid, mid_len, PROJECT_BEGIN)) {
		if (r >= 0) {
			*out = TAKE_PTR(mid);
			*outlen = mid_len;
		}
		return r;
	}
	/* The last project block went: the version block it needed goes too. */
	return remove_marked(mid, mid_len, VERSION_BEGIN, VERSION_END, out, outlen, &del,
			     delete_file, err);
}

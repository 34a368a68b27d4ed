/*
 * The JSON tree behind hezo-json.h: yajl's callback parser fills it with an explicit stack, and
 * yajl_gen writes it back. This is the only file that knows about yajl.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>

#include "hezo-json.h"

/* Objects shorter than this are searched linearly for duplicate keys while parsing. */
#define DUP_INDEX_MIN 16

#define STRINGIFY_(x) #x
#define STRINGIFY(x)  STRINGIFY_(x)

/* ---- nodes ---- */

static struct hezo_json *node_new(enum hezo_json_type type)
{
	struct hezo_json *v = calloc(1, sizeof(*v));

	if (v)
		v->type = type;
	return v;
}

void hezo_json_free(struct hezo_json *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->len; i++) {
		if (v->keys)
			free(v->keys[i]);
		if (v->items)
			hezo_json_free(v->items[i]);
	}
	free(v->keys);
	free(v->items);
	/* A string's text shares the node's allocation (new_string_len). */
	if (v->str != (char *)(v + 1))
		free(v->str);
	free(v);
}

struct hezo_json *hezo_json_new_null(void)
{
	return node_new(HEZO_JSON_NULL);
}

struct hezo_json *hezo_json_new_bool(bool b)
{
	return node_new(b ? HEZO_JSON_TRUE : HEZO_JSON_FALSE);
}

static struct hezo_json *new_number_text(const char *text, size_t len)
{
	struct hezo_json *v = node_new(HEZO_JSON_NUMBER);

	if (!v)
		return NULL;
	v->str = strndup(text, len);
	if (!v->str) {
		free(v);
		return NULL;
	}
	return v;
}

struct hezo_json *hezo_json_new_int(int64_t n)
{
	char buf[32];
	int r = snprintf(buf, sizeof(buf), "%" PRId64, n);

	return new_number_text(buf, (size_t)r);
}

struct hezo_json *hezo_json_new_fixed(double d, int decimals)
{
	char buf[64];
	int r;

	if (!isfinite(d) || decimals < 0 || decimals > 9 || fabs(d) >= 1e30)
		return NULL;
	r = snprintf(buf, sizeof(buf), "%.*f", decimals, d);
	/* JSON has no "-0". */
	if (r > 1 && buf[0] == '-' && strspn(buf + 1, "0.") == (size_t)(r - 1))
		return new_number_text(buf + 1, (size_t)r - 1);
	return new_number_text(buf, (size_t)r);
}

struct hezo_json *hezo_json_new_uint(uint64_t n)
{
	char buf[32];
	int r = snprintf(buf, sizeof(buf), "%" PRIu64, n);

	return new_number_text(buf, (size_t)r);
}

/*
 * A string node and its text in one allocation: a spec is mostly strings (Docker's seccomp
 * profile alone holds about 400), each parsed once and copied more than once.
 */
static struct hezo_json *new_string_len(const char *s, size_t len)
{
	struct hezo_json *v;

	if (len > SIZE_MAX - sizeof(*v) - 1)
		return NULL;
	v = calloc(1, sizeof(*v) + len + 1);
	if (!v)
		return NULL;
	v->type = HEZO_JSON_STRING;
	v->str = (char *)(v + 1);
	memcpy(v->str, s, len);
	v->str[len] = '\0';
	return v;
}

struct hezo_json *hezo_json_new_string(const char *s)
{
	if (!s)
		return NULL;
	return new_string_len(s, strlen(s));
}

struct hezo_json *hezo_json_new_array(void)
{
	return node_new(HEZO_JSON_ARRAY);
}

struct hezo_json *hezo_json_new_object(void)
{
	return node_new(HEZO_JSON_OBJECT);
}

/* Room for one more member; keys are only allocated for objects. */
static int grow(struct hezo_json *v)
{
	size_t n;
	struct hezo_json **items;

	if (v->len < v->alloc)
		return 0;
	n = v->alloc ? v->alloc * 2 : 4;
	if (n > SIZE_MAX / sizeof(void *))
		return -ENOMEM;
	items = realloc(v->items, n * sizeof(*items));
	if (!items)
		return -ENOMEM;
	v->items = items;
	if (v->type == HEZO_JSON_OBJECT) {
		char **keys = realloc(v->keys, n * sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		v->keys = keys;
	}
	v->alloc = n;
	return 0;
}

struct hezo_json *hezo_json_clone(const struct hezo_json *v)
{
	_cleanup_json_ struct hezo_json *c = NULL;

	if (!v)
		return NULL;
	if (v->type == HEZO_JSON_STRING)
		return new_string_len(v->str, strlen(v->str));
	c = node_new(v->type);
	if (!c)
		return NULL;
	if (v->str) {
		c->str = strdup(v->str);
		if (!c->str)
			return NULL;
	}
	if (v->type != HEZO_JSON_ARRAY && v->type != HEZO_JSON_OBJECT)
		return TAKE_PTR(c);
	for (size_t i = 0; i < v->len; i++) {
		struct hezo_json *item;

		if (grow(c) < 0)
			return NULL;
		item = hezo_json_clone(v->items[i]);
		if (!item)
			return NULL;
		if (c->type == HEZO_JSON_OBJECT) {
			c->keys[c->len] = strdup(v->keys[i]);
			if (!c->keys[c->len]) {
				hezo_json_free(item);
				return NULL;
			}
		}
		c->items[c->len++] = item;
	}
	return TAKE_PTR(c);
}

bool hezo_json_equal(const struct hezo_json *a, const struct hezo_json *b)
{
	if (!a || !b)
		return a == b;
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case HEZO_JSON_NULL:
	case HEZO_JSON_FALSE:
	case HEZO_JSON_TRUE:
		return true;
	case HEZO_JSON_NUMBER:
	case HEZO_JSON_STRING:
		return strcmp(a->str, b->str) == 0;
	case HEZO_JSON_ARRAY:
	case HEZO_JSON_OBJECT:
		if (a->len != b->len)
			return false;
		for (size_t i = 0; i < a->len; i++) {
			if (a->type == HEZO_JSON_OBJECT && strcmp(a->keys[i], b->keys[i]) != 0)
				return false;
			if (!hezo_json_equal(a->items[i], b->items[i]))
				return false;
		}
		return true;
	}
	return false;
}

/* ---- object and array access ---- */

static ssize_t find_key(const struct hezo_json *obj, const char *key)
{
	/* The first byte first: most keys differ there. */
	for (size_t i = 0; i < obj->len; i++)
		if (obj->keys[i][0] == key[0] && strcmp(obj->keys[i], key) == 0)
			return (ssize_t)i;
	return -1;
}

struct hezo_json *hezo_json_get(const struct hezo_json *obj, const char *key)
{
	ssize_t i;

	if (!obj || obj->type != HEZO_JSON_OBJECT || !key)
		return NULL;
	i = find_key(obj, key);
	return i < 0 ? NULL : obj->items[i];
}

struct hezo_json *hezo_json_get_type(const struct hezo_json *obj, const char *key,
				     enum hezo_json_type type)
{
	struct hezo_json *v = hezo_json_get(obj, key);

	if (!v)
		return NULL;
	/* Both booleans answer to either boolean type. */
	if ((type == HEZO_JSON_TRUE || type == HEZO_JSON_FALSE) && hezo_json_is_bool(v))
		return v;
	return v->type == type ? v : NULL;
}

struct hezo_json *hezo_json_get_path(const struct hezo_json *root, const char *dotted)
{
	const struct hezo_json *cur = root;
	const char *p = dotted;

	if (!root || !dotted)
		return NULL;
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		const struct hezo_json *next = NULL;

		if (!cur || cur->type != HEZO_JSON_OBJECT)
			return NULL;
		for (size_t i = 0; i < cur->len; i++) {
			if (strncmp(cur->keys[i], p, n) == 0 && cur->keys[i][n] == '\0') {
				next = cur->items[i];
				break;
			}
		}
		if (!next)
			return NULL;
		cur = next;
		if (!dot)
			return (struct hezo_json *)cur;
		p = dot + 1;
	}
}

/* Add key at the end; key is copied, val is taken. */
/* Append key k (taken: the parser's own copy) and val; both are freed on failure. */
static int object_push_owned(struct hezo_json *obj, char *k, struct hezo_json *val)
{
	if (!k || grow(obj) < 0) {
		free(k);
		hezo_json_free(val);
		return -ENOMEM;
	}
	obj->keys[obj->len] = k;
	obj->items[obj->len++] = val;
	return 0;
}

static int object_push(struct hezo_json *obj, const char *key, size_t keylen, struct hezo_json *val)
{
	return object_push_owned(obj, strndup(key, keylen), val);
}

int hezo_json_set(struct hezo_json *obj, const char *key, struct hezo_json *val)
{
	ssize_t i;

	if (!val)
		return -ENOMEM;
	if (!obj || obj->type != HEZO_JSON_OBJECT || !key) {
		hezo_json_free(val);
		return -EINVAL;
	}
	i = find_key(obj, key);
	if (i >= 0) {
		if (obj->items[i] != val)
			hezo_json_free(obj->items[i]);
		obj->items[i] = val;
		return 0;
	}
	return object_push(obj, key, strlen(key), val);
}

static void remove_index(struct hezo_json *v, size_t i)
{
	if (v->keys)
		free(v->keys[i]);
	hezo_json_free(v->items[i]);
	if (v->keys)
		memmove(&v->keys[i], &v->keys[i + 1], (v->len - i - 1) * sizeof(*v->keys));
	memmove(&v->items[i], &v->items[i + 1], (v->len - i - 1) * sizeof(*v->items));
	v->len--;
}

int hezo_json_remove(struct hezo_json *obj, const char *key)
{
	ssize_t i;

	if (!obj || obj->type != HEZO_JSON_OBJECT || !key)
		return -EINVAL;
	i = find_key(obj, key);
	if (i >= 0)
		remove_index(obj, (size_t)i);
	return 0;
}

int hezo_json_replace(struct hezo_json *parent, const struct hezo_json *old, struct hezo_json *val)
{
	if (!parent || (parent->type != HEZO_JSON_OBJECT && parent->type != HEZO_JSON_ARRAY) ||
	    !old || !val)
		return -EINVAL;
	for (size_t i = 0; i < parent->len; i++)
		if (parent->items[i] == old) {
			parent->items[i] = val;
			return 0;
		}
	return -ENOENT;
}

static struct hezo_json *ensure(struct hezo_json *obj, const char *key, enum hezo_json_type type)
{
	struct hezo_json *v;

	if (!obj || obj->type != HEZO_JSON_OBJECT || !key)
		return NULL;
	v = hezo_json_get(obj, key);
	if (v)
		return v->type == type ? v : NULL;
	v = node_new(type);
	if (!v)
		return NULL;
	if (object_push(obj, key, strlen(key), v) < 0)
		return NULL;
	return v;
}

struct hezo_json *hezo_json_ensure_object(struct hezo_json *obj, const char *key)
{
	return ensure(obj, key, HEZO_JSON_OBJECT);
}

struct hezo_json *hezo_json_ensure_array(struct hezo_json *obj, const char *key)
{
	return ensure(obj, key, HEZO_JSON_ARRAY);
}

int hezo_json_append(struct hezo_json *arr, struct hezo_json *val)
{
	if (!val)
		return -ENOMEM;
	if (!arr || arr->type != HEZO_JSON_ARRAY) {
		hezo_json_free(val);
		return -EINVAL;
	}
	if (grow(arr) < 0) {
		hezo_json_free(val);
		return -ENOMEM;
	}
	arr->items[arr->len++] = val;
	return 0;
}

int hezo_json_remove_at(struct hezo_json *arr, size_t index)
{
	if (!arr || arr->type != HEZO_JSON_ARRAY || index >= arr->len)
		return -EINVAL;
	remove_index(arr, index);
	return 0;
}

/* ---- scalars ---- */

/*
 * Integers are read only from integer literals: like Go's encoding/json (what runc uses), "1e3"
 * or "1.0" is not an integer. A value outside the target type is -ERANGE, including a negative
 * value asked for as unsigned.
 */
static int parse_integer(const struct hezo_json *v, bool *negative, uint64_t *magnitude)
{
	const char *p;
	uint64_t m = 0;
	bool overflow = false;

	if (!v || v->type != HEZO_JSON_NUMBER || !v->str)
		return -EINVAL;
	p = v->str;
	*negative = *p == '-';
	if (*negative)
		p++;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p; p++) {
		unsigned d;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		d = (unsigned)(*p - '0');
		if (m > (UINT64_MAX - d) / 10)
			overflow = true; /* keep checking the syntax: a bad literal is -EINVAL */
		else
			m = m * 10 + d;
	}
	*magnitude = m;
	return overflow ? -ERANGE : 0;
}

int hezo_json_get_int64(const struct hezo_json *v, int64_t *out)
{
	bool neg;
	uint64_t m;
	int r = parse_integer(v, &neg, &m);

	if (r < 0)
		return r;
	if (neg) {
		if (m > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
	} else {
		if (m > (uint64_t)INT64_MAX)
			return -ERANGE;
		*out = (int64_t)m;
	}
	return 0;
}

int hezo_json_get_uint64(const struct hezo_json *v, uint64_t *out)
{
	bool neg;
	uint64_t m;
	int r = parse_integer(v, &neg, &m);

	if (r < 0)
		return r;
	if (neg && m != 0)
		return -ERANGE;
	*out = m;
	return 0;
}

int hezo_json_get_double(const struct hezo_json *v, double *out)
{
	char *end;
	double d;

	if (!v || v->type != HEZO_JSON_NUMBER)
		return -EINVAL;
	errno = 0;
	d = strtod(v->str, &end);
	if (*end || errno == ERANGE)
		return errno == ERANGE ? -ERANGE : -EINVAL;
	*out = d;
	return 0;
}

const char *hezo_json_string(const struct hezo_json *v)
{
	return v && v->type == HEZO_JSON_STRING ? v->str : NULL;
}

bool hezo_json_is_true(const struct hezo_json *v)
{
	return v && v->type == HEZO_JSON_TRUE;
}

bool hezo_json_is_bool(const struct hezo_json *v)
{
	return v && (v->type == HEZO_JSON_TRUE || v->type == HEZO_JSON_FALSE);
}

const char *hezo_json_type_name(enum hezo_json_type type)
{
	switch (type) {
	case HEZO_JSON_NULL:
		return "null";
	case HEZO_JSON_FALSE:
	case HEZO_JSON_TRUE:
		return "boolean";
	case HEZO_JSON_NUMBER:
		return "number";
	case HEZO_JSON_STRING:
		return "string";
	case HEZO_JSON_ARRAY:
		return "array";
	case HEZO_JSON_OBJECT:
		return "object";
	}
	return "unknown";
}

/* ---- parser ---- */

struct frame {
	struct hezo_json *node;
	char *key; /* OBJECT: the key waiting for its value */
	size_t keylen;
	size_t *index; /* OBJECT with many keys: open-addressed slots holding position + 1 */
	size_t nindex; /* slots, a power of two, or 0 */
};

struct parser {
	struct hezo_json *root;
	struct frame stack[HEZO_JSON_MAX_DEPTH];
	size_t depth;
	size_t values;
	int error; /* negative errno set by a callback, reported instead of yajl's text */
	const char *what;
};

static size_t hash_key(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return (size_t)h;
}

static int index_insert(struct frame *f, size_t pos)
{
	const char *k = f->node->keys[pos];
	size_t mask = f->nindex - 1;
	size_t slot = hash_key(k, strlen(k)) & mask;

	while (f->index[slot])
		slot = (slot + 1) & mask;
	f->index[slot] = pos + 1;
	return 0;
}

/* Keep the slot table at most half full so probes stay short. */
static int index_reserve(struct frame *f, size_t want)
{
	size_t n = f->nindex ? f->nindex : 64;
	size_t *slots;

	if (want * 2 <= f->nindex)
		return 0;
	while (n < want * 2) {
		if (n > SIZE_MAX / 2 / sizeof(size_t))
			return -ENOMEM;
		n *= 2;
	}
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	free(f->index);
	f->index = slots;
	f->nindex = n;
	for (size_t i = 0; i < f->node->len; i++)
		index_insert(f, i);
	return 0;
}

static ssize_t frame_find(const struct frame *f, const char *key, size_t len)
{
	const struct hezo_json *obj = f->node;

	if (f->index) {
		size_t mask = f->nindex - 1;
		size_t slot = hash_key(key, len) & mask;

		for (; f->index[slot]; slot = (slot + 1) & mask) {
			size_t i = f->index[slot] - 1;
			if (strncmp(obj->keys[i], key, len) == 0 && obj->keys[i][len] == '\0')
				return (ssize_t)i;
		}
		return -1;
	}
	for (size_t i = 0; i < obj->len; i++)
		if (obj->keys[i][0] == key[0] && strncmp(obj->keys[i], key, len) == 0 &&
		    obj->keys[i][len] == '\0')
			return (ssize_t)i;
	return -1;
}

static int fail(struct parser *p, int errnum, const char *what)
{
	if (!p->error) {
		p->error = -errnum;
		p->what = what;
	}
	return 0; /* tells yajl to stop */
}

/* Link v (owned) into the current container or make it the root. */
static int add_value(struct parser *p, struct hezo_json *v)
{
	struct frame *f;

	if (!v)
		return fail(p, ENOMEM, "out of memory");
	if (++p->values > HEZO_JSON_MAX_VALUES) {
		hezo_json_free(v);
		return fail(p, E2BIG, "more than " STRINGIFY(HEZO_JSON_MAX_VALUES) " values");
	}
	if (p->depth == 0) {
		p->root = v;
		return 1;
	}
	f = &p->stack[p->depth - 1];
	if (f->node->type == HEZO_JSON_ARRAY) {
		if (hezo_json_append(f->node, v) < 0)
			return fail(p, ENOMEM, "out of memory");
		return 1;
	}

	/* A repeated key takes the new value but keeps its first position, as Go does. */
	ssize_t i = frame_find(f, f->key, f->keylen);
	if (i >= 0) {
		hezo_json_free(f->node->items[i]);
		f->node->items[i] = v;
	} else {
		if (f->node->len + 1 >= DUP_INDEX_MIN && index_reserve(f, f->node->len + 1) < 0) {
			hezo_json_free(v);
			return fail(p, ENOMEM, "out of memory");
		}
		/* The key the parser copied becomes the object's own. */
		if (object_push_owned(f->node, TAKE_PTR(f->key), v) < 0)
			return fail(p, ENOMEM, "out of memory");
		if (f->index)
			index_insert(f, f->node->len - 1);
	}
	free(f->key);
	f->key = NULL;
	return 1;
}

static int cb_null(void *ctx)
{
	return add_value(ctx, hezo_json_new_null());
}

static int cb_boolean(void *ctx, int b)
{
	return add_value(ctx, hezo_json_new_bool(b));
}

static int cb_number(void *ctx, const char *s, size_t len)
{
	return add_value(ctx, new_number_text(s, len));
}

static int cb_string(void *ctx, const unsigned char *s, size_t len)
{
	if (memchr(s, '\0', len))
		return fail(ctx, EINVAL, "string contains a NUL character (\\u0000)");
	return add_value(ctx, new_string_len((const char *)s, len));
}

static int cb_map_key(void *ctx, const unsigned char *s, size_t len)
{
	struct parser *p = ctx;
	struct frame *f = &p->stack[p->depth - 1];

	if (memchr(s, '\0', len))
		return fail(p, EINVAL, "object key contains a NUL character (\\u0000)");
	free(f->key);
	f->key = strndup((const char *)s, len);
	if (!f->key)
		return fail(p, ENOMEM, "out of memory");
	f->keylen = len;
	return 1;
}

static int open_container(struct parser *p, enum hezo_json_type type)
{
	struct hezo_json *v;

	if (p->depth >= HEZO_JSON_MAX_DEPTH)
		return fail(p, E2BIG,
			    "nesting deeper than " STRINGIFY(HEZO_JSON_MAX_DEPTH) " levels");
	v = node_new(type);
	if (!add_value(p, v))
		return 0;
	p->stack[p->depth++] = (struct frame){.node = v};
	return 1;
}

static int close_container(struct parser *p)
{
	struct frame *f = &p->stack[--p->depth];

	free(f->key);
	free(f->index);
	*f = (struct frame){0};
	return 1;
}

static int cb_start_map(void *ctx)
{
	return open_container(ctx, HEZO_JSON_OBJECT);
}

static int cb_start_array(void *ctx)
{
	return open_container(ctx, HEZO_JSON_ARRAY);
}

static int cb_end(void *ctx)
{
	return close_container(ctx);
}

static const yajl_callbacks callbacks = {
	.yajl_null = cb_null,
	.yajl_boolean = cb_boolean,
	.yajl_number = cb_number,
	.yajl_string = cb_string,
	.yajl_start_map = cb_start_map,
	.yajl_map_key = cb_map_key,
	.yajl_end_map = cb_end,
	.yajl_start_array = cb_start_array,
	.yajl_end_array = cb_end,
};

static void parser_release(struct parser *p)
{
	while (p->depth > 0)
		close_container(p);
	hezo_json_free(p->root);
	p->root = NULL;
}

static void yajl_handle_freep(yajl_handle *h)
{
	if (*h)
		yajl_free(*h);
}

/* "line L, byte B": B counts bytes from the start of line L, from 1. */
static void locate(const char *buf, size_t len, size_t off, size_t *line, size_t *col)
{
	size_t start = 0;

	if (off > len)
		off = len;
	*line = 1;
	for (size_t i = 0; i < off; i++) {
		if (buf[i] == '\n') {
			(*line)++;
			start = i + 1;
		}
	}
	*col = off - start + 1;
}

static int parse_error(yajl_handle h, struct parser *p, const char *buf, size_t len, size_t off,
		       struct hezo_error **err)
{
	size_t line, col;

	locate(buf, len, off, &line, &col);
	if (p->error)
		return hezo_error_set(err, -p->error, "line %zu, byte %zu: %s", line, col, p->what);

	unsigned char *text = yajl_get_error(h, 0, NULL, 0);
	size_t n = text ? strlen((char *)text) : 0;
	int r;

	/* yajl ends its message with a newline and sometimes a full stop: one line only. */
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '.' || text[n - 1] == ' '))
		n--;
	r = hezo_error_set(err, EINVAL, "line %zu, byte %zu: %.*s", line, col, (int)n,
			   text ? (char *)text : "parse error");
	if (text)
		yajl_free_error(h, text);
	return r;
}

int hezo_json_parse(const char *buf, size_t len, struct hezo_json **out, struct hezo_error **err)
{
	__attribute__((cleanup(yajl_handle_freep))) yajl_handle h = NULL;
	struct parser p = {0};
	yajl_status st;
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' && buf[i] != '\r')
			break;
	if (i == len)
		return hezo_error_set(err, EINVAL, "empty document");

	h = yajl_alloc(&callbacks, NULL, &p);
	if (!h)
		return hezo_error_set(err, ENOMEM, "out of memory");

	st = yajl_parse(h, (const unsigned char *)buf, len);
	if (st != yajl_status_ok) {
		size_t used = yajl_get_bytes_consumed(h);
		int r = parse_error(h, &p, buf, len, used ? used - 1 : 0, err);
		parser_release(&p);
		return r;
	}
	st = yajl_complete_parse(h);
	if (st != yajl_status_ok) {
		int r = parse_error(h, &p, buf, len, len, err);
		parser_release(&p);
		return r;
	}
	if (!p.root || p.depth != 0) {
		parser_release(&p);
		return hezo_error_set(err, EINVAL, "line 1, byte 1: incomplete document");
	}
	*out = TAKE_PTR(p.root);
	return 0;
}

/* ---- generator ---- */

/* The grammar of RFC 8259 numbers; literals that came from elsewhere are checked before use. */
static bool number_valid(const char *s)
{
	if (!s)
		return false;
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return false;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

static int gen_string(yajl_gen g, const char *s, struct hezo_error **err)
{
	yajl_gen_status st;

	if (!s)
		return hezo_error_set(err, EINVAL, "string without a value");
	st = yajl_gen_string(g, (const unsigned char *)s, strlen(s));
	if (st == yajl_gen_invalid_string)
		return hezo_error_set(err, EILSEQ, "string is not valid UTF-8");
	if (st != yajl_gen_status_ok)
		return hezo_error_set(err, EINVAL, "cannot write string (yajl_gen status %d)",
				      (int)st);
	return 0;
}

static int gen_value(yajl_gen g, const struct hezo_json *v, bool pretty, size_t depth,
		     struct hezo_error **err)
{
	yajl_gen_status st = yajl_gen_status_ok;
	int r;

	if (!v)
		return hezo_error_set(err, EINVAL, "missing value");
	switch (v->type) {
	case HEZO_JSON_NULL:
		st = yajl_gen_null(g);
		break;
	case HEZO_JSON_FALSE:
	case HEZO_JSON_TRUE:
		st = yajl_gen_bool(g, v->type == HEZO_JSON_TRUE);
		break;
	case HEZO_JSON_NUMBER:
		if (!number_valid(v->str))
			return hezo_error_set(err, EINVAL, "invalid number literal");
		st = yajl_gen_number(g, v->str, strlen(v->str));
		break;
	case HEZO_JSON_STRING:
		return gen_string(g, v->str, err);
	case HEZO_JSON_ARRAY:
	case HEZO_JSON_OBJECT:
		/* Never write what the parser would refuse to read back. */
		if (depth >= HEZO_JSON_MAX_DEPTH)
			return hezo_error_set(err, E2BIG, "nesting deeper than %d levels",
					      HEZO_JSON_MAX_DEPTH);
		if (v->len == 0 && pretty) {
			/* yajl's beautifier spreads {} over three lines; its raw number writer
			 * places any literal with the right separators and indent. */
			st = yajl_gen_number(g, v->type == HEZO_JSON_OBJECT ? "{}" : "[]", 2);
			break;
		}
		st = v->type == HEZO_JSON_OBJECT ? yajl_gen_map_open(g) : yajl_gen_array_open(g);
		if (st != yajl_gen_status_ok)
			break;
		for (size_t i = 0; i < v->len; i++) {
			if (v->type == HEZO_JSON_OBJECT) {
				r = gen_string(g, v->keys[i], err);
				if (r < 0)
					return r;
			}
			r = gen_value(g, v->items[i], pretty, depth + 1, err);
			if (r < 0)
				return r;
		}
		st = v->type == HEZO_JSON_OBJECT ? yajl_gen_map_close(g) : yajl_gen_array_close(g);
		break;
	default:
		return hezo_error_set(err, EINVAL, "unknown value type %d", (int)v->type);
	}
	if (st != yajl_gen_status_ok)
		return hezo_error_set(err, EINVAL, "cannot write %s (yajl_gen status %d)",
				      hezo_json_type_name(v->type), (int)st);
	return 0;
}

/*
 * The compact form is written here rather than by yajl_gen: the spec is written three times per
 * create (config.json, the backend's copy, the side file), and yajl's generator goes through a
 * callback per byte run and a state check per value. The bytes are yajl's own: the same
 * escapes (\uXXXX in capitals for the other control characters, '/' as it is), the same UTF-8
 * check, no spaces.
 */
struct wbuf {
	char *p;
	size_t len, alloc;
};

static int wbuf_reserve(struct wbuf *b, size_t n)
{
	size_t alloc = b->alloc ? b->alloc : 4096;
	char *p;

	if (n > SIZE_MAX - b->len - 1)
		return -ENOMEM;
	if (b->len + n + 1 <= b->alloc)
		return 0;
	while (alloc < b->len + n + 1)
		alloc = alloc > SIZE_MAX / 2 ? SIZE_MAX : alloc * 2;
	p = realloc(b->p, alloc);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->alloc = alloc;
	return 0;
}

static int wbuf_put(struct wbuf *b, const char *s, size_t n)
{
	if (wbuf_reserve(b, n) < 0)
		return -ENOMEM;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

/* Bytes copied as they are: printable ASCII but the quote and the backslash. */
static const unsigned char plain[256] = {
	[0x20 ... 0x21] = 1, [0x23 ... 0x5b] = 1, [0x5d ... 0x7f] = 1};

/*
 * How many continuation bytes the UTF-8 lead byte c takes, by yajl_string_validate_utf8's rule
 * (a lead byte and its continuation bytes, nothing more), or -1 for a byte that leads nothing.
 */
static int utf8_more(unsigned char c)
{
	if ((c >> 5) == 0x6)
		return 1;
	if ((c >> 4) == 0xe)
		return 2;
	if ((c >> 3) == 0x1e)
		return 3;
	return -1;
}

static int put_string(struct wbuf *b, const char *str, struct hezo_error **err)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *s = (const unsigned char *)str;
	size_t len, run = 0, i = 0;

	if (!str)
		return hezo_error_set(err, EINVAL, "string without a value");
	len = strlen(str);
	/* At most 6 bytes out per byte in, and the quotes. */
	if (len > (SIZE_MAX - 2) / 6 || wbuf_reserve(b, 6 * len + 2) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	b->p[b->len++] = '"';
	while (i < len) {
		unsigned char c = s[i];
		char esc;

		if (plain[c]) {
			i++;
			continue;
		}
		if (c >= 0x80) {
			int more = utf8_more(c);

			if (more < 0)
				return hezo_error_set(err, EILSEQ, "string is not valid UTF-8");
			for (i++; more > 0; more--, i++)
				if (i >= len || (s[i] >> 6) != 0x2)
					return hezo_error_set(err, EILSEQ,
							      "string is not valid UTF-8");
			continue;
		}
		switch (c) {
		case '"':
		case '\\':
			esc = (char)c;
			break;
		case '\r':
			esc = 'r';
			break;
		case '\n':
			esc = 'n';
			break;
		case '\f':
			esc = 'f';
			break;
		case '\b':
			esc = 'b';
			break;
		case '\t':
			esc = 't';
			break;
		default:
			esc = 0;
		}
		memcpy(b->p + b->len, s + run, i - run);
		b->len += i - run;
		run = ++i;
		b->p[b->len++] = '\\';
		if (esc) {
			b->p[b->len++] = esc;
		} else {
			memcpy(b->p + b->len, "u00", 3);
			b->p[b->len + 3] = hex[c >> 4];
			b->p[b->len + 4] = hex[c & 0xf];
			b->len += 5;
		}
	}
	memcpy(b->p + b->len, s + run, len - run);
	b->len += len - run;
	b->p[b->len++] = '"';
	return 0;
}

static int put_value(struct wbuf *b, const struct hezo_json *v, size_t depth,
		     struct hezo_error **err)
{
	int r = 0;

	if (!v)
		return hezo_error_set(err, EINVAL, "missing value");
	switch (v->type) {
	case HEZO_JSON_NULL:
		r = wbuf_put(b, "null", 4);
		break;
	case HEZO_JSON_FALSE:
		r = wbuf_put(b, "false", 5);
		break;
	case HEZO_JSON_TRUE:
		r = wbuf_put(b, "true", 4);
		break;
	case HEZO_JSON_NUMBER:
		if (!number_valid(v->str))
			return hezo_error_set(err, EINVAL, "invalid number literal");
		r = wbuf_put(b, v->str, strlen(v->str));
		break;
	case HEZO_JSON_STRING:
		return put_string(b, v->str, err);
	case HEZO_JSON_ARRAY:
	case HEZO_JSON_OBJECT:
		/* Never write what the parser would refuse to read back. */
		if (depth >= HEZO_JSON_MAX_DEPTH)
			return hezo_error_set(err, E2BIG, "nesting deeper than %d levels",
					      HEZO_JSON_MAX_DEPTH);
		if (wbuf_put(b, v->type == HEZO_JSON_OBJECT ? "{" : "[", 1) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
		for (size_t i = 0; i < v->len; i++) {
			if (i > 0 && wbuf_put(b, ",", 1) < 0)
				return hezo_error_set(err, ENOMEM, "out of memory");
			if (v->type == HEZO_JSON_OBJECT) {
				r = put_string(b, v->keys[i], err);
				if (r < 0)
					return r;
				if (wbuf_put(b, ":", 1) < 0)
					return hezo_error_set(err, ENOMEM, "out of memory");
			}
			r = put_value(b, v->items[i], depth + 1, err);
			if (r < 0)
				return r;
		}
		r = wbuf_put(b, v->type == HEZO_JSON_OBJECT ? "}" : "]", 1);
		break;
	default:
		return hezo_error_set(err, EINVAL, "unknown value type %d", (int)v->type);
	}
	return r < 0 ? hezo_error_set(err, ENOMEM, "out of memory") : 0;
}

static int dump_compact(const struct hezo_json *v, char **out, size_t *outlen,
			struct hezo_error **err)
{
	struct wbuf b = {0};
	int r;

	r = put_value(&b, v, 0, err);
	if (r < 0) {
		free(b.p);
		return r;
	}
	b.p[b.len] = '\0';
	*out = b.p;
	if (outlen)
		*outlen = b.len;
	return 0;
}

static void yajl_gen_freep(yajl_gen *g)
{
	if (*g)
		yajl_gen_free(*g);
}

int hezo_json_dump(const struct hezo_json *v, bool pretty, char **out, size_t *outlen,
		   struct hezo_error **err)
{
	__attribute__((cleanup(yajl_gen_freep))) yajl_gen g = NULL;
	const unsigned char *buf;
	size_t len;
	char *copy;
	int r;

	if (!pretty)
		return dump_compact(v, out, outlen, err);
	g = yajl_gen_alloc(NULL);
	if (!g)
		return hezo_error_set(err, ENOMEM, "out of memory");
	if (pretty) {
		yajl_gen_config(g, yajl_gen_beautify, 1);
		yajl_gen_config(g, yajl_gen_indent_string, "\t");
	}
	/* Strings built by callers did not pass the parser's UTF-8 check. */
	yajl_gen_config(g, yajl_gen_validate_utf8, 1);

	r = gen_value(g, v, pretty, 0, err);
	if (r < 0)
		return r;
	if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok)
		return hezo_error_set(err, ENOMEM, "out of memory");
	copy = malloc(len + 1);
	if (!copy)
		return hezo_error_set(err, ENOMEM, "out of memory");
	memcpy(copy, buf, len);
	copy[len] = '\0';
	*out = copy;
	if (outlen)
		*outlen = len;
	return 0;
}

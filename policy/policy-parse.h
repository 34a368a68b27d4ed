/* What the files that read, write and narrow a policy file share (model.c, collect.c, values.c,
 * parse.c, output.c, narrow.c). Not installed; the rest of policy/ uses policy-internal.h. */
#ifndef HEZO_POLICY_PARSE_H
#define HEZO_POLICY_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy-internal.h"

#define POLICY_MAX_BYTES (1024 * 1024)

/* ---- model.c: the model and its defaults ---- */

extern const char *const hezo_policy_backend_names[HEZO_BACKEND_COUNT];

/* A namespace kind as the policy file names it, and its allowHost bit. */
struct host_ns_name {
	const char *name;
	unsigned bit;
};
extern const struct host_ns_name hezo_policy_host_ns_names[5]; /* pid, ipc, uts, network, cgroup */

int hezo_policy_tmpfs_add(struct hezo_policy *p, const char *dest, uint64_t size);
void hezo_policy_tmpfs_clear(struct hezo_policy *p);
int hezo_policy_sysctl_add(struct hezo_policy *p, const char *name, bool any, uint64_t lo,
			   uint64_t hi);
void hezo_policy_sysctls_clear(struct hezo_policy *p);
int hezo_policy_new_default(struct hezo_policy **out);

/* ---- collect.c: parse context and messages ---- */

struct pctx {
	const char *name;
	bool project; /* a project file: restricted key set */
	bool layered; /* a project file laid over the main one: its project-only keys stand */
	struct hezo_error **err;
	/* policy check: every field error is kept here and parsing goes on to the next field */
	char **all;
	size_t nall;
	bool collect;
};

/*
 * In a loop over an object's keys: stop at the first error, or, when every error is being
 * collected (`hezo-shim policy check`), remember it and go on with the next key.
 */
#define NEXT_KEY_OR_FAIL(c, r, bad)                                                                \
	do {                                                                                       \
		if ((r) < 0) {                                                                     \
			if (!(c)->collect)                                                         \
				return (r);                                                        \
			(bad) = (r);                                                               \
		}                                                                                  \
	} while (0)

/* workspace.c: the project file's "workspace" key, and its place once layered. */
int hezo_policy_workspace_parse(struct pctx *c, struct hezo_policy *p, const struct hezo_json *x);
int hezo_policy_workspace_validate(struct pctx *c, const struct hezo_policy *p);

int hezo_policy_perr(struct pctx *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int hezo_policy_oom(struct pctx *c);
void hezo_policy_describe(char *buf, size_t size, const struct hezo_json *v);
int hezo_policy_expect_type(struct pctx *c, const char *field, const struct hezo_json *v,
			    enum hezo_json_type t);
int hezo_policy_unknown_key(struct pctx *c, const char *prefix, const char *key);

/* ---- values.c: value syntax, and reading one value of a field ---- */

int hezo_policy_parse_size_text(const char *s, uint64_t *out);
int hezo_policy_parse_cpus_text(const char *s, uint64_t *milli);
void hezo_policy_lowercase(char *s);
bool hezo_policy_sysctl_name_ok(const char *n);

int hezo_policy_get_size(struct pctx *c, const char *field, const struct hezo_json *v,
			 bool allow_zero, uint64_t *out);
int hezo_policy_get_count(struct pctx *c, const char *field, const struct hezo_json *v,
			  uint64_t *out, bool allow_zero);
int hezo_policy_get_abs_path(struct pctx *c, const char *field, const struct hezo_json *v,
			     char **dst);
int hezo_policy_get_bool(struct pctx *c, const char *field, const struct hezo_json *v, bool *dst);
/* A string that is one of the n words (*out: its index); choices lists them for the message. */
int hezo_policy_get_word(struct pctx *c, const char *field, const struct hezo_json *v,
			 const char *const *words, size_t n, const char *choices, size_t *out);

typedef int (*elem_fn)(struct pctx *c, const char *field, const char *s, char **norm);

int hezo_policy_get_strv(struct pctx *c, const char *field, const struct hezo_json *v, elem_fn fn,
			 struct hezo_strv *dst);
int hezo_policy_elem_abs_path(struct pctx *c, const char *field, const char *s, char **norm);
int hezo_policy_elem_cap(struct pctx *c, const char *field, const char *s, char **norm);
int hezo_policy_elem_backend(struct pctx *c, const char *field, const char *s, char **norm);
int hezo_policy_elem_any(struct pctx *c, const char *field, const char *s, char **norm);
int hezo_policy_elem_egress_allow(struct pctx *c, const char *field, const char *s, char **norm);
int hezo_policy_elem_resolver(struct pctx *c, const char *field, const char *s, char **norm);
int hezo_policy_elem_cidr(struct pctx *c, const char *field, const char *s, char **norm);
int hezo_policy_elem_host_ns(struct pctx *c, const char *field, const char *s, char **norm);

/* ---- parse.c: the fields of a policy file ---- */

int hezo_policy_parse_top_key(struct pctx *c, struct hezo_policy *p, const char *k,
			      const struct hezo_json *x);
/* Every key of doc, then the rules that tie keys together. */
int hezo_policy_parse_into(struct pctx *c, struct hezo_policy *p, const struct hezo_json *doc);

/* ---- output.c: the effective policy as JSON ---- */

/* The policy in the file format (so it can be parsed again), without "project". */
struct hezo_json *hezo_policy_file_json(const struct hezo_policy *p);

#endif

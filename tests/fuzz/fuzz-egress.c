/*
 * Differential target for the egress allow-list grammar: the same entries go to every consumer
 * (policy check, the hook's --egress parse, proxyd's registration parse), which must agree on
 * accepting or refusing them; what policy accepts, in the canonical spelling it hands the hook,
 * must also parse in the hook and in proxyd to the same rules as the entries as written.
 * Input: the first byte picks the list (0 allow, 1 resolvers, 2 allowRanges; modulo 3), the rest
 * is up to 8 entries separated by '\n'. Seeds: tests/fuzz/corpus/egress (also replayed by the
 * unit suite). Build and run with the others: tests/fuzz/smoke.sh (FUZZ_SMOKE_TARGETS=egress).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-egress.h"
#include "hezo-hook.h"
#include "hezo-policy.h"
#include "proxyd-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ENTRIES 8
#define DOC_MAX	    8192

static const char *const lists[] = {"allow", "resolvers", "allowRanges"};

/* A JSON array of the entries, every byte escaped that JSON would not take raw. */
static size_t json_array(const uint8_t *data, size_t size, char *out, size_t outsz)
{
	size_t o = 0, n = 0;

	out[o++] = '[';
	for (size_t i = 0; i <= size && n < MAX_ENTRIES; n++) {
		size_t j = i;

		if (n)
			out[o++] = ',';
		out[o++] = '"';
		for (; j < size && data[j] != '\n'; j++) {
			uint8_t c = data[j];

			if (o + 8 >= outsz - 4)
				break;
			if (c < 0x20 || c == '"' || c == '\\')
				o += (size_t)snprintf(out + o, outsz - o, "\\u%04x", c);
			else
				out[o++] = (char)c;
		}
		out[o++] = '"';
		i = j + 1;
	}
	out[o++] = ']';
	out[o] = '\0';
	return o;
}

static void disagree(const char *what, const char *doc, int p, int h, int d, struct hezo_error *ep,
		     struct hezo_error *eh, struct hezo_error *ed)
{
	fprintf(stderr,
		"egress consumers disagree (%s) on %s\n  policy %s: %s\n  hook %s: %s\n"
		"  proxyd %s: %s\n",
		what, doc, p < 0 ? "refuses" : "accepts", ep ? ep->msg : "-",
		h < 0 ? "refuses" : "accepts", eh ? eh->msg : "-", d < 0 ? "refuses" : "accepts",
		ed ? ed->msg : "-");
	abort();
}

static bool same_name(const struct hezo_allow_name *a, const struct hezo_allow_name *b)
{
	return a->wildcard == b->wildcard && a->port == b->port && !strcmp(a->name, b->name);
}

static bool same_cidr(const struct hezo_cidr *a, const struct hezo_cidr *b)
{
	return a->family == b->family && a->prefix == b->prefix && a->port == b->port &&
	       !memcmp(a->addr, b->addr, 16);
}

static bool same_resolver(const struct hezo_resolver *a, const struct hezo_resolver *b)
{
	return a->family == b->family && a->port == b->port && !memcmp(a->addr, b->addr, 16);
}

/* Set inclusion both ways: policy drops duplicates, proxyd keeps them. */
#define SUBSET(a, na, b, nb, eq)                                                                   \
	({                                                                                         \
		bool all_ = true;                                                                  \
		for (size_t i_ = 0; i_ < (na) && all_; i_++) {                                     \
			bool found_ = false;                                                       \
			for (size_t j_ = 0; j_ < (nb) && !found_; j_++)                            \
				found_ = eq(&(a)[i_], &(b)[j_]);                                   \
			all_ = found_;                                                             \
		}                                                                                  \
		all_;                                                                              \
	})

static bool same_rules(const struct hezo_egress *a, const struct hezo_egress *b)
{
	return SUBSET(a->names, a->nnames, b->names, b->nnames, same_name) &&
	       SUBSET(b->names, b->nnames, a->names, a->nnames, same_name) &&
	       SUBSET(a->cidrs, a->ncidrs, b->cidrs, b->ncidrs, same_cidr) &&
	       SUBSET(b->cidrs, b->ncidrs, a->cidrs, a->ncidrs, same_cidr) &&
	       SUBSET(a->ranges, a->nranges, b->ranges, b->nranges, same_cidr) &&
	       SUBSET(b->ranges, b->nranges, a->ranges, a->nranges, same_cidr) &&
	       SUBSET(a->resolvers, a->nresolvers, b->resolvers, b->nresolvers, same_resolver) &&
	       SUBSET(b->resolvers, b->nresolvers, a->resolvers, a->nresolvers, same_resolver);
}

/* The hook and proxyd on one egress section (JSON text); returns proxyd's verdict. */
static int hook_and_proxyd(const char *section, int *hook, struct hezo_ctl_request *req,
			   struct hezo_error **eh, struct hezo_error **ed)
{
	static char doc[DOC_MAX + 64];
	struct hezo_hook_egress eg;
	int n;

	*hook = hezo_hook_parse_egress(section, &eg, eh);
	if (*hook == 0)
		hezo_hook_egress_clear(&eg);
	n = snprintf(doc, sizeof(doc), "{\"op\":\"register\",\"id\":\"fuzz\",\"egress\":%s}",
		     section);
	/* A section past DOC_MAX is cut, as strlen() of the cut text would read it. */
	if (n < 0 || (size_t)n >= sizeof(doc))
		n = (int)strlen(doc);
	return hezo_ctl_request_parse(doc, (size_t)n, req, ed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char arr[DOC_MAX], pdoc[DOC_MAX + 64], sect[DOC_MAX + 64];
	struct hezo_error *ep = NULL, *eh = NULL, *ed = NULL;
	struct hezo_ctl_request raw = {0}, canon = {0};
	struct hezo_policy *p = NULL;
	struct hezo_json *pj;
	const char *list;
	char *text = NULL;
	size_t tlen;
	int rp, rh, rd;

	if (size == 0 || size > 2048)
		return 0;
	list = lists[data[0] % 3];
	json_array(data + 1, size - 1, arr, sizeof(arr));

	snprintf(pdoc, sizeof(pdoc), "{\"egress\":{\"%s\":%s}}", list, arr);
	rp = hezo_policy_parse(pdoc, strlen(pdoc), "(fuzz)", &p, &ep);
	snprintf(sect, sizeof(sect), "{\"mode\":\"proxy\",\"%s\":%s}", list, arr);
	rd = hook_and_proxyd(sect, &rh, &raw, &eh, &ed);
	if ((rp < 0) != (rh < 0) || (rh < 0) != (rd < 0))
		disagree("entries as written", sect, rp, rh, rd, ep, eh, ed);
	if (rp < 0) {
		if (!ep || !eh || !ed)
			abort(); /* every refusal says why */
		goto out;
	}

	/* What the shim hands the hook: the policy's effective section, canonical spellings. */
	pj = hezo_policy_egress_json(p);
	if (!pj || hezo_json_dump(pj, false, &text, &tlen, &ep) < 0)
		abort();
	hezo_json_free(pj);
	rd = hook_and_proxyd(text, &rh, &canon, &eh, &ed);
	if (rh < 0 || rd < 0)
		disagree("policy's canonical section", text, 0, rh, rd, NULL, eh, ed);
	if (!same_rules(&raw.eg, &canon.eg)) {
		fprintf(stderr, "canonical section %s enforces other rules than %s\n", text, sect);
		abort();
	}
out:
	free(text);
	hezo_ctl_request_clear(&raw);
	hezo_ctl_request_clear(&canon);
	hezo_policy_free(p);
	hezo_error_free(ep);
	hezo_error_free(eh);
	hezo_error_free(ed);
	return 0;
}

/*
 * Per-container pins: which addresses proxyd's own DNS handed this container, for which names,
 * until when. A connection is let through only to a pinned address.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxyd-parse.h"

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

static bool same_addr(const struct hezo_pin *e, int family, const uint8_t *addr)
{
	return e->family == family && memcmp(e->addr, addr, addr_len(family)) == 0;
}

void hezo_pin_expire(struct hezo_pins *p, uint64_t now)
{
	size_t o = 0;

	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].expires > now)
			p->v[o++] = p->v[i];
	p->n = o;
}

int hezo_pin_add(struct hezo_pins *p, int family, const uint8_t *addr, const char *name,
		 uint32_t ttl, uint64_t now)
{
	struct hezo_pin *e;
	uint64_t expires;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	if (strlen(name) >= HEZO_NAME_MAX)
		return -ENAMETOOLONG;
	if (ttl < HEZO_PIN_TTL_FLOOR)
		ttl = HEZO_PIN_TTL_FLOOR;
	if (ttl > HEZO_DNS_TTL_CAP)
		ttl = HEZO_DNS_TTL_CAP;
	expires = now + ttl;
	for (size_t i = 0; i < p->n; i++) {
		e = &p->v[i];
		if (same_addr(e, family, addr) && strcmp(e->name, name) == 0) {
			if (e->expires < expires)
				e->expires = expires;
			return 0;
		}
	}
	if (p->n == p->cap) {
		hezo_pin_expire(p, now);
		if (p->n == p->cap && p->cap < HEZO_PIN_MAX) {
			size_t cap = p->cap ? p->cap * 2 : 16;
			struct hezo_pin *v;

			if (cap > HEZO_PIN_MAX)
				cap = HEZO_PIN_MAX;
			v = realloc(p->v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			p->v = v;
			p->cap = cap;
		}
		if (p->n == p->cap) {
			/* Full of live pins: forget the one that would go first anyway. */
			size_t soonest = 0;

			for (size_t i = 1; i < p->n; i++)
				if (p->v[i].expires < p->v[soonest].expires)
					soonest = i;
			p->v[soonest] = p->v[--p->n];
		}
	}
	e = &p->v[p->n++];
	memset(e, 0, sizeof(*e));
	e->family = family;
	memcpy(e->addr, addr, addr_len(family));
	strcpy(e->name, name);
	e->expires = expires;
	return 0;
}

bool hezo_pin_match(const struct hezo_pins *p, int family, const uint8_t *addr, const char *name,
		    uint64_t now)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct hezo_pin *e = &p->v[i];

		if (e->expires > now && same_addr(e, family, addr) && strcmp(e->name, name) == 0)
			return true;
	}
	return false;
}

bool hezo_pin_any(const struct hezo_pins *p, int family, const uint8_t *addr, uint64_t now)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].expires > now && same_addr(&p->v[i], family, addr))
			return true;
	return false;
}

const char *hezo_pin_allowed_name(const struct hezo_pins *p, int family, const uint8_t *addr,
				  uint64_t now, const struct hezo_egress *e, uint16_t port)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct hezo_pin *x = &p->v[i];

		if (x->expires > now && same_addr(x, family, addr) &&
		    hezo_egress_name_allowed(e, x->name, port))
			return x->name;
	}
	return NULL;
}

bool hezo_pin_any_allowed(const struct hezo_pins *p, int family, const uint8_t *addr, uint64_t now,
			  const struct hezo_egress *e, uint16_t port)
{
	return hezo_pin_allowed_name(p, family, addr, now, e, port) != NULL;
}

void hezo_pin_clear(struct hezo_pins *p)
{
	free(p->v);
	memset(p, 0, sizeof(*p));
}

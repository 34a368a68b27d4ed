/* This host's own addresses, which no name may resolve to for a container (dnsproxy.c drops
 * them from answers): read at start and refreshed by the registry's tick. */
#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>

#include "proxyd.h"

static struct host_addr {
	int family;
	uint8_t addr[16];
} * host_addrs;
static size_t nhost_addrs;

void pd_host_addrs_refresh(void)
{
	struct ifaddrs *ifa, *i;
	struct host_addr *v;
	size_t n = 0;

	if (getifaddrs(&ifa) < 0)
		return; /* keep the last known list */
	for (i = ifa; i; i = i->ifa_next)
		n++;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		freeifaddrs(ifa);
		return;
	}
	n = 0;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			v[n].family = AF_INET;
			memcpy(v[n++].addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			v[n].family = AF_INET6;
			memcpy(v[n++].addr, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
		}
	}
	freeifaddrs(ifa);
	free(host_addrs);
	host_addrs = v;
	nhost_addrs = n;
}

bool pd_host_addr(int family, const uint8_t *addr)
{
	for (size_t i = 0; i < nhost_addrs; i++)
		if (host_addrs[i].family == family &&
		    memcmp(host_addrs[i].addr, addr, family == AF_INET ? 4 : 16) == 0)
			return true;
	return false;
}

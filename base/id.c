/* The container id rule (hezo-id.h): one copy for the shim, the hook and proxyd. */
#include <string.h>

#include "hezo-cleanup.h"
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

/*
 * The engines' names for a container's cgroup, the last component of linux.cgroupsPath: <id>
 * (Docker, containerd and CRI with cgroupfs), libpod-<id> (podman with cgroupfs) and the
 * systemd scopes docker-<id>.scope, libpod-<id>.scope, cri-containerd-<id>.scope,
 * crio-<id>.scope. A name merely containing the ID ("docker" for ID "docker") is not one.
 */
/*
 * A systemd unit's name: systemd puts a unit's processes in the cgroup of that name (a service
 * started later lands in /system.slice/X.service), so a container named so would count them as
 * its own. Engines name theirs PREFIX-ID.scope, checked below.
 */
static bool unit_named(const char *name)
{
	static const char *const units[] = {".service", ".socket", ".scope",	".slice",
					    ".mount",	".target", ".timer",	".path",
					    ".swap",	".device", ".automount"};
	size_t n = strlen(name);

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(units); i++) {
		size_t un = strlen(units[i]);
		if (n > un && strcmp(name + n - un, units[i]) == 0)
			return true;
	}
	return false;
}

bool hezo_cgroup_name_is_id(const char *name, const char *id)
{
	static const char *const scopes[] = {"docker-", "libpod-", "cri-containerd-", "crio-"};
	size_t n = strlen(name), idn = strlen(id);

	if (!idn)
		return false;
	if (strcmp(name, id) == 0)
		return !unit_named(name);
	if (strncmp(name, "libpod-", 7) == 0 && strcmp(name + 7, id) == 0)
		return !unit_named(name);
	if (n < 6 || strcmp(name + n - 6, ".scope") != 0)
		return false;
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(scopes); i++) {
		size_t pn = strlen(scopes[i]);

		if (n == pn + idn + 6 && strncmp(name, scopes[i], pn) == 0 &&
		    strncmp(name + pn, id, idn) == 0)
			return true;
	}
	return false;
}

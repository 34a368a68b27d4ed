/* Small process and file helpers for the admin verbs: optional reads, PATH lookup, run-and-capture.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-config.h"
#include "hezo-file.h"
#include "hezo-proc.h"
#include "install-internal.h"

int hezo_install_read_optional(const char *path, char **out, size_t *len, bool *exists,
			       struct hezo_error **err)
{
	int r;

	*out = NULL;
	*len = 0;
	*exists = false;
	r = hezo_read_file_at(AT_FDCWD, path, HEZO_INSTALL_MAX_CONFIG, out, len, err);
	if (r == -ENOENT) {
		hezo_error_free(*err);
		*err = NULL;
		return 0;
	}
	if (r < 0)
		return r;
	*exists = true;
	return 0;
}

char *hezo_install_which(const char *name)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *copy = NULL;
	char *save = NULL;

	if (strchr(name, '/'))
		return access(name, X_OK) == 0 ? strdup(name) : NULL;
	if (!path || !*path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	copy = strdup(path);
	if (!copy)
		return NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char *full = NULL;
		struct stat st;

		if (asprintf(&full, "%s/%s", dir, name) < 0)
			return NULL;
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
			return full;
		free(full);
	}
	return NULL;
}

char *hezo_install_default_shim(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		const char *base;

		self[n] = '\0';
		base = strrchr(self, '/');
		if (base && strcmp(base + 1, "hezo-shim") == 0)
			return strdup(self);
	}
	return strdup(HEZO_SHIM_INSTALLED_PATH);
}

int hezo_install_run(const char *const *argv, int timeout_ms, char **out)
{
	static const struct hezo_spawn_opts base = {.stderr_too = true, .excess_ok = true};
	_cleanup_free_ char *exe = hezo_install_which(argv[0]);
	struct hezo_spawn_opts o = base;

	*out = NULL;
	if (!exe)
		return -ENOENT;
	o.timeout_ms = timeout_ms;
	return hezo_spawn_capture(exe, (char *const *)argv, &o, out, NULL);
}

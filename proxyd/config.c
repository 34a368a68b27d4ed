/* The daemon's configuration: its defaults here, set from the command line by main.c before
 * anything starts, read by every file after; and the directories it names. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "hezo-config.h"
#include "proxyd.h"

struct pd_config pd_cfg = {
	.state_dir = "/run/hezo-proxyd",
	.log_dir = "/var/log/hezo-proxyd",
	.socket = HEZO_PROXYD_SOCKET,
	.conn_cap = 256,
	.dns_rate = 200,
	.idle_timeout_s = 300,
	.head_timeout_s = 10,
	.connect_timeout_s = 10,
	.icpt_mem_mib = 512,
	.icpt_share_mib = 128,
};

int pd_state_subdir(const char *name, struct hezo_error **err)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", pd_cfg.state_dir, name);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return hezo_error_set_errno(err, errno, "%s", path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "%s", path);
	return fd;
}

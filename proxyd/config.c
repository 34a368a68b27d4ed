/* The daemon's configuration: its defaults here, set from the command line by main.c before
 * anything starts, read by every file after. */
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
};

/* `hezo-shim netlog [--follow] [--blocked] CONTAINER`: print a container's netlog lines. */
#ifndef HEZO_NETLOG_H
#define HEZO_NETLOG_H

/* Default directory of hezo-proxyd's netlog files; HEZO_NETLOG_DIR or --log-dir override it. */
#define HEZO_NETLOG_DIR_DEFAULT "/var/log/hezo-proxyd"

/* argv[0] is the verb ("netlog"). Returns the process exit status (0, 1 on error, 2 usage). */
int hezo_netlog_main(int argc, char **argv);

#endif

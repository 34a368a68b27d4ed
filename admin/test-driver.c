/* hezo-install-test: runs the admin verbs without the shim, for tests (never installed). */
#include <stdio.h>
#include <string.h>

#include "hezo-install.h"

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "install") == 0)
		return hezo_install_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "uninstall") == 0)
		return hezo_uninstall_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "doctor") == 0)
		return hezo_doctor_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "policy") == 0)
		return hezo_policy_cmd_main(argc - 1, argv + 1);
	fprintf(stderr, "usage: hezo-install-test install|uninstall|doctor|policy ARGS...\n");
	return 2;
}

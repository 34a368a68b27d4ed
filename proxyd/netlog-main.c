/* A stand-alone hezo_netlog_main() for the integration tests, until the shim's verb runs it. */
#include "hezo-netlog.h"

int main(int argc, char **argv)
{
	return hezo_netlog_main(argc, argv);
}

/*
 * hezo-seccomp-exec HEXBPF -- COMMAND [ARG...]: install a seccomp filter, then exec COMMAND.
 * Bind-mounted into runsc containers, whose exec starts processes without the container's
 * profile; the shim puts it in front of every exec'd command. Built static: images have no libc.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_INSNS 4096

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int main(int argc, char **argv)
{
	static struct sock_filter insns[MAX_INSNS];
	unsigned char *bytes = (unsigned char *)insns;
	struct sock_fprog prog;
	size_t len;

	if (argc < 4 || strcmp(argv[2], "--") != 0) {
		fputs("usage: hezo-seccomp-exec HEXBPF -- COMMAND [ARG...]\n", stderr);
		return 127;
	}
	len = strlen(argv[1]);
	if (len == 0 || len % 16 != 0 || len / 2 > sizeof(insns)) {
		fputs("hezo-seccomp-exec: bad filter\n", stderr);
		return 127;
	}
	for (size_t i = 0; i < len / 2; i++) {
		int hi = hexval(argv[1][2 * i]), lo = hexval(argv[1][2 * i + 1]);
		if (hi < 0 || lo < 0) {
			fputs("hezo-seccomp-exec: bad filter\n", stderr);
			return 127;
		}
		bytes[i] = (unsigned char)(hi << 4 | lo);
	}
	prog.len = (unsigned short)(len / 16);
	prog.filter = insns;
	/* Never run the command without the filter. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
		fprintf(stderr, "hezo-seccomp-exec: cannot install the filter: %s\n",
			strerror(errno));
		return 127;
	}
	execvp(argv[3], argv + 3);
	fprintf(stderr, "hezo-seccomp-exec: %s: %s\n", argv[3], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

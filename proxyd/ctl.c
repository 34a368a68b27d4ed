/*
 * `hezo-proxyd --ctl`: a client of the control socket for operators (list, stats, deregister)
 * and for tests and manual wiring (register, with a namespace path).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proxyd.h"

static int usage(void)
{
	fprintf(stderr,
		"usage: hezo-proxyd [--socket PATH] --ctl list\n"
		"       hezo-proxyd [--socket PATH] --ctl stats\n"
		"       hezo-proxyd [--socket PATH] --ctl deregister ID\n"
		"       hezo-proxyd [--socket PATH] --ctl register ID NETNS-PATH EGRESS-JSON "
		"[PROJECT]\n");
	return 2;
}

int pd_ctl_main(const char *socket_path, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *req = hezo_json_new_object();
	_cleanup_json_ struct hezo_json *rep = NULL;
	_cleanup_free_ char *msg = NULL;
	_cleanup_close_ int nsfd = -1, fd = -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	char buf[65536];
	size_t len;
	ssize_t n;

	if (argc < 1 || !req)
		return usage();
	if (strcmp(argv[0], "list") == 0 || strcmp(argv[0], "stats") == 0) {
		if (argc != 1)
			return usage();
		hezo_json_set(req, "op", hezo_json_new_string(argv[0]));
	} else if (strcmp(argv[0], "deregister") == 0) {
		if (argc != 2)
			return usage();
		hezo_json_set(req, "op", hezo_json_new_string("deregister"));
		hezo_json_set(req, "id", hezo_json_new_string(argv[1]));
	} else if (strcmp(argv[0], "register") == 0) {
		struct hezo_json *eg = NULL;

		if (argc != 4 && argc != 5)
			return usage();
		nsfd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (nsfd < 0) {
			fprintf(stderr, "hezo-proxyd: %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		if (hezo_json_parse(argv[3], strlen(argv[3]), &eg, &err) < 0) {
			fprintf(stderr, "hezo-proxyd: egress: %s\n", err->msg);
			return 2;
		}
		hezo_json_set(req, "op", hezo_json_new_string("register"));
		hezo_json_set(req, "id", hezo_json_new_string(argv[1]));
		if (argc == 5)
			hezo_json_set(req, "project", hezo_json_new_string(argv[4]));
		hezo_json_set(req, "egress", eg);
	} else {
		return usage();
	}
	if (hezo_json_dump(req, false, &msg, &len, &err) < 0) {
		fprintf(stderr, "hezo-proxyd: %s\n", err->msg);
		return 1;
	}
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return usage();
	strcpy(sa.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "hezo-proxyd: cannot reach %s: %s\n", socket_path, strerror(errno));
		return 1;
	}
	iov.iov_base = msg;
	iov.iov_len = len;
	if (nsfd >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf.b;
		mh.msg_controllen = sizeof(cbuf.b);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &nsfd, sizeof(int));
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0) {
		fprintf(stderr, "hezo-proxyd: send: %s\n", strerror(errno));
		return 1;
	}
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		fprintf(stderr, "hezo-proxyd: no reply from %s\n", socket_path);
		return 1;
	}
	buf[n] = '\0';
	printf("%s\n", buf);
	if (hezo_json_parse(buf, (size_t)n, &rep, &err) < 0 ||
	    !hezo_json_is_true(hezo_json_get(rep, "ok")))
		return 1;
	return 0;
}

/*
 * `hezo-proxyd --ctl`: a client of the control socket for operators (list, stats, deregister)
 * and for tests and manual wiring (register, with a namespace path).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "hezo-fdpass.h"
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

/* Receive one whole message, however long: its size is peeked first. */
static ssize_t recv_message(int fd, char **out)
{
	_cleanup_free_ char *buf = NULL;
	ssize_t n, m;
	char probe;

	do
		n = recv(fd, &probe, 1, MSG_PEEK | MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : -ECONNRESET;
	buf = malloc((size_t)n + 1);
	if (!buf)
		return -ENOMEM;
	do
		m = recv(fd, buf, (size_t)n + 1, MSG_TRUNC);
	while (m < 0 && errno == EINTR);
	if (m < 0)
		return -errno;
	if (m != n)
		return -EMSGSIZE;
	buf[m] = '\0';
	*out = TAKE_PTR(buf);
	return m;
}

static int send_request(int fd, struct hezo_json *req, int nsfd)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *msg = NULL;
	union hezo_fd_cmsg cbuf;
	struct iovec iov;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	size_t len;

	if (hezo_json_dump(req, false, &msg, &len, &err) < 0) {
		fprintf(stderr, "hezo-proxyd: %s\n", err->msg);
		return -1;
	}
	iov.iov_base = msg;
	iov.iov_len = len;
	hezo_fdpass_attach(&mh, &cbuf, nsfd);
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0) {
		fprintf(stderr, "hezo-proxyd: send: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Send one request and receive its reply; a missing reply is reported here. */
static ssize_t exchange(int fd, const char *socket_path, struct hezo_json *req, int nsfd,
			char **buf)
{
	ssize_t n;

	if (send_request(fd, req, nsfd) < 0)
		return -1;
	n = recv_message(fd, buf);
	if (n < 0)
		fprintf(stderr, "hezo-proxyd: no reply from %s: %s\n", socket_path,
			strerror((int)-n));
	return n;
}

/* One request, one reply: printed as it came. */
static int call_once(int fd, const char *socket_path, struct hezo_json *req, int nsfd)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *rep = NULL;
	_cleanup_free_ char *buf = NULL;
	ssize_t n;

	n = exchange(fd, socket_path, req, nsfd, &buf);
	if (n < 0)
		return 1;
	printf("%s\n", buf);
	if (hezo_json_parse(buf, (size_t)n, &rep, &err) < 0 ||
	    !hezo_json_is_true(hezo_json_get(rep, "ok")))
		return 1;
	return 0;
}

/*
 * list and stats come in pages (control.c): ask for each page after the last one's "next" and
 * print one document of the same shape as a single reply, the entries of every page in one array.
 */
static int call_paged(int fd, const char *socket_path, const char *op, const char *array_key)
{
	_cleanup_json_ struct hezo_json *merged = NULL;
	_cleanup_free_ char *after = NULL, *out = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	size_t len;

	for (;;) {
		_cleanup_json_ struct hezo_json *req = hezo_json_new_object(), *rep = NULL;
		_cleanup_free_ char *buf = NULL;
		struct hezo_json *items;
		const char *next;
		ssize_t n;

		if (!req || hezo_json_set(req, "op", hezo_json_new_string(op)) < 0 ||
		    (after && hezo_json_set(req, "after", hezo_json_new_string(after)) < 0)) {
			fprintf(stderr, "hezo-proxyd: out of memory\n");
			return 1;
		}
		n = exchange(fd, socket_path, req, -1, &buf);
		if (n < 0)
			return 1;
		if (hezo_json_parse(buf, (size_t)n, &rep, &err) < 0 ||
		    !hezo_json_is_true(hezo_json_get(rep, "ok"))) {
			/* A refusal is shown as proxyd gave it. */
			printf("%s\n", buf);
			return 1;
		}
		items = hezo_json_get(rep, array_key);
		if (!items || items->type != HEZO_JSON_ARRAY) {
			fprintf(stderr, "hezo-proxyd: %s reply without a \"%s\" list\n", op,
				array_key);
			return 1;
		}
		next = hezo_json_string(hezo_json_get(rep, "next"));
		/* Cursors only move forward: a server going round in circles is an error. */
		if (next && after && strcmp(next, after) <= 0) {
			fprintf(stderr, "hezo-proxyd: %s: page cursor went backwards\n", op);
			return 1;
		}
		if (!merged) {
			merged = TAKE_PTR(rep);
		} else {
			struct hezo_json *all = hezo_json_get(merged, array_key);

			while (items->len > 0) {
				struct hezo_json *it = items->items[0];

				items->items[0] = NULL;
				hezo_json_remove_at(items, 0);
				if (hezo_json_append(all, it) < 0) {
					hezo_json_free(it);
					fprintf(stderr, "hezo-proxyd: out of memory\n");
					return 1;
				}
			}
		}
		if (!next)
			break;
		free(after);
		after = strdup(next);
		if (!after) {
			fprintf(stderr, "hezo-proxyd: out of memory\n");
			return 1;
		}
	}
	hezo_json_remove(merged, "next");
	if (strcmp(op, "stats") == 0)
		hezo_json_set(merged, "containers",
			      hezo_json_new_uint(hezo_json_get(merged, array_key)->len));
	if (hezo_json_dump(merged, false, &out, &len, &err) < 0) {
		fprintf(stderr, "hezo-proxyd: %s\n", err->msg);
		return 1;
	}
	printf("%s\n", out);
	return 0;
}

int pd_ctl_main(const char *socket_path, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *req = hezo_json_new_object();
	_cleanup_close_ int nsfd = -1, fd = -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *paged = NULL;

	if (argc < 1 || !req)
		return usage();
	if (strcmp(argv[0], "list") == 0 || strcmp(argv[0], "stats") == 0) {
		if (argc != 1)
			return usage();
		paged = argv[0];
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
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return usage();
	strcpy(sa.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "hezo-proxyd: cannot reach %s: %s\n", socket_path, strerror(errno));
		return 1;
	}
	if (paged)
		return call_paged(fd, socket_path, paged,
				  strcmp(paged, "list") == 0 ? "containers" : "perContainer");
	return call_once(fd, socket_path, req, nsfd);
}

/* Client side of proxyd's control protocol: JSON over SOCK_SEQPACKET, namespace fd in SCM_RIGHTS.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "hezo-fdpass.h"
#include "hezo-hook.h"
#include "hezo-proc.h"

#define REPLY_MAX 65536

void hezo_hook_reply_clear(struct hezo_hook_reply *r)
{
	free(r->error);
	memset(r, 0, sizeof(*r));
}

static int reply_port(const struct hezo_json *root, const char *key, int *out,
		      struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(root, key);
	int64_t n;

	*out = 0;
	if (!v)
		return 0;
	if (hezo_json_get_int64(v, &n) < 0 || n < 1 || n > 65535)
		return hezo_error_set(err, EPROTO, "proxyd reply: \"%s\" is not a port", key);
	*out = (int)n;
	return 0;
}

int hezo_hook_parse_reply(const char *buf, size_t len, struct hezo_hook_reply *out,
			  struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *root = NULL;
	const struct hezo_json *ok;
	int r;

	memset(out, 0, sizeof(*out));
	r = hezo_json_parse(buf, len, &root, err);
	if (r < 0)
		return hezo_error_prefix(err, "proxyd reply");
	ok = hezo_json_get(root, "ok");
	if (root->type != HEZO_JSON_OBJECT || !hezo_json_is_bool(ok))
		return hezo_error_set(err, EPROTO, "proxyd reply: no boolean \"ok\"");
	out->ok = hezo_json_is_true(ok);
	if (!out->ok) {
		const char *why = hezo_json_string(hezo_json_get(root, "error"));
		size_t n;

		/* Shown on one stderr line: keep it short and printable. */
		out->error = strndup(why ? why : "no reason given", 300);
		if (!out->error)
			return hezo_error_set(err, ENOMEM, "proxyd reply: out of memory");
		n = strlen(out->error);
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)out->error[i] < 0x20 || out->error[i] == 0x7f)
				out->error[i] = '?';
		return 0;
	}
	r = reply_port(root, "tcpPort", &out->tcp_port, err);
	if (r >= 0)
		r = reply_port(root, "dnsPort", &out->dns_port, err);
	return r;
}

static int dump_request(struct hezo_json *req, char **out, size_t *outlen, struct hezo_error **err)
{
	int r = hezo_json_dump(req, false, out, outlen, err);

	return r < 0 ? hezo_error_prefix(err, "proxyd request") : 0;
}

int hezo_hook_build_register(const char *id, const struct hezo_hook_egress *eg, uint64_t cgroup,
			     char **out, size_t *outlen, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *req = hezo_json_new_object();
	struct hezo_json *egress;

	if (!req)
		return hezo_error_set(err, ENOMEM, "proxyd request: out of memory");
	egress = hezo_json_clone(eg->json);
	if (!egress || hezo_json_set(req, "op", hezo_json_new_string("register")) < 0 ||
	    hezo_json_set(req, "id", hezo_json_new_string(id)) < 0 ||
	    hezo_json_set(req, "project",
			  eg->project ? hezo_json_new_string(eg->project) : hezo_json_new_null()) <
		    0 ||
	    hezo_json_set(req, "egress", egress) < 0 ||
	    (cgroup && hezo_json_set(req, "cgroup", hezo_json_new_uint(cgroup)) < 0))
		return hezo_error_set(err, ENOMEM, "proxyd request: out of memory");
	return dump_request(req, out, outlen, err);
}

int hezo_hook_build_deregister(const char *id, char **out, size_t *outlen, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *req = hezo_json_new_object();

	if (!req || hezo_json_set(req, "op", hezo_json_new_string("deregister")) < 0 ||
	    hezo_json_set(req, "id", hezo_json_new_string(id)) < 0)
		return hezo_error_set(err, ENOMEM, "proxyd request: out of memory");
	return dump_request(req, out, outlen, err);
}

int hezo_hook_control_connect(const char *path, int *out, struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (strlen(path) >= sizeof(sa.sun_path))
		return hezo_error_set(err, ENAMETOOLONG, "proxyd socket %s: path too long", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "proxyd socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return hezo_error_set_errno(err, errno, "cannot reach hezo-proxyd at %s", path);
	*out = TAKE_FD(fd);
	return 0;
}

int hezo_hook_control_call(int fd, const char *req, size_t reqlen, int fd_to_pass, int timeout_ms,
			   struct hezo_hook_reply *reply, struct hezo_error **err)
{
	union hezo_fd_cmsg ctl;
	struct iovec iov = {.iov_base = (void *)req, .iov_len = reqlen};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	_cleanup_free_ char *buf = NULL;
	long long deadline = (long long)hezo_now_ms() + timeout_ms;
	ssize_t n;

	hezo_fdpass_attach(&mh, &ctl, fd_to_pass);
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return hezo_error_set_errno(err, errno, "sending to hezo-proxyd");
	if ((size_t)n != reqlen)
		return hezo_error_set(err, EMSGSIZE, "sending to hezo-proxyd: short send");

	buf = malloc(REPLY_MAX);
	if (!buf)
		return hezo_error_set(err, ENOMEM, "out of memory");
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		long long left = deadline - (long long)hezo_now_ms();
		int pr;

		if (left <= 0)
			return hezo_error_set(err, ETIMEDOUT,
					      "hezo-proxyd did not answer within %d s",
					      timeout_ms / 1000);
		pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return hezo_error_set_errno(err, errno, "waiting for hezo-proxyd");
		if (pr == 0)
			continue;
		n = recv(fd, buf, REPLY_MAX, MSG_TRUNC | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return hezo_error_set_errno(err, errno, "reading from hezo-proxyd");
		if (n == 0)
			return hezo_error_set(
				err, ECONNRESET,
				"hezo-proxyd closed the connection without answering");
		if (n > REPLY_MAX)
			return hezo_error_set(err, EMSGSIZE, "hezo-proxyd reply too long");
		return hezo_hook_parse_reply(buf, (size_t)n, reply, err);
	}
}

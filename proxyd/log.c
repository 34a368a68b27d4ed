/*
 * The daemon's own messages on stderr, one JSON line each (base/log.c formats them), and what it
 * tells its supervisor on $NOTIFY_SOCKET (systemd's Type=notify, sd_notify(3)'s datagrams written
 * here rather than linking libsystemd).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-log.h"
#include "proxyd.h"

static int journal = -1; /* is stderr the journal's stream? -1: not looked yet */
static int notify_fd = -1;

/* systemd sets JOURNAL_STREAM to stderr's device:inode; a child that inherited the variable but
 * not the stream (its stderr redirected) must not prefix. */
static bool stderr_is_journal(void)
{
	if (journal < 0) {
		const char *js = getenv("JOURNAL_STREAM");
		unsigned long long dev, ino;
		struct stat st;
		char end;

		journal = js && sscanf(js, "%llu:%llu%c", &dev, &ino, &end) == 2 &&
			  fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
			  (unsigned long long)st.st_ino == ino;
	}
	return journal;
}

const char *pd_log_prefix(const char *level)
{
	if (!stderr_is_journal())
		return "";
	if (strcmp(level, "error") == 0)
		return "<3>";
	if (strcmp(level, "warning") == 0)
		return "<4>";
	if (strcmp(level, "debug") == 0)
		return "<7>";
	return "<6>";
}

void pd_log(const char *level, const char *fmt, ...)
{
	char msg[1024], line[1400];
	const char *prefix = pd_log_prefix(level);
	size_t p = strlen(prefix), n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(line, prefix, p);
	n = hezo_log_format_json(line + p, sizeof(line) - p, level, msg, NULL);
	if (n)
		hezo_write_all(STDERR_FILENO, line, p + n);
}

int pd_notify_init(struct hezo_error **err)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un su = {.sun_family = AF_UNIX};
	size_t len;
	int fd;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(su.sun_path))
		return hezo_error_set(err, EINVAL, "NOTIFY_SOCKET %s: not a socket path", path);
	memcpy(su.sun_path, path, len);
	if (path[0] == '@') /* the abstract namespace */
		su.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "NOTIFY_SOCKET: socket");
	if (connect(fd, (struct sockaddr *)&su,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0) {
		int e = errno;

		close(fd);
		return hezo_error_set_errno(err, e, "NOTIFY_SOCKET %s", path);
	}
	notify_fd = fd;
	/* Only proxyd itself speaks for the service, never a process it starts. */
	unsetenv("NOTIFY_SOCKET");
	return 0;
}

void pd_notify(const char *state)
{
	if (notify_fd >= 0)
		send(notify_fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/*
 * hezo-init -- COMMAND [ARG...]: PID 1 of a box. Runs COMMAND, reaps every process that ends up
 * its child, forwards the signals an engine sends to COMMAND, and exits as COMMAND did (128+N
 * when signal N killed it). Bind-mounted read-only into containers by hezo-shim (docs/policy.md,
 * "init"); static and heap-free, since images bring no C library and PID 1 must not fail late.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PATH_BUF 4096

/* What an engine sends to stop, reload or resize a container. */
static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static void say(const char *a, const char *b, const char *c)
{
	const char *parts[] = {"hezo-init: ", a, b, c, "\n"};

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i] && write(STDERR_FILENO, parts[i], strlen(parts[i])) < 0)
			return;
}

/* execvp without its heap: search PATH (the container's, else the default) in a stack buffer. */
static void exec_path(char **argv)
{
	const char *path = NULL, *name = argv[0];
	char buf[PATH_BUF];
	int saved = ENOENT;

	if (strchr(name, '/')) {
		execv(name, argv);
		return;
	}
	for (char **e = environ; e && *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	if (!path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (const char *s = path;;) {
		const char *end = strchrnul(s, ':');
		size_t dl = (size_t)(end - s), nl = strlen(name);
		const char *dir = dl ? s : ".";

		dl = dl ? dl : 1;
		if (dl + 1 + nl + 1 <= sizeof(buf)) {
			memcpy(buf, dir, dl);
			buf[dl] = '/';
			memcpy(buf + dl + 1, name, nl + 1);
			execv(buf, argv);
			/* Keep the most telling reason: a file that exists but cannot run. */
			if (errno != ENOENT && errno != ENOTDIR)
				saved = errno;
		}
		if (*end == '\0')
			break;
		s = end + 1;
	}
	errno = saved;
}

int main(int argc, char **argv)
{
	sigset_t set, old;
	siginfo_t si;
	pid_t child;
	int status = 0;

	if (argc < 3 || strcmp(argv[1], "--") != 0) {
		say("usage: hezo-init -- COMMAND [ARG...]", NULL, NULL);
		return 127;
	}
	/* Not PID 1 (a shared PID namespace): orphans of the workload still come here. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	/* Job control stops would stop PID 1 itself: the workload's terminal, not ours. */
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &set, &old) < 0) {
		say("sigprocmask: ", strerror(errno), NULL);
		return 127;
	}
	child = fork();
	if (child < 0) {
		say("fork: ", strerror(errno), NULL);
		return 127;
	}
	if (child == 0) {
		signal(SIGTTIN, SIG_DFL);
		signal(SIGTTOU, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		exec_path(argv + 2);
		say(argv[2], ": ", strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	for (;;) {
		int sig = sigwaitinfo(&set, &si);

		if (sig < 0)
			continue; /* EINTR from a signal outside the set */
		if (sig != SIGCHLD) {
			/* ESRCH: the workload is gone and its status is on its way. */
			(void)kill(child, sig);
			continue;
		}
		for (;;) {
			int st;
			pid_t p = waitpid(-1, &st, WNOHANG);

			if (p <= 0)
				break;
			if (p != child)
				continue;
			status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			/* Whatever is left dies with PID 1's namespace, as under tini. */
			return status;
		}
	}
}

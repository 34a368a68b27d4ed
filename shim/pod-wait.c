/*
 * hezo-pod-wait FD SANDBOX_PID SANDBOX_START CGROUP_PROCS NAME -- RUNSC [GLOBAL...]
 *
 * The host process that stands for one app container of a gVisor pod. containerd's runc v2 shim
 * takes the pid the runtime writes at create as the container's init, reaps it and reads its exit
 * status; under runsc the container's init lives inside the pod's sandbox and has no host pid.
 * hezo-shim starts this program at create instead (containerd's shim, a subreaper, becomes its
 * parent) and writes its pid. It blocks on FD (a FIFO hezo-shim writes to) until the container
 * is started ('S'), then runs `runsc wait NAME` and exits with the container's status: its exit
 * code, or 128+N after signal N, as runsc reports it and as the runc shim reads a signal death.
 * Any other byte on FD (the container deleted before or after it ran), 'K' before start only (a
 * kill of a container that can no longer run), or the sandbox process gone (its pid and start
 * time no longer match; watched with a pidfd until start) ends it with 137, as a SIGKILLed init
 * would.
 * Signals it gets are forwarded to the container with `runsc kill`. CGROUP_PROCS ("-": none) is
 * where its runsc children go, out of the sandbox's memory cgroup it is put in for OOM events.
 * Static, without sanitizers, so that it costs the pod little memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define KILLED 137

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
static volatile sig_atomic_t pending[sizeof(forwarded) / sizeof(forwarded[0])];

static int fifo = -1;
static long sandbox_pid;
static unsigned long long sandbox_start;
static const char *procs, *name;
static char **prefix;
static int nprefix;

static void on_signal(int sig)
{
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		if (forwarded[i] == sig)
			pending[i] = 1;
}

/* Field 22 of /proc/PID/stat, 0 when the process is gone. */
static unsigned long long start_time(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: count from the last ')'. */
	p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}

static int sandbox_alive(void)
{
	return start_time(sandbox_pid) == sandbox_start;
}

/* A runsc child with stdin and stderr on /dev/null, stdout on out (or /dev/null). */
static pid_t spawn(const char *verb, const char *arg, int out)
{
	char **av = calloc((size_t)nprefix + 4, sizeof(*av));
	pid_t pid;
	int n = 0;

	if (!av)
		return -1;
	for (int i = 0; i < nprefix; i++)
		av[n++] = prefix[i];
	av[n++] = (char *)verb;
	av[n++] = (char *)name;
	if (arg)
		av[n++] = (char *)arg;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
			signal(forwarded[i], SIG_DFL);
		/* Out of the sandbox's memory cgroup: runsc's memory is not the pod's. */
		if (procs) {
			int c = open(procs, O_WRONLY | O_CLOEXEC);

			if (c >= 0) {
				(void)!write(c, "0\n", 2);
				close(c);
			}
		}
		if (null < 0 || dup2(null, 0) < 0 || dup2(out >= 0 ? out : null, 1) < 0 ||
		    dup2(null, 2) < 0)
			_exit(127);
		execv(av[0], av);
		_exit(127);
	}
	free(av);
	return pid;
}

/* `runsc kill NAME SIG` for every signal that came, waited for. */
static void forward(void)
{
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		char sig[16];
		pid_t pid;
		int st;

		if (!pending[i])
			continue;
		pending[i] = 0;
		snprintf(sig, sizeof(sig), "%d", forwarded[i]);
		pid = spawn("kill", sig, -1);
		while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
}

/* One byte from hezo-shim, or -1 (interrupted: call again). */
static int fifo_byte(void)
{
	char c;
	ssize_t n = read(fifo, &c, 1);

	if (n == 1)
		return (unsigned char)c;
	if (n < 0 && errno == EINTR)
		return -1;
	return 0; /* the FIFO failed: no more word from hezo-shim will come */
}

/*
 * One `runsc wait`: the container's status (0-255), KILLED when hezo-shim says the container went
 * or the sandbox died, -1 when runsc gave no status and the sandbox still runs (try again).
 */
static int wait_once(void)
{
	char out[512];
	size_t len = 0;
	int p[2], st, status = -1;
	pid_t pid;
	bool open_out = true;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = spawn("wait", NULL, p[1]);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	while (open_out) {
		struct pollfd fds[2] = {{.fd = p[0], .events = POLLIN},
					{.fd = fifo, .events = POLLIN}};
		int n = poll(fds, 2, -1);

		forward();
		if (n < 0)
			continue;
		if (fds[1].revents) {
			int b = fifo_byte();

			/* A second start's word, or a kill's of a container that no longer
			 * runs, changes nothing: runsc wait reports its status. Any other is
			 * the end. */
			if (b >= 0 && b != 'S' && b != 'K') {
				kill(pid, SIGKILL);
				status = KILLED;
				break;
			}
		}
		if (fds[0].revents) {
			ssize_t r = read(p[0], out + len, sizeof(out) - 1 - len);

			if (r > 0)
				len += (size_t)r;
			else if (r == 0 || errno != EINTR)
				open_out = false;
			if (len == sizeof(out) - 1)
				open_out = false;
		}
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		forward();
	if (status == KILLED)
		return status;
	out[len] = '\0';
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		const char *s = strstr(out, "\"exitStatus\":");
		char *end;
		long v;

		if (s) {
			v = strtol(s + 13, &end, 10);
			if (end != s + 13)
				return v < 0 || v > 255 ? 255 : (int)v;
		}
	}
	return sandbox_alive() ? -1 : KILLED;
}

/*
 * A pidfd of the sandbox process, readable once it ends: 0 and *fd, -1 when it is gone already (or
 * its pid is another process's now). Opened before the start time is compared, so a reused pid
 * fails. Kernels before 5.3 have none: *fd is -1 and the caller looks at the sandbox itself.
 */
static int sandbox_pidfd(int *fd)
{
	*fd = (int)syscall(SYS_pidfd_open, (pid_t)sandbox_pid, 0);
	if (*fd < 0 && errno != ENOSYS)
		return -1;
	if (!sandbox_alive()) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -1;
	}
	return 0;
}

/*
 * Created: nothing runs yet. The first word from hezo-shim, or 0 once the sandbox is gone: the
 * container can never start then, and nothing else would end us (a start fails before it writes,
 * and a kill finds runsc's container stopped). A signal now has no process to go to (runc's init
 * ignores them until start too).
 */
static int first_word(void)
{
	int pidfd, b = -1;

	if (sandbox_pidfd(&pidfd) < 0)
		return 0;
	while (b < 0) {
		struct pollfd fds[2] = {{.fd = fifo, .events = POLLIN},
					{.fd = pidfd, .events = POLLIN}};

		/* Without a pidfd the sandbox is looked at each second. */
		if (poll(fds, 2, pidfd < 0 ? 1000 : -1) < 0 && errno != EINTR)
			break;
		if (fds[0].revents)
			b = fifo_byte();
		else if (fds[1].revents || (pidfd < 0 && !sandbox_alive()))
			b = 0;
		for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
			pending[i] = 0;
	}
	if (pidfd >= 0)
		close(pidfd);
	return b < 0 ? 0 : b;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	int b, status;
	char *end;

	if (argc < 8 || strcmp(argv[6], "--") != 0) {
		fputs("usage: hezo-pod-wait FD SANDBOX_PID SANDBOX_START CGROUP_PROCS NAME -- "
		      "RUNSC "
		      "[GLOBAL...]\n",
		      stderr);
		return 127;
	}
	fifo = (int)strtol(argv[1], &end, 10);
	sandbox_pid = strtol(argv[2], NULL, 10);
	sandbox_start = strtoull(argv[3], NULL, 10);
	procs = strcmp(argv[4], "-") == 0 ? NULL : argv[4];
	name = argv[5];
	prefix = argv + 7;
	nprefix = argc - 7;
	if (*end || fifo < 0 || sandbox_pid <= 0)
		return 127;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaction(forwarded[i], &sa, NULL);

	b = first_word();
	if (b != 'S')
		return KILLED;
	/* The container's stdio (fds 4-6) was for start to hand runsc; it has it now. */
	close(4);
	close(5);
	close(6);
	for (unsigned tries = 0;; tries++) {
		status = wait_once();
		if (status >= 0)
			return status;
		/* runsc answered nothing while the sandbox runs: again, a little later each time.
		 */
		{
			struct pollfd f = {.fd = fifo, .events = POLLIN};

			if (poll(&f, 1, tries < 10 ? 100 * (int)(tries + 1) : 1000) > 0 &&
			    (b = fifo_byte()) >= 0 && b != 'S' && b != 'K')
				return KILLED;
			forward();
		}
	}
}

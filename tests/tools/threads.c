/*
 * hezo-threads N: say how clone3 is answered, then start N threads that are all alive at once
 * (pthread_create, as a resolver or a thread pool does). Static: test rootfs have no C library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_THREADS 1024

static pthread_barrier_t all_up;

static void *wait_for_all(void *arg)
{
	pthread_barrier_wait(&all_up);
	return arg;
}

int main(int argc, char **argv)
{
	static pthread_t t[MAX_THREADS];
	/* struct clone_args (64 bytes, version 0) asking for a plain fork */
	unsigned long long clone_args[8] = {0};
	int n = argc > 1 ? atoi(argv[1]) : 20, started = 0, r;
	long pid;

	if (n < 1 || n > MAX_THREADS) {
		fprintf(stderr, "usage: hezo-threads N (1..%d)\n", MAX_THREADS);
		return 2;
	}
	clone_args[4] = SIGCHLD; /* exit_signal */
	pid = syscall(SYS_clone3, clone_args, sizeof(clone_args));
	if (pid == 0)
		_exit(0);
	if (pid > 0) {
		waitpid((pid_t)pid, NULL, 0);
		printf("clone3 ok\n");
	} else {
		printf("clone3 %s\n", errno == ENOSYS  ? "ENOSYS"
				      : errno == EPERM ? "EPERM"
						       : strerror(errno));
	}
	pthread_barrier_init(&all_up, NULL, (unsigned)n + 1);
	for (; started < n; started++) {
		r = pthread_create(&t[started], NULL, wait_for_all, NULL);
		if (r != 0) {
			printf("pthread_create %d: %s\n", started + 1, strerror(r));
			break;
		}
	}
	if (started < n)
		return 1; /* exit_group: the threads waiting at the barrier go too */
	pthread_barrier_wait(&all_up);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	printf("threads %d\n", started);
	return 0;
}

/*
 * tasks N: hold N host tasks (threads of this process, each asleep) until stdin closes or a
 * signal ends it; prints "ready N" once all are up. The bench's create-with-many-tasks row.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
	for (;;)
		pause();
	return arg;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 0, i;
	char c;

	if (n < 1 || n > 1000000) {
		fprintf(stderr, "usage: tasks N\n");
		return 2;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
	for (i = 0; i < n; i++) {
		pthread_t t;
		int r = pthread_create(&t, &attr, sleeper, NULL);

		if (r != 0) {
			fprintf(stderr, "tasks: thread %ld: %s\n", i, strerror(r));
			return 1;
		}
	}
	printf("ready %ld\n", n);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

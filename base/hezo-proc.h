/* Running a helper program to read its output, on a deadline of the monotonic clock. */
#ifndef HEZO_PROC_H
#define HEZO_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC: for deadlines and durations, never for wall time. */
uint64_t hezo_now_ms(void);

struct hezo_spawn_opts {
	size_t max;	 /* bytes of output kept; 0: 64 KiB */
	int timeout_ms;	 /* the child is killed (SIGKILL) when it has run this long; 0: no limit */
	bool stderr_too; /* stderr goes into the output too (else to /dev/null, as stdin is) */
	bool excess_ok;	 /* output past max is read and dropped; else the call fails with -EFBIG */
};

/*
 * Run path with argv and this environment, stdin from /dev/null, and collect what it writes to
 * stdout into a NUL-terminated *out (*len bytes, len may be NULL). Returns its exit status (127:
 * it could not be executed; 128 + N: killed by signal N) or -errno when it could not be run or
 * read; *out is set only when the status is returned.
 */
int hezo_spawn_capture(const char *path, char *const argv[], const struct hezo_spawn_opts *o,
		       char **out, size_t *len);

#endif

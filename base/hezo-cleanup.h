/* Ownership helpers: scope-bound cleanup and explicit hand-over (TAKE_PTR / TAKE_FD). */
#ifndef HEZO_CLEANUP_H
#define HEZO_CLEANUP_H

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void hezo_freep(void *p)
{
	free(*(void **)p);
}

static inline void hezo_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

#define _cleanup_free_	_cleanup_(hezo_freep)
#define _cleanup_close_ _cleanup_(hezo_closep)

#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _taken = (p);                                                        \
		(p) = NULL;                                                                        \
		_taken;                                                                            \
	})

/* A struct by value, leaving a zeroed one behind (which its destructor takes as empty). */
#define TAKE_STRUCT(s)                                                                             \
	({                                                                                         \
		__typeof__(s) _taken = (s);                                                        \
		(s) = (__typeof__(s)){0};                                                          \
		_taken;                                                                            \
	})

#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _taken = (fd);                                                                 \
		(fd) = -1;                                                                         \
		_taken;                                                                            \
	})

#define HEZO_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif

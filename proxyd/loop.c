/*
 * The event loop: one level-triggered epoll set holding every socket, a signalfd for
 * SIGTERM/SIGINT and a one-second timerfd. Objects freed during a batch wait until its end; the
 * caller's deadline bounds each wait.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "hezo-proc.h"
#include "proxyd.h"

#define MAX_EVENTS 128

static int epfd = -1;
static struct pd_watch sig_watch = {.fd = -1}, timer_watch = {.fd = -1};
static bool stopping;
static bool ticked;
static void **deferred;
static size_t ndeferred, deferred_cap;
static struct {
	int fd;
	bool reset;
} * dclose;
static size_t ndclose, dclose_cap;

uint64_t pd_now_ms(void)
{
	return hezo_now_ms();
}

static void on_signal(struct pd_watch *w, uint32_t events)
{
	struct signalfd_siginfo si;

	while (read(w->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
			pd_log("info", "signal %u: stopping", si.ssi_signo);
			stopping = true;
		}
	}
}

static void on_timer(struct pd_watch *w, uint32_t events)
{
	uint64_t n;

	if (read(w->fd, &n, sizeof(n)) == sizeof(n))
		ticked = true;
}

int pd_loop_init(struct hezo_error **err)
{
	struct itimerspec its = {.it_interval = {1, 0}, .it_value = {1, 0}};
	sigset_t mask;
	int fd;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return hezo_error_set_errno(err, errno, "epoll_create1");
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return hezo_error_set_errno(err, errno, "sigprocmask");
	fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "signalfd");
	if (pd_watch_add(&sig_watch, fd, EPOLLIN, on_signal) < 0)
		return hezo_error_set_errno(err, errno, "epoll_ctl");
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "timerfd_create");
	if (timerfd_settime(fd, 0, &its, NULL) < 0) {
		close(fd);
		return hezo_error_set_errno(err, errno, "timerfd_settime");
	}
	if (pd_watch_add(&timer_watch, fd, EPOLLIN, on_timer) < 0)
		return hezo_error_set_errno(err, errno, "epoll_ctl");
	return 0;
}

int pd_watch_add(struct pd_watch *w, int fd, uint32_t events, pd_handler fn)
{
	int r;

	pd_watch_init(w, fd, fn);
	r = pd_watch_set(w, events);
	if (r < 0) {
		close(fd);
		w->fd = -1;
	}
	return r;
}

void pd_watch_init(struct pd_watch *w, int fd, pd_handler fn)
{
	w->fd = fd;
	w->events = 0;
	w->added = false;
	w->fn = fn;
}

int pd_watch_set(struct pd_watch *w, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = w};

	if (w->fd < 0 || (w->added && w->events == events))
		return 0;
	if (!w->added) {
		/* Nothing wanted yet: stay out of the set (errors and hang-ups would wake us). */
		if (!events)
			return 0;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, w->fd, &ev) < 0)
			return -errno;
		w->added = true;
	} else if (epoll_ctl(epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0) {
		return -errno;
	}
	w->events = events;
	return 0;
}

int pd_watch_release(struct pd_watch *w)
{
	int fd = w->fd;

	if (fd >= 0 && w->added)
		epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
	w->fd = -1;
	w->events = 0;
	w->added = false;
	return fd;
}

void pd_watch_close(struct pd_watch *w)
{
	if (w->fd < 0)
		return;
	if (w->added)
		epoll_ctl(epfd, EPOLL_CTL_DEL, w->fd, NULL);
	close(w->fd);
	w->fd = -1;
	w->events = 0;
	w->added = false;
}

static void close_now(int fd, bool reset)
{
	if (reset) {
		struct linger lg = {.l_onoff = 1, .l_linger = 0};

		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(fd);
}

void pd_watch_drop_later(struct pd_watch *w, bool reset)
{
	int fd = w->fd;

	if (fd < 0)
		return;
	w->fd = -1;
	w->events = 0;
	w->added = false;
	if (ndclose == dclose_cap) {
		size_t cap = dclose_cap ? dclose_cap * 2 : 64;
		void *v = realloc(dclose, cap * sizeof(*dclose));

		if (!v) {
			close_now(fd, reset);
			return;
		}
		dclose = v;
		dclose_cap = cap;
	}
	dclose[ndclose].fd = fd;
	dclose[ndclose].reset = reset;
	ndclose++;
}

void pd_defer_free(void *p)
{
	if (!p)
		return;
	if (ndeferred == deferred_cap) {
		size_t cap = deferred_cap ? deferred_cap * 2 : 64;
		void **v = realloc(deferred, cap * sizeof(*v));

		if (!v) {
			/* Leaking beats a use-after-free. */
			return;
		}
		deferred = v;
		deferred_cap = cap;
	}
	deferred[ndeferred++] = p;
}

static void run_deferred(void)
{
	/* Closes first: the objects freed below may be what these fds' epoll entries point at,
	 * and a close takes an fd out of the set. */
	for (size_t i = 0; i < ndclose; i++)
		close_now(dclose[i].fd, dclose[i].reset);
	ndclose = 0;
	for (size_t i = 0; i < ndeferred; i++)
		free(deferred[i]);
	ndeferred = 0;
}

int pd_loop_run(void (*tick)(void), int (*deadline)(uint64_t now_ms))
{
	struct epoll_event evs[MAX_EVENTS];

	while (!stopping) {
		int n = epoll_wait(epfd, evs, MAX_EVENTS, deadline(pd_now_ms()));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			struct pd_watch *w = evs[i].data.ptr;

			/* A watch closed earlier in this batch: its object is still allocated. */
			if (w->fd < 0)
				continue;
			w->fn(w, evs[i].events);
		}
		run_deferred();
		if (ticked) {
			ticked = false;
			tick();
			run_deferred();
		}
	}
	return 0;
}

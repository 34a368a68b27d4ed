/* bench-net: the network ends of tests/bench/run.sh: a TCP echo/hold server, a connect-latency
 * client, a holder of many idle connections and a UDP DNS load generator. Bounded in count and
 * time. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "bench-net: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct sockaddr_in addr_of(const char *ip, const char *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};

	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
		fprintf(stderr, "bench-net: %s is not an IPv4 address\n", ip);
		exit(2);
	}
	return sa;
}

static void raise_nofile(void)
{
	struct rlimit rl = {1048576, 1048576};

	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Accept everything, echo what arrives, for at most `seconds`. */
static int cmd_server(const char *ip, const char *port, int seconds)
{
	struct sockaddr_in sa = addr_of(ip, port);
	struct epoll_event ev, evs[256];
	uint64_t end = now_ns() + (uint64_t)seconds * 1000000000ull;
	int one = 1, lfd, ep;

	raise_nofile();
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4096) < 0)
		die("bind/listen");
	ep = epoll_create1(EPOLL_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.fd = lfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	while (now_ns() < end) {
		int n = epoll_wait(ep, evs, 256, 500);

		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			char buf[16384];

			if (fd == lfd) {
				int c;

				while ((c = accept4(lfd, NULL, NULL,
						    SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					ev.events = EPOLLIN;
					ev.data.fd = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
				}
				continue;
			}
			ssize_t r = read(fd, buf, sizeof(buf));

			if (r > 0) {
				if (write(fd, buf, (size_t)r) < 0)
					close(fd);
			} else if (r == 0 || errno != EAGAIN) {
				close(fd);
			}
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* n times: connect, send one byte, wait for its echo, close. Prints p50 and p99 in µs. */
static int cmd_latency(const char *ip, const char *port, int n)
{
	struct sockaddr_in sa = addr_of(ip, port);
	uint64_t *t = calloc((size_t)n, sizeof(*t));
	int one = 1, failed = 0, ok = 0;

	if (!t)
		die("calloc");
	for (int i = 0; i < n; i++) {
		struct pollfd p;
		uint64_t t0 = now_ns();
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		char c = 'x';

		if (fd < 0)
			die("socket");
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || write(fd, &c, 1) != 1) {
			failed++;
			close(fd);
			continue;
		}
		p.fd = fd;
		p.events = POLLIN;
		if (poll(&p, 1, 2000) != 1 || read(fd, &c, 1) != 1) {
			failed++;
			close(fd);
			continue;
		}
		t[ok++] = now_ns() - t0;
		/* RST instead of FIN: the client side keeps no TIME_WAIT socket per sample. */
		struct linger lg = {1, 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd);
	}
	if (ok == 0) {
		fprintf(stderr, "bench-net: latency: every connection failed\n");
		return 1;
	}
	qsort(t, (size_t)ok, sizeof(*t), cmp_u64);
	printf("p50_us %.1f p99_us %.1f ok %d failed %d\n", t[ok / 2] / 1000.0,
	       t[(size_t)((ok - 1) * 0.99)] / 1000.0, ok, failed);
	free(t);
	return failed ? 1 : 0;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Open n connections (each checked with one echoed byte), print "ready N", hold them idle until
 * SIGTERM or `seconds`. */
static int cmd_idle(const char *ip, const char *port, int n, int seconds)
{
	struct sockaddr_in sa = addr_of(ip, port);
	uint64_t end = now_ns() + (uint64_t)seconds * 1000000000ull;
	int *fds = calloc((size_t)n, sizeof(int)), ok = 0;

	if (!fds)
		die("calloc");
	raise_nofile();
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	for (int i = 0; i < n && !stop && now_ns() < end; i++) {
		struct pollfd p;
		char c = 'i';
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			fprintf(stderr, "bench-net: idle: socket %d: %s\n", i, strerror(errno));
			break;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || write(fd, &c, 1) != 1) {
			fprintf(stderr, "bench-net: idle: connect %d: %s\n", i, strerror(errno));
			close(fd);
			break;
		}
		p.fd = fd;
		p.events = POLLIN;
		if (poll(&p, 1, 5000) != 1 || read(fd, &c, 1) != 1) {
			fprintf(stderr, "bench-net: idle: connection %d got no echo\n", i);
			close(fd);
			break;
		}
		fds[ok++] = fd;
	}
	printf("ready %d\n", ok);
	fflush(stdout);
	while (!stop && now_ns() < end)
		usleep(100000);
	for (int i = 0; i < ok; i++)
		close(fds[i]);
	free(fds);
	return ok == n ? 0 : 1;
}

/* A DNS query for name (A, recursion desired) with id; returns its length. */
static size_t dns_query(uint8_t *buf, uint16_t id, const char *name)
{
	size_t len = 12;
	const char *p = name;

	memset(buf, 0, 12);
	buf[0] = (uint8_t)(id >> 8);
	buf[1] = (uint8_t)id;
	buf[2] = 0x01; /* RD */
	buf[5] = 1;    /* QDCOUNT */
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		buf[len++] = (uint8_t)l;
		memcpy(buf + len, p, l);
		len += l;
		p += l;
		if (*p == '.')
			p++;
	}
	buf[len++] = 0;
	buf[len++] = 0;
	buf[len++] = 1; /* A */
	buf[len++] = 0;
	buf[len++] = 1; /* IN */
	return len;
}

/* Keep `window` queries in flight for `seconds`; print answers per second and their rcodes. */
static int cmd_dns(const char *ip, const char *port, const char *name, int window, int seconds)
{
	struct sockaddr_in sa = addr_of(ip, port);
	uint8_t q[300], a[4096];
	uint64_t answers = 0, lost = 0, rcodes[16] = {0}, t0, end, last;
	uint16_t id = 1;
	size_t qlen;
	int fd, inflight = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("dns socket");
	t0 = now_ns();
	end = t0 + (uint64_t)seconds * 1000000000ull;
	last = t0;
	while (now_ns() < end) {
		while (inflight < window) {
			qlen = dns_query(q, id++, name);
			if (send(fd, q, qlen, 0) < 0 && errno != ECONNREFUSED)
				die("send");
			inflight++;
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, 100);

		if (r == 0) {
			/* Dropped or refused queries: count them and refill the window. */
			lost += (uint64_t)inflight;
			inflight = 0;
			continue;
		}
		for (;;) {
			ssize_t n = recv(fd, a, sizeof(a), MSG_DONTWAIT);

			if (n < 0)
				break;
			if (n >= 4) {
				answers++;
				rcodes[a[3] & 15]++;
			}
			if (inflight > 0)
				inflight--;
		}
		last = now_ns();
	}
	double secs = (double)(last - t0) / 1e9;

	printf("qps %.0f answers %llu lost %llu noerror %llu nxdomain %llu servfail %llu seconds "
	       "%.2f\n",
	       secs > 0 ? (double)answers / secs : 0.0, (unsigned long long)answers,
	       (unsigned long long)lost, (unsigned long long)rcodes[0],
	       (unsigned long long)rcodes[3], (unsigned long long)rcodes[2], secs);
	return answers ? 0 : 1;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 5 && strcmp(argv[1], "server") == 0)
		return cmd_server(argv[2], argv[3], atoi(argv[4]));
	if (argc == 5 && strcmp(argv[1], "latency") == 0)
		return cmd_latency(argv[2], argv[3], atoi(argv[4]));
	if (argc == 6 && strcmp(argv[1], "idle") == 0)
		return cmd_idle(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
	if (argc == 7 && strcmp(argv[1], "dns") == 0)
		return cmd_dns(argv[2], argv[3], argv[4], atoi(argv[5]), atoi(argv[6]));
	fprintf(stderr, "usage: bench-net server IP PORT SECONDS\n"
			"       bench-net latency IP PORT N\n"
			"       bench-net idle IP PORT N SECONDS\n"
			"       bench-net dns IP PORT NAME WINDOW SECONDS\n");
	return 2;
}

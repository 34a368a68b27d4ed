/*
 * UDP batching for the DNS side: datagrams received with recvmmsg() and sent with sendmmsg(), one
 * system call per wake-up instead of one per datagram.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "dnsproxy.h"

/*
 * ---- UDP batching ----
 * Datagrams are received with recvmmsg() and answers sent with sendmmsg(): one system call per
 * wake-up instead of one per datagram. Answers are queued only within one handler call and sent
 * before it returns, while every listener they go to is certainly still open (a closed and
 * reused fd number must never receive another container's answer). Where the kernel or a
 * seccomp filter refuses the calls, one call per datagram as before.
 */

enum { MMSG_UNKNOWN, MMSG_YES, MMSG_NO };
static int mmsg_state;

bool dns_mmsg_ok(void)
{
	if (mmsg_state == MMSG_UNKNOWN) {
		/* On an invalid fd the kernel says EBADF; a filter that forbids the call says
		 * something else (EPERM, ENOSYS) before the fd is looked at. */
		int r1 = recvmmsg(-1, NULL, 0, MSG_DONTWAIT, NULL) < 0 && errno == EBADF;
		int r2 = sendmmsg(-1, NULL, 0, MSG_DONTWAIT) < 0 && errno == EBADF;

		mmsg_state = r1 && r2 ? MMSG_YES : MMSG_NO;
	}
	return mmsg_state == MMSG_YES;
}

static struct {
	unsigned n;
	int fd[DNS_BATCH];
	struct mmsghdr mh[DNS_BATCH];
	struct iovec iov[DNS_BATCH];
	struct sockaddr_storage to[DNS_BATCH];
	uint8_t buf[DNS_BATCH][DNS_TX_SLOT];
} tx;

struct dns_rx dns_rx;

/* Send the queued answers, a run of the same listener per sendmmsg(). A datagram that cannot
 * be sent is lost, as a single sendto() would lose it. */
void dns_tx_flush(void)
{
	unsigned i = 0;

	while (i < tx.n) {
		unsigned j = i + 1;

		while (j < tx.n && tx.fd[j] == tx.fd[i])
			j++;
		while (i < j) {
			int r = sendmmsg(tx.fd[i], &tx.mh[i], j - i, MSG_DONTWAIT);

			i += r > 0 ? (unsigned)r : 1;
		}
	}
	tx.n = 0;
}

void dns_udp_send(int fd, const uint8_t *msg, size_t len, const struct sockaddr_storage *to,
		  socklen_t tolen)
{
	unsigned i;

	if (len > DNS_TX_SLOT || tolen > sizeof(tx.to[0]) || !dns_mmsg_ok()) {
		sendto(fd, msg, len, MSG_DONTWAIT, (const struct sockaddr *)to, tolen);
		return;
	}
	if (tx.n == DNS_BATCH)
		dns_tx_flush();
	i = tx.n++;
	memcpy(tx.buf[i], msg, len);
	memcpy(&tx.to[i], to, tolen);
	tx.fd[i] = fd;
	tx.iov[i] = (struct iovec){.iov_base = tx.buf[i], .iov_len = len};
	tx.mh[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &tx.to[i],
						.msg_namelen = tolen,
						.msg_iov = &tx.iov[i],
						.msg_iovlen = 1}};
}

/* Receive up to DNS_BATCH datagrams into dns_rx; returns how many, or -1 with errno. */
int dns_rx_batch(int fd, bool want_from)
{
	for (unsigned i = 0; i < DNS_BATCH; i++) {
		dns_rx.iov[i] =
			(struct iovec){.iov_base = dns_rx.buf[i], .iov_len = sizeof(dns_rx.buf[i])};
		dns_rx.mh[i] = (struct mmsghdr){
			.msg_hdr = {.msg_name = want_from ? &dns_rx.from[i] : NULL,
				    .msg_namelen = want_from ? sizeof(dns_rx.from[i]) : 0,
				    .msg_iov = &dns_rx.iov[i],
				    .msg_iovlen = 1}};
	}
	return recvmmsg(fd, dns_rx.mh, DNS_BATCH, MSG_DONTWAIT, NULL);
}

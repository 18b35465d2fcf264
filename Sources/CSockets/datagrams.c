#define _GNU_SOURCE
#include "CSockets.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

enum { batch = 64 };

unsigned httpdns_send_datagrams(int fd, const httpdns_datagram *datagrams, unsigned count)
{
    struct mmsghdr messages[batch];
    struct iovec vectors[batch];
    unsigned sent = 0, next = 0;
    while (next < count) {
        unsigned n = count - next < batch ? count - next : batch;
        memset(messages, 0, sizeof messages[0] * n);
        for (unsigned i = 0; i < n; i++) {
            const httpdns_datagram *d = &datagrams[next + i];
            vectors[i].iov_base = (void *)d->bytes;
            vectors[i].iov_len = d->length;
            messages[i].msg_hdr.msg_name = (void *)&d->peer;
            messages[i].msg_hdr.msg_namelen = d->peer_length;
            messages[i].msg_hdr.msg_iov = &vectors[i];
            messages[i].msg_hdr.msg_iovlen = 1;
        }
        int result = sendmmsg(fd, messages, n, MSG_DONTWAIT);
        if (result < 0) {
            if (errno == EINTR) continue;
            /* The first datagram failed (a full buffer, an unreachable peer): drop it, go on. */
            next += 1;
            continue;
        }
        sent += (unsigned)result;
        /* A partial send stops at the datagram that failed: that one is dropped. */
        next += (unsigned)result < n ? (unsigned)result + 1 : n;
    }
    return sent;
}

#ifndef C_SOCKETS_H
#define C_SOCKETS_H

#include <stddef.h>
#include <sys/socket.h>

/* One datagram to send: its bytes and where to. */
typedef struct {
    const void *bytes;
    size_t length;
    struct sockaddr_storage peer;
    socklen_t peer_length;
} httpdns_datagram;

/* Sends `count` datagrams on `fd` with as few sendmmsg(2) calls as it takes (Glibc's module does
 * not import sendmmsg), without blocking (MSG_DONTWAIT): a datagram the socket buffer cannot take
 * is dropped, as the network may drop it. Returns how many were sent. */
unsigned httpdns_send_datagrams(int fd, const httpdns_datagram *datagrams, unsigned count);

/* Refuses new TCP connections at listener `fd` without closing it (a SYN without ACK is dropped by
 * a socket filter), so that handshakes already answered complete and can still be accepted before
 * the listener closes: the drains of `httpdns serve` (CH2O) and `httpdns stub` use it. 0, or -1
 * and errno. */
int httpdns_refuse_new_connections(int fd);

#endif

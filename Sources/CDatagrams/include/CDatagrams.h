#ifndef C_DATAGRAMS_H
#define C_DATAGRAMS_H

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

#endif

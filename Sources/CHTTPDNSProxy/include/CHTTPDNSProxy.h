// Linux calls the loopback proxy's event loop needs that Swift's Glibc module does not bring in:
// epoll, eventfd, the _GNU_SOURCE-only splice(2), pipe2(2), accept4(2) and F_SETPIPE_SZ, and
// SO_ATTACH_FILTER's classic BPF program.
#ifndef CHTTPDNS_PROXY_H
#define CHTTPDNS_PROXY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// One readiness event, unpacked (the kernel's struct epoll_event is packed on x86-64).
typedef struct {
    uint32_t events;
    uint64_t token;
} httpdns_proxy_event;

enum {
    HTTPDNS_PROXY_READABLE = 0x001,   // EPOLLIN
    HTTPDNS_PROXY_WRITABLE = 0x004,   // EPOLLOUT
    HTTPDNS_PROXY_ERROR = 0x008,      // EPOLLERR
    HTTPDNS_PROXY_HANGUP = 0x010,     // EPOLLHUP
    HTTPDNS_PROXY_PEER_CLOSED = 0x2000  // EPOLLRDHUP
};

/// EPOLLET: report a change of readiness once, not the state on every wait.
#define HTTPDNS_PROXY_EDGE 0x80000000u
/// EPOLLEXCLUSIVE: of the loops watching a listener, wake one per new connection.
#define HTTPDNS_PROXY_EXCLUSIVE 0x10000000u

/// epoll_create1(EPOLL_CLOEXEC).
int httpdns_proxy_epoll_create(void);
/// Adds (op 0), modifies (1) or removes (2) `fd` with the given interest and token.
int httpdns_proxy_epoll_control(int epoll, int op, int fd, uint32_t events, uint64_t token);
/// epoll_wait into `events`; returns the count, 0 on timeout, -1 with errno.
int httpdns_proxy_epoll_wait(int epoll, httpdns_proxy_event *events, int capacity, int timeout_ms);

/// A non-blocking, close-on-exec eventfd.
int httpdns_proxy_eventfd(void);
/// A non-blocking, close-on-exec pipe of about `size` bytes (the kernel's default when that fails).
int httpdns_proxy_pipe(int fds[2], int size);
/// Resizes a pipe (F_SETPIPE_SZ); returns the new capacity, or -1 when the kernel refuses.
int httpdns_proxy_pipe_resize(int fd, int size);
/// splice(2) with SPLICE_F_MOVE | SPLICE_F_NONBLOCK between a socket and a pipe.
ssize_t httpdns_proxy_splice(int from, int to, size_t length);
/// accept4(2), the new socket non-blocking and close-on-exec.
int httpdns_proxy_accept(int listener);
/// Attaches a socket filter that drops every packet to a listening socket: no new client completes
/// its handshake from now on (its SYN is dropped; once the listener is closed, the retry is refused),
/// while the clients already in the listen queue stay there to be accepted. 0, or -1 with errno.
int httpdns_proxy_refuse_new(int listener);
/// A non-blocking, close-on-exec TCP socket of `family`.
int httpdns_proxy_socket(int family);
/// Monotonic time in nanoseconds.
uint64_t httpdns_proxy_now(void);

#endif

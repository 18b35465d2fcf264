#define _GNU_SOURCE
#include "CHTTPDNSProxy.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int httpdns_proxy_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int httpdns_proxy_epoll_control(int epoll, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event = {.events = events, .data = {.u64 = token}};
    int operation = op == 0 ? EPOLL_CTL_ADD : (op == 1 ? EPOLL_CTL_MOD : EPOLL_CTL_DEL);
    return epoll_ctl(epoll, operation, fd, &event);
}

int httpdns_proxy_epoll_wait(int epoll, httpdns_proxy_event *events, int capacity, int timeout_ms) {
    struct epoll_event raw[256];
    if (capacity > 256) capacity = 256;
    int count = epoll_wait(epoll, raw, capacity, timeout_ms);
    for (int index = 0; index < count; index++) {
        events[index].events = raw[index].events;
        events[index].token = raw[index].data.u64;
    }
    return count;
}

int httpdns_proxy_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

int httpdns_proxy_pipe(int fds[2], int size) {
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return -1;
    if (size > 0) (void)fcntl(fds[1], F_SETPIPE_SZ, size);
    return 0;
}

int httpdns_proxy_pipe_resize(int fd, int size) {
    return fcntl(fd, F_SETPIPE_SZ, size);
}

ssize_t httpdns_proxy_splice(int from, int to, size_t length) {
    return splice(from, NULL, to, NULL, length, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

int httpdns_proxy_accept(int listener) {
    return accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int httpdns_proxy_refuse_new(int listener) {
    /* A SYN without ACK is dropped; every other segment passes. The kernel runs a listener's filter
     * on each SYN and on the last ACK of a handshake (tcp_v4_rcv/tcp_v6_rcv's tcp_filter, with the
     * TCP header at offset 0 and its flags at byte 13), so no new handshake begins, while one the
     * kernel already answered completes and is queued (the drain keeps accepting for a grace).
     * Dropping every segment lost requests: a client whose SYN-ACK came before the filter had its
     * last ACK and its request dropped, and was reset once the listener closed (curl exit 56). */
    struct sock_filter program_code[] = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 13),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x12), /* SYN | ACK */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x02, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0),
        BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
    };
    struct sock_fprog program = {.len = sizeof program_code / sizeof program_code[0], .filter = program_code};
    return setsockopt(listener, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program);
}

int httpdns_proxy_socket(int family) {
    return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

uint64_t httpdns_proxy_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

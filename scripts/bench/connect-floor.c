/* The floor of bench row 9d: a CONNECT relay doing only what every such proxy must do. Each of
 * argv[1] threads has its own SO_REUSEPORT listener on 127.0.0.1:PORT and epoll loop: accept4,
 * read the request head, connect to the IPv4:PORT it names (no DNS, no policy, no logging, no
 * authentication), answer 200, then copy bytes both ways with read/write until either side
 * closes. Prints "port N" once listening; runs until killed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { HEAD = 2048, BUFFER = 16384, THREADS = 16 };

struct tunnel;
/* What epoll hands back: one end of a tunnel. */
struct end {
    struct tunnel *tunnel;
    int upstream;
};
struct tunnel {
    struct end client_end, upstream_end;
    int client, server;
    int established;
    /* Closed during this round of events: freed once the round is over (the other end's event
     * may still be in the same round). */
    int closed;
    struct tunnel *next_closed;
    size_t head_length;
    char head[HEAD];
};

static int listen_port;
static const int on = 1;
static __thread struct tunnel *closed_this_round;

static void finish(int ep, struct tunnel *t)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, t->client, NULL);
    close(t->client);
    if (t->server >= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, t->server, NULL);
        close(t->server);
    }
    t->closed = 1;
    t->next_closed = closed_this_round;
    closed_this_round = t;
}

/* Copies what `from` holds to `to`; -1 when either side is done. */
static int relay(int from, int to)
{
    char buffer[BUFFER];
    ssize_t n = read(from, buffer, sizeof buffer);
    if (n <= 0)
        return -1;
    for (ssize_t sent = 0; sent < n;) {
        ssize_t written = write(to, buffer + sent, (size_t)(n - sent));
        if (written < 0 && errno != EAGAIN)
            return -1;
        if (written > 0)
            sent += written;
    }
    return 0;
}

static void accept_all(int ep, int listener)
{
    for (;;) {
        int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK);
        if (fd < 0)
            return;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        struct tunnel *t = calloc(1, sizeof *t);
        t->client = fd;
        t->server = -1;
        t->client_end = (struct end){t, 0};
        t->upstream_end = (struct end){t, 1};
        struct epoll_event add = {.events = EPOLLIN, .data.ptr = &t->client_end};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &add);
    }
}

/* The request head so far; once whole, the upstream connect is started. */
static void read_head(int ep, struct tunnel *t)
{
    ssize_t n = read(t->client, t->head + t->head_length, HEAD - 1 - t->head_length);
    if (n <= 0)
        return finish(ep, t);
    t->head_length += (size_t)n;
    t->head[t->head_length] = 0;
    if (strstr(t->head, "\r\n\r\n") == NULL)
        return t->head_length + 1 >= HEAD ? finish(ep, t) : (void)0;
    char host[64];
    int port;
    struct sockaddr_in target = {.sin_family = AF_INET};
    if (sscanf(t->head, "CONNECT %63[0-9.]:%d ", host, &port) != 2 || inet_pton(AF_INET, host, &target.sin_addr) != 1)
        return finish(ep, t);
    target.sin_port = htons((uint16_t)port);
    t->server = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    setsockopt(t->server, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    if (connect(t->server, (struct sockaddr *)&target, sizeof target) != 0 && errno != EINPROGRESS)
        return finish(ep, t);
    struct epoll_event quiet = {.events = 0, .data.ptr = &t->client_end};
    epoll_ctl(ep, EPOLL_CTL_MOD, t->client, &quiet);
    struct epoll_event add = {.events = EPOLLOUT, .data.ptr = &t->upstream_end};
    epoll_ctl(ep, EPOLL_CTL_ADD, t->server, &add);
}

/* The upstream connect finished: 200 to the client, then both ends are read. */
static void establish(int ep, struct tunnel *t)
{
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    int error = 0;
    socklen_t length = sizeof error;
    getsockopt(t->server, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0 || write(t->client, ok, sizeof ok - 1) != (ssize_t)(sizeof ok - 1))
        return finish(ep, t);
    t->established = 1;
    struct epoll_event server = {.events = EPOLLIN, .data.ptr = &t->upstream_end};
    epoll_ctl(ep, EPOLL_CTL_MOD, t->server, &server);
    struct epoll_event client = {.events = EPOLLIN, .data.ptr = &t->client_end};
    epoll_ctl(ep, EPOLL_CTL_MOD, t->client, &client);
}

static void *serve(void *unused)
{
    (void)unused;
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    setsockopt(listener, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)listen_port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 1024) != 0) {
        perror("connect-floor: listen");
        exit(1);
    }
    int ep = epoll_create1(0);
    struct epoll_event add = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, listener, &add);
    struct epoll_event events[256];
    for (;;) {
        int count = epoll_wait(ep, events, 256, -1);
        for (int i = 0; i < count; i++) {
            struct end *end = events[i].data.ptr;
            if (end == NULL) {
                accept_all(ep, listener);
                continue;
            }
            struct tunnel *t = end->tunnel;
            if (t->closed)
                continue;
            if (!end->upstream && t->server < 0)
                read_head(ep, t);
            else if (end->upstream && !t->established)
                establish(ep, t);
            else if (relay(end->upstream ? t->server : t->client, end->upstream ? t->client : t->server) != 0)
                finish(ep, t);
        }
        while (closed_this_round != NULL) {
            struct tunnel *t = closed_this_round;
            closed_this_round = t->next_closed;
            free(t);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    if (threads < 1 || threads > THREADS)
        threads = 1;
    /* A free port, found by binding port 0 with SO_REUSEPORT and kept bound until the threads
     * have theirs. */
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(probe, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on);
    struct sockaddr_in address = {.sin_family = AF_INET};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(probe, (struct sockaddr *)&address, sizeof address) != 0 || getsockname(probe, (struct sockaddr *)&address, &length) != 0) {
        perror("connect-floor: bind");
        return 1;
    }
    listen_port = ntohs(address.sin_port);
    pthread_t ids[THREADS];
    for (int i = 0; i < threads; i++)
        pthread_create(&ids[i], NULL, serve, NULL);
    usleep(100000);
    close(probe);
    printf("port %d\n", listen_port);
    fflush(stdout);
    pthread_join(ids[0], NULL);
    return 0;
}

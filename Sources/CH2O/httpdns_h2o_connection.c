/* The loop side's connections: accept on loop 0, the hand-over to a loop, PROXY header, TLS
 * handshake, set-up and HTTP/1 request deadlines, refusal and close bookkeeping. */
#define _GNU_SOURCE
#include "httpdns_h2o_internal.h"

#include <netinet/in.h>
#include <netinet/tcp.h>

/* ---- connections ---- */

uint64_t httpdns_h2o__now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* A connection the server counted (open, Swift's `accepted`) is gone. */
static void forget_connection(httpdns_h2o_server *s, struct connection *c)
{
    atomic_fetch_sub(&c->loop->connection_count, 1);
    atomic_fetch_sub(&s->open_connections, 1);
    s->callbacks.closed(s->callbacks.context, (struct sockaddr *)&c->peer, c->peer_length);
    free(c);
}

void httpdns_h2o__on_connection_close(void *data)
{
    struct connection *c = data;
    if (h2o_timeout_is_linked(&c->setup_deadline))
        h2o_timeout_unlink(&c->setup_deadline);
    if (h2o_timeout_is_linked(&c->request_deadline))
        h2o_timeout_unlink(&c->request_deadline);
    if (h2o_timeout_is_linked(&c->drain_step))
        h2o_timeout_unlink(&c->drain_step);
    if (c->stream)
        httpdns_h2o__stream_on_close(c);
    h2o_linklist_unlink(&c->link);
    forget_connection(c->loop->server, c);
}

/* Over a limit: plain HTTP hears a 503 (the client sees why), TLS and message streams are closed at once. */
static void refuse(int fd, int tls)
{
    static const char reply[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                                "Content-Length: 29\r\nRetry-After: 1\r\n\r\nover capacity, try again soon\n";
    if (!tls) {
        char discard[4096];
        /* Read what already arrived so that close() sends FIN, not RST, ahead of the reply. */
        while (recv(fd, discard, sizeof(discard), MSG_DONTWAIT) > 0) {
        }
        ssize_t sent = send(fd, reply, sizeof(reply) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)sent;
        shutdown(fd, SHUT_WR);
    }
    close(fd);
}

/* ---- request deadline (HTTP/1) ---- */

void httpdns_h2o__arm_request_deadline(struct connection *c)
{
    if (h2o_timeout_is_linked(&c->request_deadline))
        h2o_timeout_unlink(&c->request_deadline);
    h2o_timeout_link(c->loop->evloop, &c->loop->request_deadline, &c->request_deadline);
}

/* HTTP/1 gives a request (head and body) the request timeout from the moment the connection may
 * send it: accept (TLS: the handshake's end) or the previous response. h2o 2.2 enforces that with
 * its req_timeout but closes the socket in silence, so nobody could tell a slowloris cut from an
 * idle keep-alive ending. This timer runs first (h2o's is set a second later, as a backstop): with
 * bytes of an unfinished request waiting it is a shed (counted; a plain client reads 408), with
 * none the connection was idle; either way the socket is shut down and h2o closes it. */
static void on_request_deadline(h2o_timeout_entry_t *entry)
{
    struct connection *c = H2O_STRUCT_FROM_MEMBER(struct connection, request_deadline, entry);
    httpdns_h2o_server *s = c->loop->server;
    h2o_conn_t *conn = c->sock->data;
    /* h2c (prior knowledge or Upgrade) replaced the HTTP/1 connection: HTTP/2 has its idle timeout. */
    if (conn == NULL || conn->callbacks != c->loop->http1_callbacks)
        return;
    if (c->sock->input->size > 0) {
        s->callbacks.shed(s->callbacks.context, HTTPDNS_H2O_SHED_DEADLINE);
        if (c->sock->ssl == NULL) {
            static const char reply[] = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                                        "Content-Length: 34\r\n\r\nthe request took too long to send\n";
            char discard[4096];
            /* Read what already arrived so that the close sends FIN, not RST, behind the reply. */
            while (recv(c->fd, discard, sizeof(discard), MSG_DONTWAIT) > 0) {
            }
            ssize_t sent = send(c->fd, reply, sizeof(reply) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
            (void)sent;
        }
    }
    shutdown(c->fd, SHUT_RDWR);
}

static void accept_http1(struct connection *c, h2o_accept_ctx_t *accept_ctx)
{
    h2o_http1_accept(accept_ctx, c->sock, c->connected_at);
    /* Learnt from an HTTP/1 connection only: bytes already read (after a PROXY header, or read to
     * look for one) are handled inside h2o_http1_accept, and an h2c preface among them has made the
     * connection HTTP/2 by now. HTTP/1's connection callbacks alone log a request index. */
    h2o_conn_t *conn = c->sock->data;
    if (c->loop->http1_callbacks == NULL && conn != NULL && conn->callbacks->log_.http1.request_index != NULL)
        c->loop->http1_callbacks = conn->callbacks;
    httpdns_h2o__arm_request_deadline(c);
}

/* ---- TLS and PROXY protocol set-up ---- */

static void on_setup_timeout(h2o_timeout_entry_t *entry)
{
    struct connection *c = H2O_STRUCT_FROM_MEMBER(struct connection, setup_deadline, entry);
    h2o_socket_close(c->sock);
}

/* h2o_accept's TLS path, done here so that the connection's protocol is known: HTTP/1 gets the
 * request deadline, HTTP/2 its own idle timeout. */
static void on_handshake(h2o_socket_t *sock, const char *error)
{
    struct connection *c = sock->data;
    sock->data = NULL;
    h2o_timeout_unlink(&c->setup_deadline);
    if (error != NULL) {
        h2o_socket_close(sock);
        return;
    }
    if (c->stream) {
        httpdns_h2o__stream_start(c);
        return;
    }
    h2o_accept_ctx_t *accept_ctx = &c->loop->accept_ctx[c->listener];
    h2o_iovec_t chosen = h2o_socket_ssl_get_selected_protocol(sock);
    for (const h2o_iovec_t *known = h2o_http2_alpn_protocols; known->len != 0; known++) {
        if (chosen.len == known->len && memcmp(chosen.base, known->base, chosen.len) == 0) {
            h2o_http2_accept(accept_ctx, sock, c->connected_at);
            return;
        }
    }
    accept_http1(c, accept_ctx);
}

/* The connection's own bytes may come now (after a PROXY header, or at once). */
static void start_connection(struct connection *c)
{
    struct loop *loop = c->loop;
    h2o_accept_ctx_t *accept_ctx = &loop->accept_ctx[c->listener];
    if (accept_ctx->ssl_ctx == NULL) {
        if (c->stream)
            httpdns_h2o__stream_start(c);
        else
            accept_http1(c, accept_ctx);
        return;
    }
    c->sock->data = c;
    c->setup_deadline.cb = on_setup_timeout;
    h2o_timeout_link(loop->evloop, &loop->context.handshake_timeout, &c->setup_deadline);
    h2o_socket_ssl_handshake(c->sock, accept_ctx->ssl_ctx, NULL, on_handshake);
}

/* ---- PROXY protocol (from trusted balancers only; the parsing is Swift's) ---- */

static void on_proxy_read(h2o_socket_t *sock, const char *error)
{
    struct connection *c = sock->data;
    httpdns_h2o_server *s = c->loop->server;
    if (error != NULL) {
        h2o_socket_close(sock);
        return;
    }
    struct sockaddr_storage source;
    socklen_t source_length = 0;
    long used = s->callbacks.proxy_header(s->callbacks.context, sock->input->bytes, sock->input->size, &source, &source_length);
    /* A peer not trusted to name the client (3): what is not a PROXY header goes to HTTP as sent. */
    if (used == -1 && c->proxy == 3)
        used = -2;
    if (used == -1 || (used == 0 && sock->input->size > 4096)) {
        h2o_socket_close(sock);
        return;
    }
    if (used == 0)
        return;
    h2o_timeout_unlink(&c->setup_deadline);
    h2o_socket_read_stop(sock);
    if (used > 0) /* -2: no header here, the bytes are the connection's own */
        h2o_buffer_consume(&sock->input, (size_t)used);
    if (source_length > 0 && c->proxy == 2)
        h2o_socket_setpeername(sock, (struct sockaddr *)&source, source_length);
    sock->data = NULL;
    start_connection(c);
}

/* On the connection's own loop: its h2o socket is made here (see loop_main, in httpdns_h2o_server.c,
 * on __thread state). */
void httpdns_h2o__adopt(struct loop *loop, struct connection *c, int verdict)
{
    c->loop = loop;
    if (loop->closing) {
        /* Handed over after the server closed its connections (stop): not served. */
        close(c->fd);
        forget_connection(loop->server, c);
        return;
    }
    c->connected_at = *h2o_get_timestamp(&loop->context, NULL, NULL);
    c->request_deadline.cb = on_request_deadline;
    c->stream = loop->server->listeners[c->listener].stream;
    h2o_linklist_init_anchor(&c->stream_messages);
    h2o_linklist_insert(&loop->connections, &c->link);
    h2o_socket_t *sock = h2o_evloop_socket_create(loop->evloop, c->fd, 0);
    c->sock = sock;
    sock->on_close.cb = httpdns_h2o__on_connection_close;
    sock->on_close.data = c;
    c->proxy = verdict;
    if (verdict == 2 || verdict == 3) {
        sock->data = c;
        c->setup_deadline.cb = on_setup_timeout;
        h2o_timeout_link(loop->evloop, &loop->context.handshake_timeout, &c->setup_deadline);
        h2o_socket_read_start(sock, on_proxy_read);
    } else {
        start_connection(c);
    }
    /* Accepted by loop 0 just before it stopped, handed to a loop already draining. */
    if (httpdns_h2o__draining(loop))
        httpdns_h2o__drain_connection(c);
}

/* The running loop with the fewest connections, taking turns among equals. */
static struct loop *pick_loop(httpdns_h2o_server *s)
{
    struct loop *best = &s->loops[0];
    int fewest = -1;
    for (int i = 0; i < s->loop_count; i++) {
        struct loop *candidate = &s->loops[(s->next_loop + (unsigned)i) % (unsigned)s->loop_count];
        if (!atomic_load(&candidate->running))
            continue;
        int count = atomic_load_explicit(&candidate->connection_count, memory_order_relaxed);
        if (fewest < 0 || count < fewest) {
            best = candidate;
            fewest = count;
        }
    }
    s->next_loop = (unsigned)(best->index + 1) % (unsigned)s->loop_count;
    return best;
}

/* Loop 0 only: accepts, applies the limits, hands each kept connection to a loop. */
void httpdns_h2o__on_accept(h2o_socket_t *listener_socket, const char *error)
{
    struct listener *l = listener_socket->data;
    httpdns_h2o_server *s = l->server;
    struct loop *acceptor = &s->loops[0];
    if (error != NULL || !s->accepting)
        return;
    for (int i = 0; i < 64; i++) {
        struct sockaddr_storage peer;
        socklen_t length = sizeof(peer);
        int fd = accept4(l->fd, (struct sockaddr *)&peer, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* Out of descriptors: stop polling the listeners briefly instead of spinning. */
                for (int j = 0; j < s->listener_count; j++)
                    if (s->listeners[j].sock != NULL)
                        h2o_socket_read_stop(s->listeners[j].sock);
                s->accept_paused_until = httpdns_h2o__now_ms() + 100;
            }
            return;
        }
        int verdict = s->callbacks.accepted(s->callbacks.context, l->index, (struct sockaddr *)&peer, length);
        if (verdict == 0) {
            refuse(fd, l->tls || l->stream);
            continue;
        }
        int on = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
        struct connection *c = calloc(1, sizeof(*c));
        struct message *m = calloc(1, sizeof(*m));
        if (c == NULL || m == NULL) {
            free(c);
            free(m);
            close(fd);
            s->callbacks.closed(s->callbacks.context, (struct sockaddr *)&peer, length);
            continue;
        }
        c->fd = fd;
        c->listener = l->index;
        memcpy(&c->peer, &peer, length);
        c->peer_length = length;
        atomic_fetch_add(&s->open_connections, 1);
        struct loop *target = pick_loop(s);
        atomic_fetch_add_explicit(&target->connection_count, 1, memory_order_relaxed);
        c->loop = target;
        if (target == acceptor) {
            free(m);
            httpdns_h2o__adopt(acceptor, c, verdict);
            continue;
        }
        m->kind = MSG_ADOPT;
        m->connection = c;
        m->index = verdict;
        httpdns_h2o__post(target, m);
    }
}

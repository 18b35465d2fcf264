/*
 * The loop side of the Swift server on h2o (see include/httpdns_h2o.h).
 *
 * A server runs one or more loop threads, each with its own h2o evloop (epoll), context and
 * multithread queue. A loop owns every h2o object it made: sockets, requests, its context. Other
 * threads reach a loop only through its queue (a mutex and a pipe), which carries responses,
 * chunks, new connections and control messages. A request's C record remembers its loop, so a
 * response goes back to the loop that holds the connection; control messages go to every loop.
 * A request's record outlives h2o's request when Swift still holds its token: h2o's pool dispose
 * callback clears the pointer, and a late response is dropped instead of touching freed memory.
 *
 * Loop 0 alone polls the listening sockets. It applies the connection limits (Swift's `accepted`
 * callback) and hands each kept connection to the loop with the fewest connections, which makes
 * the h2o socket on its own thread. The alternatives spread connections worse: with every loop
 * polling a shared listener, whichever loop wakes first takes a whole burst (h2load's 16
 * connections arrive in one), and SO_REUSEPORT sockets per loop hash the 4-tuple, which leaves a
 * small set of connections uneven and needs each port bound once per loop. A connection costs
 * loop 0 one accept and one queued message; its TLS handshake and requests run on its own loop.
 */
#define _GNU_SOURCE
#include "httpdns_h2o.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <h2o.h>
#include <h2o/http1.h>
#include <h2o/http2.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#define MAX_LISTENERS 32
#define MAX_LOOPS 256

enum message_kind {
    MSG_HEAD,
    MSG_CHUNK,
    MSG_RELEASE,
    MSG_ADOPT,
    MSG_SET_TLS,
    MSG_STOP_ACCEPTING,
    MSG_CLOSE_CONNECTIONS,
    MSG_EXIT
};

struct connection;
struct loop;

struct message {
    h2o_multithread_message_t super;
    enum message_kind kind;
    httpdns_h2o_request *request;
    int status;
    int final;
    long long content_length;
    size_t header_count;
    h2o_iovec_t *headers; /* 2 × header_count: name, value */
    char *body;
    size_t body_length;
    SSL_CTX *tls;
    int index;
    /* MSG_ADOPT: a connection accepted by loop 0; `index` 2 when a PROXY header comes first. */
    struct connection *connection;
};

struct listener {
    httpdns_h2o_server *server;
    int fd;
    int index;
    int tls;
    /* The TLS context each loop starts with (a reference, dropped once every loop has its own). */
    SSL_CTX *initial_tls;
    /* Loop 0's socket on the listener; NULL once closed. */
    h2o_socket_t *sock;
};

struct connection {
    h2o_linklist_t link;
    struct loop *loop;
    h2o_socket_t *sock;
    /* Linked while a PROXY header or the TLS handshake is awaited. */
    h2o_timeout_entry_t setup_deadline;
    /* HTTP/1: linked while a request (head and body) is awaited; see on_request_deadline. */
    h2o_timeout_entry_t request_deadline;
    struct timeval connected_at;
    int fd;
    int listener;
    /* Requests of this connection handed to Swift and not yet let go (HTTP/2 stream limit). */
    int requests;
    struct sockaddr_storage peer;
    socklen_t peer_length;
};

struct handler {
    h2o_handler_t super;
    struct loop *loop;
};

struct loop {
    httpdns_h2o_server *server;
    int index;
    h2o_globalconf_t config;
    h2o_context_t context;
    h2o_evloop_t *evloop;
    h2o_multithread_queue_t *queue;
    h2o_multithread_receiver_t receiver;
    /* This loop's context and current TLS context, per listener. */
    h2o_accept_ctx_t accept_ctx[MAX_LISTENERS];
    /* Our HTTP/1 request deadline (h2o's own req_timeout is set a second later, as a backstop). */
    h2o_timeout_t request_deadline;
    /* The callbacks of h2o's HTTP/1 connections, learnt at the first one: a socket whose connection
     * has others has become HTTP/2 (h2c). */
    const h2o_conn_callbacks_t *http1_callbacks;
    h2o_linklist_t connections;
    /* Connections handed to this loop and not closed yet (read by loop 0 to pick the next one). */
    atomic_int connection_count;
    /* MSG_CLOSE_CONNECTIONS was handled: a connection handed over later is closed at once. */
    int closing;
    /* Request records not yet freed (this loop's thread only). */
    long live_requests;
    /* For pthread_join (written by the creating thread). */
    pthread_t thread;
    /* The loop thread as it sees itself (written before `running`). */
    pthread_t self;
    /* Set once the loop's h2o objects exist. */
    atomic_int running;
    atomic_int exit_requested;
};

struct httpdns_h2o_server {
    httpdns_h2o_callbacks callbacks;
    httpdns_h2o_settings settings;
    struct listener listeners[MAX_LISTENERS];
    int listener_count;
    struct loop *loops;
    int loop_count;
    /* Loop threads created (they are joined by destroy). */
    int started;
    /* Posted by each loop thread once its h2o objects exist. */
    sem_t ready;
    /* Loop 0 only. */
    int accepting;
    uint64_t accept_paused_until;
    unsigned next_loop;
    atomic_int open_connections;
    /* Set once the loops have ended: later posts are dropped. */
    atomic_int dead;
};

struct httpdns_h2o_request {
    h2o_generator_t generator; /* first: h2o hands it back to the callbacks */
    h2o_req_t *req;            /* NULL once h2o disposed of the request */
    struct loop *loop;
    /* The connection, until the request is disposed of (h2o disposes of a connection's requests
     * before it closes its socket); NULL when it is not one of ours. */
    struct connection *conn;
    int http1;
    /* Counted in conn->requests. */
    int counted;
    int swift_holds;
    int started;
    int stopped;
    int finished;
    int can_send;
    struct message *pending;
    char *inflight;
};

/* ---- requests ---- */

static void free_request_if_done(httpdns_h2o_request *r)
{
    if (r->req != NULL || r->swift_holds)
        return;
    if (r->pending != NULL) {
        free(r->pending->body);
        free(r->pending);
    }
    free(r->inflight);
    r->loop->live_requests--;
    free(r);
}

/* Swift has let go of the request: it no longer counts against its connection's stream limit. */
static void swift_done(httpdns_h2o_request *r)
{
    r->swift_holds = 0;
    if (r->counted) {
        r->counted = 0;
        r->conn->requests--;
    }
}

static void arm_request_deadline(struct connection *c);

static void notify_proceed(httpdns_h2o_request *r, int cancelled)
{
    httpdns_h2o_server *s = r->loop->server;
    if (r->swift_holds)
        s->callbacks.proceed(s->callbacks.context, r, cancelled);
}

static void on_dispose(void *slot)
{
    httpdns_h2o_request *r = *(httpdns_h2o_request **)slot;
    r->req = NULL;
    if (r->counted) {
        r->counted = 0;
        r->conn->requests--;
    }
    /* HTTP/1: this request is over (answered, or its connection is closing); the next one has
     * the request timeout from now, as h2o's own keep-alive timer has. */
    if (r->conn != NULL && r->http1)
        arm_request_deadline(r->conn);
    r->conn = NULL;
    /* A streaming producer waits for `proceed`: tell it the client is gone. */
    if (r->started && !r->finished && r->swift_holds)
        notify_proceed(r, 1);
    free_request_if_done(r);
}

static void send_chunk(httpdns_h2o_request *r, struct message *m)
{
    free(r->inflight);
    r->inflight = m->body;
    r->can_send = 0;
    h2o_iovec_t buffer = h2o_iovec_init(m->body, m->body_length);
    if (m->final) {
        r->finished = 1;
        swift_done(r);
    }
    free(m);
    /* May dispose of the request (and free `r` when Swift is done): the caller must not touch `r`. */
    h2o_send(r->req, &buffer, buffer.len != 0 ? 1 : 0, r->finished ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

static void on_proceed(h2o_generator_t *generator, h2o_req_t *req)
{
    httpdns_h2o_request *r = (httpdns_h2o_request *)generator;
    (void)req;
    free(r->inflight);
    r->inflight = NULL;
    r->can_send = 1;
    if (r->pending != NULL) {
        struct message *m = r->pending;
        r->pending = NULL;
        send_chunk(r, m);
        return;
    }
    if (!r->finished)
        notify_proceed(r, 0);
}

static void on_stop(h2o_generator_t *generator, h2o_req_t *req)
{
    httpdns_h2o_request *r = (httpdns_h2o_request *)generator;
    (void)req;
    r->stopped = 1;
}

static void on_connection_close(void *data);

/* Our record of the connection a request came on, or NULL (a socket h2o made itself). */
static struct connection *connection_of(h2o_req_t *req)
{
    h2o_socket_t *sock = req->conn->callbacks->get_socket != NULL ? req->conn->callbacks->get_socket(req->conn) : NULL;
    if (sock == NULL || sock->on_close.cb != on_connection_close)
        return NULL;
    return sock->on_close.data;
}

/* An HTTP/2 stream past --max-streams on its connection. h2o 2.2 would queue it (its
 * max_concurrent_requests_per_connection holds requests back until others finish), so a client
 * could park any number of requests behind slow ones and wait in silence. It is answered here,
 * without entering Swift: 503 with Retry-After, which the client, its logs and h2load's status
 * counts all see. Not RST_STREAM REFUSED_STREAM: h2o's handler API cannot send it, and h2o 2.2
 * advertises a fixed SETTINGS_MAX_CONCURRENT_STREAMS of 100 (its settings frame is a constant),
 * so a client under 100 broke no rule and deserves an HTTP answer that says when to come back. */
static void refuse_stream(httpdns_h2o_server *s, h2o_req_t *req)
{
    static const char body[] = "too many concurrent requests on this connection, try again soon\n";
    req->res.status = 503;
    req->res.reason = "Service Unavailable";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/plain; charset=utf-8"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
    s->callbacks.shed(s->callbacks.context, HTTPDNS_H2O_SHED_STREAMS);
    h2o_send_inline(req, body, sizeof(body) - 1);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    struct loop *loop = ((struct handler *)self)->loop;
    httpdns_h2o_server *s = loop->server;
    struct connection *c = connection_of(req);
    int http1 = req->version < 0x200;
    if (c != NULL) {
        /* The request is whole: the deadline for its head and body is met. */
        if (h2o_timeout_is_linked(&c->request_deadline))
            h2o_timeout_unlink(&c->request_deadline);
        if (!http1 && (size_t)c->requests >= s->settings.max_streams) {
            refuse_stream(s, req);
            return 0;
        }
    }
    httpdns_h2o_request *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return -1;
    r->req = req;
    r->loop = loop;
    r->conn = c;
    r->http1 = http1;
    if (c != NULL) {
        r->counted = 1;
        c->requests++;
    }
    r->swift_holds = 1;
    r->generator.proceed = on_proceed;
    r->generator.stop = on_stop;
    httpdns_h2o_request **slot = h2o_mem_alloc_shared(&req->pool, sizeof(*slot), on_dispose);
    *slot = r;
    loop->live_requests++;
    s->callbacks.request(s->callbacks.context, r);
    return 0;
}

static const char *reason_for(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return status < 400 ? "OK" : "Error";
    }
}

static void handle_head(struct message *m)
{
    httpdns_h2o_request *r = m->request;
    if (r->req == NULL || r->started) {
        /* The client is gone (or a second head): drop it; a stream start learns of it at once. */
        if (m->final)
            swift_done(r);
        else if (r->swift_holds)
            notify_proceed(r, 1);
        free(m->body);
        free(m->headers);
        free(m);
        free_request_if_done(r);
        return;
    }
    h2o_req_t *req = r->req;
    req->res.status = m->status;
    req->res.reason = reason_for(m->status);
    for (size_t i = 0; i < m->header_count; i++) {
        h2o_iovec_t name = m->headers[2 * i], value = m->headers[2 * i + 1];
        /* HTTP/2 wants lower-case names; HTTP/1 keeps the case the handler wrote. */
        char *lower = h2o_mem_alloc_pool(&req->pool, name.len + 1);
        char *original = h2o_mem_alloc_pool(&req->pool, name.len + 1);
        for (size_t j = 0; j < name.len; j++) {
            char c = name.base[j];
            original[j] = c;
            lower[j] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
        }
        lower[name.len] = original[name.len] = '\0';
        h2o_iovec_t copied = h2o_strdup(&req->pool, value.base, value.len);
        h2o_add_header_by_str(&req->pool, &req->res.headers, lower, name.len, 1, original, copied.base, copied.len);
    }
    free(m->headers);
    m->headers = NULL;
    if (m->final && (m->body_length > 0 || m->content_length < 0)) {
        req->res.content_length = m->body_length;
    } else if (m->content_length >= 0) {
        /* A HEAD answer: the length of the body it would have, and no body. */
        req->res.content_length = (size_t)m->content_length;
    }
    r->started = 1;
    h2o_start_response(req, &r->generator);
    if (m->final) {
        m->kind = MSG_CHUNK;
        send_chunk(r, m); /* may dispose of the request, and so free `r`: not touched again */
        return;
    }
    free(m->body);
    free(m);
    /* Flush the head; h2o calls proceed when the first chunk may go. */
    r->can_send = 0;
    h2o_send(req, NULL, 0, H2O_SEND_STATE_IN_PROGRESS);
}

static void handle_chunk(struct message *m)
{
    httpdns_h2o_request *r = m->request;
    if (r->req == NULL || r->stopped || r->finished || !r->started) {
        if (m->final)
            swift_done(r);
        free(m->body);
        free(m);
        free_request_if_done(r);
        return;
    }
    if (!r->can_send) {
        if (r->pending != NULL) { /* the producer did not wait: keep the order, drop nothing */
            struct message *last = r->pending;
            r->pending = NULL;
            send_chunk(r, last);
        }
        r->pending = m;
        return;
    }
    send_chunk(r, m);
}

static void handle_release(struct message *m)
{
    httpdns_h2o_request *r = m->request;
    free(m);
    swift_done(r);
    if (r->req != NULL && !r->finished && !r->stopped) {
        /* Either call may dispose of the request, and so free `r`: not touched again. */
        r->finished = 1;
        if (r->started) {
            h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
        } else {
            r->started = 1;
            h2o_send_error_generic(r->req, 503, "Service Unavailable", "service unavailable\n", 0);
        }
        return;
    }
    free_request_if_done(r);
}

/* ---- connections ---- */

static uint64_t now_ms(void)
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

static void on_connection_close(void *data)
{
    struct connection *c = data;
    if (h2o_timeout_is_linked(&c->setup_deadline))
        h2o_timeout_unlink(&c->setup_deadline);
    if (h2o_timeout_is_linked(&c->request_deadline))
        h2o_timeout_unlink(&c->request_deadline);
    h2o_linklist_unlink(&c->link);
    forget_connection(c->loop->server, c);
}

/* Over a limit: plain HTTP hears a 503 (the client sees why), TLS is closed at once. */
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

static void arm_request_deadline(struct connection *c)
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
    if (c->loop->http1_callbacks == NULL && c->sock->data != NULL)
        c->loop->http1_callbacks = ((h2o_conn_t *)c->sock->data)->callbacks;
    arm_request_deadline(c);
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
    if (source_length > 0)
        h2o_socket_setpeername(sock, (struct sockaddr *)&source, source_length);
    sock->data = NULL;
    start_connection(c);
}

/* On the connection's own loop: its h2o socket is made here (see loop_main on __thread state). */
static void adopt(struct loop *loop, struct connection *c, int proxy)
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
    h2o_linklist_insert(&loop->connections, &c->link);
    h2o_socket_t *sock = h2o_evloop_socket_create(loop->evloop, c->fd, 0);
    c->sock = sock;
    sock->on_close.cb = on_connection_close;
    sock->on_close.data = c;
    if (proxy) {
        sock->data = c;
        c->setup_deadline.cb = on_setup_timeout;
        h2o_timeout_link(loop->evloop, &loop->context.handshake_timeout, &c->setup_deadline);
        h2o_socket_read_start(sock, on_proxy_read);
        return;
    }
    start_connection(c);
}

static void post(struct loop *loop, struct message *m);

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
static void on_accept(h2o_socket_t *listener_socket, const char *error)
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
                s->accept_paused_until = now_ms() + 100;
            }
            return;
        }
        int verdict = s->callbacks.accepted(s->callbacks.context, l->index, (struct sockaddr *)&peer, length);
        if (verdict == 0) {
            refuse(fd, l->tls);
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
            adopt(acceptor, c, verdict == 2);
            continue;
        }
        m->kind = MSG_ADOPT;
        m->connection = c;
        m->index = verdict == 2;
        post(target, m);
    }
}

/* ---- control ---- */

static int stopping(struct loop *loop) { return loop->context.shutdown_requested; }

static void stop_accepting(struct loop *loop)
{
    httpdns_h2o_server *s = loop->server;
    if (loop->index == 0 && s->accepting) {
        s->accepting = 0;
        for (int i = 0; i < s->listener_count; i++) {
            struct listener *l = &s->listeners[i];
            if (l->sock != NULL) {
                h2o_socket_read_stop(l->sock);
                h2o_socket_close(l->sock);
                l->sock = NULL;
            }
        }
    }
    /* HTTP/2 connections get GOAWAY, HTTP/1 ones lose keep-alive. */
    if (!stopping(loop))
        h2o_context_request_shutdown(&loop->context);
}

static void dispatch(struct loop *loop, struct message *m)
{
    switch (m->kind) {
    case MSG_HEAD:
        handle_head(m);
        break;
    case MSG_CHUNK:
        handle_chunk(m);
        break;
    case MSG_RELEASE:
        handle_release(m);
        break;
    case MSG_ADOPT:
        adopt(loop, m->connection, m->index);
        free(m);
        break;
    case MSG_SET_TLS:
        if (m->index >= 0 && m->index < loop->server->listener_count && loop->accept_ctx[m->index].ssl_ctx != NULL) {
            SSL_CTX_free(loop->accept_ctx[m->index].ssl_ctx);
            loop->accept_ctx[m->index].ssl_ctx = m->tls;
        } else if (m->tls != NULL) {
            SSL_CTX_free(m->tls);
        }
        free(m);
        break;
    case MSG_STOP_ACCEPTING:
        stop_accepting(loop);
        free(m);
        break;
    case MSG_CLOSE_CONNECTIONS:
        loop->closing = 1;
        for (h2o_linklist_t *node = loop->connections.next; node != &loop->connections; node = node->next) {
            struct connection *c = H2O_STRUCT_FROM_MEMBER(struct connection, link, node);
            shutdown(c->fd, SHUT_RDWR);
        }
        free(m);
        break;
    case MSG_EXIT:
        atomic_store(&loop->exit_requested, 1);
        free(m);
        break;
    }
}

static void on_messages(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    struct loop *loop = H2O_STRUCT_FROM_MEMBER(struct loop, receiver, receiver);
    while (!h2o_linklist_is_empty(messages)) {
        struct message *m = (struct message *)H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
        h2o_linklist_unlink(&m->super.link);
        dispatch(loop, m);
    }
}

static void drop_message(struct message *m)
{
    free(m->body);
    free(m->headers);
    if (m->tls != NULL)
        SSL_CTX_free(m->tls);
    if (m->connection != NULL) {
        close(m->connection->fd);
        free(m->connection);
    }
    free(m);
}

static void post(struct loop *loop, struct message *m)
{
    if (atomic_load(&loop->server->dead)) {
        drop_message(m);
        return;
    }
    /* A response made on the loop's own thread (a zone answer, inside the request callback) is
     * written at once: no queue, no pipe write, no extra turn of the loop. */
    if (atomic_load_explicit(&loop->running, memory_order_acquire) && pthread_equal(pthread_self(), loop->self)) {
        dispatch(loop, m);
        return;
    }
    h2o_multithread_send_message(&loop->receiver, &m->super);
}

static void setup(struct loop *loop);

static void *loop_main(void *argument)
{
    struct loop *loop = argument;
    httpdns_h2o_server *s = loop->server;
    /* h2o writes with writev: a peer that closed would raise SIGPIPE and end the process. SIGPIPE
     * from a write goes to the writing thread, so blocking it here (only here) makes those writes
     * fail with EPIPE instead, without touching the process's signal dispositions. */
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, NULL);
    /* Every h2o object is made here, on the thread that will use it: h2o keeps per-thread buffer
     * prototypes and recycling allocators (`__thread`), and a socket made on another thread would
     * share that thread's unsynchronised free lists (heap corruption, seen with several servers).
     * That is why loop 0 hands over a descriptor, not a socket. */
    setup(loop);
    loop->self = pthread_self();
    atomic_store_explicit(&loop->running, 1, memory_order_release);
    sem_post(&s->ready);
    while (!atomic_load(&loop->exit_requested)) {
        h2o_evloop_run(loop->evloop, 100);
        if (loop->index == 0 && s->accept_paused_until != 0 && now_ms() >= s->accept_paused_until) {
            s->accept_paused_until = 0;
            for (int i = 0; s->accepting && i < s->listener_count; i++)
                if (s->listeners[i].sock != NULL)
                    h2o_socket_read_start(s->listeners[i].sock, on_accept);
        }
    }
    return NULL;
}

/* ---- public ---- */

static pthread_once_t spill_once = PTHREAD_ONCE_INIT;

/* h2o 2.2 reads a request body whole before the handler runs; its socket buffers move to an
 * unlinked temporary file past a threshold (32 MiB by default). 4 MiB keeps a large upload's
 * anonymous memory small: the rest of it lives in the page cache, backed by /tmp. */
static void lower_spill_threshold(void)
{
    h2o_socket_buffer_mmap_settings.threshold = 4 * 1024 * 1024;
}

httpdns_h2o_server *httpdns_h2o_server_create(const httpdns_h2o_settings *settings, httpdns_h2o_callbacks callbacks)
{
    pthread_once(&spill_once, lower_spill_threshold);
    httpdns_h2o_server *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->callbacks = callbacks;
    s->settings = *settings;
    s->loop_count = settings->threads < 1 ? 1 : settings->threads > MAX_LOOPS ? MAX_LOOPS : (int)settings->threads;
    s->loops = calloc((size_t)s->loop_count, sizeof(*s->loops));
    if (s->loops == NULL) {
        free(s);
        return NULL;
    }
    for (int i = 0; i < s->loop_count; i++) {
        s->loops[i].server = s;
        s->loops[i].index = i;
    }
    s->accepting = 1;
    return s;
}

/* On the loop's thread, before it runs. */
static void setup(struct loop *loop)
{
    httpdns_h2o_server *s = loop->server;
    const httpdns_h2o_settings *settings = &s->settings;
    h2o_config_init(&loop->config);
    loop->config.server_name = h2o_iovec_init(H2O_STRLIT("httpdns"));
    loop->config.max_request_entity_size = settings->max_body_bytes;
    loop->config.handshake_timeout = settings->handshake_timeout_ms;
    /* A backstop: on_request_deadline acts a second earlier and says why. */
    loop->config.http1.req_timeout = settings->request_timeout_ms + 1000;
    loop->config.http1.upgrade_to_http2 = 1;
    loop->config.http2.idle_timeout = settings->idle_timeout_ms;
    loop->config.http2.graceful_shutdown_timeout = settings->graceful_shutdown_ms;
    /* h2o runs every stream it accepts (it resets those past its advertised 100 itself); on_req
     * refuses those past max_streams, instead of h2o queueing them. */
    loop->config.http2.max_concurrent_requests_per_connection = H2O_HTTP2_SETTINGS_HOST.max_concurrent_streams;
    h2o_hostconf_t *host = h2o_config_register_host(&loop->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    struct handler *handler = (struct handler *)h2o_create_handler(path, sizeof(*handler));
    handler->super.on_req = on_req;
    handler->loop = loop;
    loop->evloop = h2o_evloop_create();
    h2o_context_init(&loop->context, loop->evloop, &loop->config);
    h2o_timeout_init(loop->evloop, &loop->request_deadline, settings->request_timeout_ms);
    loop->queue = h2o_multithread_create_queue(loop->evloop);
    h2o_multithread_register_receiver(loop->queue, &loop->receiver, on_messages);
    h2o_linklist_init_anchor(&loop->connections);
    for (int i = 0; i < s->listener_count; i++) {
        struct listener *l = &s->listeners[i];
        loop->accept_ctx[i].ctx = &loop->context;
        loop->accept_ctx[i].hosts = loop->config.hosts;
        if (l->initial_tls != NULL) {
            SSL_CTX_up_ref(l->initial_tls);
            loop->accept_ctx[i].ssl_ctx = l->initial_tls;
        }
        if (loop->index == 0) {
            l->sock = h2o_evloop_socket_create(loop->evloop, l->fd, H2O_SOCKET_FLAG_DONT_READ);
            l->sock->data = l;
            h2o_socket_read_start(l->sock, on_accept);
        }
    }
}

int httpdns_h2o_server_add_listener(httpdns_h2o_server *s, int fd, httpdns_h2o_tls *tls)
{
    if (s->started || s->listener_count >= MAX_LISTENERS)
        return -1;
    struct listener *l = &s->listeners[s->listener_count];
    l->server = s;
    l->fd = fd;
    l->index = s->listener_count;
    if (tls != NULL) {
        SSL_CTX_up_ref((SSL_CTX *)tls);
        l->initial_tls = (SSL_CTX *)tls;
        l->tls = 1;
    }
    return s->listener_count++;
}

int httpdns_h2o_server_start(httpdns_h2o_server *s)
{
    if (sem_init(&s->ready, 0, 0) != 0)
        return errno;
    int error = 0;
    for (int i = 0; i < s->loop_count; i++) {
        error = pthread_create(&s->loops[i].thread, NULL, loop_main, &s->loops[i]);
        if (error != 0)
            break;
        s->started++;
    }
    for (int i = 0; i < s->started; i++) {
        while (sem_wait(&s->ready) != 0 && errno == EINTR) {
        }
    }
    /* Every loop holds its own reference now. */
    for (int i = 0; i < s->listener_count; i++) {
        if (s->listeners[i].initial_tls != NULL) {
            SSL_CTX_free(s->listeners[i].initial_tls);
            s->listeners[i].initial_tls = NULL;
        }
    }
    return error;
}

static struct message *new_message(enum message_kind kind)
{
    struct message *m = calloc(1, sizeof(*m));
    if (m != NULL)
        m->kind = kind;
    return m;
}

/* A control message to every loop (each gets its own copy, and its own reference to `tls`). */
static void post_all(httpdns_h2o_server *s, enum message_kind kind, SSL_CTX *tls, int index)
{
    for (int i = 0; i < s->started; i++) {
        struct message *m = new_message(kind);
        if (m == NULL)
            continue;
        if (tls != NULL) {
            SSL_CTX_up_ref(tls);
            m->tls = tls;
        }
        m->index = index;
        post(&s->loops[i], m);
    }
}

void httpdns_h2o_server_set_tls(httpdns_h2o_server *s, int index, httpdns_h2o_tls *tls)
{
    post_all(s, MSG_SET_TLS, (SSL_CTX *)tls, index);
}

void httpdns_h2o_server_stop_accepting(httpdns_h2o_server *s)
{
    post_all(s, MSG_STOP_ACCEPTING, NULL, 0);
}

void httpdns_h2o_server_close_connections(httpdns_h2o_server *s)
{
    post_all(s, MSG_CLOSE_CONNECTIONS, NULL, 0);
}

int httpdns_h2o_server_open_connections(httpdns_h2o_server *s)
{
    return atomic_load(&s->open_connections);
}

void httpdns_h2o_server_destroy(httpdns_h2o_server *s)
{
    post_all(s, MSG_EXIT, NULL, 0);
    for (int i = 0; i < s->started; i++)
        pthread_join(s->loops[i].thread, NULL);
    if (s->started == 0) {
        for (int i = 0; i < s->listener_count; i++)
            close(s->listeners[i].fd);
    }
    atomic_store(&s->dead, 1);
    /* The contexts, loops and queues are not freed: h2o 2.2 asserts in h2o_context_dispose while
     * any timer is linked (GOAWAY's graceful-shutdown timer, a connection's deadline), and a
     * response posted late must still find its loop. The listeners are closed; what stays is a
     * few kilobytes and each loop's epoll and pipe descriptors per stopped server. */
}

httpdns_h2o_tls *httpdns_h2o_tls_create(const char *certificate_pem, const char *key_pem, char *error, size_t error_size)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    BIO *bio = NULL;
    X509 *leaf = NULL;
    EVP_PKEY *key = NULL;
    const char *problem = NULL;
    if (ctx == NULL) {
        problem = "cannot create a TLS context";
        goto fail;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    bio = BIO_new_mem_buf(certificate_pem, -1);
    leaf = bio != NULL ? PEM_read_bio_X509_AUX(bio, NULL, NULL, NULL) : NULL;
    if (leaf == NULL || SSL_CTX_use_certificate(ctx, leaf) != 1) {
        problem = "the TLS certificate is not a PEM certificate";
        goto fail;
    }
    X509 *extra;
    while ((extra = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
            X509_free(extra);
            problem = "cannot add a certificate of the TLS chain";
            goto fail;
        }
    }
    ERR_clear_error(); /* the loop above ends on "no start line" */
    BIO_free(bio);
    bio = BIO_new_mem_buf(key_pem, -1);
    key = bio != NULL ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    if (key == NULL) {
        problem = "the TLS key is not a PEM private key (or is encrypted)";
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        problem = "the TLS private key does not match the certificate";
        goto fail;
    }
    h2o_ssl_register_alpn_protocols(ctx, h2o_http2_alpn_protocols);
    X509_free(leaf);
    EVP_PKEY_free(key);
    BIO_free(bio);
    ERR_clear_error();
    return (httpdns_h2o_tls *)ctx;
fail:
    if (error != NULL && error_size > 0)
        snprintf(error, error_size, "%s", problem);
    X509_free(leaf);
    EVP_PKEY_free(key);
    BIO_free(bio);
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return NULL;
}

void httpdns_h2o_tls_release(httpdns_h2o_tls *tls)
{
    SSL_CTX_free((SSL_CTX *)tls);
}

/* ---- request accessors ---- */

void *httpdns_h2o_request_token(httpdns_h2o_request *r) { return r; }

const char *httpdns_h2o_request_method(httpdns_h2o_request *r, size_t *length)
{
    *length = r->req->method.len;
    return r->req->method.base;
}

const char *httpdns_h2o_request_target(httpdns_h2o_request *r, size_t *length)
{
    *length = r->req->path.len;
    return r->req->path.base;
}

long httpdns_h2o_request_query_at(httpdns_h2o_request *r)
{
    return r->req->query_at == SIZE_MAX ? -1 : (long)r->req->query_at;
}

const char *httpdns_h2o_request_authority(httpdns_h2o_request *r, size_t *length)
{
    *length = r->req->authority.len;
    return r->req->authority.base;
}

int httpdns_h2o_request_version(httpdns_h2o_request *r) { return r->req->version; }

size_t httpdns_h2o_request_header_count(httpdns_h2o_request *r) { return r->req->headers.size; }

const char *httpdns_h2o_request_header_name(httpdns_h2o_request *r, size_t index, size_t *length)
{
    h2o_header_t *header = &r->req->headers.entries[index];
    *length = header->name->len;
    return header->orig_name != NULL ? header->orig_name : header->name->base;
}

const char *httpdns_h2o_request_header_value(httpdns_h2o_request *r, size_t index, size_t *length)
{
    h2o_header_t *header = &r->req->headers.entries[index];
    *length = header->value.len;
    return header->value.base;
}

const void *httpdns_h2o_request_body(httpdns_h2o_request *r, size_t *length)
{
    *length = r->req->entity.len;
    return r->req->entity.base;
}

socklen_t httpdns_h2o_request_peer(httpdns_h2o_request *r, struct sockaddr_storage *address)
{
    return r->req->conn->callbacks->get_peername(r->req->conn, (struct sockaddr *)address);
}

int httpdns_h2o_request_listener(httpdns_h2o_request *r)
{
    h2o_socket_t *sock = r->req->conn->callbacks->get_socket != NULL ? r->req->conn->callbacks->get_socket(r->req->conn) : NULL;
    if (sock == NULL || sock->on_close.cb != on_connection_close)
        return -1;
    return ((struct connection *)sock->on_close.data)->listener;
}

/* ---- posting ---- */

void httpdns_h2o_post_head(httpdns_h2o_server *s, void *token, int status, const void *headers,
                           const size_t *lengths, size_t header_count, long long content_length, const void *body,
                           size_t body_length, int final)
{
    (void)s; /* the request knows its loop */
    struct message *m = new_message(MSG_HEAD);
    if (m == NULL)
        abort(); /* out of memory: the request could never be answered */
    m->request = token;
    m->status = status;
    m->final = final;
    m->content_length = content_length;
    size_t text = 0;
    for (size_t i = 0; i < 2 * header_count; i++)
        text += lengths[i];
    m->headers = malloc(sizeof(h2o_iovec_t) * 2 * header_count + text + 1);
    m->body = malloc(body_length + 1);
    if (m->headers == NULL || m->body == NULL)
        abort();
    char *cursor = (char *)(m->headers + 2 * header_count);
    if (text > 0)
        memcpy(cursor, headers, text);
    for (size_t i = 0; i < 2 * header_count; i++) {
        m->headers[i] = h2o_iovec_init(cursor, lengths[i]);
        cursor += lengths[i];
    }
    m->header_count = header_count;
    if (body_length > 0)
        memcpy(m->body, body, body_length);
    m->body_length = body_length;
    post(((httpdns_h2o_request *)token)->loop, m);
}

void httpdns_h2o_post_chunk(httpdns_h2o_server *s, void *token, const void *bytes, size_t length, int final)
{
    (void)s; /* the request knows its loop */
    struct message *m = new_message(MSG_CHUNK);
    if (m == NULL)
        abort();
    m->request = token;
    m->final = final;
    m->body = malloc(length + 1);
    if (m->body == NULL)
        abort();
    if (length > 0)
        memcpy(m->body, bytes, length);
    m->body_length = length;
    post(((httpdns_h2o_request *)token)->loop, m);
}

void httpdns_h2o_post_release(httpdns_h2o_server *s, void *token)
{
    (void)s; /* the request knows its loop */
    struct message *m = new_message(MSG_RELEASE);
    if (m == NULL)
        abort();
    m->request = token;
    post(((httpdns_h2o_request *)token)->loop, m);
}

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
#include "httpdns_h2o_internal.h"
#include "CSockets.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

/* ---- control ---- */

/* Whether a listener still has a connection waiting in its accept queue. */
static int backlog_waiting(int fd)
{
    struct pollfd entry = {.fd = fd, .events = POLLIN};
    return poll(&entry, 1, 0) > 0 && (entry.revents & POLLIN) != 0;
}

/* Loop 0, once the handshake grace has passed: what waits in the accept queues is accepted, the
 * listeners close, and every loop drains (the others only now, so that no client is told
 * `Connection: close` and reconnects while loop 0 still takes connections). */
static void close_listeners(struct loop *loop)
{
    httpdns_h2o_server *s = loop->server;
    for (int i = 0; i < s->listener_count; i++) {
        struct listener *l = &s->listeners[i];
        for (int round = 0; l->sock != NULL && round < 256 && backlog_waiting(l->fd); round++)
            httpdns_h2o__on_accept(l->sock, NULL);
    }
    s->accepting = 0;
    for (int i = 0; i < s->listener_count; i++) {
        struct listener *l = &s->listeners[i];
        if (l->sock != NULL) {
            h2o_socket_read_stop(l->sock);
            h2o_socket_close(l->sock);
            l->sock = NULL;
        }
    }
    for (int i = 1; i < s->started; i++) {
        struct message *m = httpdns_h2o__new_message(MSG_STOP_ACCEPTING);
        if (m != NULL)
            httpdns_h2o__post(&s->loops[i], m);
    }
    if (!httpdns_h2o__draining(loop))
        httpdns_h2o__drain_begin(loop);
}

static void on_handshake_grace(h2o_timeout_entry_t *entry)
{
    struct loop *loop = H2O_STRUCT_FROM_MEMBER(struct loop, handshake_grace_entry, entry);
    close_listeners(loop);
}

/* The drain's first step. Closing a listener resets the connections waiting in its accept queue,
 * and those still in their handshake, whose clients have sent (or are sending) their requests
 * already: h2load counted them started and lost. So loop 0 first stops new connections (a SYN is
 * dropped), goes on accepting for a handshake_grace_ms, long enough for a handshake the kernel
 * answered to complete, and then closes the listeners (close_listeners); the other loops drain from
 * then on. A loop other than 0 gets this message from loop 0. */
static void stop_accepting(struct loop *loop)
{
    httpdns_h2o_server *s = loop->server;
    if (loop->index != 0) {
        if (!httpdns_h2o__draining(loop))
            httpdns_h2o__drain_begin(loop);
        return;
    }
    if (!s->accepting || h2o_timeout_is_linked(&loop->handshake_grace_entry))
        return;
    for (int i = 0; i < s->listener_count; i++)
        if (s->listeners[i].sock != NULL)
            (void)httpdns_refuse_new_connections(s->listeners[i].fd);
    loop->handshake_grace_entry.cb = on_handshake_grace;
    h2o_timeout_link(loop->evloop, &loop->handshake_grace, &loop->handshake_grace_entry);
}

static void dispatch(struct loop *loop, struct message *m)
{
    switch (m->kind) {
    case MSG_HEAD:
        httpdns_h2o__handle_head(m);
        break;
    case MSG_CHUNK:
        httpdns_h2o__handle_chunk(m);
        break;
    case MSG_RELEASE:
        httpdns_h2o__handle_release(m);
        break;
    case MSG_STREAM_ANSWER:
        httpdns_h2o__stream_handle_answer(m);
        break;
    case MSG_ADOPT:
        httpdns_h2o__adopt(loop, m->connection, m->index);
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
        /* The drain's end came within the handshake grace: the listeners close now. */
        if (h2o_timeout_is_linked(&loop->handshake_grace_entry)) {
            h2o_timeout_unlink(&loop->handshake_grace_entry);
            close_listeners(loop);
        }
        loop->closing = 1;
        for (h2o_linklist_t *node = loop->connections.next; node != &loop->connections; node = node->next) {
            struct connection *c = H2O_STRUCT_FROM_MEMBER(struct connection, link, node);
            if (httpdns_h2o__drain_unfinished(c))
                loop->server->callbacks.shed(loop->server->callbacks.context, HTTPDNS_H2O_SHED_DRAIN);
            shutdown(c->fd, SHUT_RDWR);
            if (c->stream)
                httpdns_h2o__stream_cut(c);
        }
        free(m);
        break;
    case MSG_EXIT:
        if (h2o_timeout_is_linked(&loop->handshake_grace_entry)) {
            h2o_timeout_unlink(&loop->handshake_grace_entry);
            close_listeners(loop);
        }
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

static void on_flush(h2o_timeout_entry_t *entry)
{
    struct loop *loop = H2O_STRUCT_FROM_MEMBER(struct loop, flush_entry, entry);
    on_messages(&loop->receiver, &loop->deferred);
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

void httpdns_h2o__post(struct loop *loop, struct message *m)
{
    if (atomic_load(&loop->server->dead)) {
        drop_message(m);
        return;
    }
    /* A response made on the loop's own thread (a zone answer, inside the request callback) is
     * written at the end of this turn of the loop: no queue, no pipe write. */
    if (atomic_load_explicit(&loop->running, memory_order_acquire) && pthread_equal(pthread_self(), loop->self)) {
        h2o_linklist_insert(&loop->deferred, &m->super.link);
        if (!h2o_timeout_is_linked(&loop->flush_entry))
            h2o_timeout_link(loop->evloop, &loop->flush_timeout, &loop->flush_entry);
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
    /* Named, so that `top -H`, a debugger and /proc/PID/task/TID/comm tell the loops from the
     * runtime's threads (and show how many `threads` made): "http loop 0" to "http loop 255",
     * within the kernel's 15 characters. */
    char name[16];
    snprintf(name, sizeof name, "http loop %d", loop->index);
    pthread_setname_np(pthread_self(), name);
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
        if (loop->index == 0 && s->accept_paused_until != 0 && httpdns_h2o__now_ms() >= s->accept_paused_until) {
            s->accept_paused_until = 0;
            for (int i = 0; s->accepting && i < s->listener_count; i++)
                if (s->listeners[i].sock != NULL)
                    h2o_socket_read_start(s->listeners[i].sock, httpdns_h2o__on_accept);
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
    /* The drain sends each HTTP/2 connection its GOAWAYs itself (httpdns_h2o_drain.c), not all at once. */
    loop->config.http2.callbacks.request_shutdown = NULL;
    /* h2o runs every stream it accepts (it resets those past its advertised 100 itself); httpdns_h2o__on_req
     * refuses those past max_streams, instead of h2o queueing them. */
    loop->config.http2.max_concurrent_requests_per_connection = H2O_HTTP2_SETTINGS_HOST.max_concurrent_streams;
    h2o_hostconf_t *host = h2o_config_register_host(&loop->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    struct handler *handler = (struct handler *)h2o_create_handler(path, sizeof(*handler));
    handler->super.on_req = httpdns_h2o__on_req;
    handler->loop = loop;
    loop->evloop = h2o_evloop_create();
    h2o_context_init(&loop->context, loop->evloop, &loop->config);
    h2o_timeout_init(loop->evloop, &loop->request_deadline, settings->request_timeout_ms);
    h2o_timeout_init(loop->evloop, &loop->drain_quiet, settings->drain_quiet_ms);
    h2o_timeout_init(loop->evloop, &loop->stream_idle, settings->stream_idle_timeout_ms);
    h2o_timeout_init(loop->evloop, &loop->handshake_grace, settings->drain_quiet_ms < HANDSHAKE_GRACE_MS ? settings->drain_quiet_ms : HANDSHAKE_GRACE_MS);
    h2o_linklist_init_anchor(&loop->deferred);
    h2o_timeout_init(loop->evloop, &loop->flush_timeout, 0);
    loop->flush_entry.cb = on_flush;
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
            h2o_socket_read_start(l->sock, httpdns_h2o__on_accept);
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

int httpdns_h2o_server_add_stream_listener(httpdns_h2o_server *s, int fd, httpdns_h2o_tls *tls)
{
    int index = httpdns_h2o_server_add_listener(s, fd, tls);
    if (index >= 0)
        s->listeners[index].stream = 1;
    return index;
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

struct message *httpdns_h2o__new_message(enum message_kind kind)
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
        struct message *m = httpdns_h2o__new_message(kind);
        if (m == NULL)
            continue;
        if (tls != NULL) {
            SSL_CTX_up_ref(tls);
            m->tls = tls;
        }
        m->index = index;
        httpdns_h2o__post(&s->loops[i], m);
    }
}

void httpdns_h2o_server_set_tls(httpdns_h2o_server *s, int index, httpdns_h2o_tls *tls)
{
    post_all(s, MSG_SET_TLS, (SSL_CTX *)tls, index);
}

void httpdns_h2o_server_stop_accepting(httpdns_h2o_server *s)
{
    /* Loop 0 tells the others once its listeners are closed (stop_accepting). */
    if (s->started > 0) {
        struct message *m = httpdns_h2o__new_message(MSG_STOP_ACCEPTING);
        if (m != NULL)
            httpdns_h2o__post(&s->loops[0], m);
    }
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

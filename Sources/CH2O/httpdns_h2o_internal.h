/*
 * What the loop side's files share (see httpdns_h2o_server.c for how the loops work): includes,
 * limits, the message, connection, loop, server and request records, and the functions that cross
 * files. Private to CH2O: it sits beside the .c files, outside include/, so Swift never sees it.
 * Each .c defines _GNU_SOURCE before any include (accept4).
 */
#ifndef HTTPDNS_H2O_INTERNAL_H
#define HTTPDNS_H2O_INTERNAL_H
#include "httpdns_h2o.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <h2o.h>

#include <h2o/http1.h>
#include <h2o/http2.h>
/* For the drain's per-connection GOAWAY (httpdns_h2o_drain.c): h2o's HTTP/2 connection record and
 * frame encoder. The record's layout is h2o 2.2's; another h2o stops the build here. */
#include <h2o/http2_internal.h>
#include <h2o/version.h>
#if H2O_VERSION_MAJOR != 2 || H2O_VERSION_MINOR != 2
#error "httpdns_h2o_drain.c reads h2o 2.2's HTTP/2 connection record; check it against this h2o"
#endif
#include <openssl/ssl.h>

#define MAX_LISTENERS 32
#define MAX_LOOPS 256
/* The drain's handshake grace (httpdns_h2o_server.c, stop_accepting), at most drain_quiet_ms: a
 * round trip for a client whose SYN was answered. */
#define HANDSHAKE_GRACE_MS 200

enum message_kind {
    MSG_HEAD,
    MSG_CHUNK,
    MSG_RELEASE,
    MSG_STREAM_ANSWER,
    MSG_ADOPT,
    MSG_SET_TLS,
    MSG_STOP_ACCEPTING,
    MSG_CLOSE_CONNECTIONS,
    MSG_EXIT
};

struct connection;
struct loop;

/* An HTTP/2 connection's drain: no GOAWAY yet; the first (last stream 2^31-1, "no new streams")
 * sent; the final one (the last stream taken) sent, after which h2o closes the connection once
 * those streams are answered. */
enum { GOAWAY_NONE, GOAWAY_ANNOUNCED, GOAWAY_FINAL };

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
    /* MSG_STREAM_ANSWER: the message answered (`body` NULL: none, close the connection). */
    httpdns_h2o_stream_message *stream_message;
};

struct listener {
    httpdns_h2o_server *server;
    int fd;
    int index;
    int tls;
    /* Its connections carry length-prefixed messages, not HTTP (httpdns_h2o_stream.c). */
    int stream;
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
    /* Requests of this connection handed to Swift and not yet disposed of by h2o (answered and
     * written, or abandoned): the drain's "request in hand". */
    int active;
    /* The drain's next step for this connection (see httpdns_h2o_drain.c). */
    h2o_timeout_entry_t drain_step;
    /* HTTP/2 on drain: GOAWAY_* below. */
    int goaway;
    struct sockaddr_storage peer;
    socklen_t peer_length;
    /* The accept verdict: 2 reads a PROXY header and believes it, 3 reads one and ignores it. */
    int proxy;
    /* A message-stream connection (httpdns_h2o_stream.c); the fields below are its state, and its
     * idle deadline is `request_deadline` on the loop's `stream_idle` timeout. */
    int stream;
    /* Messages handed to Swift and not answered yet (httpdns_h2o_stream_message.link). */
    h2o_linklist_t stream_messages;
    int stream_in_flight;
    /* Reading is on (off at stream_max_in_flight, while closing, and before the stream starts). */
    int stream_reading;
    /* No more messages are read; closed once those in hand are answered and written. */
    int stream_closing;
    /* h2o_socket_close was called: nothing more is done with the socket. */
    int stream_closed;
    /* Framed answers waiting for the write under way, and the buffer being written (NULL: none). */
    char *stream_out;
    size_t stream_out_length;
    size_t stream_out_capacity;
    char *stream_writing;
    /* When the last whole message arrived (the loop's clock, ms): the drain's quiet period. */
    uint64_t stream_last_message_ms;
};

struct httpdns_h2o_stream_message {
    h2o_linklist_t link;
    struct loop *loop;
    /* NULL once the connection closed: the answer is dropped. */
    struct connection *conn;
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
    /* Responses made on this loop's own thread during a turn, written together at its end (a
     * zero timeout): the peers' wake-ups come in a burst instead of one per request. */
    h2o_linklist_t deferred;
    h2o_timeout_t flush_timeout;
    h2o_timeout_entry_t flush_entry;
    /* This loop's context and current TLS context, per listener. */
    h2o_accept_ctx_t accept_ctx[MAX_LISTENERS];
    /* Our HTTP/1 request deadline (h2o's own req_timeout is set a second later, as a backstop). */
    h2o_timeout_t request_deadline;
    /* The drain's quiet period (drain_quiet_ms). */
    h2o_timeout_t drain_quiet;
    /* Message streams' idle deadline (stream_idle_timeout_ms). */
    h2o_timeout_t stream_idle;
    /* Loop 0: between refusing new connections and closing the listeners (stop_accepting). */
    h2o_timeout_t handshake_grace;
    h2o_timeout_entry_t handshake_grace_entry;
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

/* Crossing files; hidden, so they stay out of the library's exported symbols. */

/* httpdns_h2o_server.c */
__attribute__((visibility("hidden"))) void httpdns_h2o__post(struct loop *loop, struct message *m);
__attribute__((visibility("hidden"))) struct message *httpdns_h2o__new_message(enum message_kind kind);

/* httpdns_h2o_connection.c */
__attribute__((visibility("hidden"))) uint64_t httpdns_h2o__now_ms(void);
__attribute__((visibility("hidden"))) void httpdns_h2o__on_connection_close(void *data);
__attribute__((visibility("hidden"))) void httpdns_h2o__arm_request_deadline(struct connection *c);
__attribute__((visibility("hidden"))) void httpdns_h2o__adopt(struct loop *loop, struct connection *c, int verdict);
__attribute__((visibility("hidden"))) void httpdns_h2o__on_accept(h2o_socket_t *listener_socket, const char *error);

/* httpdns_h2o_drain.c */
static inline int httpdns_h2o__draining(struct loop *loop) { return loop->context.shutdown_requested; }
__attribute__((visibility("hidden"))) void httpdns_h2o__drain_begin(struct loop *loop);
__attribute__((visibility("hidden"))) void httpdns_h2o__drain_connection(struct connection *c);
__attribute__((visibility("hidden"))) void httpdns_h2o__drain_on_request(struct connection *c, int http1);
__attribute__((visibility("hidden"))) void httpdns_h2o__drain_on_request_done(struct connection *c);
__attribute__((visibility("hidden"))) int httpdns_h2o__drain_unfinished(struct connection *c);

/* httpdns_h2o_stream.c */
__attribute__((visibility("hidden"))) void httpdns_h2o__stream_start(struct connection *c);
__attribute__((visibility("hidden"))) void httpdns_h2o__stream_on_close(struct connection *c);
__attribute__((visibility("hidden"))) void httpdns_h2o__stream_close(struct connection *c);
__attribute__((visibility("hidden"))) void httpdns_h2o__stream_handle_answer(struct message *m);
/* Whether the connection holds work: a message in hand, an answer unwritten, part of a message read. */
__attribute__((visibility("hidden"))) int httpdns_h2o__stream_busy(struct connection *c);
/* The drain's end: reading goes on, so that the loop sees the shut-down socket and closes it. */
__attribute__((visibility("hidden"))) void httpdns_h2o__stream_cut(struct connection *c);

/* httpdns_h2o_request.c */
__attribute__((visibility("hidden"))) int httpdns_h2o__on_req(h2o_handler_t *self, h2o_req_t *req);
__attribute__((visibility("hidden"))) void httpdns_h2o__handle_head(struct message *m);
__attribute__((visibility("hidden"))) void httpdns_h2o__handle_chunk(struct message *m);
__attribute__((visibility("hidden"))) void httpdns_h2o__handle_release(struct message *m);

#endif

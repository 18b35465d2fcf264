#ifndef HTTPDNS_H2O_H
#define HTTPDNS_H2O_H
/*
 * A narrow C face over h2o's evloop library (Debian libh2o-evloop-dev) for the Swift server.
 *
 * Swift never sees h2o's own headers: their inline functions, token macros, bit fields and
 * callback structs stay on this side. A server runs `threads` loop threads; the callbacks come on
 * them, so with more than one they may run at the same time (`accepted` always on loop 0, the
 * others on the loop that holds the connection). httpdns_h2o_post_* and the control functions
 * may be called from any thread (they queue a message and wake the loop concerned).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct httpdns_h2o_server httpdns_h2o_server;
/* One request, alive on the C side until both the loop (request disposed) and Swift (a final
 * response or a release was posted) are done with it. */
typedef struct httpdns_h2o_request httpdns_h2o_request;
/* An OpenSSL SSL_CTX, opaque to Swift. */
typedef struct httpdns_h2o_tls httpdns_h2o_tls;
/* One message of a message-stream connection (see httpdns_h2o_server_add_stream_listener), alive
 * on the C side until Swift posts its answer (httpdns_h2o_post_stream_answer), exactly once. */
typedef struct httpdns_h2o_stream_message httpdns_h2o_stream_message;

/* Why the loop refused work, for the `shed` callback. */
enum {
    /* An HTTP/2 stream past max_streams on its connection (answered 503 with Retry-After). */
    HTTPDNS_H2O_SHED_STREAMS = 1,
    /* An HTTP/1 request whose head or body did not arrive within request_timeout_ms (plain: 408). */
    HTTPDNS_H2O_SHED_DEADLINE = 2,
    /* A connection closed at the drain's end (httpdns_h2o_server_close_connections) with a request
     * in hand or part of one received: work the drain did not finish. */
    HTTPDNS_H2O_SHED_DRAIN = 3,
};

typedef struct {
    void *context;
    /* A connection was accepted on `listener`: return 1 to keep it, 2 to keep it and read a PROXY
     * protocol header first (see `proxy_header`), 3 to keep it and drop a PROXY header if it starts
     * with one while keeping the peer's address (a peer not trusted to name the client), 0 to refuse
     * it (plain HTTP gets a 503 and a close, TLS an immediate close). */
    int (*accepted)(void *context, int listener, const struct sockaddr *peer, socklen_t length);
    /* The first bytes of a connection kept with 2 or 3: return how many form the PROXY header (with the
     * client's address in `source`, or `*source_length` 0 to keep the peer's), 0 when more bytes are
     * needed, -1 when they are not a valid PROXY header (the connection is closed), -2 when the
     * connection carries no header (its bytes go to HTTP as they are). The header must arrive within
     * the handshake deadline. */
    long (*proxy_header)(void *context, const void *bytes, size_t length, struct sockaddr_storage *source,
                         socklen_t *source_length);
    /* A kept connection closed. */
    void (*closed)(void *context, const struct sockaddr *peer, socklen_t length);
    /* A complete request (head and body). Read it with the accessors below, during this call only. */
    void (*request)(void *context, httpdns_h2o_request *request);
    /* A streaming response may send its next chunk (`cancelled` 1: the client went away; stop). */
    void (*proceed)(void *context, void *token, int cancelled);
    /* Work refused by a limit, one of HTTPDNS_H2O_SHED_*. */
    void (*shed)(void *context, int reason);
    /* One whole message of a message-stream connection on `listener`, from `peer` (the PROXY
     * header's client when one was believed). `bytes` are valid during this call only; answer
     * through httpdns_h2o_post_stream_answer, once, from any thread. */
    void (*stream_message)(void *context, httpdns_h2o_stream_message *message, const void *bytes, size_t length, int listener,
                           const struct sockaddr *peer, socklen_t peer_length);
} httpdns_h2o_callbacks;

typedef struct {
    /* HTTP/1: the whole request head and body, from accept (TLS: the handshake's end) or the
     * previous response; also how long an idle keep-alive connection stays. */
    uint64_t request_timeout_ms;
    /* TLS handshake deadline. */
    uint64_t handshake_timeout_ms;
    /* HTTP/2: an idle connection. */
    uint64_t idle_timeout_ms;
    /* The drain (httpdns_h2o_server_stop_accepting): how long a connection with no request in
     * hand stays quiet before HTTP/1 closes it or HTTP/2 sends its GOAWAY, and how long HTTP/2 then
     * waits before its final GOAWAY names the last stream (h2o's round-trip bound is one second). */
    uint64_t drain_quiet_ms;
    /* HTTP/2: requests of one connection handled at once (handed to the request callback and not
     * yet answered); more are answered 503 at once. At most h2o's advertised 100. */
    size_t max_streams;
    /* Larger request bodies get 413 from h2o. */
    size_t max_body_bytes;
    /* Loop threads, each with its own h2o context (1 to 256). */
    size_t threads;
    /* Message streams: how long a connection with no message in hand and none being written stays
     * (RFC 7766 §6.2.3, RFC 7858 §3.4); also the deadline for the rest of a message begun. */
    uint64_t stream_idle_timeout_ms;
    /* Message streams: messages of one connection handed to Swift and not yet answered; at this
     * many the connection is not read until an answer comes back (at least 1). */
    size_t stream_max_in_flight;
} httpdns_h2o_settings;

/* Creates the server (its loop does not run yet); NULL on failure. */
httpdns_h2o_server *httpdns_h2o_server_create(const httpdns_h2o_settings *settings, httpdns_h2o_callbacks callbacks);
/* Adds a bound, listening socket (takes ownership of `fd`; `tls` may be NULL, a reference is taken);
 * before httpdns_h2o_server_start only. Returns the listener's index. */
int httpdns_h2o_server_add_listener(httpdns_h2o_server *server, int fd, httpdns_h2o_tls *tls);
/* Adds a listener whose connections carry length-prefixed messages instead of HTTP: each message
 * is a two-byte big-endian length and that many bytes (DNS over TCP, RFC 1035 §4.2.2; over TLS,
 * RFC 7858 when `tls` is given). Each goes to `stream_message`; answers go back framed the same
 * way, in the order they are posted (pipelined messages may be answered out of order, RFC 7766
 * §6.2.1.1). As httpdns_h2o_server_add_listener otherwise. */
int httpdns_h2o_server_add_stream_listener(httpdns_h2o_server *server, int fd, httpdns_h2o_tls *tls);
/* The framing a message-stream connection applies to what it has read: the length of the message
 * whose two-byte prefix starts `bytes` when all of it is there, else -1 (more bytes are needed).
 * Pure, for tests and the fuzz target. */
long httpdns_h2o_stream_frame(const void *bytes, size_t size);
/* Starts the loop threads; 0 on success, else an errno (the loops that did start run until
 * httpdns_h2o_server_destroy). */
int httpdns_h2o_server_start(httpdns_h2o_server *server);
/* Swaps the TLS context of listener `index` for new connections on every loop (each takes a
 * reference). Any thread. */
void httpdns_h2o_server_set_tls(httpdns_h2o_server *server, int index, httpdns_h2o_tls *tls);
/* Begins the drain. The listeners close; every HTTP/1 response from now says `Connection: close`
 * and its connection closes after it; an HTTP/1 connection with no request in hand closes once it
 * has been quiet for drain_quiet_ms (a request already on its way arrives first and is answered);
 * an HTTP/2 connection gets GOAWAY (last stream 2^31-1) ahead of its next response (or once quiet),
 * then a final GOAWAY naming the last stream it took, and closes once those streams are answered.
 * Any thread. */
void httpdns_h2o_server_stop_accepting(httpdns_h2o_server *server);

/* Ends the drain: shuts down every open connection's socket; those with a request in hand or
 * bytes of one buffered are reported to `shed` as HTTPDNS_H2O_SHED_DRAIN. Any thread. */
void httpdns_h2o_server_close_connections(httpdns_h2o_server *server);
/* Ends the loop threads and frees what is safe to free. Any thread but a loop's; once. */
void httpdns_h2o_server_destroy(httpdns_h2o_server *server);
/* Connections open right now. Any thread. */
int httpdns_h2o_server_open_connections(httpdns_h2o_server *server);

/* A TLS context from PEM text with ALPN h2 and http/1.1; NULL with a reason in `error`. */
httpdns_h2o_tls *httpdns_h2o_tls_create(const char *certificate_pem, const char *key_pem, char *error, size_t error_size);
void httpdns_h2o_tls_release(httpdns_h2o_tls *tls);
/* Makes `tls` a message stream's context: ALPN "dot" (RFC 7858's entry in the IANA ALPN registry)
 * instead of h2 and http/1.1; a client that offers none of it gets no ALPN, as RFC 7858 clients
 * expect. */
void httpdns_h2o_tls_use_dot_alpn(httpdns_h2o_tls *tls);

/* TLS session ticket keys shared across instances (see httpdns_h2o_tickets.c). A key is 80 bytes in
 * nginx's layout: 16 of name, 32 of HMAC-SHA256 key, 32 of AES-256-CBC key. */
#define HTTPDNS_H2O_TICKET_KEY_BYTES 80
typedef struct httpdns_h2o_ticket_store httpdns_h2o_ticket_store;
/* An empty store (no keys: no tickets are issued or accepted until some are set); one reference. */
httpdns_h2o_ticket_store *httpdns_h2o_ticket_store_create(void);
/* Replaces the keys with `count` keys of HTTPDNS_H2O_TICKET_KEY_BYTES each (copied), the first
 * encrypting new tickets, every one decrypting; 0 on success. Any thread, atomically for handshakes. */
int httpdns_h2o_ticket_store_set(httpdns_h2o_ticket_store *store, const uint8_t *keys, size_t count);
void httpdns_h2o_ticket_store_release(httpdns_h2o_ticket_store *store);
/* Makes `tls` issue and accept tickets with the store's keys (it takes a reference); 0 on success. */
int httpdns_h2o_tls_use_ticket_store(httpdns_h2o_tls *tls, httpdns_h2o_ticket_store *store);

/* Request accessors: valid during the `request` callback only. */
void *httpdns_h2o_request_token(httpdns_h2o_request *request);
const char *httpdns_h2o_request_method(httpdns_h2o_request *request, size_t *length);
/* The request target as sent: path and query. */
const char *httpdns_h2o_request_target(httpdns_h2o_request *request, size_t *length);
/* Offset of '?' in the target, or -1. */
long httpdns_h2o_request_query_at(httpdns_h2o_request *request);
const char *httpdns_h2o_request_authority(httpdns_h2o_request *request, size_t *length);
/* 0x100, 0x101, 0x200. */
int httpdns_h2o_request_version(httpdns_h2o_request *request);
size_t httpdns_h2o_request_header_count(httpdns_h2o_request *request);
const char *httpdns_h2o_request_header_name(httpdns_h2o_request *request, size_t index, size_t *length);
const char *httpdns_h2o_request_header_value(httpdns_h2o_request *request, size_t index, size_t *length);
/* The body, or NULL when there was none. */
const void *httpdns_h2o_request_body(httpdns_h2o_request *request, size_t *length);
socklen_t httpdns_h2o_request_peer(httpdns_h2o_request *request, struct sockaddr_storage *address);
int httpdns_h2o_request_listener(httpdns_h2o_request *request);

/* Responses, from any thread. `headers` holds 2 × `header_count` strings back to back (name,
 * value, name, …) whose lengths are in `lengths`; they are copied.
 * `content_length` -1 lets h2o choose (chunked in HTTP/1.1). With `final` the body is the whole
 * response; without it, chunks follow through httpdns_h2o_post_chunk, each after a `proceed`. */
void httpdns_h2o_post_head(httpdns_h2o_server *server, void *token, int status, const void *headers,
                           const size_t *lengths, size_t header_count, long long content_length, const void *body,
                           size_t body_length, int final);
/* The next chunk of a streaming response; `final` ends it. */
void httpdns_h2o_post_chunk(httpdns_h2o_server *server, void *token, const void *bytes, size_t length, int final);
/* The answer to a message-stream message, copied; `bytes` NULL: no answer, and the connection
 * closes once the messages it took before are answered (a message that could not be read). */
void httpdns_h2o_post_stream_answer(httpdns_h2o_server *server, httpdns_h2o_stream_message *message, const void *bytes,
                                    size_t length);
/* Swift is done with a request without answering (for example after `proceed` said cancelled). */
void httpdns_h2o_post_release(httpdns_h2o_server *server, void *token);

#endif

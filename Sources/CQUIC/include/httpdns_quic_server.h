// The server half of DNS over QUIC (RFC 9250): `httpdns serve --listen quic://`. One UDP socket
// served by a thread of its own (see httpdns_quic_server.c for why not h2o's loops), ngtcp2 for QUIC
// and GnuTLS for its TLS 1.3 (ALPN "doq"). Each query (one client-initiated bidirectional stream:
// a two-byte length, the message, FIN) goes to the `message` callback; its answer comes back through
// httpdns_quic_server_post_answer from any thread and leaves on the same stream, framed the same
// way, then FIN.
#ifndef HTTPDNS_QUIC_SERVER_H
#define HTTPDNS_QUIC_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* DoQ error codes (RFC 9250 §4.3), sent as the application error of a CONNECTION_CLOSE or of a
 * stream's reset. */
enum {
    HTTPDNS_DOQ_NO_ERROR = 0x0,
    HTTPDNS_DOQ_INTERNAL_ERROR = 0x1,
    HTTPDNS_DOQ_PROTOCOL_ERROR = 0x2,
    HTTPDNS_DOQ_REQUEST_CANCELLED = 0x3,
    HTTPDNS_DOQ_EXCESSIVE_LOAD = 0x4,
};

/* Why the server refused work, for the `shed` callback (the values of HTTPDNS_H2O_SHED_*). */
enum {
    /* A connection closed at the drain's end (httpdns_quic_server_close_connections) with a query
     * in hand or part of one received. */
    HTTPDNS_QUIC_SHED_DRAIN = 3,
};

typedef struct httpdns_quic_server httpdns_quic_server;
/* A certificate and its key as GnuTLS credentials, shared by the connections made with them. */
typedef struct httpdns_quic_credentials httpdns_quic_credentials;
/* One query, alive on the C side until its answer is posted (httpdns_quic_server_post_answer), once. */
typedef struct httpdns_quic_message httpdns_quic_message;

typedef struct {
    void *context;
    /* A client's first packet asks for a new connection from `peer`: 1 keeps it, 0 refuses it (the
     * client reads CONNECTION_CLOSE with CONNECTION_REFUSED). Every kept connection is told `closed`
     * once. */
    int (*accepted)(void *context, const struct sockaddr *peer, socklen_t length);
    /* A kept connection closed (or began its closing period). */
    void (*closed)(void *context, const struct sockaddr *peer, socklen_t length);
    /* One whole query from `peer`; `bytes` (the DNS message, without the length) are valid during
     * this call only. Answer through httpdns_quic_server_post_answer, once, from any thread. */
    void (*message)(void *context, httpdns_quic_message *message, const void *bytes, size_t length,
                    const struct sockaddr *peer, socklen_t peer_length);
    /* Work refused, one of HTTPDNS_QUIC_SHED_*. */
    void (*shed)(void *context, int reason);
} httpdns_quic_callbacks;

typedef struct {
    /* QUIC max_idle_timeout: a connection with no packet for this long is gone (RFC 9000 §10.1). */
    uint64_t idle_timeout_ms;
    /* The handshake's deadline. */
    uint64_t handshake_timeout_ms;
    /* The drain: how long a connection with no query in hand must have been quiet before it is
     * closed with DOQ_NO_ERROR. */
    uint64_t drain_quiet_ms;
    /* Streams (queries) one connection may have open at once (initial_max_streams_bidi). */
    size_t max_streams;
} httpdns_quic_settings;

/* Credentials from PEM text (a chain and its key); NULL with a reason in `error`. One reference. */
httpdns_quic_credentials *httpdns_quic_credentials_create(const char *certificate_pem, const char *key_pem, char *error,
                                                          size_t error_size);
void httpdns_quic_credentials_release(httpdns_quic_credentials *credentials);

/* A server on the bound UDP socket `fd` (taken over), with `credentials` (a reference is taken);
 * NULL on failure (the socket is then closed). It runs once started. */
httpdns_quic_server *httpdns_quic_server_create(int fd, const httpdns_quic_settings *settings, httpdns_quic_callbacks callbacks,
                                                httpdns_quic_credentials *credentials);
/* Starts the server's thread; 0 on success, else an errno. */
int httpdns_quic_server_start(httpdns_quic_server *server);
/* New connections use `credentials` from now on (a reference is taken). Any thread. */
void httpdns_quic_server_set_credentials(httpdns_quic_server *server, httpdns_quic_credentials *credentials);
/* The answer to `message`, copied, sent on its stream with its length and then FIN. `bytes` NULL:
 * no answer; the connection is closed with `error_code` (one of HTTPDNS_DOQ_*). Any thread, once
 * per message; answers to connections gone are dropped. */
void httpdns_quic_server_post_answer(httpdns_quic_server *server, httpdns_quic_message *message, const void *bytes,
                                     size_t length, uint64_t error_code);
/* Begins the drain: new connections are refused; each open one is closed with DOQ_NO_ERROR once it
 * has no query in hand, every answer acknowledged, and no packet for drain_quiet_ms. Any thread. */
void httpdns_quic_server_stop_accepting(httpdns_quic_server *server);
/* Ends the drain: every connection still open is closed with DOQ_NO_ERROR; those with a query in
 * hand or part of one are reported to `shed`. Any thread. */
void httpdns_quic_server_close_connections(httpdns_quic_server *server);
/* Ends the thread and frees the server's connections and sockets. Its small record stays, so that an
 * answer posted afterwards is dropped safely. Once; not from the server's own thread or callbacks. */
void httpdns_quic_server_destroy(httpdns_quic_server *server);
/* Connections open (kept and not closed) right now. Any thread. */
int httpdns_quic_server_open_connections(httpdns_quic_server *server);

/* The framing of one DoQ stream (RFC 9250 §4.2), over what the stream has received so far, `fin`
 * nonzero once the client has closed its side: the length of the query when `bytes` hold all of it
 * (its two-byte length, then the message), -1 while more bytes are needed, -2 for a protocol error
 * (bytes past the message, FIN before its end, a message shorter than a DNS header, or a DNS
 * message ID other than 0, RFC 9250 §4.2.1). Pure, for tests and the fuzz target. */
long httpdns_quic_stream_frame(const void *bytes, size_t size, int fin);

#endif

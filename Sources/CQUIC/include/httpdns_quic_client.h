// The client half of DNS over QUIC (RFC 9250): one QUIC connection (ngtcp2 with its GnuTLS crypto
// back end) to one server, for `httpdns stub --upstream doq=` and the bench's load client.
//
// Nothing here blocks and nothing here starts a thread: the caller owns the connection from one
// thread, polls `httpdns_quic_client_fd` for reading until `httpdns_quic_client_timeout_ms`, and
// calls `httpdns_quic_client_advance` after each poll. Each query goes on a client-initiated
// bidirectional stream of its own, framed with a 2-byte length and closed with FIN (RFC 9250 §4.2);
// the message ID is written as 0 on the wire (§4.2.1). Many streams are in flight at once; queries
// beyond the server's stream limit wait in the connection until it grants more.
//
// Peer verification is always on: the chain against the trust given, the name against the
// certificate (also sent as SNI), ALPN "doq" required; there is deliberately no way to turn any of
// it off.
#ifndef HTTPDNS_QUIC_CLIENT_H
#define HTTPDNS_QUIC_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/// The certificates a client trusts, shared by its connections (read-only once made).
typedef struct httpdns_quic_client_trust httpdns_quic_client_trust;

/// One QUIC connection of a DoQ client, owned by one thread at a time.
typedef struct httpdns_quic_client httpdns_quic_client;

/// Trust from the PEM file `ca_file`, else the PEM data `ca_pem` (`ca_pem_len` bytes), else the
/// system store. NULL on failure, with the reason in `error`.
httpdns_quic_client_trust *httpdns_quic_client_trust_new(const char *ca_file, const char *ca_pem, size_t ca_pem_len,
                                                         char *error, size_t error_len);

void httpdns_quic_client_trust_free(httpdns_quic_client_trust *trust);

/// Starts a connection to `server` (a non-blocking UDP socket connected to it), verifying
/// `server_name`. It closes itself after `idle_timeout_ms` without traffic (the smaller of this and
/// the server's idle timeout, RFC 9000 §10.1). `trust` must outlive it. NULL on failure, with the
/// reason in `error`.
httpdns_quic_client *httpdns_quic_client_new(const httpdns_quic_client_trust *trust, const struct sockaddr *server,
                                             socklen_t server_len, const char *server_name, uint64_t idle_timeout_ms,
                                             char *error, size_t error_len);

/// Sends CONNECTION_CLOSE when the connection is still up (no waiting) and frees it; answers not
/// taken are dropped.
void httpdns_quic_client_free(httpdns_quic_client *client);

/// The UDP socket to poll for reading.
int httpdns_quic_client_fd(const httpdns_quic_client *client);

/// Offers the session an earlier connection's ticket gave (`httpdns_quic_client_take_session`) for
/// TLS 1.3 resumption (no 0-RTT: queries wait for the handshake). Before the first advance. 0, or -1
/// when GnuTLS does not take it (the handshake is then a full one).
int httpdns_quic_client_resume(httpdns_quic_client *client, const uint8_t *session, size_t length);

/// Takes the session of the newest ticket the server sent since the last call: its length (copied
/// into `buffer`), or -1 when there is none new (or it is longer than `capacity`).
long httpdns_quic_client_take_session(httpdns_quic_client *client, uint8_t *buffer, size_t capacity);

/// 1 when the handshake is done and resumed an earlier session, else 0.
int httpdns_quic_client_is_resumed(const httpdns_quic_client *client);

/// Milliseconds until `httpdns_quic_client_advance` must run even if nothing arrives (the
/// connection's next timer), at most 60,000.
int httpdns_quic_client_timeout_ms(const httpdns_quic_client *client);

/// 1 once the handshake is done (the certificate accepted), else 0.
int httpdns_quic_client_is_open(const httpdns_quic_client *client);

/// Queues the DNS message `message` (`length` bytes, 12 to 65,535; its ID is written as 0) to go
/// on a new stream; `tag` names it in the answer. 0, or -1 when the message cannot be queued (its
/// length, memory, a connection that is over).
int httpdns_quic_client_send(httpdns_quic_client *client, const uint8_t *message, size_t length, uint64_t tag);

/// Gives up the query `tag` (its stream is reset, its answer never reported). 0, or -1 when no
/// such query is held.
int httpdns_quic_client_cancel(httpdns_quic_client *client, uint64_t tag);

/// Moves the connection on: reads what arrived when `readable`, runs the timers that are due,
/// opens streams for queued queries and writes. 0, or -1 when the connection is over (refused,
/// the handshake or certificate failed, closed by the server, idle): its reason is then
/// `httpdns_quic_client_error`, and the queries it held are lost (the caller decides what to do
/// with them).
int httpdns_quic_client_advance(httpdns_quic_client *client, int readable);

/// Takes the next result: the answer's length (copied into `buffer`, its ID as the server sent it),
/// with `*tag` its query; -2 when the query `*tag` failed (its stream was reset or ended without a
/// whole answer); -1 when there is none. `capacity` of 65,535 holds any answer; a longer answer
/// than `capacity` counts as failed.
long httpdns_quic_client_take(httpdns_quic_client *client, uint64_t *tag, uint8_t *buffer, size_t capacity);

/// Queries held: queued, or sent and not yet answered.
size_t httpdns_quic_client_pending(const httpdns_quic_client *client);

/// Why the connection is over (empty while it is not).
const char *httpdns_quic_client_error(const httpdns_quic_client *client);

/// How the client reads one answer stream (RFC 9250 §4.2), from the `length` bytes received so far
/// (`fin`: the stream has ended): 1, a whole answer, its DNS message of `*message_length` bytes at
/// offset 2; 0, more is needed; -1, broken (bytes beyond its length prefix, a length shorter than a
/// DNS header, more than 65,537 bytes, or ended before the whole message). The client decides at
/// the first 1 or -1. Pure, for the fuzz target and tests.
int httpdns_quic_client_stream_state(const uint8_t *bytes, size_t length, int fin, size_t *message_length);

#endif

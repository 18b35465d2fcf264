// DNS over QUIC, the server half (RFC 9250): ngtcp2 0.12 with its GnuTLS crypto back end.
//
// Where it runs: a thread of its own with epoll, not h2o's loops. h2o 2.2's evloop reads a socket
// through its stream buffer (read(2) into one growing buffer, no datagram boundaries, no peer
// address), so a UDP socket cannot be served through it without reaching into its internals, and
// CQUIC would have to link h2o. ngtcp2 also wants a timer per connection (loss recovery, pacing,
// idle), which one timerfd set to the earliest expiry gives here. The answer path stays DoT's: each
// query goes to the same callback shape as h2o's message streams (HTTPServing posts it as a POST
// of /dns-query), and answers posted from Swift's threads come back through a mutex-held queue and
// an eventfd that wakes the loop.
//
// Bounds: connections in total and per client are the HTTP server's own (the `accepted` callback);
// a connection opens at most max_streams queries at once (initial_max_streams_bidi, given back as
// each stream closes); a stream takes at most 2 + 65,535 bytes (its flow-control window, never
// extended: one query per stream), and a connection's unread bytes at most QUIC_CONNECTION_WINDOW
// (extended only as whole queries are handed over); an idle connection goes at max_idle_timeout and
// a handshake at its deadline; past QUIC_RETRY_ABOVE handshakes in progress a new client must
// prove its address with a Retry first. Anything else a stream carries closes the connection with
// DOQ_PROTOCOL_ERROR.
#define _GNU_SOURCE
#include "httpdns_quic_server.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* The length of the connection IDs this server chooses. */
#define QUIC_SCID_LENGTH 18
/* Most bytes one stream carries: a two-byte length and a DNS message of at most 65,535 bytes. */
#define QUIC_STREAM_WINDOW (2 + 65535)
/* Bytes of unfinished queries one connection may hold (all its streams together). */
#define QUIC_CONNECTION_WINDOW (256 * 1024)
/* Buckets of the connection ID table (chained). */
#define QUIC_CID_BUCKETS 4096
/* Connection IDs one connection registers at most (ours and the client's first). */
#define QUIC_MAX_CIDS 16
/* Datagrams read per wake before the others get their turn. */
#define QUIC_READ_BATCH 64
/* Largest datagram written. */
#define QUIC_MAX_PACKET 1452
/* Handshakes in progress from which a new client must first prove its address with a Retry
 * (RFC 9000 §8.1.2): a flood of Initials from forged addresses then costs a small packet each,
 * not a connection and a TLS session; an ordinary burst of new clients costs no extra round trip. */
#define QUIC_RETRY_ABOVE 64
/* How long a Retry token is good for. */
#define QUIC_RETRY_TOKEN_LIFETIME (10 * NGTCP2_SECONDS)

/* ---- Credentials ---- */

struct httpdns_quic_credentials {
    atomic_int references;
    gnutls_certificate_credentials_t certificate;
};

httpdns_quic_credentials *httpdns_quic_credentials_create(const char *certificate_pem, const char *key_pem, char *error,
                                                          size_t error_size) {
    httpdns_quic_credentials *credentials = calloc(1, sizeof *credentials);
    if (credentials == NULL) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    atomic_init(&credentials->references, 1);
    int status = gnutls_certificate_allocate_credentials(&credentials->certificate);
    if (status < 0) {
        snprintf(error, error_size, "%s", gnutls_strerror(status));
        free(credentials);
        return NULL;
    }
    gnutls_datum_t certificate = {(unsigned char *)certificate_pem, (unsigned int)strlen(certificate_pem)};
    gnutls_datum_t key = {(unsigned char *)key_pem, (unsigned int)strlen(key_pem)};
    status = gnutls_certificate_set_x509_key_mem2(credentials->certificate, &certificate, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (status < 0) {
        snprintf(error, error_size, "QUIC certificate: %s", gnutls_strerror(status));
        gnutls_certificate_free_credentials(credentials->certificate);
        free(credentials);
        return NULL;
    }
    return credentials;
}

static void credentials_retain(httpdns_quic_credentials *credentials) {
    atomic_fetch_add_explicit(&credentials->references, 1, memory_order_relaxed);
}

void httpdns_quic_credentials_release(httpdns_quic_credentials *credentials) {
    if (credentials == NULL) return;
    if (atomic_fetch_sub_explicit(&credentials->references, 1, memory_order_acq_rel) == 1) {
        gnutls_certificate_free_credentials(credentials->certificate);
        free(credentials);
    }
}

/* ---- The pure framing ---- */

long httpdns_quic_stream_frame(const void *bytes, size_t size, int fin) {
    const uint8_t *p = bytes;
    if (size < 2) return fin ? -2 : -1;
    size_t length = (size_t)p[0] << 8 | p[1];
    if (length < 12) return -2;
    // The DNS message ID (the message's first two bytes) must be 0 (RFC 9250 §4.2.1).
    if (size >= 3 && p[2] != 0) return -2;
    if (size >= 4 && p[3] != 0) return -2;
    if (size > 2 + length) return -2;
    if (size < 2 + length) return fin ? -2 : -1;
    return (long)length;
}

/* ---- Connections and streams ---- */

typedef struct quic_stream quic_stream;
typedef struct quic_connection quic_connection;

enum { STREAM_READING, STREAM_HANDED, STREAM_ANSWERED };

struct quic_stream {
    quic_stream *next;
    int64_t id;
    int state;
    /* What has arrived (STREAM_READING). */
    uint8_t *in;
    size_t in_size, in_capacity;
    int fin;
    /* The framed answer (STREAM_ANSWERED): kept until the stream closes (ngtcp2 may resend it). */
    uint8_t *out;
    size_t out_size, out_sent;
    /* The write round that found this stream blocked. */
    uint64_t skipped_round;
};

struct quic_connection {
    quic_connection *next_live;
    quic_connection **previous_live;
    httpdns_quic_server *server;
    uint32_t slot, generation;
    ngtcp2_conn *conn;
    gnutls_session_t session;
    ngtcp2_crypto_conn_ref reference;
    httpdns_quic_credentials *credentials;
    /* Where the client's packets come from now (it may move: NAT rebinding, RFC 9000 §9). */
    struct sockaddr_storage peer;
    socklen_t peer_length;
    /* The address `accepted` kept the connection for, which `closed` must name again. */
    struct sockaddr_storage origin;
    socklen_t origin_length;
    quic_stream *streams;
    size_t stream_count;
    /* Queries handed to Swift and not answered yet. */
    size_t in_hand;
    /* The error a callback asked the connection to close with (0: none). */
    uint64_t application_error;
    int has_application_error;
    /* Told `closed` already (closing or draining, or freed). */
    int reported_closed;
    /* The TLS handshake is done (else it counts in the server's `handshaking`). */
    int handshake_done;
    /* In the closing or draining period: the close packet to repeat, and when to forget it. */
    int closing;
    uint8_t close_packet[QUIC_MAX_PACKET];
    size_t close_packet_size;
    uint64_t forget_at;
    uint64_t last_received;
    /* In the server's list of connections to write this turn of the loop. */
    int dirty;
    quic_connection *next_dirty;
    /* The connection IDs that name this connection in the table. */
    ngtcp2_cid cids[QUIC_MAX_CIDS];
    size_t cid_count;
};

struct httpdns_quic_message {
    httpdns_quic_message *next;
    uint32_t slot, generation;
    int64_t stream_id;
    uint8_t *answer;
    size_t answer_size;
    int has_answer;
    uint64_t error_code;
};

typedef struct cid_entry {
    struct cid_entry *next;
    ngtcp2_cid cid;
    quic_connection *connection;
} cid_entry;

struct httpdns_quic_server {
    int fd, epoll, wake, timer;
    httpdns_quic_settings settings;
    httpdns_quic_callbacks callbacks;
    pthread_t thread;
    int started;
    struct sockaddr_storage local;
    socklen_t local_length;
    uint8_t static_secret[32];
    /* The key of the TLS session tickets this process issues (GnuTLS's format), so that a client
     * coming back resumes its session without a full handshake (RFC 9250 §5.5.1). */
    gnutls_datum_t ticket_key;

    pthread_mutex_t lock;
    /* Under `lock`: answers posted and not yet taken, the credentials for new connections, requests. */
    httpdns_quic_message *posted_head, *posted_tail;
    httpdns_quic_credentials *credentials;
    int stop_requested, close_requested, end_requested;
    /* Destroyed: what is posted now is dropped. */
    int ended;

    atomic_int open;
    /* Loop thread only from here on. */
    int stopping;
    quic_connection *live;
    quic_connection **slots;
    uint32_t *generations;
    uint32_t slot_count;
    uint32_t *free_slots;
    uint32_t free_count;
    cid_entry **cid_table;
    uint64_t write_round;
    /* Connections whose handshake is in progress. */
    size_t handshaking;
    /* Connections with something to write (or a deadline that moved) this turn. */
    quic_connection *dirty;
    /* When the timer is set to fire (UINT64_MAX: not set). */
    uint64_t armed_at;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

/* Queues the connection for this turn's writes and deadline (once per turn). */
static void mark_dirty(quic_connection *connection) {
    if (connection->dirty) return;
    connection->dirty = 1;
    connection->next_dirty = connection->server->dirty;
    connection->server->dirty = connection;
}

static uint32_t cid_hash(const uint8_t *data, size_t length) {
    uint32_t h = 0x811C9DC5u;
    for (size_t i = 0; i < length; i++) {
        h ^= data[i];
        h *= 0x01000193u;
    }
    return h % QUIC_CID_BUCKETS;
}

static quic_connection *cid_find(httpdns_quic_server *server, const uint8_t *data, size_t length) {
    for (cid_entry *entry = server->cid_table[cid_hash(data, length)]; entry != NULL; entry = entry->next) {
        if (entry->cid.datalen == length && memcmp(entry->cid.data, data, length) == 0) return entry->connection;
    }
    return NULL;
}

static int cid_add(quic_connection *connection, const ngtcp2_cid *cid) {
    httpdns_quic_server *server = connection->server;
    if (connection->cid_count == QUIC_MAX_CIDS || cid_find(server, cid->data, cid->datalen) != NULL) return -1;
    cid_entry *entry = malloc(sizeof *entry);
    if (entry == NULL) return -1;
    entry->cid = *cid;
    entry->connection = connection;
    uint32_t bucket = cid_hash(cid->data, cid->datalen);
    entry->next = server->cid_table[bucket];
    server->cid_table[bucket] = entry;
    connection->cids[connection->cid_count++] = *cid;
    return 0;
}

static void cid_remove(quic_connection *connection, const ngtcp2_cid *cid) {
    httpdns_quic_server *server = connection->server;
    for (cid_entry **at = &server->cid_table[cid_hash(cid->data, cid->datalen)]; *at != NULL; at = &(*at)->next) {
        cid_entry *entry = *at;
        if (entry->connection == connection && entry->cid.datalen == cid->datalen && memcmp(entry->cid.data, cid->data, cid->datalen) == 0) {
            *at = entry->next;
            free(entry);
            break;
        }
    }
    for (size_t i = 0; i < connection->cid_count; i++) {
        if (connection->cids[i].datalen == cid->datalen && memcmp(connection->cids[i].data, cid->data, cid->datalen) == 0) {
            connection->cids[i] = connection->cids[--connection->cid_count];
            break;
        }
    }
}

static quic_stream *stream_find(quic_connection *connection, int64_t id) {
    for (quic_stream *stream = connection->streams; stream != NULL; stream = stream->next) {
        if (stream->id == id) return stream;
    }
    return NULL;
}

static void stream_free(quic_stream *stream) {
    free(stream->in);
    free(stream->out);
    free(stream);
}

/* Tells Swift once that the connection is gone (it counts open connections per client). */
static void report_closed(quic_connection *connection) {
    if (connection->reported_closed) return;
    connection->reported_closed = 1;
    if (!connection->handshake_done) {
        connection->handshake_done = 1;
        connection->server->handshaking--;
    }
    atomic_fetch_sub_explicit(&connection->server->open, 1, memory_order_relaxed);
    if (connection->server->callbacks.closed != NULL) {
        connection->server->callbacks.closed(connection->server->callbacks.context, (const struct sockaddr *)&connection->origin,
                                             connection->origin_length);
    }
}

static void connection_free(quic_connection *connection) {
    httpdns_quic_server *server = connection->server;
    report_closed(connection);
    if (connection->dirty) {
        for (quic_connection **at = &server->dirty; *at != NULL; at = &(*at)->next_dirty) {
            if (*at == connection) {
                *at = connection->next_dirty;
                break;
            }
        }
    }
    while (connection->cid_count > 0) {
        ngtcp2_cid cid = connection->cids[0];
        cid_remove(connection, &cid);
    }
    *connection->previous_live = connection->next_live;
    if (connection->next_live != NULL) connection->next_live->previous_live = connection->previous_live;
    server->slots[connection->slot] = NULL;
    server->generations[connection->slot]++;
    server->free_slots[server->free_count++] = connection->slot;
    if (connection->conn != NULL) ngtcp2_conn_del(connection->conn);
    if (connection->session != NULL) gnutls_deinit(connection->session);
    httpdns_quic_credentials_release(connection->credentials);
    while (connection->streams != NULL) {
        quic_stream *stream = connection->streams;
        connection->streams = stream->next;
        stream_free(stream);
    }
    free(connection);
}

static void send_packet(httpdns_quic_server *server, const struct sockaddr *peer, socklen_t peer_length, const uint8_t *data,
                        size_t size) {
    // A full send buffer drops the datagram: QUIC's loss recovery sends it again.
    ssize_t sent;
    do {
        sent = sendto(server->fd, data, size, MSG_DONTWAIT, peer, peer_length);
    } while (sent < 0 && errno == EINTR);
}

/* Enters the closing period with `error`: writes CONNECTION_CLOSE once, repeats it to what the
 * client sends for three PTOs, then forgets the connection. */
static void connection_close(quic_connection *connection, const ngtcp2_connection_close_error *error) {
    if (connection->closing) return;
    connection->closing = 1;
    mark_dirty(connection);
    uint64_t now = now_ns();
    connection->forget_at = now + 3 * ngtcp2_conn_get_pto(connection->conn);
    report_closed(connection);
    if (error->type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT_IDLE_CLOSE ||
        ngtcp2_conn_is_in_draining_period(connection->conn) || ngtcp2_conn_is_in_closing_period(connection->conn)) {
        return;
    }
    ngtcp2_path_storage path;
    ngtcp2_path_storage_zero(&path);
    ngtcp2_pkt_info info;
    ngtcp2_ssize written = ngtcp2_conn_write_connection_close(connection->conn, &path.path, &info, connection->close_packet,
                                                              sizeof connection->close_packet, error, now);
    if (written > 0) {
        connection->close_packet_size = (size_t)written;
        send_packet(connection->server, (const struct sockaddr *)&connection->peer, connection->peer_length, connection->close_packet,
                    connection->close_packet_size);
    }
}

static void connection_close_application(quic_connection *connection, uint64_t code) {
    ngtcp2_connection_close_error error;
    ngtcp2_connection_close_error_default(&error);
    ngtcp2_connection_close_error_set_application_error(&error, code, NULL, 0);
    connection_close(connection, &error);
}

/* Closes the connection after an ngtcp2 error `status` (a callback's own error when it set one). */
static void connection_fail(quic_connection *connection, int status) {
    mark_dirty(connection);
    if (status == NGTCP2_ERR_DRAINING || status == NGTCP2_ERR_CLOSING) {
        // The client closed: no packet of ours is due (RFC 9000 §10.2.2).
        connection->closing = 1;
        connection->forget_at = now_ns() + 3 * ngtcp2_conn_get_pto(connection->conn);
        report_closed(connection);
        return;
    }
    if (status == NGTCP2_ERR_DROP_CONN || status == NGTCP2_ERR_IDLE_CLOSE) {
        connection->closing = 1;
        connection->forget_at = 0;
        report_closed(connection);
        return;
    }
    ngtcp2_connection_close_error error;
    ngtcp2_connection_close_error_default(&error);
    if (connection->has_application_error) {
        ngtcp2_connection_close_error_set_application_error(&error, connection->application_error, NULL, 0);
    } else if (status == NGTCP2_ERR_CRYPTO) {
        ngtcp2_connection_close_error_set_transport_error_tls_alert(&error, ngtcp2_conn_get_tls_alert(connection->conn), NULL, 0);
    } else {
        ngtcp2_connection_close_error_set_transport_error_liberr(&error, status, NULL, 0);
    }
    connection_close(connection, &error);
}

/* Writes what the connection has to send: answers (with FIN), acknowledgements, retransmissions. */
static void connection_write(quic_connection *connection) {
    if (connection->closing) return;
    httpdns_quic_server *server = connection->server;
    uint64_t ts = now_ns();
    uint64_t round = ++server->write_round;
    uint8_t packet[QUIC_MAX_PACKET];
    size_t limit = ngtcp2_conn_get_max_tx_udp_payload_size(connection->conn);
    if (limit > sizeof packet) limit = sizeof packet;
    ngtcp2_path_storage path;
    ngtcp2_path_storage_zero(&path);
    for (int packets = 0; packets < 256;) {
        quic_stream *stream = connection->streams;
        while (stream != NULL && !(stream->state == STREAM_ANSWERED && stream->out_sent < stream->out_size && stream->skipped_round != round)) {
            stream = stream->next;
        }
        ngtcp2_vec data;
        ngtcp2_ssize consumed = -1;
        ngtcp2_pkt_info info;
        uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
        if (stream != NULL) {
            data.base = stream->out + stream->out_sent;
            data.len = stream->out_size - stream->out_sent;
            flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
        }
        ngtcp2_ssize written = ngtcp2_conn_writev_stream(connection->conn, &path.path, &info, packet, limit, &consumed, flags,
                                                         stream != NULL ? stream->id : -1, stream != NULL ? &data : NULL,
                                                         stream != NULL ? 1 : 0, ts);
        if (written < 0) {
            if (written == NGTCP2_ERR_WRITE_MORE) {
                if (stream != NULL && consumed >= 0) stream->out_sent += (size_t)consumed;
                continue;
            }
            if (stream != NULL && (written == NGTCP2_ERR_STREAM_DATA_BLOCKED || written == NGTCP2_ERR_STREAM_SHUT_WR ||
                                   written == NGTCP2_ERR_STREAM_NOT_FOUND)) {
                stream->skipped_round = round;
                if (written != NGTCP2_ERR_STREAM_DATA_BLOCKED) stream->out_sent = stream->out_size;
                continue;
            }
            connection_fail(connection, (int)written);
            return;
        }
        if (stream != NULL && consumed >= 0) stream->out_sent += (size_t)consumed;
        if (written == 0) break;
        send_packet(server, path.path.remote.addr, (socklen_t)path.path.remote.addrlen, packet, (size_t)written);
        packets++;
    }
    ngtcp2_conn_update_pkt_tx_time(connection->conn, ts);
}

/* ---- ngtcp2 callbacks ---- */

static void random_bytes(uint8_t *dest, size_t length, const ngtcp2_rand_ctx *context) {
    (void)context;
    gnutls_rnd(GNUTLS_RND_NONCE, dest, length);
}

static int get_new_connection_id(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t length, void *user_data) {
    (void)conn;
    quic_connection *connection = user_data;
    for (int attempt = 0; attempt < 4; attempt++) {
        if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, length) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
        cid->datalen = length;
        if (cid_find(connection->server, cid->data, length) == NULL) break;
    }
    if (ngtcp2_crypto_generate_stateless_reset_token(token, connection->server->static_secret, sizeof connection->server->static_secret,
                                                     cid) != 0) {
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    if (cid_add(connection, cid) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int remove_connection_id(ngtcp2_conn *conn, const ngtcp2_cid *cid, void *user_data) {
    (void)conn;
    cid_remove(user_data, cid);
    return 0;
}

static int stream_open(ngtcp2_conn *conn, int64_t stream_id, void *user_data) {
    quic_connection *connection = user_data;
    quic_stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL) return NGTCP2_ERR_CALLBACK_FAILURE;
    stream->id = stream_id;
    stream->next = connection->streams;
    connection->streams = stream;
    connection->stream_count++;
    ngtcp2_conn_set_stream_user_data(conn, stream_id, stream);
    return 0;
}

static int protocol_error(quic_connection *connection) {
    connection->application_error = HTTPDNS_DOQ_PROTOCOL_ERROR;
    connection->has_application_error = 1;
    return NGTCP2_ERR_CALLBACK_FAILURE;
}

static int recv_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id, uint64_t offset, const uint8_t *data,
                            size_t length, void *user_data, void *stream_user_data) {
    (void)offset;
    quic_connection *connection = user_data;
    quic_stream *stream = stream_user_data;
    // Only client-initiated bidirectional streams carry queries (no unidirectional ones are allowed).
    if (stream == NULL || !ngtcp2_is_bidi_stream(stream_id) || (stream_id & 0x1) != 0) return protocol_error(connection);
    int fin = (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0;
    if (stream->state != STREAM_READING) {
        // The query was whole: only its FIN may follow.
        return length == 0 ? 0 : protocol_error(connection);
    }
    if (length > 0) {
        if (stream->in_size + length > QUIC_STREAM_WINDOW) return protocol_error(connection);
        if (stream->in_size + length > stream->in_capacity) {
            size_t capacity = stream->in_capacity == 0 ? 512 : stream->in_capacity;
            while (capacity < stream->in_size + length) capacity *= 2;
            if (capacity > QUIC_STREAM_WINDOW) capacity = QUIC_STREAM_WINDOW;
            uint8_t *grown = realloc(stream->in, capacity);
            if (grown == NULL) {
                connection->application_error = HTTPDNS_DOQ_INTERNAL_ERROR;
                connection->has_application_error = 1;
                return NGTCP2_ERR_CALLBACK_FAILURE;
            }
            stream->in = grown;
            stream->in_capacity = capacity;
        }
        memcpy(stream->in + stream->in_size, data, length);
        stream->in_size += length;
    }
    stream->fin |= fin;
    long message_length = httpdns_quic_stream_frame(stream->in, stream->in_size, stream->fin);
    if (message_length == -2) return protocol_error(connection);
    if (message_length < 0) return 0;
    httpdns_quic_message *message = calloc(1, sizeof *message);
    if (message == NULL) {
        connection->application_error = HTTPDNS_DOQ_INTERNAL_ERROR;
        connection->has_application_error = 1;
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    message->slot = connection->slot;
    message->generation = connection->generation;
    message->stream_id = stream_id;
    stream->state = STREAM_HANDED;
    connection->in_hand++;
    httpdns_quic_server *server = connection->server;
    server->callbacks.message(server->callbacks.context, message, stream->in + 2, (size_t)message_length,
                              (const struct sockaddr *)&connection->peer, connection->peer_length);
    // The connection's window opens again by what this query took; its stream's never does.
    ngtcp2_conn_extend_max_offset(conn, stream->in_size);
    free(stream->in);
    stream->in = NULL;
    stream->in_size = stream->in_capacity = 0;
    return 0;
}

static int stream_close(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id, uint64_t app_error_code, void *user_data,
                        void *stream_user_data) {
    (void)flags, (void)app_error_code;
    quic_connection *connection = user_data;
    quic_stream *stream = stream_user_data;
    if (stream == NULL) return 0;
    for (quic_stream **at = &connection->streams; *at != NULL; at = &(*at)->next) {
        if (*at == stream) {
            *at = stream->next;
            break;
        }
    }
    connection->stream_count--;
    if (stream->state == STREAM_READING && stream->in_size > 0) {
        // Its bytes count against the connection's window no longer.
        ngtcp2_conn_extend_max_offset(conn, stream->in_size);
    }
    stream_free(stream);
    // A client-initiated stream gone: the client may open another.
    if ((stream_id & 0x1) == 0) ngtcp2_conn_extend_max_streams_bidi(conn, 1);
    return 0;
}

static int stream_reset(ngtcp2_conn *conn, int64_t stream_id, uint64_t final_size, uint64_t app_error_code, void *user_data,
                        void *stream_user_data) {
    (void)final_size, (void)app_error_code, (void)user_data, (void)stream_user_data;
    // The client gave up on its query: the answer, if it comes, has nowhere to go.
    ngtcp2_conn_shutdown_stream(conn, stream_id, HTTPDNS_DOQ_REQUEST_CANCELLED);
    return 0;
}

static int handshake_completed(ngtcp2_conn *conn, void *user_data) {
    (void)conn;
    quic_connection *connection = user_data;
    if (!connection->handshake_done) {
        connection->handshake_done = 1;
        connection->server->handshaking--;
    }
    // One session ticket, for the client's next connection (a failure costs only that).
    if (connection->server->ticket_key.data != NULL) (void)gnutls_session_ticket_send(connection->session, 1, 0);
    return 0;
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *reference) {
    quic_connection *connection = reference->user_data;
    return connection->conn;
}

/* ---- Accepting ---- */

static uint32_t reserved_version(void) {
    uint32_t value;
    gnutls_rnd(GNUTLS_RND_NONCE, &value, sizeof value);
    return (value & 0xf0f0f0f0u) | 0x0a0a0a0au;
}

static void send_version_negotiation(httpdns_quic_server *server, const ngtcp2_version_cid *version, const struct sockaddr *peer,
                                     socklen_t peer_length) {
    uint8_t packet[QUIC_MAX_PACKET];
    uint32_t versions[2] = {reserved_version(), NGTCP2_PROTO_VER_V1};
    uint8_t unused;
    gnutls_rnd(GNUTLS_RND_NONCE, &unused, 1);
    ngtcp2_ssize written = ngtcp2_pkt_write_version_negotiation(packet, sizeof packet, unused, version->scid, version->scidlen,
                                                                version->dcid, version->dcidlen, versions, 2);
    if (written > 0) send_packet(server, peer, peer_length, packet, (size_t)written);
}

static void send_refusal(httpdns_quic_server *server, const ngtcp2_pkt_hd *header, const struct sockaddr *peer, socklen_t peer_length,
                         uint64_t code) {
    uint8_t packet[QUIC_MAX_PACKET];
    ngtcp2_ssize written =
        ngtcp2_crypto_write_connection_close(packet, sizeof packet, header->version, &header->scid, &header->dcid, code, NULL, 0);
    if (written > 0) send_packet(server, peer, peer_length, packet, (size_t)written);
}

/* A Retry (RFC 9000 §17.2.5): the client comes back with a token that proves its address. */
static void send_retry(httpdns_quic_server *server, const ngtcp2_pkt_hd *header, const struct sockaddr *peer, socklen_t peer_length) {
    ngtcp2_cid scid;
    scid.datalen = QUIC_SCID_LENGTH;
    gnutls_rnd(GNUTLS_RND_NONCE, scid.data, scid.datalen);
    uint8_t token[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN];
    ngtcp2_ssize token_length = ngtcp2_crypto_generate_retry_token(token, server->static_secret, sizeof server->static_secret,
                                                                   header->version, (const ngtcp2_sockaddr *)peer, peer_length, &scid,
                                                                   &header->dcid, now_ns());
    if (token_length < 0) return;
    uint8_t packet[QUIC_MAX_PACKET];
    ngtcp2_ssize written = ngtcp2_crypto_write_retry(packet, sizeof packet, header->version, &header->scid, &scid, &header->dcid, token,
                                                     (size_t)token_length);
    if (written > 0) send_packet(server, peer, peer_length, packet, (size_t)written);
}

static int session_new(quic_connection *connection, httpdns_quic_credentials *credentials) {
    if (gnutls_init(&connection->session, GNUTLS_SERVER | GNUTLS_NO_AUTO_SEND_TICKET) != 0) {
        connection->session = NULL;
        return -1;
    }
    if (gnutls_priority_set_direct(connection->session,
                                   "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
                                   "+AES-128-CCM:%DISABLE_TLS13_COMPAT_MODE",
                                   NULL) != 0) {
        return -1;
    }
    if (connection->server->ticket_key.data != NULL &&
        gnutls_session_ticket_enable_server(connection->session, &connection->server->ticket_key) != 0) {
        return -1;
    }
    if (ngtcp2_crypto_gnutls_configure_server_session(connection->session) != 0) return -1;
    gnutls_session_set_ptr(connection->session, &connection->reference);
    if (gnutls_credentials_set(connection->session, GNUTLS_CRD_CERTIFICATE, credentials->certificate) != 0) return -1;
    // RFC 9250 §4.1.1: "doq"; a client offering no such protocol is refused.
    gnutls_datum_t alpn = {(unsigned char *)"doq", 3};
    if (gnutls_alpn_set_protocols(connection->session, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0) return -1;
    return 0;
}

static quic_connection *connection_make(httpdns_quic_server *server, const ngtcp2_pkt_hd *header, const ngtcp2_cid *retried,
                                        const struct sockaddr *peer, socklen_t peer_length, int *reported);

/* A connection for a client's first Initial, kept by `accepted`; NULL (and `closed` told) when it
 * cannot be made. */
static quic_connection *connection_new(httpdns_quic_server *server, const ngtcp2_pkt_hd *header, const ngtcp2_cid *retried,
                                       const struct sockaddr *peer, socklen_t peer_length) {
    int reported = 0;
    quic_connection *connection = NULL;
    if (server->free_count == 0) {
        uint32_t count = server->slot_count == 0 ? 64 : server->slot_count * 2;
        quic_connection **slots = realloc(server->slots, count * sizeof *slots);
        if (slots == NULL) goto refused;
        server->slots = slots;
        uint32_t *generations = realloc(server->generations, count * sizeof *generations);
        if (generations == NULL) goto refused;
        server->generations = generations;
        uint32_t *free_slots = realloc(server->free_slots, count * sizeof *free_slots);
        if (free_slots == NULL) goto refused;
        server->free_slots = free_slots;
        for (uint32_t slot = count; slot > server->slot_count; slot--) {
            server->slots[slot - 1] = NULL;
            server->generations[slot - 1] = 0;
            server->free_slots[server->free_count++] = slot - 1;
        }
        server->slot_count = count;
    }
    connection = connection_make(server, header, retried, peer, peer_length, &reported);
refused:
    if (connection == NULL && !reported && server->callbacks.closed != NULL) {
        server->callbacks.closed(server->callbacks.context, peer, peer_length);
    }
    return connection;
}

/* `retried`: the client's first Destination Connection ID when it came back after a Retry. */
static quic_connection *connection_make(httpdns_quic_server *server, const ngtcp2_pkt_hd *header, const ngtcp2_cid *retried,
                                        const struct sockaddr *peer, socklen_t peer_length, int *reported) {
    if (server->free_count == 0) return NULL;
    quic_connection *connection = calloc(1, sizeof *connection);
    if (connection == NULL) return NULL;
    connection->server = server;
    connection->slot = server->free_slots[--server->free_count];
    connection->generation = server->generations[connection->slot];
    server->slots[connection->slot] = connection;
    connection->next_live = server->live;
    if (server->live != NULL) server->live->previous_live = &connection->next_live;
    connection->previous_live = &server->live;
    server->live = connection;
    memcpy(&connection->peer, peer, peer_length);
    connection->peer_length = peer_length;
    memcpy(&connection->origin, peer, peer_length);
    connection->origin_length = peer_length;
    connection->reference.get_conn = get_conn;
    connection->reference.user_data = connection;
    connection->last_received = now_ns();
    atomic_fetch_add_explicit(&server->open, 1, memory_order_relaxed);
    server->handshaking++;

    pthread_mutex_lock(&server->lock);
    httpdns_quic_credentials *credentials = server->credentials;
    credentials_retain(credentials);
    pthread_mutex_unlock(&server->lock);
    connection->credentials = credentials;

    ngtcp2_cid scid;
    scid.datalen = QUIC_SCID_LENGTH;
    do {
        gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
    } while (cid_find(server, scid.data, scid.datalen) != NULL);

    ngtcp2_callbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    callbacks.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
    callbacks.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    callbacks.encrypt = ngtcp2_crypto_encrypt_cb;
    callbacks.decrypt = ngtcp2_crypto_decrypt_cb;
    callbacks.hp_mask = ngtcp2_crypto_hp_mask_cb;
    callbacks.handshake_completed = handshake_completed;
    callbacks.recv_stream_data = recv_stream_data;
    callbacks.stream_open = stream_open;
    callbacks.stream_close = stream_close;
    callbacks.stream_reset = stream_reset;
    callbacks.rand = random_bytes;
    callbacks.get_new_connection_id = get_new_connection_id;
    callbacks.remove_connection_id = remove_connection_id;
    callbacks.update_key = ngtcp2_crypto_update_key_cb;
    callbacks.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    callbacks.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    callbacks.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    callbacks.version_negotiation = ngtcp2_crypto_version_negotiation_cb;

    ngtcp2_settings settings;
    ngtcp2_settings_default(&settings);
    settings.initial_ts = now_ns();
    settings.handshake_timeout = server->settings.handshake_timeout_ms * NGTCP2_MILLISECONDS;
    settings.max_stream_window = QUIC_STREAM_WINDOW;
    settings.max_window = QUIC_CONNECTION_WINDOW;

    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    params.initial_max_stream_data_bidi_remote = QUIC_STREAM_WINDOW;
    params.initial_max_stream_data_bidi_local = 0;
    params.initial_max_stream_data_uni = 0;
    params.initial_max_data = QUIC_CONNECTION_WINDOW;
    params.initial_max_streams_bidi = server->settings.max_streams;
    params.initial_max_streams_uni = 0;
    params.max_idle_timeout = server->settings.idle_timeout_ms * NGTCP2_MILLISECONDS;
    params.active_connection_id_limit = 7;
    if (retried != NULL) {
        // The address is proven: the token tells ngtcp2 so, the parameters name both IDs (§7.3).
        settings.token = header->token;
        params.original_dcid = *retried;
        params.retry_scid = header->dcid;
        params.retry_scid_present = 1;
    } else {
        params.original_dcid = header->dcid;
    }
    params.stateless_reset_token_present = 1;
    gnutls_rnd(GNUTLS_RND_RANDOM, params.stateless_reset_token, sizeof params.stateless_reset_token);

    ngtcp2_path path = {
        {(ngtcp2_sockaddr *)&server->local, server->local_length},
        {(ngtcp2_sockaddr *)peer, peer_length},
        NULL,
    };
    if (ngtcp2_conn_server_new(&connection->conn, &header->scid, &scid, &path, header->version, &callbacks, &settings, &params, NULL,
                               connection) != 0) {
        connection->conn = NULL;
        *reported = 1;
        connection_free(connection);
        return NULL;
    }
    if (session_new(connection, credentials) != 0) {
        *reported = 1;
        connection_free(connection);
        return NULL;
    }
    ngtcp2_conn_set_tls_native_handle(connection->conn, connection->session);
    // The client's first Destination Connection ID names the connection until it takes ours.
    if (cid_add(connection, &scid) != 0 || cid_add(connection, &header->dcid) != 0) {
        *reported = 1;
        connection_free(connection);
        return NULL;
    }
    return connection;
}

/* ---- The loop ---- */

static void read_packets(httpdns_quic_server *server) {
    uint8_t buffer[65536];
    for (int count = 0; count < QUIC_READ_BATCH; count++) {
        struct sockaddr_storage peer;
        socklen_t peer_length = sizeof peer;
        ssize_t size = recvfrom(server->fd, buffer, sizeof buffer, MSG_DONTWAIT, (struct sockaddr *)&peer, &peer_length);
        if (size < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (size == 0) continue;
        ngtcp2_version_cid version;
        int status = ngtcp2_pkt_decode_version_cid(&version, buffer, (size_t)size, QUIC_SCID_LENGTH);
        if (status == NGTCP2_ERR_VERSION_NEGOTIATION) {
            if (!server->stopping) send_version_negotiation(server, &version, (struct sockaddr *)&peer, peer_length);
            continue;
        }
        if (status != 0) continue;
        quic_connection *connection = cid_find(server, version.dcid, version.dcidlen);
        if (connection == NULL) {
            ngtcp2_pkt_hd header;
            if (ngtcp2_accept(&header, buffer, (size_t)size) != 0) continue;
            if (server->stopping) {
                send_refusal(server, &header, (struct sockaddr *)&peer, peer_length, NGTCP2_CONNECTION_REFUSED);
                continue;
            }
            // Address validation (RFC 9000 §8.1): a Retry token is checked; under a crowd of
            // handshakes a client without one is sent a Retry first. Other tokens (we issue none
            // with NEW_TOKEN) are ignored.
            ngtcp2_cid retried;
            int has_retry_token = header.token.len > 0 && header.token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY;
            if (has_retry_token) {
                if (ngtcp2_crypto_verify_retry_token(&retried, header.token.base, header.token.len, server->static_secret,
                                                     sizeof server->static_secret, header.version, (ngtcp2_sockaddr *)&peer, peer_length,
                                                     &header.dcid, QUIC_RETRY_TOKEN_LIFETIME, now_ns()) != 0) {
                    send_refusal(server, &header, (struct sockaddr *)&peer, peer_length, NGTCP2_INVALID_TOKEN);
                    continue;
                }
            } else {
                header.token.base = NULL;
                header.token.len = 0;
                if (server->handshaking >= QUIC_RETRY_ABOVE) {
                    send_retry(server, &header, (struct sockaddr *)&peer, peer_length);
                    continue;
                }
            }
            if (server->callbacks.accepted(server->callbacks.context, (struct sockaddr *)&peer, peer_length) == 0) {
                send_refusal(server, &header, (struct sockaddr *)&peer, peer_length, NGTCP2_CONNECTION_REFUSED);
                continue;
            }
            // Kept by `accepted` and never made, it is reported closed at once.
            connection = connection_new(server, &header, has_retry_token ? &retried : NULL, (struct sockaddr *)&peer, peer_length);
            if (connection == NULL) continue;
        }
        if (connection->closing) {
            if (connection->close_packet_size > 0) {
                send_packet(server, (struct sockaddr *)&peer, peer_length, connection->close_packet, connection->close_packet_size);
            }
            continue;
        }
        ngtcp2_path path = {
            {(ngtcp2_sockaddr *)&server->local, server->local_length},
            {(ngtcp2_sockaddr *)&peer, peer_length},
            NULL,
        };
        ngtcp2_pkt_info info = {0};
        connection->last_received = now_ns();
        status = ngtcp2_conn_read_pkt(connection->conn, &path, &info, buffer, (size_t)size, connection->last_received);
        if (status != 0) {
            connection_fail(connection, status);
            continue;
        }
        // A client may move (NAT rebinding): the address its packets now come from is the one answered.
        const ngtcp2_path *current = ngtcp2_conn_get_path(connection->conn);
        if (current->remote.addrlen <= sizeof connection->peer) {
            memcpy(&connection->peer, current->remote.addr, current->remote.addrlen);
            connection->peer_length = (socklen_t)current->remote.addrlen;
        }
        mark_dirty(connection);
    }
}

static quic_connection *connection_for(httpdns_quic_server *server, uint32_t slot, uint32_t generation) {
    if (slot >= server->slot_count || server->generations[slot] != generation) return NULL;
    return server->slots[slot];
}

static void take_answers(httpdns_quic_server *server) {
    pthread_mutex_lock(&server->lock);
    httpdns_quic_message *message = server->posted_head;
    server->posted_head = server->posted_tail = NULL;
    pthread_mutex_unlock(&server->lock);
    while (message != NULL) {
        httpdns_quic_message *next = message->next;
        quic_connection *connection = connection_for(server, message->slot, message->generation);
        if (connection != NULL) {
            if (connection->in_hand > 0) connection->in_hand--;
            if (!connection->closing) {
                if (!message->has_answer) {
                    connection_close_application(connection, message->error_code);
                } else {
                    quic_stream *stream = stream_find(connection, message->stream_id);
                    if (stream != NULL && stream->state == STREAM_HANDED) {
                        stream->out = message->answer;
                        stream->out_size = message->answer_size;
                        message->answer = NULL;
                        stream->state = STREAM_ANSWERED;
                        mark_dirty(connection);
                    }
                }
            }
        }
        free(message->answer);
        free(message);
        message = next;
    }
}

static void handle_timers(httpdns_quic_server *server) {
    uint64_t now = now_ns();
    quic_connection *connection = server->live;
    while (connection != NULL) {
        quic_connection *next = connection->next_live;
        if (connection->closing) {
            if (now >= connection->forget_at) connection_free(connection);
        } else if (ngtcp2_conn_get_expiry(connection->conn) <= now) {
            int status = ngtcp2_conn_handle_expiry(connection->conn, now);
            if (status != 0) {
                connection_fail(connection, status);
            } else {
                mark_dirty(connection);
            }
        }
        connection = next;
    }
}

/* The drain: a connection with nothing in hand, every stream closed, quiet for drain_quiet_ms. */
static void drain_quiet_connections(httpdns_quic_server *server) {
    if (!server->stopping) return;
    uint64_t now = now_ns();
    uint64_t quiet = server->settings.drain_quiet_ms * NGTCP2_MILLISECONDS;
    for (quic_connection *connection = server->live; connection != NULL; connection = connection->next_live) {
        if (connection->closing || connection->in_hand > 0 || connection->stream_count > 0) continue;
        if (now - connection->last_received < quiet) continue;
        connection_close_application(connection, HTTPDNS_DOQ_NO_ERROR);
    }
}

static void close_all(httpdns_quic_server *server) {
    for (quic_connection *connection = server->live; connection != NULL; connection = connection->next_live) {
        if (connection->closing) continue;
        int unfinished = connection->in_hand > 0;
        for (quic_stream *stream = connection->streams; stream != NULL; stream = stream->next) {
            if (stream->state == STREAM_READING && stream->in_size > 0) unfinished = 1;
        }
        if (unfinished && server->callbacks.shed != NULL) server->callbacks.shed(server->callbacks.context, HTTPDNS_QUIC_SHED_DRAIN);
        connection_close_application(connection, HTTPDNS_DOQ_NO_ERROR);
    }
}

/* When the connection next needs the loop: ngtcp2's expiry, its end when closing, and in the
 * drain the end of its quiet period. */
static uint64_t connection_deadline(httpdns_quic_server *server, quic_connection *connection) {
    if (connection->closing) return connection->forget_at;
    uint64_t at = ngtcp2_conn_get_expiry(connection->conn);
    if (server->stopping && connection->in_hand == 0 && connection->stream_count == 0) {
        uint64_t quiet_end = connection->last_received + server->settings.drain_quiet_ms * NGTCP2_MILLISECONDS;
        if (quiet_end < at) at = quiet_end;
    }
    return at;
}

static void set_timer(httpdns_quic_server *server, uint64_t at) {
    server->armed_at = at;
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (at != UINT64_MAX) {
        uint64_t now = now_ns();
        uint64_t delay = at > now ? at - now : 1;
        spec.it_value.tv_sec = (time_t)(delay / NGTCP2_SECONDS);
        spec.it_value.tv_nsec = (long)(delay % NGTCP2_SECONDS);
    }
    timerfd_settime(server->timer, 0, &spec, NULL);
}

/* Writes every queued connection; returns the earliest deadline among them. */
static uint64_t write_dirty(httpdns_quic_server *server) {
    uint64_t earliest = UINT64_MAX;
    // A write that fails queues its connection again (closing): a few rounds take those too.
    for (int round = 0; round < 4 && server->dirty != NULL; round++) {
        quic_connection *connection = server->dirty;
        server->dirty = NULL;
        while (connection != NULL) {
            quic_connection *next = connection->next_dirty;
            connection->dirty = 0;
            connection->next_dirty = NULL;
            connection_write(connection);
            uint64_t at = connection_deadline(server, connection);
            if (at < earliest) earliest = at;
            connection = next;
        }
    }
    return earliest;
}

/* The loop. The timer is kept at the earliest deadline without a scan of every connection per turn:
 * a turn lowers it by the deadlines of the connections it touched, and only when it fires (or the
 * drain begins) are all connections visited, their timers handled and the earliest taken anew. A
 * deadline that moved later makes the timer fire early, which costs one such visit. */
static void *run(void *argument) {
    httpdns_quic_server *server = argument;
    server->armed_at = UINT64_MAX;
    for (;;) {
        struct epoll_event events[4];
        int count = epoll_wait(server->epoll, events, 4, -1);
        if (count < 0 && errno != EINTR) break;
        int fired = 0;
        for (int i = 0; i < count; i++) {
            uint64_t value;
            if (events[i].data.fd == server->wake) {
                (void)read(server->wake, &value, sizeof value);
            } else if (events[i].data.fd == server->timer) {
                (void)read(server->timer, &value, sizeof value);
                fired = 1;
            }
        }
        pthread_mutex_lock(&server->lock);
        int stop = server->stop_requested, close_now = server->close_requested, end = server->end_requested;
        server->close_requested = 0;
        pthread_mutex_unlock(&server->lock);
        if (stop && !server->stopping) {
            server->stopping = 1;
            fired = 1;
        }
        if (close_now) fired = 1;
        // Connections are freed only here, while no connection is queued for writing.
        if (fired) handle_timers(server);
        read_packets(server);
        take_answers(server);
        if (fired) drain_quiet_connections(server);
        if (close_now) close_all(server);
        uint64_t earliest = write_dirty(server);
        if (end) break;
        if (fired) {
            earliest = UINT64_MAX;
            for (quic_connection *connection = server->live; connection != NULL; connection = connection->next_live) {
                uint64_t at = connection_deadline(server, connection);
                if (at < earliest) earliest = at;
            }
            set_timer(server, earliest);
        } else if (earliest < server->armed_at) {
            set_timer(server, earliest);
        }
    }
    return NULL;
}

/* ---- The public face ---- */

httpdns_quic_server *httpdns_quic_server_create(int fd, const httpdns_quic_settings *settings, httpdns_quic_callbacks callbacks,
                                                httpdns_quic_credentials *credentials) {
    httpdns_quic_server *server = calloc(1, sizeof *server);
    if (server == NULL) {
        close(fd);
        return NULL;
    }
    server->fd = fd;
    server->epoll = server->wake = server->timer = -1;
    server->cid_table = calloc(QUIC_CID_BUCKETS, sizeof *server->cid_table);
    server->settings = *settings;
    if (server->settings.max_streams == 0) server->settings.max_streams = 1;
    server->callbacks = callbacks;
    server->local_length = sizeof server->local;
    getsockname(fd, (struct sockaddr *)&server->local, &server->local_length);
    gnutls_rnd(GNUTLS_RND_KEY, server->static_secret, sizeof server->static_secret);
    if (gnutls_session_ticket_key_generate(&server->ticket_key) != 0) {
        server->ticket_key.data = NULL;
        server->ticket_key.size = 0;
    }
    pthread_mutex_init(&server->lock, NULL);
    atomic_init(&server->open, 0);
    credentials_retain(credentials);
    server->credentials = credentials;
    server->epoll = epoll_create1(EPOLL_CLOEXEC);
    server->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    server->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (server->cid_table == NULL || server->epoll < 0 || server->wake < 0 || server->timer < 0) {
        httpdns_quic_server_destroy(server);
        return NULL;
    }
    int fds[3] = {fd, server->wake, server->timer};
    for (int i = 0; i < 3; i++) {
        struct epoll_event event = {.events = EPOLLIN, .data.fd = fds[i]};
        if (epoll_ctl(server->epoll, EPOLL_CTL_ADD, fds[i], &event) != 0) {
            httpdns_quic_server_destroy(server);
            return NULL;
        }
    }
    return server;
}

int httpdns_quic_server_start(httpdns_quic_server *server) {
    int status = pthread_create(&server->thread, NULL, run, server);
    if (status == 0) {
        server->started = 1;
        pthread_setname_np(server->thread, "httpdns-quic");
    }
    return status;
}

static void wake(httpdns_quic_server *server) {
    if (server->wake < 0) return;
    uint64_t one = 1;
    (void)write(server->wake, &one, sizeof one);
}

void httpdns_quic_server_set_credentials(httpdns_quic_server *server, httpdns_quic_credentials *credentials) {
    credentials_retain(credentials);
    pthread_mutex_lock(&server->lock);
    httpdns_quic_credentials *old = server->credentials;
    if (server->ended) {
        old = credentials;
    } else {
        server->credentials = credentials;
    }
    pthread_mutex_unlock(&server->lock);
    httpdns_quic_credentials_release(old);
}

void httpdns_quic_server_post_answer(httpdns_quic_server *server, httpdns_quic_message *message, const void *bytes, size_t length,
                                     uint64_t error_code) {
    if (bytes != NULL && length <= 65535) {
        message->answer = malloc(2 + length);
        if (message->answer != NULL) {
            message->answer[0] = (uint8_t)(length >> 8);
            message->answer[1] = (uint8_t)length;
            memcpy(message->answer + 2, bytes, length);
            message->answer_size = 2 + length;
            message->has_answer = 1;
        } else {
            message->error_code = HTTPDNS_DOQ_INTERNAL_ERROR;
        }
    } else {
        message->error_code = bytes != NULL ? HTTPDNS_DOQ_INTERNAL_ERROR : error_code;
    }
    message->next = NULL;
    pthread_mutex_lock(&server->lock);
    if (server->ended) {
        pthread_mutex_unlock(&server->lock);
        free(message->answer);
        free(message);
        return;
    }
    if (server->posted_tail != NULL) {
        server->posted_tail->next = message;
    } else {
        server->posted_head = message;
    }
    server->posted_tail = message;
    pthread_mutex_unlock(&server->lock);
    wake(server);
}

void httpdns_quic_server_stop_accepting(httpdns_quic_server *server) {
    pthread_mutex_lock(&server->lock);
    server->stop_requested = 1;
    pthread_mutex_unlock(&server->lock);
    wake(server);
}

void httpdns_quic_server_close_connections(httpdns_quic_server *server) {
    pthread_mutex_lock(&server->lock);
    server->stop_requested = 1;
    server->close_requested = 1;
    pthread_mutex_unlock(&server->lock);
    wake(server);
}

int httpdns_quic_server_open_connections(httpdns_quic_server *server) {
    return atomic_load_explicit(&server->open, memory_order_relaxed);
}

void httpdns_quic_server_destroy(httpdns_quic_server *server) {
    if (server == NULL) return;
    if (server->started) {
        pthread_mutex_lock(&server->lock);
        server->end_requested = 1;
        pthread_mutex_unlock(&server->lock);
        wake(server);
        pthread_join(server->thread, NULL);
    }
    while (server->live != NULL) connection_free(server->live);
    pthread_mutex_lock(&server->lock);
    server->ended = 1;
    httpdns_quic_message *message = server->posted_head;
    server->posted_head = server->posted_tail = NULL;
    pthread_mutex_unlock(&server->lock);
    while (message != NULL) {
        httpdns_quic_message *next = message->next;
        free(message->answer);
        free(message);
        message = next;
    }
    for (int i = 0; server->cid_table != NULL && i < QUIC_CID_BUCKETS; i++) {
        while (server->cid_table[i] != NULL) {
            cid_entry *entry = server->cid_table[i];
            server->cid_table[i] = entry->next;
            free(entry);
        }
    }
    if (server->ticket_key.data != NULL) gnutls_memset(server->ticket_key.data, 0, server->ticket_key.size);
    gnutls_free(server->ticket_key.data);
    server->ticket_key.data = NULL;
    free(server->cid_table);
    free(server->slots);
    free(server->generations);
    free(server->free_slots);
    server->cid_table = NULL;
    server->slots = NULL;
    server->generations = NULL;
    server->free_slots = NULL;
    pthread_mutex_lock(&server->lock);
    httpdns_quic_credentials *credentials = server->credentials;
    server->credentials = NULL;
    pthread_mutex_unlock(&server->lock);
    httpdns_quic_credentials_release(credentials);
    if (server->epoll >= 0) close(server->epoll);
    if (server->timer >= 0) close(server->timer);
    close(server->fd);
    // The record itself stays (as h2o's server does), its lock and eventfd too: an answer posted
    // after this is dropped rather than written to freed memory.
}

// The client half of DNS over QUIC (RFC 9250) over ngtcp2 0.12 and its GnuTLS crypto back end: see
// include/httpdns_quic_client.h for the contract. The structure follows ngtcp2's own
// examples/gtlssimpleclient.c of the same release, with many streams instead of one and no event
// library (the caller polls).
#include "httpdns_quic_client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

/// RFC 9250 §4.3 error codes.
enum {
    DOQ_NO_ERROR = 0x0,
    DOQ_PROTOCOL_ERROR = 0x2,
    DOQ_REQUEST_CANCELLED = 0x3,
};

/// The largest stream a DNS answer takes: the 2-byte length and 65,535 bytes.
#define DOQ_MAX_FRAME (2 + 65535)
/// The largest UDP datagram read.
#define DOQ_RECEIVE_BUFFER 65536
/// The largest datagram written (ngtcp2 writes at most its path's payload size, 1,452 at most by default).
#define DOQ_SEND_BUFFER 1500

struct httpdns_quic_client_trust {
    gnutls_certificate_credentials_t credentials;
};

/// One query: queued (`id` -1) until the server grants a stream, then open until ngtcp2 closes it.
struct doq_stream {
    struct doq_stream *next;
    struct doq_stream *prev;
    int64_t id;
    uint64_t tag;
    /// The framed query; ngtcp2 keeps pointing into it until the stream closes (it retransmits from it).
    uint8_t *out;
    size_t out_len;
    size_t out_sent;
    uint8_t *in;
    size_t in_len;
    /// Its result was reported, or it was cancelled: later data is ignored.
    int done;
    /// The DoQ error code to reset it with once the read is over (not from inside ngtcp2's callback).
    uint64_t abort_code;
    int abort;
    /// Answered before the server's FIN: the read side is shut (STOP_SENDING) once the read is
    /// over, so that the stream closes without waiting on the server.
    int stop_reading;
};

struct doq_result {
    struct doq_result *next;
    uint64_t tag;
    uint8_t *bytes;
    size_t length;
    int failed;
};

struct httpdns_quic_client {
    ngtcp2_crypto_conn_ref conn_ref;
    int fd;
    struct sockaddr_storage local;
    socklen_t local_len;
    struct sockaddr_storage remote;
    socklen_t remote_len;
    gnutls_session_t session;
    ngtcp2_conn *conn;
    /// Every query held, oldest first.
    struct doq_stream *head;
    struct doq_stream *tail;
    size_t pending;
    struct doq_result *results;
    struct doq_result *results_tail;
    /// Over: `error` says why; `silent` when no CONNECTION_CLOSE is to be sent (the peer closed,
    /// the idle timeout, a socket error).
    int over;
    int silent;
    ngtcp2_connection_close_error last_error;
    char error[256];
    uint8_t *receive_buffer;
    /// The name verified: GnuTLS keeps the pointer given to gnutls_session_set_verify_cert.
    char *server_name;
    /// The newest session the server's tickets resume (gnutls_session_get_data2), not taken yet.
    gnutls_datum_t ticket;
};

/// ngtcp2's trace on standard error, when HTTPDNS_QUIC_TRACE is set (for debugging only).
static void doq_trace(void *user_data, const char *format, ...) {
    (void)user_data;
    va_list arguments;
    va_start(arguments, format);
    vfprintf(stderr, format, arguments);
    va_end(arguments);
    fputc('\n', stderr);
}

static uint64_t doq_timestamp(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * NGTCP2_SECONDS + (uint64_t)now.tv_nsec;
}

static void doq_fail(httpdns_quic_client *c, int silent, const char *format, ...) {
    if (c->over) return;
    c->over = 1;
    c->silent = silent;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(c->error, sizeof c->error, format, arguments);
    va_end(arguments);
}

// MARK: Trust

httpdns_quic_client_trust *httpdns_quic_client_trust_new(const char *ca_file, const char *ca_pem, size_t ca_pem_len,
                                                         char *error, size_t error_len) {
    httpdns_quic_client_trust *trust = calloc(1, sizeof *trust);
    if (trust == NULL) {
        snprintf(error, error_len, "out of memory");
        return NULL;
    }
    int rv = gnutls_certificate_allocate_credentials(&trust->credentials);
    if (rv < 0) {
        snprintf(error, error_len, "gnutls credentials: %s", gnutls_strerror(rv));
        free(trust);
        return NULL;
    }
    if (ca_file != NULL) {
        rv = gnutls_certificate_set_x509_trust_file(trust->credentials, ca_file, GNUTLS_X509_FMT_PEM);
    } else if (ca_pem != NULL) {
        gnutls_datum_t data = {(unsigned char *)ca_pem, (unsigned int)ca_pem_len};
        rv = gnutls_certificate_set_x509_trust_mem(trust->credentials, &data, GNUTLS_X509_FMT_PEM);
    } else {
        rv = gnutls_certificate_set_x509_system_trust(trust->credentials);
    }
    // The count of certificates loaded, or an error.
    if (rv <= 0) {
        snprintf(error, error_len, "%s", rv == 0 ? "no CA certificate found" : gnutls_strerror(rv));
        gnutls_certificate_free_credentials(trust->credentials);
        free(trust);
        return NULL;
    }
    return trust;
}

void httpdns_quic_client_trust_free(httpdns_quic_client_trust *trust) {
    if (trust == NULL) return;
    gnutls_certificate_free_credentials(trust->credentials);
    free(trust);
}

// MARK: Streams and results

static void doq_unlink(httpdns_quic_client *c, struct doq_stream *s) {
    if (s->prev) s->prev->next = s->next; else c->head = s->next;
    if (s->next) s->next->prev = s->prev; else c->tail = s->prev;
    s->next = s->prev = NULL;
}

static void doq_stream_free(struct doq_stream *s) {
    free(s->out);
    free(s->in);
    free(s);
}

/// Reports `s`'s result once: its answer (`bytes`, copied) or its failure (`bytes` NULL).
static void doq_report(httpdns_quic_client *c, struct doq_stream *s, const uint8_t *bytes, size_t length) {
    if (s->done) return;
    s->done = 1;
    c->pending--;
    struct doq_result *r = calloc(1, sizeof *r);
    if (r == NULL) return;
    r->tag = s->tag;
    r->failed = bytes == NULL;
    if (bytes != NULL) {
        r->bytes = malloc(length);
        if (r->bytes == NULL) {
            r->failed = 1;
        } else {
            memcpy(r->bytes, bytes, length);
            r->length = length;
        }
    }
    if (c->results_tail) c->results_tail->next = r; else c->results = r;
    c->results_tail = r;
}

// MARK: Answer streams

int httpdns_quic_client_stream_state(const uint8_t *bytes, size_t length, int fin, size_t *message_length) {
    *message_length = 0;
    if (length > DOQ_MAX_FRAME) return -1;
    if (length >= 2) {
        size_t announced = ((size_t)bytes[0] << 8) | bytes[1];
        // Shorter than a DNS header: no answer.
        if (announced < 12) return -1;
        if (length == 2 + announced) {
            *message_length = announced;
            return 1;
        }
        if (length > 2 + announced) return -1;
    }
    return fin ? -1 : 0;
}

// MARK: ngtcp2 callbacks

static ngtcp2_conn *doq_get_conn(ngtcp2_crypto_conn_ref *ref) {
    httpdns_quic_client *c = ref->user_data;
    return c->conn;
}

static void doq_rand(uint8_t *dest, size_t destlen, const ngtcp2_rand_ctx *rand_ctx) {
    (void)rand_ctx;
    (void)gnutls_rnd(GNUTLS_RND_RANDOM, dest, destlen);
}

static int doq_new_connection_id(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen, void *user_data) {
    (void)conn;
    (void)user_data;
    if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    cid->datalen = cidlen;
    if (gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int doq_recv_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id, uint64_t offset,
                                const uint8_t *data, size_t datalen, void *user_data, void *stream_user_data) {
    (void)offset;
    httpdns_quic_client *c = user_data;
    struct doq_stream *s = stream_user_data;
    // The credit given back at once: what is kept is bounded below, not by flow control.
    ngtcp2_conn_extend_max_stream_offset(conn, stream_id, datalen);
    ngtcp2_conn_extend_max_offset(conn, datalen);
    if (s == NULL || s->done) return 0;
    if (s->in_len + datalen > DOQ_MAX_FRAME) {
        // Longer than any DNS message: a broken or hostile server.
        doq_report(c, s, NULL, 0);
        s->abort = 1;
        s->abort_code = DOQ_PROTOCOL_ERROR;
        return 0;
    }
    if (datalen > 0) {
        uint8_t *grown = realloc(s->in, s->in_len + datalen);
        if (grown == NULL) return NGTCP2_ERR_CALLBACK_FAILURE;
        s->in = grown;
        memcpy(s->in + s->in_len, data, datalen);
        s->in_len += datalen;
    }
    size_t message_length = 0;
    int fin = (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0;
    int state = httpdns_quic_client_stream_state(s->in, s->in_len, fin, &message_length);
    if (state == 1) {
        doq_report(c, s, s->in + 2, message_length);
        if (!fin) s->stop_reading = 1;
    } else if (state < 0) {
        doq_report(c, s, NULL, 0);
        if (!fin) {
            // More than its length prefix, or a length no DNS message has: the rest is not read.
            s->abort = 1;
            s->abort_code = DOQ_PROTOCOL_ERROR;
        }
    }
    return 0;
}

static int doq_stream_reset(ngtcp2_conn *conn, int64_t stream_id, uint64_t final_size, uint64_t app_error_code,
                            void *user_data, void *stream_user_data) {
    (void)conn;
    (void)stream_id;
    (void)final_size;
    (void)app_error_code;
    struct doq_stream *s = stream_user_data;
    if (s != NULL) doq_report(user_data, s, NULL, 0);
    return 0;
}

static int doq_stream_close(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id, uint64_t app_error_code,
                            void *user_data, void *stream_user_data) {
    (void)conn;
    (void)flags;
    (void)stream_id;
    (void)app_error_code;
    httpdns_quic_client *c = user_data;
    struct doq_stream *s = stream_user_data;
    if (s == NULL) return 0;
    doq_report(c, s, NULL, 0);
    doq_unlink(c, s);
    doq_stream_free(s);
    return 0;
}

// MARK: Connection

/// Keeps the session of each ticket the server sends (TLS 1.3 NewSessionTicket, after the handshake).
static int doq_handshake_hook(gnutls_session_t session, unsigned int htype, unsigned when, unsigned int incoming,
                              const gnutls_datum_t *msg) {
    (void)when;
    (void)incoming;
    (void)msg;
    if (htype != GNUTLS_HANDSHAKE_NEW_SESSION_TICKET) return 0;
    ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(session);
    httpdns_quic_client *c = ref->user_data;
    gnutls_datum_t data = {NULL, 0};
    if (gnutls_session_get_data2(session, &data) != 0) return 0;
    gnutls_free(c->ticket.data);
    c->ticket = data;
    return 0;
}

static const char doq_priority[] =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-CCM:"
    "-GROUP-ALL:+GROUP-SECP256R1:+GROUP-X25519:+GROUP-SECP384R1:+GROUP-SECP521R1:%DISABLE_TLS13_COMPAT_MODE";

httpdns_quic_client *httpdns_quic_client_new(const httpdns_quic_client_trust *trust, const struct sockaddr *server,
                                             socklen_t server_len, const char *server_name, uint64_t idle_timeout_ms,
                                             char *error, size_t error_len) {
    if (server_len > sizeof(struct sockaddr_storage)) {
        snprintf(error, error_len, "bad server address");
        return NULL;
    }
    httpdns_quic_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(error, error_len, "out of memory");
        return NULL;
    }
    c->fd = -1;
    c->receive_buffer = malloc(DOQ_RECEIVE_BUFFER);
    if (c->receive_buffer == NULL) {
        snprintf(error, error_len, "out of memory");
        goto fail;
    }
    c->server_name = strdup(server_name);
    if (c->server_name == NULL) {
        snprintf(error, error_len, "out of memory");
        goto fail;
    }
    ngtcp2_connection_close_error_default(&c->last_error);
    memcpy(&c->remote, server, server_len);
    c->remote_len = server_len;
    c->fd = socket(server->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        snprintf(error, error_len, "socket: %s", strerror(errno));
        goto fail;
    }
    if (connect(c->fd, server, server_len) != 0) {
        snprintf(error, error_len, "connect: %s", strerror(errno));
        goto fail;
    }
    c->local_len = sizeof c->local;
    if (getsockname(c->fd, (struct sockaddr *)&c->local, &c->local_len) != 0) {
        snprintf(error, error_len, "getsockname: %s", strerror(errno));
        goto fail;
    }

    int rv = gnutls_init(&c->session, GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA);
    if (rv != 0) {
        snprintf(error, error_len, "gnutls_init: %s", gnutls_strerror(rv));
        c->session = NULL;
        goto fail;
    }
    if (ngtcp2_crypto_gnutls_configure_client_session(c->session) != 0) {
        snprintf(error, error_len, "ngtcp2_crypto_gnutls_configure_client_session failed");
        goto fail;
    }
    if ((rv = gnutls_priority_set_direct(c->session, doq_priority, NULL)) != 0 ||
        (rv = gnutls_credentials_set(c->session, GNUTLS_CRD_CERTIFICATE, trust->credentials)) != 0 ||
        (rv = gnutls_server_name_set(c->session, GNUTLS_NAME_DNS, c->server_name, strlen(c->server_name))) != 0) {
        snprintf(error, error_len, "gnutls session: %s", gnutls_strerror(rv));
        goto fail;
    }
    // The chain against the trust and the name against the certificate, during the handshake.
    gnutls_session_set_verify_cert(c->session, c->server_name, 0);
    static const gnutls_datum_t alpn = {(unsigned char *)"doq", 3};
    gnutls_alpn_set_protocols(c->session, &alpn, 1, GNUTLS_ALPN_MANDATORY);
    c->conn_ref.get_conn = doq_get_conn;
    c->conn_ref.user_data = c;
    gnutls_session_set_ptr(c->session, &c->conn_ref);
    gnutls_handshake_set_hook_function(c->session, GNUTLS_HANDSHAKE_NEW_SESSION_TICKET, GNUTLS_HOOK_POST,
                                       doq_handshake_hook);

    ngtcp2_callbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    callbacks.client_initial = ngtcp2_crypto_client_initial_cb;
    callbacks.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    callbacks.encrypt = ngtcp2_crypto_encrypt_cb;
    callbacks.decrypt = ngtcp2_crypto_decrypt_cb;
    callbacks.hp_mask = ngtcp2_crypto_hp_mask_cb;
    callbacks.recv_stream_data = doq_recv_stream_data;
    callbacks.stream_close = doq_stream_close;
    callbacks.stream_reset = doq_stream_reset;
    callbacks.recv_retry = ngtcp2_crypto_recv_retry_cb;
    callbacks.rand = doq_rand;
    callbacks.get_new_connection_id = doq_new_connection_id;
    callbacks.update_key = ngtcp2_crypto_update_key_cb;
    callbacks.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    callbacks.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    callbacks.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    callbacks.version_negotiation = ngtcp2_crypto_version_negotiation_cb;

    ngtcp2_cid dcid, scid;
    dcid.datalen = NGTCP2_MIN_INITIAL_DCIDLEN;
    scid.datalen = 8;
    if (gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen) != 0 ||
        gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen) != 0) {
        snprintf(error, error_len, "gnutls_rnd failed");
        goto fail;
    }
    ngtcp2_settings settings;
    ngtcp2_settings_default(&settings);
    settings.initial_ts = doq_timestamp();
    if (getenv("HTTPDNS_QUIC_TRACE") != NULL) settings.log_printf = doq_trace;
    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    // The server opens no stream (RFC 9250 §4.2: queries go on client-initiated streams only).
    params.initial_max_streams_bidi = 0;
    params.initial_max_streams_uni = 0;
    params.initial_max_stream_data_bidi_local = DOQ_MAX_FRAME;
    params.initial_max_data = 1024 * 1024;
    params.max_idle_timeout = idle_timeout_ms * NGTCP2_MILLISECONDS;
    ngtcp2_path path = {
        {(struct sockaddr *)&c->local, c->local_len},
        {(struct sockaddr *)&c->remote, c->remote_len},
        NULL,
    };
    rv = ngtcp2_conn_client_new(&c->conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &callbacks, &settings, &params,
                                NULL, c);
    if (rv != 0) {
        snprintf(error, error_len, "ngtcp2_conn_client_new: %s", ngtcp2_strerror(rv));
        c->conn = NULL;
        goto fail;
    }
    ngtcp2_conn_set_tls_native_handle(c->conn, c->session);
    return c;
fail:
    httpdns_quic_client_free(c);
    return NULL;
}

static void doq_send_packet(httpdns_quic_client *c, const uint8_t *data, size_t length) {
    ssize_t sent;
    do {
        sent = send(c->fd, data, length, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    // A full socket buffer drops the datagram: QUIC's loss recovery sends it again.
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
        doq_fail(c, 1, "send to the server: %s", strerror(errno));
    }
}

void httpdns_quic_client_free(httpdns_quic_client *c) {
    if (c == NULL) return;
    if (c->conn != NULL && !c->silent && !ngtcp2_conn_is_in_closing_period(c->conn) &&
        !ngtcp2_conn_is_in_draining_period(c->conn) && ngtcp2_conn_get_handshake_completed(c->conn)) {
        uint8_t buffer[DOQ_SEND_BUFFER];
        ngtcp2_path_storage ps;
        ngtcp2_path_storage_zero(&ps);
        ngtcp2_pkt_info pi;
        if (!c->over) ngtcp2_connection_close_error_set_application_error(&c->last_error, DOQ_NO_ERROR, NULL, 0);
        ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, &pi, buffer, sizeof buffer,
                                                            &c->last_error, doq_timestamp());
        if (n > 0) doq_send_packet(c, buffer, (size_t)n);
    }
    if (c->conn != NULL) ngtcp2_conn_del(c->conn);
    if (c->session != NULL) gnutls_deinit(c->session);
    if (c->fd >= 0) close(c->fd);
    struct doq_stream *s = c->head;
    while (s != NULL) {
        struct doq_stream *next = s->next;
        doq_stream_free(s);
        s = next;
    }
    struct doq_result *r = c->results;
    while (r != NULL) {
        struct doq_result *next = r->next;
        free(r->bytes);
        free(r);
        r = next;
    }
    free(c->receive_buffer);
    free(c->server_name);
    gnutls_free(c->ticket.data);
    free(c);
}

int httpdns_quic_client_fd(const httpdns_quic_client *c) { return c->fd; }

int httpdns_quic_client_resume(httpdns_quic_client *c, const uint8_t *session, size_t length) {
    if (length == 0 || length > UINT32_MAX) return -1;
    return gnutls_session_set_data(c->session, session, length) == 0 ? 0 : -1;
}

long httpdns_quic_client_take_session(httpdns_quic_client *c, uint8_t *buffer, size_t capacity) {
    if (c->ticket.data == NULL) return -1;
    long length = -1;
    if (c->ticket.size <= capacity) {
        memcpy(buffer, c->ticket.data, c->ticket.size);
        length = (long)c->ticket.size;
    }
    gnutls_free(c->ticket.data);
    c->ticket.data = NULL;
    c->ticket.size = 0;
    return length;
}

int httpdns_quic_client_is_resumed(const httpdns_quic_client *c) {
    return ngtcp2_conn_get_handshake_completed(c->conn) && gnutls_session_is_resumed(c->session) ? 1 : 0;
}

int httpdns_quic_client_timeout_ms(const httpdns_quic_client *c) {
    if (c->over) return 0;
    ngtcp2_tstamp expiry = ngtcp2_conn_get_expiry(c->conn);
    ngtcp2_tstamp now = doq_timestamp();
    if (expiry <= now) return 0;
    uint64_t ms = (expiry - now + NGTCP2_MILLISECONDS - 1) / NGTCP2_MILLISECONDS;
    return ms > 60000 ? 60000 : (int)ms;
}

int httpdns_quic_client_is_open(const httpdns_quic_client *c) {
    return !c->over && ngtcp2_conn_get_handshake_completed(c->conn) ? 1 : 0;
}

size_t httpdns_quic_client_pending(const httpdns_quic_client *c) { return c->pending; }

const char *httpdns_quic_client_error(const httpdns_quic_client *c) { return c->error; }

int httpdns_quic_client_send(httpdns_quic_client *c, const uint8_t *message, size_t length, uint64_t tag) {
    if (c->over || length < 12 || length > 65535) return -1;
    struct doq_stream *s = calloc(1, sizeof *s);
    if (s == NULL) return -1;
    s->out = malloc(2 + length);
    if (s->out == NULL) {
        free(s);
        return -1;
    }
    s->out[0] = (uint8_t)(length >> 8);
    s->out[1] = (uint8_t)(length & 0xFF);
    memcpy(s->out + 2, message, length);
    // RFC 9250 §4.2.1: the Message ID is 0 on the wire.
    s->out[2] = 0;
    s->out[3] = 0;
    s->out_len = 2 + length;
    s->id = -1;
    s->tag = tag;
    s->prev = c->tail;
    if (c->tail) c->tail->next = s; else c->head = s;
    c->tail = s;
    c->pending++;
    return 0;
}

int httpdns_quic_client_cancel(httpdns_quic_client *c, uint64_t tag) {
    for (struct doq_stream *s = c->head; s != NULL; s = s->next) {
        if (s->tag != tag || s->done) continue;
        s->done = 1;
        c->pending--;
        // Nothing more of it is written.
        s->out_sent = s->out_len;
        if (s->id < 0) {
            doq_unlink(c, s);
            doq_stream_free(s);
        } else if (!c->over) {
            ngtcp2_conn_shutdown_stream(c->conn, s->id, DOQ_REQUEST_CANCELLED);
        }
        return 0;
    }
    return -1;
}

/// The reason a packet or the handshake was refused: the certificate check's own words when it
/// failed, else the TLS alert or ngtcp2's error.
static void doq_fail_read(httpdns_quic_client *c, int rv) {
    if (rv == NGTCP2_ERR_DRAINING) {
        ngtcp2_connection_close_error received;
        ngtcp2_conn_get_connection_close_error(c->conn, &received);
        doq_fail(c, 1, "the server closed the connection (%s error 0x%llx%s%.*s)",
                 received.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ? "application" : "transport",
                 (unsigned long long)received.error_code, received.reasonlen > 0 ? ": " : "",
                 (int)(received.reason != NULL ? (received.reasonlen > 100 ? 100 : received.reasonlen) : 0),
                 received.reason != NULL ? (const char *)received.reason : "");
        return;
    }
    if (rv == NGTCP2_ERR_CRYPTO) {
        ngtcp2_connection_close_error_set_transport_error_tls_alert(&c->last_error, ngtcp2_conn_get_tls_alert(c->conn),
                                                                     NULL, 0);
        unsigned status = gnutls_session_get_verify_cert_status(c->session);
        if (status != 0) {
            // Short words first (the stub's EDE text keeps 100 characters), as OpenSSL says them
            // for the DoT upstreams; GnuTLS's own text for the rest.
            const char *reason = NULL;
            if (status & GNUTLS_CERT_UNEXPECTED_OWNER) reason = "hostname mismatch";
            else if (status & GNUTLS_CERT_SIGNER_NOT_FOUND) reason = "unable to get local issuer certificate";
            else if (status & GNUTLS_CERT_EXPIRED) reason = "certificate has expired";
            else if (status & GNUTLS_CERT_NOT_ACTIVATED) reason = "certificate is not yet valid";
            if (reason != NULL) {
                doq_fail(c, 0, "certificate verify failed: %s", reason);
                return;
            }
            gnutls_datum_t text = {NULL, 0};
            if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0) {
                // GnuTLS ends its text with a space.
                size_t length = strlen((const char *)text.data);
                while (length > 0 && text.data[length - 1] == ' ') text.data[--length] = 0;
                doq_fail(c, 0, "certificate verify failed: %s", (const char *)text.data);
                gnutls_free(text.data);
                return;
            }
        }
        uint8_t alert = ngtcp2_conn_get_tls_alert(c->conn);
        const char *name = gnutls_alert_get_name((gnutls_alert_description_t)alert);
        doq_fail(c, 0, "TLS handshake failed (alert %u: %s)", alert, name != NULL ? name : "unknown");
        return;
    }
    ngtcp2_connection_close_error_set_transport_error_liberr(&c->last_error, rv, NULL, 0);
    doq_fail(c, 0, "QUIC: %s", ngtcp2_strerror(rv));
}

static void doq_read(httpdns_quic_client *c) {
    for (int turns = 0; turns < 256 && !c->over; turns++) {
        struct sockaddr_storage from;
        socklen_t from_len = sizeof from;
        ssize_t n = recvfrom(c->fd, c->receive_buffer, DOQ_RECEIVE_BUFFER, MSG_DONTWAIT, (struct sockaddr *)&from,
                             &from_len);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            // ECONNREFUSED: an ICMP port unreachable, nothing listens there (any more).
            doq_fail(c, 1, "%s", errno == ECONNREFUSED ? "connection refused" : strerror(errno));
            return;
        }
        ngtcp2_path path = {
            {(struct sockaddr *)&c->local, c->local_len},
            {(struct sockaddr *)&from, from_len},
            NULL,
        };
        ngtcp2_pkt_info pi = {0};
        int rv = ngtcp2_conn_read_pkt(c->conn, &path, &pi, c->receive_buffer, (size_t)n, doq_timestamp());
        if (rv != 0) {
            doq_fail_read(c, rv);
            return;
        }
    }
}

/// Opens streams for queued queries while the server allows more.
static void doq_open_streams(httpdns_quic_client *c) {
    if (!ngtcp2_conn_get_handshake_completed(c->conn)) return;
    for (struct doq_stream *s = c->head; s != NULL; s = s->next) {
        if (s->id >= 0 || s->done) continue;
        if (ngtcp2_conn_get_streams_bidi_left(c->conn) == 0) return;
        int64_t id;
        if (ngtcp2_conn_open_bidi_stream(c->conn, &id, s) != 0) return;
        s->id = id;
    }
}

/// The next stream with query bytes to write, not blocked this turn.
static struct doq_stream *doq_next_to_write(httpdns_quic_client *c, const struct doq_stream *after) {
    for (struct doq_stream *s = after != NULL ? after->next : c->head; s != NULL; s = s->next) {
        if (s->id >= 0 && s->out_sent < s->out_len) return s;
    }
    return NULL;
}

static void doq_write_packets(httpdns_quic_client *c, ngtcp2_tstamp now);

/// Writes what is due, then sets the time of the next packet (ngtcp2 0.12 asks for it after writes).
static void doq_write(httpdns_quic_client *c) {
    ngtcp2_tstamp now = doq_timestamp();
    doq_write_packets(c, now);
    if (!c->over) ngtcp2_conn_update_pkt_tx_time(c->conn, now);
}

static void doq_write_packets(httpdns_quic_client *c, ngtcp2_tstamp now) {
    uint8_t buffer[DOQ_SEND_BUFFER];
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    struct doq_stream *s = doq_next_to_write(c, NULL);
    for (int turns = 0; turns < 4096 && !c->over; turns++) {
        ngtcp2_vec data = {NULL, 0};
        int64_t stream_id = -1;
        uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
        if (s != NULL) {
            stream_id = s->id;
            data.base = s->out + s->out_sent;
            data.len = s->out_len - s->out_sent;
            flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
        }
        ngtcp2_ssize written = 0;
        ngtcp2_pkt_info pi;
        ngtcp2_ssize n = ngtcp2_conn_writev_stream(c->conn, &ps.path, &pi, buffer, sizeof buffer, &written, flags,
                                                   stream_id, s != NULL ? &data : NULL, s != NULL ? 1 : 0, now);
        if (n == NGTCP2_ERR_WRITE_MORE) {
            // Only returned when stream data went into the packet.
            if (s == NULL) return;
            s->out_sent += (size_t)written;
            if (s->out_sent == s->out_len) s = doq_next_to_write(c, s);
            continue;
        }
        if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED || n == NGTCP2_ERR_STREAM_SHUT_WR) {
            // This stream waits for credit (or was cancelled): the others go on.
            if (s != NULL) s = doq_next_to_write(c, s);
            continue;
        }
        if (n < 0) {
            ngtcp2_connection_close_error_set_transport_error_liberr(&c->last_error, (int)n, NULL, 0);
            doq_fail(c, n == NGTCP2_ERR_CLOSING || n == NGTCP2_ERR_DRAINING, "QUIC write: %s", ngtcp2_strerror((int)n));
            return;
        }
        if (s != NULL && written > 0) {
            s->out_sent += (size_t)written;
            if (s->out_sent == s->out_len) s = doq_next_to_write(c, s);
        }
        if (n == 0) return;
        doq_send_packet(c, buffer, (size_t)n);
    }
}

int httpdns_quic_client_advance(httpdns_quic_client *c, int readable) {
    if (c->over) return -1;
    if (readable) doq_read(c);
    for (struct doq_stream *s = c->head; s != NULL && !c->over; s = s->next) {
        if (s->abort) {
            s->abort = 0;
            s->stop_reading = 0;
            ngtcp2_conn_shutdown_stream(c->conn, s->id, s->abort_code);
        } else if (s->stop_reading) {
            s->stop_reading = 0;
            ngtcp2_conn_shutdown_stream_read(c->conn, s->id, DOQ_NO_ERROR);
        }
    }
    if (!c->over && ngtcp2_conn_get_expiry(c->conn) <= doq_timestamp()) {
        int rv = ngtcp2_conn_handle_expiry(c->conn, doq_timestamp());
        if (rv == NGTCP2_ERR_IDLE_CLOSE) {
            doq_fail(c, 1, "closed after the idle timeout");
        } else if (rv != 0) {
            ngtcp2_connection_close_error_set_transport_error_liberr(&c->last_error, rv, NULL, 0);
            doq_fail(c, 0, "QUIC timer: %s", ngtcp2_strerror(rv));
        }
    }
    if (!c->over) doq_open_streams(c);
    if (!c->over) doq_write(c);
    return c->over ? -1 : 0;
}

long httpdns_quic_client_take(httpdns_quic_client *c, uint64_t *tag, uint8_t *buffer, size_t capacity) {
    struct doq_result *r = c->results;
    if (r == NULL) return -1;
    c->results = r->next;
    if (c->results == NULL) c->results_tail = NULL;
    *tag = r->tag;
    long outcome = -2;
    if (!r->failed && r->length <= capacity) {
        memcpy(buffer, r->bytes, r->length);
        outcome = (long)r->length;
    }
    free(r->bytes);
    free(r);
    return outcome;
}

#ifndef HTTPDNS_CTLSCLIENT_SHIM_H
#define HTTPDNS_CTLSCLIENT_SHIM_H
// The TLS client of the stub's DNS-over-TLS upstreams (RFC 7858), through OpenSSL's libssl.
//
// Swift does not import OpenSSL's macros (SSL_set_tlsext_host_name, SSL_CTX_set_min_proto_version,
// SSL_CTX_set_mode) and SSL_get_error must be read with the error queue cleared first, so each step
// is one function here. Every step is non-blocking on a non-blocking socket and returns:
// n > 0 bytes (or 1, handshake done), 0 the peer closed the session (close_notify),
// -1 an error (its text in `error`), -2 call again when the socket is readable,
// -3 call again when it is writable.
//
// Peer verification is always on: the chain against the trust given, the host name against the
// certificate (SSL_set1_host); there is deliberately no way to turn either off.
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <stdio.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/// Turns Nagle's algorithm off on `fd` (Swift's Glibc does not import TCP_NODELAY).
static inline int httpdns_tls_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/// The text of the last OpenSSL error (or `fallback`) in `error`.
static inline void httpdns_tls_error_text(const char *fallback, char *error, size_t error_len) {
    unsigned long code = ERR_get_error();
    if (code != 0) {
        ERR_error_string_n(code, error, error_len);
    } else {
        snprintf(error, error_len, "%s", fallback);
    }
    ERR_clear_error();
}

/// The session an upstream resumes its next connection with (RFC 7858 §3.4 recommends resumption, RFC
/// 5077 and TLS 1.3 tickets): the newest the server gave on one of its connections, or NULL. Owned
/// by the upstream, used only on its I/O thread.
typedef struct {
    SSL_SESSION *session;
} httpdns_tls_session_slot;

/// OpenSSL's new-session callback: keeps `session` in the connection's slot (its app data), in
/// place of the one it held. Returns 1: the reference is the slot's.
static inline int httpdns_tls_on_new_session(SSL *ssl, SSL_SESSION *session) {
    httpdns_tls_session_slot *slot = (httpdns_tls_session_slot *)SSL_get_app_data(ssl);
    if (slot == NULL) return 0;
    if (slot->session != NULL) SSL_SESSION_free(slot->session);
    slot->session = session;
    return 1;
}

/// Frees the slot's session (the slot itself is the caller's).
static inline void httpdns_tls_session_slot_clear(httpdns_tls_session_slot *slot) {
    if (slot->session != NULL) SSL_SESSION_free(slot->session);
    slot->session = NULL;
}

/// A client context: TLS 1.2 or newer (RFC 8310 §8.1), peer verification on. Trust: the PEM file
/// `ca_file`, else the PEM data `ca_pem` (`ca_pem_len` bytes), else OpenSSL's default paths (the
/// system store). NULL on failure, with the reason in `error`.
static inline SSL_CTX *httpdns_tls_client_context(const char *ca_file, const char *ca_pem, size_t ca_pem_len,
                                                  char *error, size_t error_len) {
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) goto fail;
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) goto fail;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    // A write may end part-way (the socket is full) and is resumed from a buffer that may have moved.
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // Sessions the server gives (TLS 1.3 tickets arrive after the handshake) go to the connection's
    // slot through the callback, not to OpenSSL's own client cache.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, httpdns_tls_on_new_session);
    if (ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) goto fail;
    } else if (ca_pem != NULL) {
        BIO *bio = BIO_new_mem_buf(ca_pem, (int)ca_pem_len);
        if (bio == NULL) goto fail;
        X509_STORE *store = SSL_CTX_get_cert_store(ctx);
        int added = 0;
        X509 *certificate;
        while ((certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
            if (X509_STORE_add_cert(store, certificate) == 1) added++;
            X509_free(certificate);
        }
        BIO_free(bio);
        // The end of the PEM data reads as an error; a duplicate certificate too.
        ERR_clear_error();
        if (added == 0) {
            snprintf(error, error_len, "no CA certificate in the PEM data");
            SSL_CTX_free(ctx);
            return NULL;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        goto fail;
    }
    return ctx;
fail:
    httpdns_tls_error_text("cannot make a TLS context", error, error_len);
    SSL_CTX_free(ctx);
    return NULL;
}

/// A client session on the connected socket `fd`: SNI and the verified name are both `host`
/// (a DNS name, never an IP address), partial wildcards refused. NULL on failure.
static inline SSL *httpdns_tls_client_new(SSL_CTX *ctx, int fd, const char *host) {
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL) return NULL;
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set_fd(ssl, fd) != 1 || SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1) {
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_verify(ssl, SSL_VERIFY_PEER, NULL);
    return ssl;
}

/// Gives `ssl` the upstream's session `slot`: new sessions land there, and the one it holds (if the
/// server may still resume it) is offered in the handshake. The name is checked as on a full
/// handshake: a slot belongs to one upstream, its one server and name.
static inline void httpdns_tls_use_session_slot(SSL *ssl, httpdns_tls_session_slot *slot) {
    SSL_set_app_data(ssl, slot);
    if (slot->session != NULL && SSL_SESSION_is_resumable(slot->session)) (void)SSL_set_session(ssl, slot->session);
}

/// What a failed step means (see the header's comment for the values).
static inline long httpdns_tls_outcome(SSL *ssl, int result, char *error, size_t error_len) {
    int saved = errno;
    switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ:
        return -2;
    case SSL_ERROR_WANT_WRITE:
        return -3;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() == 0) {
            snprintf(error, error_len, "%s", saved == 0 ? "connection closed" : strerror(saved));
            return -1;
        }
        break;
    default:
        break;
    }
    long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
        snprintf(error, error_len, "certificate verify failed: %s", X509_verify_cert_error_string(verify));
        ERR_clear_error();
    } else {
        httpdns_tls_error_text("TLS error", error, error_len);
    }
    return -1;
}

/// One step of the handshake: 1 when done.
static inline long httpdns_tls_handshake(SSL *ssl, char *error, size_t error_len) {
    ERR_clear_error();
    int result = SSL_connect(ssl);
    return result == 1 ? 1 : httpdns_tls_outcome(ssl, result, error, error_len);
}

/// Writes up to `length` bytes: the count written (maybe fewer), or a step result.
static inline long httpdns_tls_write(SSL *ssl, const void *bytes, size_t length, char *error, size_t error_len) {
    size_t written = 0;
    ERR_clear_error();
    int result = SSL_write_ex(ssl, bytes, length, &written);
    return result == 1 ? (long)written : httpdns_tls_outcome(ssl, result, error, error_len);
}

/// Reads up to `length` bytes: the count read, or a step result.
static inline long httpdns_tls_read(SSL *ssl, void *bytes, size_t length, char *error, size_t error_len) {
    size_t count = 0;
    ERR_clear_error();
    int result = SSL_read_ex(ssl, bytes, length, &count);
    return result == 1 ? (long)count : httpdns_tls_outcome(ssl, result, error, error_len);
}

/// Sends close_notify when it can go at once (no waiting for the peer's) and frees the session.
static inline void httpdns_tls_free(SSL *ssl) {
    ERR_clear_error();
    if (SSL_is_init_finished(ssl)) (void)SSL_shutdown(ssl);
    ERR_clear_error();
    SSL_free(ssl);
}
#endif

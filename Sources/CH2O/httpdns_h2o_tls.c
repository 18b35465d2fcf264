/* The loop side's TLS contexts: made from PEM text, released by Swift. */
#define _GNU_SOURCE
#include "httpdns_h2o_internal.h"

#include <stdio.h>

#include <openssl/err.h>
#include <openssl/pem.h>

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

static const h2o_iovec_t dot_alpn[] = {{H2O_STRLIT("dot")}, {NULL, 0}};

void httpdns_h2o_tls_use_dot_alpn(httpdns_h2o_tls *tls)
{
    h2o_ssl_register_alpn_protocols((SSL_CTX *)tls, dot_alpn);
}

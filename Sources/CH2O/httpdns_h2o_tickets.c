/*
 * TLS session ticket keys shared by every instance of a fleet (issue 24): a ticket one instance
 * issued resumes on any other that holds its key, which OpenSSL's default (a random key per
 * process) cannot do.
 *
 * A store holds the keys in nginx's 80-byte layout (16 bytes of key name, 32 of HMAC-SHA256 key,
 * 32 of AES-256-CBC key), the first encrypting new tickets and every one decrypting; it is shared
 * by reference with each TLS context that uses it (SSL_CTX ex_data), so a certificate reload keeps
 * it and a key reload reaches every context at once. The callback copies the key it needs under
 * the store's mutex (a handshake's worth of work, never a loop's), then sets OpenSSL up with it.
 */
#define _GNU_SOURCE
#include "httpdns_h2o_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

struct httpdns_h2o_ticket_store {
    atomic_int references;
    pthread_mutex_t lock;
    size_t count;
    uint8_t *keys; /* count × HTTPDNS_H2O_TICKET_KEY_BYTES */
};

static int store_index = -1;
static pthread_once_t store_index_once = PTHREAD_ONCE_INIT;

static void store_ex_free(void *parent, void *pointer, CRYPTO_EX_DATA *data, int index, long argl, void *argp)
{
    (void)parent, (void)data, (void)index, (void)argl, (void)argp;
    if (pointer != NULL)
        httpdns_h2o_ticket_store_release(pointer);
}

static void make_store_index(void)
{
    store_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, store_ex_free);
}

httpdns_h2o_ticket_store *httpdns_h2o_ticket_store_create(void)
{
    httpdns_h2o_ticket_store *store = calloc(1, sizeof(*store));
    if (store == NULL)
        return NULL;
    atomic_init(&store->references, 1);
    pthread_mutex_init(&store->lock, NULL);
    return store;
}

int httpdns_h2o_ticket_store_set(httpdns_h2o_ticket_store *store, const uint8_t *keys, size_t count)
{
    uint8_t *copy = NULL;
    if (count > 0) {
        copy = malloc(count * HTTPDNS_H2O_TICKET_KEY_BYTES);
        if (copy == NULL)
            return -1;
        memcpy(copy, keys, count * HTTPDNS_H2O_TICKET_KEY_BYTES);
    }
    pthread_mutex_lock(&store->lock);
    uint8_t *old = store->keys;
    size_t old_count = store->count;
    store->keys = copy;
    store->count = count;
    pthread_mutex_unlock(&store->lock);
    if (old != NULL) {
        OPENSSL_cleanse(old, old_count * HTTPDNS_H2O_TICKET_KEY_BYTES);
        free(old);
    }
    return 0;
}

void httpdns_h2o_ticket_store_release(httpdns_h2o_ticket_store *store)
{
    if (atomic_fetch_sub(&store->references, 1) != 1)
        return;
    if (store->keys != NULL) {
        OPENSSL_cleanse(store->keys, store->count * HTTPDNS_H2O_TICKET_KEY_BYTES);
        free(store->keys);
    }
    pthread_mutex_destroy(&store->lock);
    free(store);
}

/* SSL_CTX_set_tlsext_ticket_key_evp_cb: 1 done, 2 done and the ticket (an older key's) is renewed,
 * 0 no ticket issued / not decryptable (a full handshake), -1 error. */
static int ticket_key_callback(SSL *ssl, unsigned char *name, unsigned char *iv, EVP_CIPHER_CTX *cipher, EVP_MAC_CTX *mac,
                               int encrypt)
{
    httpdns_h2o_ticket_store *store = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), store_index);
    if (store == NULL)
        return 0;
    uint8_t key[HTTPDNS_H2O_TICKET_KEY_BYTES];
    long found = -1;
    pthread_mutex_lock(&store->lock);
    for (size_t i = 0; i < store->count; i++) {
        const uint8_t *candidate = store->keys + i * HTTPDNS_H2O_TICKET_KEY_BYTES;
        if (encrypt || memcmp(candidate, name, 16) == 0) {
            memcpy(key, candidate, sizeof(key));
            found = (long)i;
            break;
        }
    }
    pthread_mutex_unlock(&store->lock);
    if (found < 0)
        return 0;
    int result = -1;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key + 16, 32),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    if (encrypt) {
        memcpy(name, key, 16);
        if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(EVP_aes_256_cbc())) == 1 &&
            EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), NULL, key + 48, iv) == 1 && EVP_MAC_CTX_set_params(mac, params) == 1)
            result = 1;
    } else {
        if (EVP_MAC_CTX_set_params(mac, params) == 1 && EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), NULL, key + 48, iv) == 1)
            result = found == 0 ? 1 : 2;
    }
    OPENSSL_cleanse(key, sizeof(key));
    return result;
}

int httpdns_h2o_tls_use_ticket_store(httpdns_h2o_tls *tls, httpdns_h2o_ticket_store *store)
{
    pthread_once(&store_index_once, make_store_index);
    if (store_index < 0)
        return -1;
    SSL_CTX *ctx = (SSL_CTX *)tls;
    atomic_fetch_add(&store->references, 1);
    if (SSL_CTX_set_ex_data(ctx, store_index, store) != 1) {
        httpdns_h2o_ticket_store_release(store);
        return -1;
    }
    if (SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_key_callback) != 1)
        return -1;
    return 0;
}

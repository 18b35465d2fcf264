#ifndef HTTPDNS_CCRYPTO_SHIM_H
#define HTTPDNS_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/provider.h>
#include <openssl/crypto.h>

/// One-shot symmetric cipher through the EVP API (PKCS#7 padding on).
///
/// `libctx` may be NULL (the default library context); DES needs a context with the legacy
/// provider loaded. `out` must have room for `inlen + 32` bytes. Returns 1 on success, 0 on any
/// failure (unknown cipher, wrong key or IV length, bad padding on decryption).
static inline int httpdns_cipher_oneshot(OSSL_LIB_CTX *libctx, const char *name, int encrypt,
                                         const unsigned char *key, int keylen,
                                         const unsigned char *iv, int ivlen,
                                         const unsigned char *in, int inlen,
                                         unsigned char *out, int *outlen) {
    int ok = 0;
    int total = 0;
    int len = 0;
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(libctx, name, NULL);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (cipher == NULL || ctx == NULL || inlen < 0) goto done;
    if (EVP_CIPHER_get_key_length(cipher) != keylen) goto done;
    if (EVP_CIPHER_get_iv_length(cipher) != ivlen) goto done;
    if (EVP_CipherInit_ex2(ctx, cipher, key, ivlen > 0 ? iv : NULL, encrypt, NULL) != 1) goto done;
    if (EVP_CIPHER_CTX_set_padding(ctx, 1) != 1) goto done;
    if (EVP_CipherUpdate(ctx, out, &len, in, inlen) != 1) goto done;
    total = len;
    if (EVP_CipherFinal_ex(ctx, out + total, &len) != 1) goto done;
    total += len;
    *outlen = total;
    ok = 1;
done:
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(cipher);
    return ok;
}

/// One-shot message digest by name ("MD5", "SHA256"); `out` needs EVP_MAX_MD_SIZE bytes.
static inline int httpdns_digest(const char *name, const unsigned char *in, size_t inlen,
                                 unsigned char *out, unsigned int *outlen) {
    EVP_MD *md = EVP_MD_fetch(NULL, name, NULL);
    if (md == NULL) return 0;
    int ok = EVP_Digest(in, inlen, out, outlen, md, NULL);
    EVP_MD_free(md);
    return ok;
}

/// One-shot HMAC-SHA256; `out` needs 32 bytes.
static inline int httpdns_hmac_sha256(const unsigned char *key, int keylen,
                                      const unsigned char *in, size_t inlen,
                                      unsigned char *out, unsigned int *outlen) {
    static const unsigned char empty = 0;
    return HMAC(EVP_sha256(), keylen > 0 ? key : &empty, keylen, in, inlen, out, outlen) != NULL;
}

/// Initialises libcrypto without its `atexit` clean-up; 1 on success.
static inline int httpdns_crypto_init_without_atexit(void) {
    return OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}

/// A private library context with the legacy (DES) and default providers; NULL on failure.
static inline OSSL_LIB_CTX *httpdns_legacy_libctx_new(void) {
    OSSL_LIB_CTX *ctx = OSSL_LIB_CTX_new();
    if (ctx == NULL) return NULL;
    if (OSSL_PROVIDER_load(ctx, "legacy") == NULL || OSSL_PROVIDER_load(ctx, "default") == NULL) {
        OSSL_LIB_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}
#endif

#ifndef HTTPDNS_CCRYPTO_SHIM_H
#define HTTPDNS_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#endif

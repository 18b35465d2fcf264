#ifndef HTTPDNS_CCURL_SHIM_H
#define HTTPDNS_CCURL_SHIM_H
#include <curl/curl.h>

/*
 * curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift cannot call.
 * One fixed-signature wrapper per argument kind; libcurl reads the argument with the type its
 * option table documents, so each option must be passed through the matching wrapper.
 */

static inline CURLcode httpdns_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode httpdns_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/* Strings are copied by libcurl (except CURLOPT_POSTFIELDS, which this project never uses). */
static inline CURLcode httpdns_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/* Opaque pointers: CURLOPT_*DATA user pointers, CURLOPT_PRIVATE, CURLOPT_ERRORBUFFER. */
static inline CURLcode httpdns_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode httpdns_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/* libcurl copies the blob when flags is CURL_BLOB_COPY. */
static inline CURLcode httpdns_easy_setopt_blob(CURL *handle, CURLoption option, struct curl_blob *value) {
    return curl_easy_setopt(handle, option, value);
}

/* CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION share this signature. */
static inline CURLcode httpdns_easy_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode httpdns_easy_setopt_read_function(CURL *handle, CURLoption option, curl_read_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode httpdns_easy_setopt_xferinfo_function(CURL *handle, CURLoption option, curl_xferinfo_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/* Called once the connection (and any TLS handshake) is ready, before the request is sent. */
static inline CURLcode httpdns_easy_setopt_prereq_function(CURL *handle, CURLoption option, curl_prereq_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode httpdns_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode httpdns_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode httpdns_easy_getinfo_double(CURL *handle, CURLINFO info, double *value) {
    return curl_easy_getinfo(handle, info, value);
}

/* The string stays owned by the easy handle; copy it before the handle is cleaned up. */
static inline CURLcode httpdns_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode httpdns_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode httpdns_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

static inline CURLcode httpdns_easy_setopt_seek_function(CURL *handle, CURLoption option, curl_seek_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/* CURL_GLOBAL_ALL is a macro expression; keep the flag choice in C. */
static inline CURLcode httpdns_curl_global_init(void) { return curl_global_init(CURL_GLOBAL_ALL); }

/* Lifts a pause (CURLPAUSE_CONT is a macro expression); call on the thread that drives the multi handle. */
static inline CURLcode httpdns_easy_unpause(CURL *handle) { return curl_easy_pause(handle, CURLPAUSE_CONT); }

/* Return values of the write and read callbacks that are macros Swift cannot see. */
static inline size_t httpdns_curl_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
static inline size_t httpdns_curl_readfunc_abort(void) { return CURL_READFUNC_ABORT; }
static inline size_t httpdns_curl_readfunc_pause(void) { return CURL_READFUNC_PAUSE; }

#endif

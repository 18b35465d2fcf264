/* The floor of bench row 5: what HTTPDNSClient.data(for:)'s requests cost in libcurl with none of
 * our code around them. The same calls our transport makes for each request (one easy handle per
 * request on one long-lived multi handle, multiplexed over HTTP/2 with the same connection
 * limits; the address pinned through CURLOPT_CONNECT_TO to a synthetic name that CURLOPT_RESOLVE
 * maps to 127.0.0.1; the certificate verified against the CA file; every header line copied out
 * and the body collected in memory), all on one thread, with no hand-off to anyone.
 *
 * Usage: client-floor URL CAFILE PORT PARALLEL EXPECTED_BODY_BYTES
 * Then, for every line "N" on standard input, runs N requests with at most PARALLEL in flight and
 * prints "ns T" (T: nanoseconds for all N) or "error MESSAGE". Ends at the end of its input. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct transfer {
    CURL *easy;
    struct curl_slist *connect_to, *resolve;
    char **headers;
    size_t header_count, header_capacity;
    char *body;
    size_t body_length, body_capacity;
    char error[CURL_ERROR_SIZE];
};

static const char *url, *cafile;
static char connect_to_entry[128], resolve_entry[128];

static size_t on_header(char *data, size_t size, size_t count, void *context) {
    struct transfer *transfer = context;
    size_t length = size * count;
    if (transfer->header_count == transfer->header_capacity) {
        transfer->header_capacity = transfer->header_capacity ? transfer->header_capacity * 2 : 16;
        transfer->headers = realloc(transfer->headers, transfer->header_capacity * sizeof(char *));
    }
    char *line = malloc(length + 1);
    memcpy(line, data, length);
    line[length] = 0;
    transfer->headers[transfer->header_count++] = line;
    return length;
}

static size_t on_body(char *data, size_t size, size_t count, void *context) {
    struct transfer *transfer = context;
    size_t length = size * count;
    if (transfer->body_length + length > transfer->body_capacity) {
        transfer->body_capacity = (transfer->body_length + length) * 2;
        transfer->body = realloc(transfer->body, transfer->body_capacity);
    }
    memcpy(transfer->body + transfer->body_length, data, length);
    transfer->body_length += length;
    return length;
}

static struct transfer *start(CURLM *multi) {
    struct transfer *transfer = calloc(1, sizeof *transfer);
    CURL *easy = curl_easy_init();
    transfer->easy = easy;
    transfer->connect_to = curl_slist_append(NULL, connect_to_entry);
    transfer->resolve = curl_slist_append(NULL, resolve_entry);
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, transfer->error);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(easy, CURLOPT_PROXY, "");
    curl_easy_setopt(easy, CURLOPT_CONNECT_TO, transfer->connect_to);
    curl_easy_setopt(easy, CURLOPT_RESOLVE, transfer->resolve);
    curl_easy_setopt(easy, CURLOPT_CAINFO, cafile);
    curl_easy_setopt(easy, CURLOPT_CAPATH, NULL);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, transfer);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, transfer);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, transfer);
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    curl_multi_add_handle(multi, easy);
    return transfer;
}

static void end(CURLM *multi, struct transfer *transfer) {
    curl_multi_remove_handle(multi, transfer->easy);
    curl_easy_cleanup(transfer->easy);
    curl_slist_free_all(transfer->connect_to);
    curl_slist_free_all(transfer->resolve);
    for (size_t i = 0; i < transfer->header_count; i++) free(transfer->headers[i]);
    free(transfer->headers);
    free(transfer->body);
    free(transfer);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: client-floor URL CAFILE PORT PARALLEL EXPECTED_BODY_BYTES\n");
        return 2;
    }
    url = argv[1];
    cafile = argv[2];
    int port = atoi(argv[3]), parallel = atoi(argv[4]);
    size_t expected = (size_t)atol(argv[5]);
    snprintf(connect_to_entry, sizeof connect_to_entry, "::floor.pin.invalid:%d", port);
    snprintf(resolve_entry, sizeof resolve_entry, "floor.pin.invalid:%d:127.0.0.1", port);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 8L);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, 64L);
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    setvbuf(stdout, NULL, _IOLBF, 0);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        long total = atol(line), started = 0, finished = 0;
        const char *failure = NULL;
        struct timespec begin, stop;
        clock_gettime(CLOCK_MONOTONIC, &begin);
        while (finished < total && !failure) {
            while (started < total && started - finished < parallel) {
                start(multi);
                started++;
            }
            int running = 0;
            curl_multi_perform(multi, &running);
            CURLMsg *message;
            int queued = 0, ended = 0;
            while ((message = curl_multi_info_read(multi, &queued))) {
                if (message->msg != CURLMSG_DONE) continue;
                struct transfer *transfer;
                curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&transfer);
                long status = 0;
                curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &status);
                if (message->data.result != CURLE_OK) {
                    failure = transfer->error[0] ? strdup(transfer->error) : curl_easy_strerror(message->data.result);
                } else if (status != 200 || transfer->body_length != expected) {
                    failure = "unexpected answer";
                }
                end(multi, transfer);
                finished++;
                ended++;
            }
            /* Waits only when nothing ended: ended transfers make room for new ones first. */
            if (!ended && finished < total && !failure) curl_multi_poll(multi, NULL, 0, 1000, NULL);
        }
        clock_gettime(CLOCK_MONOTONIC, &stop);
        if (failure) {
            printf("error %s\n", failure);
            return 1;
        }
        printf("ns %lld\n", (long long)(stop.tv_sec - begin.tv_sec) * 1000000000LL + (stop.tv_nsec - begin.tv_nsec));
    }
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return 0;
}

#ifndef HTTPDNS_CMICROHTTPD_SHIM_H
#define HTTPDNS_CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdarg.h>
#include <stddef.h>
#include <microhttpd.h>

/*
 * MHD_start_daemon, MHD_get_daemon_info and MHD_get_connection_info are variadic, which Swift
 * cannot call. These wrappers take fixed arguments and pass the options as an MHD_OPTION_ARRAY.
 */

typedef void *(*httpdns_mhd_uri_log_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/* Everything httpdns_mhd_start needs; NULL/0 members are left out of the option array. */
struct httpdns_mhd_settings {
    /* Bind address (sockaddr_in or sockaddr_in6, port inside); required. */
    const struct sockaddr *address;
    int ipv6;
    /* PEM certificate chain and key; both or neither. MHD keeps the pointers: they must outlive the daemon. */
    const char *tls_certificate;
    const char *tls_key;
    /* Seconds an idle connection is kept; 0 = forever. */
    unsigned int connection_timeout;
    MHD_AccessHandlerCallback handler;
    void *handler_context;
    MHD_RequestCompletedCallback completed;
    void *completed_context;
    MHD_NotifyConnectionCallback notify_connection;
    void *notify_connection_context;
    httpdns_mhd_uri_log_callback uri_log;
    void *uri_log_context;
};

static inline struct MHD_Daemon *httpdns_mhd_start(const struct httpdns_mhd_settings *s) {
    struct MHD_OptionItem items[10];
    int n = 0;
    unsigned int flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION;
    if (s->ipv6) flags |= MHD_USE_IPv6;
    if (s->tls_certificate && s->tls_key) {
        flags |= MHD_USE_TLS;
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)s->tls_certificate };
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)s->tls_key };
    }
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, (void *)s->address };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->connection_timeout, NULL };
    if (s->completed)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)s->completed, s->completed_context };
    if (s->notify_connection)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)s->notify_connection, s->notify_connection_context };
    if (s->uri_log)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)s->uri_log, s->uri_log_context };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    /* The port argument is ignored when MHD_OPTION_SOCK_ADDR is given. */
    return MHD_start_daemon(flags, 0, NULL, NULL, s->handler, s->handler_context,
                            MHD_OPTION_ARRAY, items, MHD_OPTION_END);
}

/* The port the daemon is listening on (useful after binding port 0), or 0. */
static inline uint16_t httpdns_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/* The client's socket address, or NULL. */
static inline const struct sockaddr *httpdns_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

static inline uint64_t httpdns_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }
static inline ssize_t httpdns_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline ssize_t httpdns_mhd_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }

#endif

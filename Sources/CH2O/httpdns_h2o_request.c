/* The loop side's requests: h2o's handler and generator, responses posted by Swift (head, chunks,
 * release), and the accessors Swift reads a request through. */
#define _GNU_SOURCE
#include "httpdns_h2o_internal.h"

/* ---- requests ---- */

static void free_request_if_done(httpdns_h2o_request *r)
{
    if (r->req != NULL || r->swift_holds)
        return;
    if (r->pending != NULL) {
        free(r->pending->body);
        free(r->pending);
    }
    free(r->inflight);
    r->loop->live_requests--;
    free(r);
}

/* Swift has let go of the request: it no longer counts against its connection's stream limit. */
static void swift_done(httpdns_h2o_request *r)
{
    r->swift_holds = 0;
    if (r->counted) {
        r->counted = 0;
        r->conn->requests--;
    }
}

static void notify_proceed(httpdns_h2o_request *r, int cancelled)
{
    httpdns_h2o_server *s = r->loop->server;
    if (r->swift_holds)
        s->callbacks.proceed(s->callbacks.context, r, cancelled);
}

static void on_dispose(void *slot)
{
    httpdns_h2o_request *r = *(httpdns_h2o_request **)slot;
    r->req = NULL;
    if (r->counted) {
        r->counted = 0;
        r->conn->requests--;
    }
    if (r->conn != NULL)
        r->conn->active--;
    /* HTTP/1: this request is over (answered, or its connection is closing); the next one has
     * the request timeout from now, as h2o's own keep-alive timer has. */
    if (r->conn != NULL && r->http1) {
        httpdns_h2o__arm_request_deadline(r->conn);
        httpdns_h2o__drain_on_request_done(r->conn);
    }
    r->conn = NULL;
    /* A streaming producer waits for `proceed`: tell it the client is gone. */
    if (r->started && !r->finished && r->swift_holds)
        notify_proceed(r, 1);
    free_request_if_done(r);
}

/* HTTP/1 during the drain: this response says `Connection: close` and its connection closes after
 * it, also when h2o parsed the request (persistent) before the drain began. */
static void keep_alive_unless_draining(httpdns_h2o_request *r)
{
    if (r->http1 && httpdns_h2o__draining(r->loop))
        r->req->http1_is_persistent = 0;
}

static void send_chunk(httpdns_h2o_request *r, struct message *m)
{
    free(r->inflight);
    r->inflight = m->body;
    r->can_send = 0;
    h2o_iovec_t buffer = h2o_iovec_init(m->body, m->body_length);
    if (m->final) {
        r->finished = 1;
        swift_done(r);
    }
    free(m);
    /* May dispose of the request (and free `r` when Swift is done): the caller must not touch `r`. */
    h2o_send(r->req, &buffer, buffer.len != 0 ? 1 : 0, r->finished ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

static void on_proceed(h2o_generator_t *generator, h2o_req_t *req)
{
    httpdns_h2o_request *r = (httpdns_h2o_request *)generator;
    (void)req;
    free(r->inflight);
    r->inflight = NULL;
    r->can_send = 1;
    if (r->pending != NULL) {
        struct message *m = r->pending;
        r->pending = NULL;
        send_chunk(r, m);
        return;
    }
    if (!r->finished)
        notify_proceed(r, 0);
}

static void on_stop(h2o_generator_t *generator, h2o_req_t *req)
{
    httpdns_h2o_request *r = (httpdns_h2o_request *)generator;
    (void)req;
    r->stopped = 1;
}

/* Our record of the connection a request came on, or NULL (a socket h2o made itself). */
static struct connection *connection_of(h2o_req_t *req)
{
    h2o_socket_t *sock = req->conn->callbacks->get_socket != NULL ? req->conn->callbacks->get_socket(req->conn) : NULL;
    if (sock == NULL || sock->on_close.cb != httpdns_h2o__on_connection_close)
        return NULL;
    return sock->on_close.data;
}

/* An HTTP/2 stream past --max-streams on its connection. h2o 2.2 would queue it (its
 * max_concurrent_requests_per_connection holds requests back until others finish), so a client
 * could park any number of requests behind slow ones and wait in silence. It is answered here,
 * without entering Swift: 503 with Retry-After, which the client, its logs and h2load's status
 * counts all see. Not RST_STREAM REFUSED_STREAM: h2o's handler API cannot send it, and h2o 2.2
 * advertises a fixed SETTINGS_MAX_CONCURRENT_STREAMS of 100 (its settings frame is a constant),
 * so a client under 100 broke no rule and deserves an HTTP answer that says when to come back. */
static void refuse_stream(httpdns_h2o_server *s, h2o_req_t *req)
{
    static const char body[] = "too many concurrent requests on this connection, try again soon\n";
    req->res.status = 503;
    req->res.reason = "Service Unavailable";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/plain; charset=utf-8"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
    s->callbacks.shed(s->callbacks.context, HTTPDNS_H2O_SHED_STREAMS);
    h2o_send_inline(req, body, sizeof(body) - 1);
}

int httpdns_h2o__on_req(h2o_handler_t *self, h2o_req_t *req)
{
    struct loop *loop = ((struct handler *)self)->loop;
    httpdns_h2o_server *s = loop->server;
    struct connection *c = connection_of(req);
    int http1 = req->version < 0x200;
    if (c != NULL) {
        /* The request is whole: the deadline for its head and body is met. */
        if (h2o_timeout_is_linked(&c->request_deadline))
            h2o_timeout_unlink(&c->request_deadline);
        httpdns_h2o__drain_on_request(c, http1);
        if (!http1 && (size_t)c->requests >= s->settings.max_streams) {
            refuse_stream(s, req);
            return 0;
        }
    }
    httpdns_h2o_request *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return -1;
    r->req = req;
    r->loop = loop;
    r->conn = c;
    r->http1 = http1;
    if (c != NULL) {
        r->counted = 1;
        c->requests++;
        c->active++;
    }
    r->swift_holds = 1;
    r->generator.proceed = on_proceed;
    r->generator.stop = on_stop;
    httpdns_h2o_request **slot = h2o_mem_alloc_shared(&req->pool, sizeof(*slot), on_dispose);
    *slot = r;
    loop->live_requests++;
    s->callbacks.request(s->callbacks.context, r);
    return 0;
}

static const char *reason_for(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return status < 400 ? "OK" : "Error";
    }
}

void httpdns_h2o__handle_head(struct message *m)
{
    httpdns_h2o_request *r = m->request;
    if (r->req == NULL || r->started) {
        /* The client is gone (or a second head): drop it; a stream start learns of it at once. */
        if (m->final)
            swift_done(r);
        else if (r->swift_holds)
            notify_proceed(r, 1);
        free(m->body);
        free(m->headers);
        free(m);
        free_request_if_done(r);
        return;
    }
    h2o_req_t *req = r->req;
    keep_alive_unless_draining(r);
    req->res.status = m->status;
    req->res.reason = reason_for(m->status);
    for (size_t i = 0; i < m->header_count; i++) {
        h2o_iovec_t name = m->headers[2 * i], value = m->headers[2 * i + 1];
        /* HTTP/2 wants lower-case names; HTTP/1 keeps the case the handler wrote. */
        char *lower = h2o_mem_alloc_pool(&req->pool, name.len + 1);
        char *original = h2o_mem_alloc_pool(&req->pool, name.len + 1);
        for (size_t j = 0; j < name.len; j++) {
            char c = name.base[j];
            original[j] = c;
            lower[j] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
        }
        lower[name.len] = original[name.len] = '\0';
        h2o_iovec_t copied = h2o_strdup(&req->pool, value.base, value.len);
        h2o_add_header_by_str(&req->pool, &req->res.headers, lower, name.len, 1, original, copied.base, copied.len);
    }
    free(m->headers);
    m->headers = NULL;
    if (m->final && (m->body_length > 0 || m->content_length < 0)) {
        req->res.content_length = m->body_length;
    } else if (m->content_length >= 0) {
        /* A HEAD answer: the length of the body it would have, and no body. */
        req->res.content_length = (size_t)m->content_length;
    }
    r->started = 1;
    h2o_start_response(req, &r->generator);
    if (m->final) {
        m->kind = MSG_CHUNK;
        send_chunk(r, m); /* may dispose of the request, and so free `r`: not touched again */
        return;
    }
    free(m->body);
    free(m);
    /* Flush the head; h2o calls proceed when the first chunk may go. */
    r->can_send = 0;
    h2o_send(req, NULL, 0, H2O_SEND_STATE_IN_PROGRESS);
}

void httpdns_h2o__handle_chunk(struct message *m)
{
    httpdns_h2o_request *r = m->request;
    if (r->req == NULL || r->stopped || r->finished || !r->started) {
        if (m->final)
            swift_done(r);
        free(m->body);
        free(m);
        free_request_if_done(r);
        return;
    }
    if (!r->can_send) {
        if (r->pending != NULL) { /* the producer did not wait: keep the order, drop nothing */
            struct message *last = r->pending;
            r->pending = NULL;
            send_chunk(r, last);
        }
        r->pending = m;
        return;
    }
    send_chunk(r, m);
}

void httpdns_h2o__handle_release(struct message *m)
{
    httpdns_h2o_request *r = m->request;
    free(m);
    swift_done(r);
    if (r->req != NULL && !r->finished && !r->stopped) {
        /* Either call may dispose of the request, and so free `r`: not touched again. */
        r->finished = 1;
        if (r->started) {
            h2o_send(r->req, NULL, 0, H2O_SEND_STATE_ERROR);
        } else {
            r->started = 1;
            keep_alive_unless_draining(r);
            h2o_send_error_generic(r->req, 503, "Service Unavailable", "service unavailable\n", 0);
        }
        return;
    }
    free_request_if_done(r);
}

/* ---- request accessors ---- */

void *httpdns_h2o_request_token(httpdns_h2o_request *r) { return r; }

const char *httpdns_h2o_request_method(httpdns_h2o_request *r, size_t *length)
{
    *length = r->req->method.len;
    return r->req->method.base;
}

const char *httpdns_h2o_request_target(httpdns_h2o_request *r, size_t *length)
{
    *length = r->req->path.len;
    return r->req->path.base;
}

long httpdns_h2o_request_query_at(httpdns_h2o_request *r)
{
    return r->req->query_at == SIZE_MAX ? -1 : (long)r->req->query_at;
}

const char *httpdns_h2o_request_authority(httpdns_h2o_request *r, size_t *length)
{
    *length = r->req->authority.len;
    return r->req->authority.base;
}

int httpdns_h2o_request_version(httpdns_h2o_request *r) { return r->req->version; }

size_t httpdns_h2o_request_header_count(httpdns_h2o_request *r) { return r->req->headers.size; }

const char *httpdns_h2o_request_header_name(httpdns_h2o_request *r, size_t index, size_t *length)
{
    h2o_header_t *header = &r->req->headers.entries[index];
    *length = header->name->len;
    return header->orig_name != NULL ? header->orig_name : header->name->base;
}

const char *httpdns_h2o_request_header_value(httpdns_h2o_request *r, size_t index, size_t *length)
{
    h2o_header_t *header = &r->req->headers.entries[index];
    *length = header->value.len;
    return header->value.base;
}

const void *httpdns_h2o_request_body(httpdns_h2o_request *r, size_t *length)
{
    *length = r->req->entity.len;
    return r->req->entity.base;
}

socklen_t httpdns_h2o_request_peer(httpdns_h2o_request *r, struct sockaddr_storage *address)
{
    return r->req->conn->callbacks->get_peername(r->req->conn, (struct sockaddr *)address);
}

int httpdns_h2o_request_listener(httpdns_h2o_request *r)
{
    h2o_socket_t *sock = r->req->conn->callbacks->get_socket != NULL ? r->req->conn->callbacks->get_socket(r->req->conn) : NULL;
    if (sock == NULL || sock->on_close.cb != httpdns_h2o__on_connection_close)
        return -1;
    return ((struct connection *)sock->on_close.data)->listener;
}

/* ---- posting ---- */

void httpdns_h2o_post_head(httpdns_h2o_server *s, void *token, int status, const void *headers,
                           const size_t *lengths, size_t header_count, long long content_length, const void *body,
                           size_t body_length, int final)
{
    (void)s; /* the request knows its loop */
    struct message *m = httpdns_h2o__new_message(MSG_HEAD);
    if (m == NULL)
        abort(); /* out of memory: the request could never be answered */
    m->request = token;
    m->status = status;
    m->final = final;
    m->content_length = content_length;
    size_t text = 0;
    for (size_t i = 0; i < 2 * header_count; i++)
        text += lengths[i];
    m->headers = malloc(sizeof(h2o_iovec_t) * 2 * header_count + text + 1);
    m->body = malloc(body_length + 1);
    if (m->headers == NULL || m->body == NULL)
        abort();
    char *cursor = (char *)(m->headers + 2 * header_count);
    if (text > 0)
        memcpy(cursor, headers, text);
    for (size_t i = 0; i < 2 * header_count; i++) {
        m->headers[i] = h2o_iovec_init(cursor, lengths[i]);
        cursor += lengths[i];
    }
    m->header_count = header_count;
    if (body_length > 0)
        memcpy(m->body, body, body_length);
    m->body_length = body_length;
    httpdns_h2o__post(((httpdns_h2o_request *)token)->loop, m);
}

void httpdns_h2o_post_chunk(httpdns_h2o_server *s, void *token, const void *bytes, size_t length, int final)
{
    (void)s; /* the request knows its loop */
    struct message *m = httpdns_h2o__new_message(MSG_CHUNK);
    if (m == NULL)
        abort();
    m->request = token;
    m->final = final;
    m->body = malloc(length + 1);
    if (m->body == NULL)
        abort();
    if (length > 0)
        memcpy(m->body, bytes, length);
    m->body_length = length;
    httpdns_h2o__post(((httpdns_h2o_request *)token)->loop, m);
}

void httpdns_h2o_post_release(httpdns_h2o_server *s, void *token)
{
    (void)s; /* the request knows its loop */
    struct message *m = httpdns_h2o__new_message(MSG_RELEASE);
    if (m == NULL)
        abort();
    m->request = token;
    httpdns_h2o__post(((httpdns_h2o_request *)token)->loop, m);
}

/* The drain (httpdns_h2o_server_stop_accepting): every request already on its way is answered,
 * then each connection closes.
 *
 * h2o 2.2's graceful shutdown (h2o_context_request_shutdown) does part of it, and is used for
 * that part: with `shutdown_requested` set, HTTP/1 requests parsed from then on are not persistent
 * (`Connection: close`, and h2o closes after the response). What it leaves out lost requests under
 * load (issue 25): a response to a request parsed before the shutdown still says keep-alive, and
 * idle keep-alive connections stay until their timeout, so the server closed them at once, losing
 * the request a client had just sent. Its HTTP/2 side sends every connection GOAWAY (last stream
 * 2^31-1) at once and the final GOAWAY (the last stream taken) a second later, RFC 9113 §6.8's
 * two steps; but a GOAWAY written right behind a response the client has not read yet makes
 * nghttp2 refuse the request the client queues on reading that response (it checks for GOAWAY
 * when it sends a request, not when it queues one), so h2load counted a request failed that never
 * left it. h2o's HTTP/2 request_shutdown callback is therefore unset (httpdns_h2o_server.c) and
 * each connection drains here on its own:
 *
 * - HTTP/1: every response made from now says `Connection: close` (httpdns_h2o__handle_head), and
 *   its connection closes after it. A connection with no request in hand is closed once it has
 *   been quiet for drain_quiet_ms: a request already on its way arrives first and is answered
 *   (a shorter period for loopback clients, tried to spare in-process servers' stops, lost
 *   requests from h2load even at 250 ms).
 * - HTTP/2: the first GOAWAY goes out ahead of the connection's next response: at once when it has
 *   a request in hand, else when its next request arrives (sent after the client read every
 *   earlier response, so nothing unread comes before the GOAWAY), or once quiet for
 *   drain_quiet_ms. The final GOAWAY follows drain_quiet_ms later, written as h2o's own
 *   enqueue_goaway writes it (the last stream taken, the connection half closed), and h2o closes
 *   the connection once those streams are answered.
 *
 * The drain's end (httpdns_h2o_server_close_connections) closes whatever remains.
 */
#define _GNU_SOURCE
#include "httpdns_h2o_internal.h"

#include <sys/ioctl.h>


/* The connection's h2o HTTP/2 connection, or NULL (HTTP/1, or still reading its PROXY header or
 * in its TLS handshake, when sock->data is ours or NULL). */
static h2o_http2_conn_t *http2_of(struct connection *c)
{
    if (h2o_timeout_is_linked(&c->setup_deadline))
        return NULL;
    h2o_conn_t *conn = c->sock->data;
    if (conn == NULL || (void *)conn == (void *)c)
        return NULL;
    /* Every plain connection starts as HTTP/1, which records the loop's HTTP/1 callbacks: other
     * callbacks (or any, when no HTTP/1 connection came yet) are HTTP/2's. */
    if (c->loop->http1_callbacks != NULL && conn->callbacks == c->loop->http1_callbacks)
        return NULL;
    return (h2o_http2_conn_t *)conn;
}

static void on_drain_step(h2o_timeout_entry_t *entry);

/* The connection's next drain step, drain_quiet_ms from now. */
static void schedule_step(struct connection *c)
{
    if (h2o_timeout_is_linked(&c->drain_step))
        h2o_timeout_unlink(&c->drain_step);
    c->drain_step.cb = on_drain_step;
    h2o_timeout_link(c->loop->evloop, &c->loop->drain_quiet, &c->drain_step);
}

/* GOAWAY with the last stream 2^31-1: no new streams, those in flight are still taken. */
static void announce(struct connection *c, h2o_http2_conn_t *h2)
{
    c->goaway = GOAWAY_ANNOUNCED;
    if (h2->state < H2O_HTTP2_CONN_STATE_HALF_CLOSED) {
        h2o_http2_encode_goaway_frame(&h2->_write.buf, INT32_MAX, H2O_HTTP2_ERROR_NONE,
                                      h2o_iovec_init(H2O_STRLIT("graceful shutdown")));
        h2o_http2_conn_request_write(h2);
    }
    schedule_step(c);
}

/* The final GOAWAY, as h2o's enqueue_goaway: the last stream taken; half closed, so that h2o
 * closes the connection once its streams are answered. */
static void finish(struct connection *c, h2o_http2_conn_t *h2)
{
    c->goaway = GOAWAY_FINAL;
    if (h2->state < H2O_HTTP2_CONN_STATE_HALF_CLOSED) {
        h2o_http2_encode_goaway_frame(&h2->_write.buf, h2->pull_stream_ids.max_open, H2O_HTTP2_ERROR_NONE,
                                      h2o_iovec_init(NULL, 0));
        h2o_http2_conn_request_write(h2);
        h2->state = H2O_HTTP2_CONN_STATE_HALF_CLOSED;
    }
}

static void on_drain_step(h2o_timeout_entry_t *entry)
{
    struct connection *c = H2O_STRUCT_FROM_MEMBER(struct connection, drain_step, entry);
    if (h2o_timeout_is_linked(&c->setup_deadline)) {
        /* A PROXY header or TLS handshake under way (its own deadline bounds it). */
        schedule_step(c);
        return;
    }
    int queued = 0;
    if (c->stream) {
        /* A message stream has no way to say "no more queries" that every client understands, so
         * it closes once quiet: no message for drain_quiet_ms, none being answered or written,
         * none begun, none waiting in the kernel's receive queue. A client still sending keeps
         * it (the drain's end cuts it, counted). */
        uint64_t quiet = h2o_now(c->loop->evloop) - c->stream_last_message_ms;
        if (quiet < c->loop->server->settings.drain_quiet_ms || httpdns_h2o__stream_busy(c) ||
            (ioctl(c->fd, FIONREAD, &queued) == 0 && queued > 0))
            schedule_step(c);
        else
            httpdns_h2o__stream_close(c);
        return;
    }
    h2o_http2_conn_t *h2 = http2_of(c);
    if (h2 != NULL) {
        if (c->goaway == GOAWAY_NONE) {
            announce(c, h2);
        } else if (c->goaway == GOAWAY_ANNOUNCED) {
            /* Frames still in the kernel's receive queue may open streams the final GOAWAY must
             * count as taken: let the loop read them first. */
            int pending = 0;
            if (ioctl(c->fd, FIONREAD, &pending) == 0 && pending > 0)
                schedule_step(c);
            else
                finish(c, h2);
        }
        return;
    }
    /* HTTP/1. A request in hand: its response says Connection: close and h2o closes after it. */
    if (c->active > 0)
        return;
    /* Part of a request arrived: the rest may still come (the request deadline bounds it). So
     * does a request still in the kernel's receive queue, which a busy loop has not read yet:
     * closing then would lose it. */
    if (c->sock->input->size > 0 || (ioctl(c->fd, FIONREAD, &queued) == 0 && queued > 0)) {
        schedule_step(c);
        return;
    }
    /* Quiet for drain_quiet_ms with nothing in hand: h2o sees the end and closes. */
    shutdown(c->fd, SHUT_RDWR);
}

void httpdns_h2o__drain_connection(struct connection *c)
{
    h2o_http2_conn_t *h2 = http2_of(c);
    if (h2 != NULL && c->active > 0 && c->goaway == GOAWAY_NONE) {
        /* The response in hand comes after the GOAWAY. */
        announce(c, h2);
        return;
    }
    schedule_step(c);
}

void httpdns_h2o__drain_begin(struct loop *loop)
{
    /* shutdown_requested: h2o parses HTTP/1 requests as not persistent from now on. */
    h2o_context_request_shutdown(&loop->context);
    for (h2o_linklist_t *node = loop->connections.next; node != &loop->connections; node = node->next)
        httpdns_h2o__drain_connection(H2O_STRUCT_FROM_MEMBER(struct connection, link, node));
}

void httpdns_h2o__drain_on_request(struct connection *c, int http1)
{
    if (http1 || !httpdns_h2o__draining(c->loop) || c->goaway != GOAWAY_NONE)
        return;
    h2o_http2_conn_t *h2 = http2_of(c);
    if (h2 != NULL)
        announce(c, h2); /* ahead of this request's response */
}

void httpdns_h2o__drain_on_request_done(struct connection *c)
{
    /* An HTTP/1 response begun before the drain said keep-alive: the connection stays, quiet. */
    if (httpdns_h2o__draining(c->loop))
        schedule_step(c);
}

int httpdns_h2o__drain_unfinished(struct connection *c)
{
    if (c->active > 0)
        return 1;
    if (c->stream && !h2o_timeout_is_linked(&c->setup_deadline))
        return httpdns_h2o__stream_busy(c);
    if (h2o_timeout_is_linked(&c->setup_deadline) || http2_of(c) != NULL)
        return 0;
    return c->sock->input->size > 0;
}

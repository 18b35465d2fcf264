/* The loop side's message streams (httpdns_h2o_server_add_stream_listener): connections that carry
 * length-prefixed messages instead of HTTP, DNS over TCP and over TLS (RFC 1035 §4.2.2, RFC 7766,
 * RFC 7858). The TLS handshake, PROXY header, limits and drain are the HTTP listeners' own
 * (httpdns_h2o_connection.c, httpdns_h2o_drain.c); from the handshake's end the connection's bytes
 * are read here.
 *
 * A connection reads whole messages and hands each to Swift at once, up to stream_max_in_flight in
 * hand; at that many it is not read (the client's sends wait in TCP) until an answer comes back,
 * so a client pipelining thousands of queries holds at most that many in the server. Answers are
 * written in the order Swift posts them, which is not the order of the queries when a later one is
 * answered from the zone while an earlier one waits for an upstream (RFC 7766 §6.2.1.1 lets the
 * client match them by message ID). One write is under way at a time (h2o's TLS writer holds one);
 * answers posted meanwhile are framed into a buffer that goes out as one write behind it.
 *
 * The idle deadline (stream_idle_timeout_ms, RFC 7766 §6.2.3) is armed when the stream starts,
 * when a whole message arrives and when an answer is posted: a connection with nothing in hand for
 * that long is closed, and one that sent part of a message and not the rest is closed and counted
 * as a deadline shed (a slowloris of DNS messages). Bytes that arrive without completing a message
 * do not move the deadline. */
#define _GNU_SOURCE
#include "httpdns_h2o_internal.h"

/* ---- closing ---- */

/* The connection's messages in hand no longer have a connection to answer on. */
static void detach_messages(struct connection *c)
{
    while (!h2o_linklist_is_empty(&c->stream_messages)) {
        httpdns_h2o_stream_message *message =
            H2O_STRUCT_FROM_MEMBER(httpdns_h2o_stream_message, link, c->stream_messages.next);
        h2o_linklist_unlink(&message->link);
        message->conn = NULL;
    }
    c->stream_in_flight = 0;
}

/* The caller must not touch `c` afterwards: h2o may dispose of the socket at once, and its close
 * callback frees the connection. */
void httpdns_h2o__stream_close(struct connection *c)
{
    if (c->stream_closed)
        return;
    c->stream_closed = 1;
    detach_messages(c);
    if (h2o_timeout_is_linked(&c->request_deadline))
        h2o_timeout_unlink(&c->request_deadline);
    /* TLS: close_notify goes out first (h2o), unless a write is under way, which is cut. */
    h2o_socket_close(c->sock);
}

void httpdns_h2o__stream_on_close(struct connection *c)
{
    detach_messages(c);
    free(c->stream_out);
    c->stream_out = NULL;
    free(c->stream_writing);
    c->stream_writing = NULL;
}

int httpdns_h2o__stream_busy(struct connection *c)
{
    if (c->stream_closed)
        return 0;
    return c->stream_in_flight > 0 || c->stream_writing != NULL || c->stream_out_length > 0 || c->sock->input->size > 0;
}

/* ---- idle deadline ---- */

static void on_idle(h2o_timeout_entry_t *entry);

static void arm_idle(struct connection *c)
{
    if (c->stream_closed)
        return;
    if (h2o_timeout_is_linked(&c->request_deadline))
        h2o_timeout_unlink(&c->request_deadline);
    c->request_deadline.cb = on_idle;
    h2o_timeout_link(c->loop->evloop, &c->loop->stream_idle, &c->request_deadline);
}

static void on_idle(h2o_timeout_entry_t *entry)
{
    struct connection *c = H2O_STRUCT_FROM_MEMBER(struct connection, request_deadline, entry);
    httpdns_h2o_server *s = c->loop->server;
    /* Waiting for its answers, or for the client to read them: not idle. */
    if (c->stream_in_flight > 0 || c->stream_writing != NULL || c->stream_out_length > 0) {
        arm_idle(c);
        return;
    }
    if (c->sock->input->size > 0)
        s->callbacks.shed(s->callbacks.context, HTTPDNS_H2O_SHED_DEADLINE);
    httpdns_h2o__stream_close(c);
}

/* ---- writing ---- */

static int flush(struct connection *c);

static void on_written(h2o_socket_t *sock, const char *error)
{
    struct connection *c = sock->data;
    free(c->stream_writing);
    c->stream_writing = NULL;
    if (error != NULL) {
        httpdns_h2o__stream_close(c);
        return;
    }
    (void)flush(c);
}

/* Writes what is framed, unless a write is under way; closes a closing connection once it has
 * nothing left in hand. Returns 1 when it closed the connection (`c` must not be touched then). */
static int flush(struct connection *c)
{
    if (c->stream_closed || c->stream_writing != NULL)
        return 0;
    if (c->stream_out_length > 0) {
        h2o_iovec_t buffer = h2o_iovec_init(c->stream_out, c->stream_out_length);
        c->stream_writing = c->stream_out;
        c->stream_out = NULL;
        c->stream_out_length = c->stream_out_capacity = 0;
        h2o_socket_write(c->sock, &buffer, 1, on_written);
        return 0;
    }
    if (c->stream_closing && c->stream_in_flight == 0) {
        httpdns_h2o__stream_close(c);
        return 1;
    }
    return 0;
}

/* Appends one framed answer; 0 on success, -1 when it does not fit a two-byte length or memory. */
static int frame(struct connection *c, const char *body, size_t length)
{
    if (length > 0xffff)
        return -1;
    size_t needed = c->stream_out_length + 2 + length;
    if (needed > c->stream_out_capacity) {
        size_t capacity = c->stream_out_capacity * 2 > needed ? c->stream_out_capacity * 2 : needed;
        char *grown = realloc(c->stream_out, capacity);
        if (grown == NULL)
            return -1;
        c->stream_out = grown;
        c->stream_out_capacity = capacity;
    }
    char *at = c->stream_out + c->stream_out_length;
    at[0] = (char)(length >> 8);
    at[1] = (char)(length & 0xff);
    memcpy(at + 2, body, length);
    c->stream_out_length = needed;
    return 0;
}

/* ---- reading ---- */

long httpdns_h2o_stream_frame(const void *bytes, size_t size)
{
    const uint8_t *at = bytes;
    if (size < 2)
        return -1;
    size_t length = (size_t)at[0] << 8 | at[1];
    return size - 2 >= length ? (long)length : -1;
}

static void on_read(h2o_socket_t *sock, const char *error);

/* Hands every whole message read to Swift, up to the limit in hand, then reads on or pauses. */
static void take_messages(struct connection *c)
{
    httpdns_h2o_server *s = c->loop->server;
    size_t limit = s->settings.stream_max_in_flight < 1 ? 1 : s->settings.stream_max_in_flight;
    while (!c->stream_closing && !c->stream_closed && (size_t)c->stream_in_flight < limit) {
        h2o_buffer_t *input = c->sock->input;
        long framed = httpdns_h2o_stream_frame(input->bytes, input->size);
        if (framed < 0)
            break;
        size_t length = (size_t)framed;
        httpdns_h2o_stream_message *message = calloc(1, sizeof(*message));
        if (message == NULL) {
            httpdns_h2o__stream_close(c);
            return;
        }
        message->loop = c->loop;
        message->conn = c;
        h2o_linklist_insert(&c->stream_messages, &message->link);
        c->stream_in_flight++;
        c->stream_last_message_ms = h2o_now(c->loop->evloop);
        arm_idle(c);
        struct sockaddr_storage peer;
        socklen_t peer_length = h2o_socket_getpeername(c->sock, (struct sockaddr *)&peer);
        /* An answer made inside this call is written at the end of the loop's turn (httpdns_h2o__post),
         * so the input buffer is still as it was when the call returns. */
        s->callbacks.stream_message(s->callbacks.context, message, input->bytes + 2, length, c->listener, (struct sockaddr *)&peer,
                                    peer_length);
        h2o_buffer_consume(&c->sock->input, 2 + length);
    }
    if (c->stream_closed)
        return;
    int wanted = !c->stream_closing && (size_t)c->stream_in_flight < limit;
    if (wanted && !c->stream_reading) {
        c->stream_reading = 1;
        h2o_socket_read_start(c->sock, on_read);
    } else if (!wanted && c->stream_reading) {
        c->stream_reading = 0;
        h2o_socket_read_stop(c->sock);
    }
    if (c->stream_closing)
        (void)flush(c);
}

static void on_read(h2o_socket_t *sock, const char *error)
{
    struct connection *c = sock->data;
    if (error != NULL) {
        /* The client closed its side (or the drain's end shut the socket). A client may send its
         * queries and then close its side while it waits for the answers (a half close): those in
         * hand are still answered, and the connection closes once they are written (or fail to be). */
        if (c->stream_in_flight > 0 || c->stream_writing != NULL || c->stream_out_length > 0) {
            c->stream_closing = 1;
            c->stream_reading = 0;
            h2o_socket_read_stop(sock);
            (void)flush(c);
            return;
        }
        httpdns_h2o__stream_close(c);
        return;
    }
    take_messages(c);
}

void httpdns_h2o__stream_start(struct connection *c)
{
    c->sock->data = c;
    arm_idle(c);
    /* Bytes read with a PROXY header, or with the TLS handshake's last record, come first. */
    take_messages(c);
}

void httpdns_h2o__stream_cut(struct connection *c)
{
    /* Still reading a PROXY header or in its handshake: that reading sees the shutdown. */
    if (!c->stream_closed && !c->stream_reading && c->sock->data == c && !h2o_timeout_is_linked(&c->setup_deadline)) {
        c->stream_reading = 1;
        h2o_socket_read_start(c->sock, on_read);
    }
}

/* ---- answers ---- */

void httpdns_h2o__stream_handle_answer(struct message *m)
{
    httpdns_h2o_stream_message *message = m->stream_message;
    struct connection *c = message->conn;
    if (c != NULL) {
        h2o_linklist_unlink(&message->link);
        c->stream_in_flight--;
        if (m->body == NULL || frame(c, m->body, m->body_length) != 0)
            c->stream_closing = 1;
        arm_idle(c);
        /* Below the limit again: messages already read go to Swift, and reading resumes. */
        if (!flush(c))
            take_messages(c);
    }
    free(message);
    free(m->body);
    free(m);
}

void httpdns_h2o_post_stream_answer(httpdns_h2o_server *server, httpdns_h2o_stream_message *message, const void *bytes,
                                    size_t length)
{
    (void)server;
    struct message *m = httpdns_h2o__new_message(MSG_STREAM_ANSWER);
    if (m == NULL)
        return;
    m->stream_message = message;
    if (bytes != NULL) {
        /* One byte at least, so that an empty answer is still an answer (body not NULL). */
        m->body = malloc(length > 0 ? length : 1);
        if (m->body == NULL) {
            free(m);
            return;
        }
        if (length > 0)
            memcpy(m->body, bytes, length);
        m->body_length = length;
    }
    httpdns_h2o__post(message->loop, m);
}

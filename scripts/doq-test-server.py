#!/usr/bin/env python3
"""A small DNS-over-QUIC server (RFC 9250) for the tests of `httpdns stub --upstream doq=`.

No Debian package serves DoQ, so the tests run this one: aioquic (from PyPI, installed by
scripts/ensure-deps.sh into /opt/httpdns-test-python) speaks QUIC with ALPN "doq", and each query is
forwarded over UDP to a plain DNS server (a dnsmasq the test starts). It checks what RFC 9250 asks
of a client and refuses the connection (DOQ_PROTOCOL_ERROR) when a query breaks it: one query per
client-initiated bidirectional stream, a 2-byte length prefix that matches, the stream ended with
FIN, message ID 0.

It prints, each on a line of its own and flushed: `listening on 127.0.0.1:PORT` once bound,
`connection N` at each completed handshake (`connection N resumed` when it resumed a session
from one of its tickets), `query N` at each query forwarded, `violation WHY` at a
broken query. `--answers truncated` ends each answer's stream half-way through the message
(FIN after a length prefix that promises more); `--answers overlong` sends a length prefix of
65,535 and then more than that on the stream: a client must fail those queries, not wait or grow
without bound. SIGUSR1 closes every open connection (CONNECTION_CLOSE, DOQ_NO_ERROR): the client
must reconnect for its next query. SIGTERM ends it.
"""
import argparse
import asyncio
import os
import signal
import socket
import struct
import sys

try:
    from aioquic.asyncio import QuicConnectionProtocol, serve
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.events import ConnectionTerminated, HandshakeCompleted, StreamDataReceived
except ImportError as error:  # pragma: no cover - the test reports this line
    print(f"aioquic missing ({error}): run scripts/ensure-deps.sh, which installs it from PyPI", file=sys.stderr, flush=True)
    sys.exit(3)

DOQ_NO_ERROR = 0x0
DOQ_INTERNAL_ERROR = 0x1
DOQ_PROTOCOL_ERROR = 0x2
MAX_FRAME = 2 + 65535

counts = {"connection": 0, "query": 0}
open_connections = set()


def say(line):
    print(line, flush=True)


def forward(upstream, query):
    """Asks the plain DNS server with a random ID; its answer with the ID set back to 0, or None."""
    ident = os.urandom(2)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(2)
        sock.sendto(ident + query[2:], upstream)
        try:
            while True:
                reply, _ = sock.recvfrom(65535)
                if reply[:2] == ident:
                    return b"\0\0" + reply[2:]
        except OSError:
            return None


class DoQServerProtocol(QuicConnectionProtocol):
    def __init__(self, *args, upstream, answers, **kwargs):
        super().__init__(*args, **kwargs)
        self.upstream = upstream
        self.answers = answers
        self.buffers = {}

    def refuse(self, why):
        say(f"violation {why}")
        self._quic.close(error_code=DOQ_PROTOCOL_ERROR, reason_phrase=why)
        self.transmit()

    def quic_event_received(self, event):
        if isinstance(event, HandshakeCompleted):
            counts["connection"] += 1
            open_connections.add(self)
            say(f"connection {counts['connection']}" + (" resumed" if event.session_resumed else ""))
        elif isinstance(event, ConnectionTerminated):
            open_connections.discard(self)
        elif isinstance(event, StreamDataReceived):
            if event.stream_id % 4 != 0:
                return self.refuse("query on a stream that is not client-initiated bidirectional")
            data = self.buffers.get(event.stream_id, b"") + event.data
            if len(data) > MAX_FRAME:
                return self.refuse("stream longer than one DNS message")
            if not event.end_stream:
                self.buffers[event.stream_id] = data
                return
            self.buffers.pop(event.stream_id, None)
            if len(data) < 14 or struct.unpack("!H", data[:2])[0] != len(data) - 2:
                return self.refuse("length prefix does not match the stream")
            if data[2:4] != b"\0\0":
                return self.refuse("message ID is not 0")
            asyncio.ensure_future(self.answer(event.stream_id, data[2:]))

    async def answer(self, stream_id, query):
        counts["query"] += 1
        say(f"query {counts['query']}")
        reply = await asyncio.get_running_loop().run_in_executor(None, forward, self.upstream, query)
        if reply is None:
            self._quic.reset_stream(stream_id, DOQ_INTERNAL_ERROR)
        elif self.answers == "truncated":
            self._quic.send_stream_data(stream_id, struct.pack("!H", len(reply)) + reply[: len(reply) // 2], end_stream=True)
        elif self.answers == "overlong":
            self._quic.send_stream_data(stream_id, b"\xff\xff" + os.urandom(70000), end_stream=False)
        else:
            self._quic.send_stream_data(stream_id, struct.pack("!H", len(reply)) + reply, end_stream=True)
        self.transmit()


def close_all():
    for protocol in list(open_connections):
        protocol._quic.close(error_code=DOQ_NO_ERROR, reason_phrase="closing")
        protocol.transmit()
    open_connections.clear()
    say("closed")


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--certificate", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--upstream-port", type=int, required=True, help="the plain DNS server on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--idle-timeout", type=float, default=30.0)
    parser.add_argument("--answers", choices=["normal", "truncated", "overlong"], default="normal")
    args = parser.parse_args()
    configuration = QuicConfiguration(alpn_protocols=["doq"], is_client=False, idle_timeout=args.idle_timeout)
    configuration.load_cert_chain(args.certificate, args.key)
    upstream = ("127.0.0.1", args.upstream_port)
    # Session tickets, so that a client can resume (TLS 1.3): kept in memory, each usable once.
    tickets = {}
    server = await serve(
        "127.0.0.1", args.port, configuration=configuration,
        session_ticket_fetcher=lambda label: tickets.pop(label, None),
        session_ticket_handler=lambda ticket: tickets.__setitem__(ticket.ticket, ticket),
        create_protocol=lambda *a, **k: DoQServerProtocol(*a, upstream=upstream, answers=args.answers, **k))
    port = server._transport.get_extra_info("sockname")[1]
    loop = asyncio.get_running_loop()
    stopped = loop.create_future()
    loop.add_signal_handler(signal.SIGUSR1, close_all)
    loop.add_signal_handler(signal.SIGTERM, lambda: stopped.done() or stopped.set_result(None))
    loop.add_signal_handler(signal.SIGINT, lambda: stopped.done() or stopped.set_result(None))
    say(f"listening on 127.0.0.1:{port}")
    await stopped
    server.close()


if __name__ == "__main__":
    asyncio.run(main())

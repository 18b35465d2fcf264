import Foundation
import HTTPDNSTestSupport
import XCTest

/// A DNS-over-QUIC client for the tests: dnspython's own (`dns.query.quic`, on aioquic) for plain
/// queries, and aioquic directly for what dnspython cannot be made to do (a garbage stream, a
/// stream of queries through a drain, the close's error code).
///
/// Debian's python3-dnspython (2.3) has the DoQ client but Debian has no aioquic: the test setup
/// (`scripts/ensure-deps.sh`, through `scripts/ensure-python.sh`) makes a venv over Debian's Python
/// with its packages and aioquic from PyPI in it, the one the DoQ test server runs on too.
enum DoQClient {
    /// That venv's interpreter (`HTTPDNS_TEST_PYTHON` names another, as for ``DoQTestServer``).
    static let python = ProcessInfo.processInfo.environment["HTTPDNS_TEST_PYTHON"] ?? "\(DoQTestServer.pythonDirectory)/bin/python3"

    /// `python -c script MODE PORT CA ...`; each mode prints one JSON line.
    static let script = #"""
        import sys
        import asyncio, json, struct, time
        import dns.edns, dns.message, dns.query, dns.quic, dns.rdatatype
        from aioquic.asyncio import connect
        from aioquic.asyncio.protocol import QuicConnectionProtocol
        from aioquic.quic.configuration import QuicConfiguration
        from aioquic.quic.events import ConnectionTerminated, StreamDataReceived, StreamReset

        mode, port, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        args = sys.argv[4:]

        def addresses(message):
            return sorted(item.address for rrset in message.answer if rrset.rdtype == dns.rdatatype.A for item in rrset)

        def query(name, ecs=None, pad=False):
            options = []
            if ecs:
                address, prefix = ecs.split("/")
                options.append(dns.edns.ECSOption(address, int(prefix)))
            return dns.message.make_query(name, "A", use_edns=0, options=options, pad=468 if pad else 0)

        class DoQ(QuicConnectionProtocol):
            """One connection: each query on a stream of its own, the answer read to the stream's FIN."""
            def __init__(self, *a, **k):
                super().__init__(*a, **k)
                self.waiting, self.buffers = {}, {}
                self.terminated = asyncio.get_event_loop().create_future()

            def quic_event_received(self, event):
                if isinstance(event, StreamDataReceived):
                    data = self.buffers.get(event.stream_id, b"") + event.data
                    self.buffers[event.stream_id] = data
                    if event.end_stream and event.stream_id in self.waiting:
                        self.waiting.pop(event.stream_id).set_result(data)
                elif isinstance(event, StreamReset) and event.stream_id in self.waiting:
                    self.waiting.pop(event.stream_id).set_exception(EOFError("stream reset %d" % event.error_code))
                elif isinstance(event, ConnectionTerminated):
                    if not self.terminated.done():
                        self.terminated.set_result(event.error_code)
                    for waiter in self.waiting.values():
                        waiter.set_exception(EOFError("closed %d" % event.error_code))
                    self.waiting = {}

            def send_raw(self, payload):
                stream = self._quic.get_next_available_stream_id()
                self._quic.send_stream_data(stream, payload, end_stream=True)
                self.transmit()
                return stream

            async def ask(self, message):
                message.id = 0  # RFC 9250 §4.2.1
                wire = message.to_wire()
                stream = self._quic.get_next_available_stream_id()
                waiter = asyncio.get_event_loop().create_future()
                self.waiting[stream] = waiter
                self._quic.send_stream_data(stream, struct.pack("!H", len(wire)) + wire, end_stream=True)
                self.transmit()
                data = await asyncio.wait_for(waiter, 10)
                length = struct.unpack("!H", data[:2])[0]
                if len(data) != 2 + length:
                    raise ValueError("answer of %d bytes framed as %d" % (len(data) - 2, length))
                return dns.message.from_wire(data[2:])

        def configuration():
            conf = QuicConfiguration(is_client=True, alpn_protocols=["doq"], server_name="dns.example.test")
            conf.load_verify_locations(ca)
            return conf

        async def garbage(payload):
            """Sends one raw stream; returns the error code the server closed the connection with."""
            async with connect("127.0.0.1", port, configuration=configuration(), create_protocol=DoQ, wait_connected=True) as client:
                client.send_raw(payload)
                return await asyncio.wait_for(client.terminated, 5)

        async def drain(name, connections, count):
            """Every connection asks COUNT queries, one every 10 ms, 4 at a time at most; prints "half"
            once half are answered (the test sends SIGTERM then), then the answers counted and the
            error codes the server closed the connections with."""
            clients, answered, half = [], [0], asyncio.Event()
            async def run(client):
                pending = set()
                for i in range(count):
                    async def one():
                        answer = await client.ask(query(name))
                        if answer.id != 0 or addresses(answer) == []:
                            raise ValueError("bad answer %s" % answer)
                        answered[0] += 1
                        if answered[0] >= connections * count // 2:
                            half.set()
                    pending.add(asyncio.ensure_future(one()))
                    if len(pending) >= 4:
                        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    await asyncio.sleep(0.01)
                if pending:
                    await asyncio.wait(pending)
            contexts = [connect("127.0.0.1", port, configuration=configuration(), create_protocol=DoQ) for _ in range(connections)]
            for context in contexts:
                clients.append(await context.__aenter__())
            tasks = [asyncio.ensure_future(run(client)) for client in clients]
            await asyncio.wait_for(half.wait(), 30)
            print("half", flush=True)
            results = await asyncio.gather(*tasks, return_exceptions=True)
            errors = [repr(r) for r in results if isinstance(r, BaseException)]
            codes = []
            for client in clients:
                try:
                    codes.append(await asyncio.wait_for(asyncio.shield(client.terminated), 10))
                except asyncio.TimeoutError:
                    codes.append(None)
            return {"sent": connections * count, "answered": answered[0], "closes": codes, "errors": errors[:3]}

        if mode == "query":
            # query NAME [ecs=CIDR] [pad]: dnspython's DoQ client
            name, options = args[0], dict(a.split("=", 1) if "=" in a else (a, "1") for a in args[1:])
            answer = dns.query.quic(query(name, options.get("ecs"), "pad" in options), "127.0.0.1", port=port, timeout=10, verify=ca)
            wire = answer.to_wire()
            padded = answer.opt is not None and any(o.otype == dns.edns.PADDING for o in answer.options)
            print(json.dumps({"a": addresses(answer), "id": answer.id, "length": len(wire), "padded": padded}))
        elif mode == "two":
            # two NAME: two queries on one connection (dnspython's connection manager)
            manager = dns.quic.SyncQuicManager(verify_mode=ca)
            connection = manager.connect("127.0.0.1", port)
            answers = [dns.query.quic(query(args[0]), "127.0.0.1", port=port, timeout=10, connection=connection) for _ in range(2)]
            connection.close()
            print(json.dumps({"a": [addresses(a) for a in answers], "ids": [a.id for a in answers]}))
        elif mode == "garbage":
            # garbage: a stream that is no query, one whose DNS ID is not 0, one with bytes past its
            # message; the error code each connection was closed with
            wire = query("www.example.test").to_wire()
            wire = b"\x00\x00" + wire[2:]
            nonzero = b"\x12\x34" + wire[2:]
            # First datagrams that are no QUIC the server speaks: random bytes, long headers of
            # version 1 with random rest (Initials that do not decrypt), short headers to unknown IDs.
            import random, socket
            noise = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            rng = random.Random(9250)
            for i in range(300):
                size = rng.choice([1, 20, 600, 1200, 1350])
                body = bytes(rng.getrandbits(8) for _ in range(size))
                if i % 3 == 1:
                    body = bytes([0xc0 | (body[0] & 0x0f)]) + struct.pack("!I", 1) + bytes([8]) + body[6:14] + bytes([8]) + body[14:]
                elif i % 3 == 2:
                    body = bytes([0x40 | (body[0] & 0x3f)]) + body[1:]
                noise.sendto(body[:max(size, 1)], ("127.0.0.1", port))
            codes = [
                asyncio.run(garbage(b"\xff\xffjunk")),
                asyncio.run(garbage(struct.pack("!H", len(nonzero)) + nonzero)),
                asyncio.run(garbage(struct.pack("!H", len(wire)) + wire + b"extra")),
            ]
            print(json.dumps({"codes": codes}))
        elif mode == "verify":
            # verify NAME: whether a connection verifying the server against CA answers (aioquic
            # alone: dnspython 2.3's client waits out its whole timeout on a refused certificate)
            async def verify(name):
                async with connect("127.0.0.1", port, configuration=configuration(), create_protocol=DoQ) as client:
                    return addresses(await client.ask(query(name)))
            try:
                print(json.dumps({"a": asyncio.run(asyncio.wait_for(verify(args[0]), 5))}))
            except Exception as error:
                print(json.dumps({"error": repr(error)}))
        elif mode == "retry":
            # retry COUNT NAME: COUNT handshakes begun and left unfinished (their Initials sent, no
            # reply read); then the type of the first reply to one more (3: Retry) and to the first
            # (0: Initial), and dnspython's answer, which follows the Retry
            import socket
            from aioquic.quic.connection import QuicConnection
            def begin():
                connection = QuicConnection(configuration=configuration())
                connection.connect(("127.0.0.1", port), now=time.time())
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.settimeout(5)
                for data, address in connection.datagrams_to_send(now=time.time()):
                    s.sendto(data, address)
                return s
            def first_type(s):
                reply, _ = s.recvfrom(4096)
                return (reply[0] & 0x30) >> 4 if reply[0] & 0x80 else None
            begun = [begin() for _ in range(int(args[0]))]
            extra = first_type(begin())
            answer = dns.query.quic(query(args[1]), "127.0.0.1", port=port, timeout=10, verify=ca)
            print(json.dumps({"extra": extra, "first": first_type(begun[0]), "a": addresses(answer)}))
        elif mode == "resume":
            # resume NAME: a query, then another on a new connection with the session ticket the
            # first got; whether the second resumed its TLS session, and both answers
            async def resume(name):
                tickets, results = [], []
                for _ in range(2):
                    conf = configuration()
                    conf.session_ticket = tickets[-1] if tickets else None
                    async with connect("127.0.0.1", port, configuration=conf, create_protocol=DoQ,
                                       session_ticket_handler=tickets.append) as client:
                        answer = await client.ask(query(name))
                        await asyncio.sleep(0.1)  # the ticket follows the handshake
                        results.append((addresses(answer), client._quic.tls.session_resumed))
                return {"a": [r[0] for r in results], "resumed": [r[1] for r in results], "tickets": len(tickets)}
            print(json.dumps(asyncio.run(resume(args[0]))))
        elif mode == "half":
            # half NAME: the first bytes of a query on a stream left open; prints "sent", then the
            # code the server closed the connection with (the test sends SIGTERM in between)
            async def half(name):
                async with connect("127.0.0.1", port, configuration=configuration(), create_protocol=DoQ) as client:
                    wire = query(name).to_wire()
                    stream = client._quic.get_next_available_stream_id()
                    client._quic.send_stream_data(stream, struct.pack("!H", len(wire)) + b"\0\0" + wire[2:6], end_stream=False)
                    client.transmit()
                    await asyncio.sleep(0.2)
                    print("sent", flush=True)
                    return await asyncio.wait_for(asyncio.shield(client.terminated), 20)
            print(json.dumps({"code": asyncio.run(half(args[0]))}))
        elif mode == "negotiate":
            # negotiate: a client's first packet in a QUIC version the server does not speak
            # (RFC 9000 §6): the versions of the Version Negotiation packet it gets back
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(5)
            dcid, scid = bytes(range(8)), bytes(range(8, 16))
            packet = bytes([0xc0]) + struct.pack("!I", 0x1a2a3a4a) + bytes([8]) + dcid + bytes([8]) + scid
            s.sendto(packet + b"\0" * (1200 - len(packet)), ("127.0.0.1", port))
            reply, _ = s.recvfrom(2048)
            version = struct.unpack("!I", reply[1:5])[0]
            at = 5 + 1 + reply[5]
            at += 1 + reply[at]
            versions = [struct.unpack("!I", reply[i:i + 4])[0] for i in range(at, len(reply) - 3, 4)]
            print(json.dumps({"version": version, "versions": versions, "dcid": list(reply[6:6 + reply[5]])}))
        elif mode == "limit":
            # limit N NAME: N connections from one client, then one more; the code the extra one is
            # closed with (None when it was taken), and whether the first ones still answer
            async def limit(count, name):
                # The context managers stay referenced: one collected closes its connection.
                contexts = [connect("127.0.0.1", port, configuration=configuration(), create_protocol=DoQ) for _ in range(count)]
                kept = [await context.__aenter__() for context in contexts]
                refused = None
                try:
                    async with connect("127.0.0.1", port, configuration=configuration(), create_protocol=DoQ) as extra:
                        await extra.ask(query(name))
                except Exception:
                    refused = True
                answers = [addresses(await client.ask(query(name))) for client in kept]
                for client in kept:
                    client.close()
                    await client.wait_closed()
                return {"refused": refused, "a": answers}
            print(json.dumps(asyncio.run(limit(int(args[0]), args[1]))))
        elif mode == "idle":
            # idle NAME: one query, then the seconds until the server's idle timeout ends the connection
            async def idle(name):
                async with connect("127.0.0.1", port, configuration=configuration(), create_protocol=DoQ) as client:
                    answer = await client.ask(query(name))
                    started = time.monotonic()
                    await asyncio.wait_for(asyncio.shield(client.terminated), 10)
                    return {"a": addresses(answer), "closed_after": time.monotonic() - started}
            print(json.dumps(asyncio.run(idle(args[0]))))
        elif mode == "drain":
            # drain NAME CONNECTIONS QUERIES
            print(json.dumps(asyncio.run(drain(args[0], int(args[1]), int(args[2])))))
        """#

    /// Runs a mode to its end and decodes its JSON line.
    static func run(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> Any {
        let python = try start(arguments)
        let status = try python.wait(timeout: timeout)
        let output = String(decoding: python.stdout, as: UTF8.self)
        guard status == 0, let line = output.split(separator: "\n").last else {
            throw ToolRunner.Failure("DoQ client \(arguments.first ?? "") exited \(status): \(String(decoding: python.stderr, as: UTF8.self))")
        }
        return try JSONSerialization.jsonObject(with: Data(line.utf8))
    }

    /// Starts a mode (for those that print progress); fails loudly when aioquic is not installed.
    static func start(_ arguments: [String]) throws -> RunningTool {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw ToolRunner.Failure("\(python) not found: scripts/ensure-deps.sh makes it (a venv with aioquic from PyPI)")
        }
        let (status, output) = try RunningTool.runToEnd(python, ["-c", "import aioquic, dns.quic"])
        guard status == 0 else {
            throw ToolRunner.Failure("aioquic or dnspython's DoQ client is missing from \(python) (scripts/ensure-deps.sh installs them): \(output)")
        }
        return try RunningTool(executable: URL(fileURLWithPath: python), arguments: ["-c", script] + arguments)
    }
}

import Foundation
import HTTPDNSTestSupport
import XCTest

/// A DNS-over-TLS client for the tests that need what the real clients cannot be made to do:
/// pipelining with timing, a PROXY v2 header before the handshake, idle and half-sent connections,
/// hundreds of them at once. Python's `ssl` (OpenSSL) speaks TLS and dnspython builds and reads the
/// messages; this file only frames them (RFC 7858 §3.3: two-byte length, then the message).
enum DoTClient {
    /// `/usr/bin/python3 -c script MODE PORT CA ...`; each mode prints one JSON line.
    static let script = #"""
        import json, socket, ssl, struct, sys, time
        import dns.edns, dns.message, dns.rdatatype

        mode, port, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3]
        args = sys.argv[4:]
        HOST = "dns.example.test"

        def proxy_v2(client):
            body = socket.inet_aton(client) + socket.inet_aton("127.0.0.1") + struct.pack("!HH", 40000, 853)
            return b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack("!H", len(body)) + body

        context = ssl.create_default_context(cafile=ca)

        def connect(proxy=None, to=None, session=None):
            raw = socket.create_connection(("127.0.0.1", to or port), timeout=15)
            if proxy:
                raw.sendall(proxy_v2(proxy))
            return context.wrap_socket(raw, server_hostname=HOST, session=session)

        def query(name, ident, ecs=None, pad=False):
            options = []
            if ecs:
                address, prefix = ecs.split("/")
                options.append(dns.edns.ECSOption(address, int(prefix)))
            q = dns.message.make_query(name, "A", use_edns=0, options=options, pad=468 if pad else 0)
            q.id = ident
            return q

        def send(s, message):
            wire = message.to_wire()
            s.sendall(struct.pack("!H", len(wire)) + wire)

        def exact(s, n):
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                if not chunk:
                    raise EOFError("closed after %d of %d bytes" % (len(data), n))
                data += chunk
            return data

        def receive(s):
            length = struct.unpack("!H", exact(s, 2))[0]
            wire = exact(s, length)
            return dns.message.from_wire(wire), len(wire)

        def addresses(message):
            return sorted(item.address for rrset in message.answer if rrset.rdtype == dns.rdatatype.A for item in rrset)

        def closed_within(s, limit):
            """Seconds until the server closed the connection, None when it stayed open for limit."""
            started = time.monotonic()
            s.settimeout(limit)
            try:
                while s.recv(4096):
                    pass
            except socket.timeout:
                return None
            except (ssl.SSLError, ConnectionError):
                pass
            return time.monotonic() - started

        if mode == "query":
            # query NAME [ecs=CIDR] [proxy=IP] [pad] [alpn]: alpn offers h2 and dot
            name, options = args[0], dict(a.split("=", 1) if "=" in a else (a, "1") for a in args[1:])
            if "alpn" in options:
                context.set_alpn_protocols(["h2", "dot"])
            s = connect(options.get("proxy"))
            send(s, query(name, 4242, options.get("ecs"), "pad" in options))
            answer, length = receive(s)
            padding = [o for o in (answer.options or []) if o.otype == dns.edns.OptionType.PADDING]
            print(json.dumps({"id": answer.id, "a": addresses(answer), "length": length, "padded": bool(padding),
                              "alpn": s.selected_alpn_protocol()}))
        elif mode == "limit":
            # limit COUNT NAME: COUNT connections held open, then one more: whether it was refused
            # (closed before its answer), and whether a held one still answers
            held = [connect() for _ in range(int(args[0]))]
            try:
                s = connect()
                send(s, query(args[1], 3))
                receive(s)
                refused = False
            except (ssl.SSLError, EOFError, OSError):
                refused = True
            send(held[0], query(args[1], 4))
            answer, _ = receive(held[0])
            print(json.dumps({"refused": refused, "a": addresses(answer)}))
        elif mode == "resume":
            # resume OTHER_PORT: a session from PORT offered to OTHER_PORT; whether it resumed
            s = connect()
            send(s, query("www.example.test", 1))
            receive(s)
            session = s.session
            s.close()
            t = connect(to=int(args[0]), session=session)
            send(t, query("www.example.test", 2))
            answer, _ = receive(t)
            print(json.dumps({"a": addresses(answer), "reused": t.session_reused}))
        elif mode == "pipeline":
            # pipeline SLOW FAST: both sent at once, slow first; the answers' IDs in arrival order
            s = connect()
            s.sendall(b"".join(struct.pack("!H", len(w)) + w for w in (query(args[0], 1).to_wire(), query(args[1], 2).to_wire())))
            print(json.dumps([[m.id, addresses(m)] for m, _ in (receive(s), receive(s))]))
        elif mode == "many":
            # many NAME COUNT: COUNT queries pipelined on one connection, all answered by ID
            s = connect()
            count = int(args[1])
            s.sendall(b"".join(struct.pack("!H", len(w)) + w for w in (query(args[0], i).to_wire() for i in range(count))))
            ids = sorted(receive(s)[0].id for _ in range(count))
            print(json.dumps({"answered": len(ids), "all": ids == list(range(count))}))
        elif mode == "idle":
            # idle NAME: one query, then the seconds until the server closes
            s = connect()
            send(s, query(args[0], 7))
            receive(s)
            print(json.dumps({"closed_after": closed_within(s, 30)}))
        elif mode == "half":
            # half: the first half of a message, then the seconds until the server closes
            s = connect()
            wire = query("www.example.test", 8).to_wire()
            s.sendall(struct.pack("!H", len(wire)) + wire[: len(wire) // 2])
            print(json.dumps({"closed_after": closed_within(s, 30)}))
        elif mode == "crowd":
            # crowd NAME IDLE STALLED WAIT: IDLE finished handshakes that send nothing and STALLED
            # TCP connections stuck inside their ClientHello; meanwhile a new connection's query is
            # answered (how long it took); WAIT seconds later, how many of each the server closed
            idle = [connect() for _ in range(int(args[1]))]
            stalled = []
            for _ in range(int(args[2])):
                raw = socket.create_connection(("127.0.0.1", port), timeout=15)
                raw.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
                stalled.append(raw)
            started = time.monotonic()
            s = connect()
            send(s, query(args[0], 9))
            answer, _ = receive(s)
            seconds = time.monotonic() - started
            time.sleep(float(args[3]))
            print(json.dumps({"a": addresses(answer), "seconds": seconds,
                              "idleClosed": sum(closed_within(x, 0.05) is not None for x in idle),
                              "stalledClosed": sum(closed_within(x, 0.05) is not None for x in stalled)}))
        elif mode == "drain":
            # drain NAME CONNECTIONS QUERIES: every connection sends QUERIES queries, one every 10 ms,
            # with up to 4 unanswered at a time (one thread per connection, which alone uses its
            # socket); prints "half" once half are answered (the test sends SIGTERM then), then the
            # answers counted and whether the server closed every connection once they were done
            import threading
            connections, count = int(args[1]), int(args[2])
            sockets = [connect() for _ in range(connections)]
            answered = [0] * connections
            half = threading.Event()
            def run(index):
                s = sockets[index]
                def take():
                    receive(s)
                    answered[index] += 1
                    if sum(answered) >= connections * count // 2:
                        half.set()
                try:
                    for i in range(count):
                        send(s, query(args[0], i))
                        if i >= 4:
                            take()
                        time.sleep(0.01)
                    while answered[index] < count:
                        take()
                except Exception as error:
                    print("connection %d: %r after %d answers" % (index, error, answered[index]), file=sys.stderr)
            threads = [threading.Thread(target=run, args=(i,)) for i in range(connections)]
            for t in threads:
                t.start()
            half.wait(30)
            print("half", flush=True)
            for t in threads:
                t.join(60)
            closed = [closed_within(s, 10) is not None for s in sockets]
            print(json.dumps({"sent": connections * count, "answered": sum(answered), "closed": all(closed)}))
        """#

    /// Runs a mode to its end and decodes its JSON line.
    static func run(_ arguments: [String], timeout: Duration = .seconds(60)) throws -> Any {
        let python = try start(arguments)
        let status = try python.wait(timeout: timeout)
        let output = String(decoding: python.stdout, as: UTF8.self)
        guard status == 0, let line = output.split(separator: "\n").last else {
            throw ToolRunner.Failure("DoT client \(arguments.first ?? "") exited \(status): \(String(decoding: python.stderr, as: UTF8.self))")
        }
        return try JSONSerialization.jsonObject(with: Data(line.utf8))
    }

    /// Starts a mode (for those that wait on stdin or print progress).
    static func start(_ arguments: [String]) throws -> RunningTool {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
            throw ToolRunner.Failure("python3 not found: install the Debian packages python3 and python3-dnspython")
        }
        return try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/python3"), arguments: ["-c", script] + arguments)
    }
}

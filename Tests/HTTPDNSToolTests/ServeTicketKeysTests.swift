import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

/// `--tls-ticket-keys`: instances that share the key file resume each other's TLS sessions (issue
/// 24's fleet behind a balancer). The client is Python's `ssl` module (OpenSSL underneath, but
/// another program than the server): it takes a session ticket from one instance and offers it to
/// another, and says whether the session was resumed.
final class ServeTicketKeysTests: ToolTestCase {
    /// A fixed key: 16 bytes of name, 32 of HMAC key, 32 of AES key.
    private func key(_ seed: UInt8) -> [UInt8] { (0..<80).map { UInt8(truncatingIfNeeded: Int($0) * 7 + Int(seed) * 31) } }

    private func keyFile(_ keys: [[UInt8]], in directory: URL, name: String) throws -> String {
        let path = directory.appendingPathComponent(name).path
        let text = "# TLS ticket keys, the encrypting one first\n" + keys.map { Data($0).base64EncodedString() }.joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Whether a session ticket from the server at `from` resumes at `to` (both `https://127.0.0.1:PORT`).
    private func resumes(from: String, to: String, ca: String) throws -> Bool {
        let script = """
            import socket, ssl, sys
            context = ssl.create_default_context(cafile=sys.argv[1])
            def fetch(port, session=None):
                with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                    with context.wrap_socket(raw, server_hostname="localhost", session=session) as tls:
                        tls.sendall(b"GET /health HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n")
                        body = b""
                        while True:
                            chunk = tls.recv(4096)
                            if not chunk: break
                            body += chunk
                        assert body.startswith(b"HTTP/1.1 200"), body
                        return tls.session, tls.session_reused
            session, _ = fetch(int(sys.argv[2]))
            _, reused = fetch(int(sys.argv[3]), session)
            print("resumed" if reused else "full handshake")
            """
        let python = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/python3"),
            arguments: ["-c", script, ca, String(try port(of: from)), String(try port(of: to))])
        let status = try python.wait(timeout: .seconds(30))
        let output = String(decoding: python.stdout, as: UTF8.self)
        XCTAssertEqual(status, 0, "python3: \(String(decoding: python.stderr, as: UTF8.self))")
        return output.contains("resumed")
    }

    func testInstancesSharingTheKeysResumeEachOthersSessionsAndSIGHUPRotatesThem() throws {
        let directory = try temporaryDirectory()
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let (old, new, other) = (key(1), key(2), key(3))
        let shared = try keyFile([old], in: directory, name: "shared.keys")
        let rotated = try keyFile([old], in: directory, name: "rotated.keys")
        let foreign = try keyFile([other], in: directory, name: "foreign.keys")
        func serve(_ keys: String) throws -> (server: RunningTool, url: String) {
            let (server, urls) = try startServe([
                "--listen", "https://127.0.0.1:0", "--tls-cert", leaf.certificatePath, "--tls-key", leaf.keyPath, "--tls-ticket-keys", keys,
            ])
            return (server, urls[0])
        }
        let a = try serve(shared)
        defer { assertStopsCleanly(a.server) }
        let b = try serve(rotated)
        defer { assertStopsCleanly(b.server) }
        let c = try serve(foreign)
        defer { assertStopsCleanly(c.server) }
        let ca = certificates.caCertificatePath

        XCTAssertTrue(try resumes(from: a.url, to: a.url, ca: ca), "a ticket resumes where it was issued")
        XCTAssertTrue(try resumes(from: a.url, to: b.url, ca: ca), "the same keys: another instance resumes it")
        XCTAssertFalse(try resumes(from: a.url, to: c.url, ca: ca), "other keys: a full handshake")

        // Rotation on SIGHUP: b encrypts with the new key but still reads the old key's tickets...
        _ = try keyFile([new, old], in: directory, name: "rotated.keys")
        b.server.send(SIGHUP)
        XCTAssertTrue(pollUntilBlocking(within: .seconds(10)) {
            String(decoding: b.server.stderr, as: UTF8.self).contains("reloaded TLS ticket keys")
        }, "b reloads its keys")
        XCTAssertTrue(try resumes(from: a.url, to: b.url, ca: ca), "the old key still decrypts")
        XCTAssertFalse(try resumes(from: b.url, to: a.url, ca: ca), "a lacks the new key b now encrypts with")
        // ...and once the old key is gone, a's tickets no longer resume there.
        _ = try keyFile([new], in: directory, name: "rotated.keys")
        b.server.send(SIGHUP)
        XCTAssertTrue(pollUntilBlocking(within: .seconds(10)) {
            String(decoding: b.server.stderr, as: UTF8.self).components(separatedBy: "reloaded TLS ticket keys").count == 3
        }, "b reloads its keys again")
        XCTAssertFalse(try resumes(from: a.url, to: b.url, ca: ca), "the old key is gone")
        // A bad file on SIGHUP is refused and the keys in use stay.
        try Data("not base64 at all\n".utf8).write(to: URL(fileURLWithPath: rotated))
        b.server.send(SIGHUP)
        XCTAssertTrue(pollUntilBlocking(within: .seconds(10)) {
            String(decoding: b.server.stderr, as: UTF8.self).contains("keeping the old TLS ticket keys: \(rotated):1:")
        }, "b refuses the bad file, naming the line")
        XCTAssertTrue(try resumes(from: b.url, to: b.url, ca: ca))
    }

    /// Issue 24's acceptance: a client population cycling over three instances (each handshake on
    /// the next instance, offering the ticket the previous one gave) resumes at least 90 % of its
    /// handshakes with shared keys, and about none without them.
    func testAPopulationCyclingOverThreeInstancesResumesWithSharedKeysOnly() throws {
        let directory = try temporaryDirectory()
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let keys = try keyFile([key(7), key(8)], in: directory, name: "fleet.keys")
        func fleet(shared: Bool) throws -> [(server: RunningTool, url: String)] {
            try (0..<3).map { _ in
                let (server, urls) = try startServe(
                    ["--listen", "https://127.0.0.1:0", "--tls-cert", leaf.certificatePath, "--tls-key", leaf.keyPath]
                        + (shared ? ["--tls-ticket-keys", keys] : []))
                return (server, urls[0])
            }
        }
        let script = """
            import socket, ssl, sys
            context = ssl.create_default_context(cafile=sys.argv[1])
            ports = [int(p) for p in sys.argv[2:]]
            resumed = handshakes = 0
            for client in range(10):
                session = None
                for turn in range(7):
                    with socket.create_connection(("127.0.0.1", ports[(client + turn) % 3]), timeout=10) as raw:
                        with context.wrap_socket(raw, server_hostname="localhost", session=session) as tls:
                            tls.sendall(b"GET /health HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n")
                            answer = b""
                            while True:
                                chunk = tls.recv(4096)
                                if not chunk: break
                                answer += chunk
                            assert answer.startswith(b"HTTP/1.1 200"), answer
                            if session is not None:
                                handshakes += 1
                                resumed += tls.session_reused
                            session = tls.session
            print(resumed, handshakes)
            """
        func resumedShare(_ instances: [(server: RunningTool, url: String)]) throws -> Double {
            let ports = try instances.map { String(try port(of: $0.url)) }
            let python = try RunningTool(
                executable: URL(fileURLWithPath: "/usr/bin/python3"), arguments: ["-c", script, certificates.caCertificatePath] + ports)
            XCTAssertEqual(try python.wait(timeout: .seconds(60)), 0, String(decoding: python.stderr, as: UTF8.self))
            let numbers = String(decoding: python.stdout, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
            guard numbers.count == 2, numbers[1] == 60 else {
                XCTFail("python3 printed \(String(decoding: python.stdout, as: UTF8.self))")
                return -1
            }
            return numbers[0] / numbers[1]
        }
        let shared = try fleet(shared: true)
        let sharedShare = try resumedShare(shared)
        shared.forEach { assertStopsCleanly($0.server) }
        let alone = try fleet(shared: false)
        let aloneShare = try resumedShare(alone)
        alone.forEach { assertStopsCleanly($0.server) }
        XCTAssertGreaterThanOrEqual(sharedShare, 0.9, "resumed with shared keys")
        XCTAssertLessThanOrEqual(aloneShare, 0.05, "resumed with a key per process")
    }

    func testABadKeyFileOrNoHTTPSListenerIsRefusedAtStart() throws {
        let directory = try temporaryDirectory()
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"])
        let good = try keyFile([key(1)], in: directory, name: "good.keys")
        assertUsage(try run(["serve", "--listen", "127.0.0.1:0", "--tls-ticket-keys", good]))
        let short = directory.appendingPathComponent("short.keys").path
        try Data((Data(repeating: 1, count: 48).base64EncodedString() + "\n").utf8).write(to: URL(fileURLWithPath: short))
        let result = try run([
            "serve", "--listen", "https://127.0.0.1:0", "--tls-cert", leaf.certificatePath, "--tls-key", leaf.keyPath, "--tls-ticket-keys", short,
        ])
        assertFailure(result)
        XCTAssertTrue(result.stderrText.contains("\(short):1: not a base64 TLS ticket key of 80 bytes"), result.stderrText)
    }

    func testTheKeyFileRules() throws {
        let directory = try temporaryDirectory()
        func detail(_ text: String) -> String {
            let path = directory.appendingPathComponent("k-\(UUID().uuidString)").path
            _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
            do {
                let keys = try HTTPDNSTLSTicketKeys(contentsOfFile: path)
                return "\(keys.keys.count) keys"
            } catch {
                return error.detail.replacingOccurrences(of: path, with: "FILE")
            }
        }
        let one = Data(key(1)).base64EncodedString()
        let two = Data(key(2)).base64EncodedString()
        XCTAssertEqual(detail("# comment\n\n\(one)\r\n  \(two)  \n"), "2 keys")
        XCTAssertEqual(detail("# nothing\n"), "FILE: no TLS ticket key")
        XCTAssertEqual(detail("\(one)\n\(one)\n"), "FILE: TLS ticket key 2 has the name of an earlier key")
        XCTAssertEqual(detail("\(one)\n!!!\n"), "FILE:2: not a base64 TLS ticket key of 80 bytes")
        XCTAssertEqual(detail(String(repeating: "\(one)\n", count: 17)).hasPrefix("FILE: "), true)
        let many = (0..<17).map { Data(key(UInt8($0))).base64EncodedString() }.joined(separator: "\n")
        XCTAssertEqual(detail(many), "FILE: more than 16 TLS ticket keys")
        XCTAssertThrowsError(try HTTPDNSTLSTicketKeys(contentsOfFile: directory.appendingPathComponent("missing").path))
    }
}

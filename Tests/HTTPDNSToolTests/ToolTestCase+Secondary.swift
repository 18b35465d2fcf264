#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import DNSZoneTransfer
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns serve --secondary` in tests: the key file, NOTIFY sent by hand, `/metrics` read, and
/// instances started with a NOTIFY listener of their own.
extension ToolTestCase {
    /// One `httpdns serve --secondary` and what it printed.
    struct SecondaryInstance {
        var server: RunningTool
        /// `http://127.0.0.1:PORT`.
        var url: String
        /// Where it takes NOTIFY (`--notify-listen 127.0.0.1:0`).
        var notifyPort: UInt16
    }

    /// GET `url` with curl: the body without its final newline, and the HTTP status.
    func curl(_ url: String) throws -> (body: String, code: String) {
        let curl = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: ["-sS", "--max-time", "10", "--noproxy", "*", "-w", "\n%{http_code}", url])
        _ = try curl.wait(timeout: .seconds(30))
        let text = String(decoding: curl.stdout, as: UTF8.self)
        let end = text.lastIndex(of: "\n") ?? text.endIndex
        return (String(text[..<end]).trimmingCharacters(in: .newlines), String(text[text.index(after: end)...]))
    }

    /// The primary's key in a file as `tsig-keygen` writes it, with another `secret` when given.
    func keyFile(_ primary: any TransferPrimary, secret: String? = nil, in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("transfer-\(UUID().uuidString).key").path
        let text = "key \"\(primary.keyName)\" {\n\talgorithm hmac-sha256;\n\tsecret \"\(secret ?? primary.keySecret)\";\n};\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Polls `condition` every 50 ms for up to 20 s; fails with the server's stderr.
    func waitUntil(_ what: String, _ server: RunningTool, file: StaticString = #filePath, line: UInt = #line, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try condition() { return }
            usleep(50_000)
        }
        XCTFail("\(what) within 20 s; stderr:\n\(String(decoding: server.stderr, as: UTF8.self))", file: file, line: line)
    }

    /// Starts `httpdns serve` following `example.test` on `primary` (port on 127.0.0.1), with a
    /// NOTIFY listener on a port of its own, and `more` arguments.
    func startSecondary(primary port: UInt16, keyFile: String?, _ more: [String] = []) throws -> SecondaryInstance {
        let key = keyFile.map { ["--tsig-file", $0] } ?? []
        let (server, urls) = try startServe([
            "--listen", "127.0.0.1:0", "--secondary", "example.test=127.0.0.1:\(port)", "--notify-listen", "127.0.0.1:0",
        ] + key + more)
        let line = try server.waitForLine(startingWith: "notify on udp://127.0.0.1:")
        let notifyPort = try XCTUnwrap(UInt16(line.dropFirst("notify on udp://127.0.0.1:".count)), line)
        return SecondaryInstance(server: server, url: urls[0], notifyPort: notifyPort)
    }

    /// The first address `/d?dn=NAME` answers (DNSPod's format), "" when none.
    func address(of name: String, at url: String) throws -> String {
        String(try curl("\(url)/d?dn=\(name)").body.split(separator: ",").first?.split(separator: ";").first ?? "")
    }

    /// The value of `sample` (`name{labels}`, exactly as rendered) in the `/metrics` at `url`; nil
    /// when it is not there.
    func metric(_ sample: String, at url: String) throws -> Double? {
        let text = try curl("\(url)/metrics").body
        for line in text.split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Double(line.dropFirst(sample.count + 1))
        }
        return nil
    }

    /// A NOTIFY for example.test sent to `port` on 127.0.0.1 from `source`, optionally signed; the
    /// answer's RCODE, nil without one within 5 s.
    func sendNotify(to port: UInt16, from source: String, signedWith key: DNSTSIGKey?) throws -> Int? {
        try notifyExchange(to: port, from: source, zone: "example.test", signedWith: key).rcode
    }

    /// The same for `zone`, also saying whether the answer carries a TSIG that verifies with `key`
    /// and the request's MAC (RFC 8945 §5.3).
    func notifyExchange(to port: UInt16, from source: String, zone: String, signedWith key: DNSTSIGKey?) throws -> (rcode: Int?, signed: Bool) {
        let request = DNSNotify.request(zone: try DNSName(zone), id: 0x4242, soa: nil)
        let now = UInt64(Date().timeIntervalSince1970)
        let signedRequest = try key.map { try DNSTSIG.sign(request, key: $0, now: now) }
        let bytes = try signedRequest?.bytes ?? request.encode()
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        guard Dnsmasq.withSockAddr(HTTPDNSIPAddress(source)!, 0, { bind(fd, $0, $1) }) == 0,
              Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, port, { connect(fd, $0, $1) }) == 0,
              bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == bytes.count
        else { return (nil, false) }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 5_000) == 1 else { return (nil, false) }
        var buffer = [UInt8](repeating: 0, count: 4_096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count >= 12, buffer[0] == 0x42, buffer[1] == 0x42 else { return (nil, false) }
        var verified = false
        if let key, let signedRequest, let answer = try? DNSReceivedMessage(decoding: Array(buffer[0..<count])) {
            verified = (try? DNSTSIG.verify(answer, key: key, requestMAC: signedRequest.mac, now: now)) != nil
        }
        return (Int(buffer[3] & 0x0f), verified)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import Foundation
import HTTPDNSCore

/// A zone transfer primary played by the test, for what Knot and BIND never send: a stream cut in
/// the middle of a message, more records than the secondary takes, an answer held back until the
/// test lets it go. Listens on 127.0.0.1 (a port of its own) over TCP; for each connection it reads
/// one framed query (RFC 1035 §4.2.2), hands it to the script, writes the bytes the script returns
/// and closes. One connection at a time, on a thread of its own; unsigned (no TSIG).
package final class FakeTransferPrimary: Sendable {
    /// The bytes to send for the `index`th query (1-based), framed, sent as they are; the script
    /// runs on the server's thread and may block (a held answer).
    package typealias Script = @Sendable (_ query: DNSMessage, _ index: Int) -> [UInt8]

    package let address = HTTPDNSIPAddress("127.0.0.1")!
    package let port: UInt16
    private let listener: Int32
    private let stopped = HTTPDNSLock(false)
    private let done = DispatchSemaphore(value: 0)
    private let received = HTTPDNSLock<[DNSMessage]>([])

    package init(script: @escaping Script) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0, Dnsmasq.withSockAddr(address, 0, { bind(listener, $0, $1) }) == 0, listen(listener, 8) == 0 else {
            let reason = String(cString: strerror(errno))
            if listener >= 0 { close(listener) }
            throw ToolRunner.Failure("fake primary: cannot listen on 127.0.0.1: \(reason)")
        }
        var name = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &name) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        port = UInt16(bigEndian: name.sin_port)
        self.listener = listener
        let thread = Thread { [self] in
            serve(script)
            done.signal()
        }
        thread.name = "fake primary"
        thread.start()
    }

    deinit {
        stop()
        close(listener)
    }

    /// The queries received so far, in order.
    package var queries: [DNSMessage] { received.withLock { $0 } }

    /// Stops accepting and waits for the thread (after the connection in hand). Safe to call twice.
    package func stop() {
        let first = stopped.withLock { stopped -> Bool in
            defer { stopped = true }
            return !stopped
        }
        if first { done.wait() }
    }

    private func serve(_ script: Script) {
        while !stopped.withLock({ $0 }) {
            var entry = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 50) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            defer { close(connection) }
            // A secondary that stops reading (it refused the transfer) must not hold the thread.
            var limit = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            guard let length = Self.read(connection, 2), let bytes = Self.read(connection, Int(length[0]) << 8 | Int(length[1])),
                  let query = try? DNSMessage(decoding: bytes)
            else { continue }
            let index = received.withLock { queries in
                queries.append(query)
                return queries.count
            }
            let answer = script(query, index)
            var sent = 0
            while sent < answer.count {
                let count = answer[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { break }
                sent += count
            }
        }
    }

    private static func read(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let read = bytes[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard read > 0 else { return nil }
            got += read
        }
        return bytes
    }

    /// The answer to `query` carrying `answers` in order (for a whole zone: the SOA, the records,
    /// the SOA again), `perMessage` records a message, each message framed.
    package static func stream(answering query: DNSMessage, answers: [DNSRecord], perMessage: Int = 100) -> [UInt8] {
        var bytes: [UInt8] = []
        var start = 0
        repeat {
            var message = DNSMessage.response(to: query, recursionAvailable: false)
            message.isAuthoritative = true
            message.answers = Array(answers[start..<min(answers.count, start + perMessage)])
            let encoded = (try? message.encode()) ?? []
            bytes += [UInt8(encoded.count >> 8), UInt8(encoded.count & 0xff)] + encoded
            start += perMessage
        } while start < answers.count
        return bytes
    }

    /// A whole zone as `stream(answering:answers:perMessage:)` takes it: `zone`'s SOA of `serial`
    /// (REFRESH and RETRY as given), `records`, and the SOA again.
    package static func zone(_ zone: DNSName, serial: UInt32, refresh: UInt32 = 300, retry: UInt32 = 300, records: [DNSRecord]) -> [DNSRecord] {
        let soa = DNSSOA(
            primaryServer: (try? DNSName("ns1." + zone.text())) ?? zone, responsible: (try? DNSName("hostmaster." + zone.text())) ?? zone,
            serial: serial, refresh: refresh, retry: retry, expire: 3600, minimum: 30)
        let record = DNSRecord(name: zone, ttl: 3600, data: .soa(soa))
        return [record] + records + [record]
    }

    /// `name` (relative to `zone`) `A address`, TTL 300.
    package static func a(_ name: String, in zone: DNSName, _ address: String) -> DNSRecord {
        let owner = (try? DNSName(name + "." + zone.text())) ?? zone
        return DNSRecord(name: owner, ttl: 300, data: .a(HTTPDNSIPAddress(address).map(\.bytes) ?? [0, 0, 0, 0]))
    }
}

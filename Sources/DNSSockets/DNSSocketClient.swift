import DNSWire
import HTTPDNSCore

/// A plain-DNS stub client: one query to one chosen server over UDP, retried over TCP when the
/// answer is truncated.
///
/// Follows RFC 5452: a CSPRNG query ID, a fresh socket (so a random source port) per query, and a
/// reply is accepted only from the server's address and port with the query's ID and question;
/// anything else is ignored until the timeout. Blocking socket work runs on a bounded pool of threads
/// (``threadLimit``), never on the cooperative pool, and task cancellation ends the wait at once.
package struct DNSSocketClient: Sendable {
    /// Most exchanges running at once, in the whole process; more wait their turn (within their
    /// timeout).
    ///
    /// An exchange holds its thread for a round trip, or until its deadline when the server is
    /// silent, mostly asleep in `poll`; 64 covers the distinct names an engine or a server has in
    /// flight at once, and bounds the threads and sockets that a flood of queries to an unreachable
    /// server can hold.
    package static let threadLimit = 64

    /// How queries are built and sent.
    package struct Configuration: Sendable {
        /// Retry over TCP when the UDP answer has TC=1 (RFC 7766 §5). Default true.
        package var tcpFallback: Bool = true
        /// EDNS(0) to advertise; default `DNSEDNS()` (UDP payload 1232, the DNS Flag Day 2020 size).
        /// `nil` sends classic queries, whose UDP answers are capped at 512 bytes.
        package var edns: DNSEDNS? = DNSEDNS()
        /// Set RD in queries. Default true (the server is a recursive resolver).
        package var recursionDesired: Bool = true

        package init() {}
    }

    package var configuration: Configuration

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Asks `server` about `name` and returns its answer, whatever the RCODE.
    ///
    /// NXDOMAIN and SERVFAIL come back as messages (see ``DNSMessage/rcode``); use
    /// ``lookupAddresses(_:family:server:port:timeout:)`` for addresses or a typed error.
    ///
    /// - Parameters:
    ///   - name: any DNS name in presentation format (`www.example.com`, trailing dot optional).
    ///   - timeout: for the whole exchange, TCP retry included.
    /// - Throws: `HTTPDNSError` `.invalidHost`, `.timedOut`, `.transport`, `.malformedAnswer`, `.cancelled`.
    package func resolve(
        _ name: String, type: DNSRecordType, server: HTTPDNSIPAddress, port: UInt16 = 53, timeout: Duration
    ) async throws -> DNSMessage {
        let dnsName: DNSName
        do {
            dnsName = try DNSName(name)
        } catch {
            throw HTTPDNSError(.invalidHost, "not a DNS name: \(error)", host: name)
        }
        var edns = configuration.edns
        // A server answering for a client passes its subnet down (RFC 7871; see HTTPDNSClientSubnet).
        if let subnet = HTTPDNSClientSubnet.current {
            edns = edns ?? DNSEDNS()
            edns?.options += subnet.option
        }
        let query = DNSMessage.makeQuery(
            name: dnsName, type: type, id: Self.randomID(), recursionDesired: configuration.recursionDesired,
            edns: edns
        )
        do {
            let answer = try await exchange(query, server: server, port: port, timeout: timeout)
            // RFC 7871 §7.3: an answer whose Client Subnet differs from the query's is dropped.
            if let subnet = HTTPDNSClientSubnet.current, let options = answer.edns?.options,
               !subnet.agrees(withAnswerOptions: options) {
                throw HTTPDNSError.malformed("answer's EDNS Client Subnet does not match \(subnet)", source: "\(server.uriText):\(port)")
            }
            return answer
        } catch var error as HTTPDNSError {
            error.host = error.host ?? name
            throw error
        }
    }

    /// Sends `query` as is and returns the matching answer.
    ///
    /// The caller picks the ID; for plain DNS it must be random (``randomID()``).
    ///
    /// - Throws: `HTTPDNSError` `.invalidConfiguration` when `query` cannot be encoded, then as
    ///   ``resolve(_:type:server:port:timeout:)``.
    package func exchange(_ query: DNSMessage, server: HTTPDNSIPAddress, port: UInt16 = 53, timeout: Duration) async throws -> DNSMessage {
        let bytes: [UInt8]
        do {
            bytes = try query.encode()
        } catch {
            throw HTTPDNSError(.invalidConfiguration, "query cannot be encoded: \(error)")
        }
        let answer = try await exchangeBytes(bytes, query: query, server: server, port: port, timeout: timeout)
        do {
            return try DNSMessage(decoding: answer)
        } catch {
            throw HTTPDNSError.malformed("\(error)", source: "\(server.uriText):\(port)")
        }
    }

    /// Sends a raw query message and returns the raw answer bytes (accepted by the same rules).
    ///
    /// - Throws: `HTTPDNSError` `.invalidConfiguration` when `query` does not decode, then as
    ///   ``resolve(_:type:server:port:timeout:)``.
    package func exchange(_ query: [UInt8], server: HTTPDNSIPAddress, port: UInt16 = 53, timeout: Duration) async throws -> [UInt8] {
        let message: DNSMessage
        do {
            message = try DNSMessage(decoding: query)
        } catch {
            throw HTTPDNSError(.invalidConfiguration, "query does not decode: \(error)")
        }
        return try await exchangeBytes(query, query: message, server: server, port: port, timeout: timeout)
    }

    private func exchangeBytes(
        _ bytes: [UInt8], query: DNSMessage, server: HTTPDNSIPAddress, port: UInt16, timeout: Duration
    ) async throws -> [UInt8] {
        let exchange = DNSSocketExchange(
            query: bytes, queryMessage: query, server: SocketAddress(address: server, port: port),
            deadline: .now + timeout, tcpFallback: configuration.tcpFallback
        )
        return try await BlockingCall<[UInt8]>.run(on: .exchanges, limit: .queue(timeout), timeoutDetail: "no matching answer in time") { call in
            exchange.run(shouldStop: { call.isFinished })
        }
    }

    /// A query ID from the system CSPRNG (`getrandom` on Linux), as RFC 5452 §9.2 requires.
    package static func randomID() -> UInt16 {
        var generator = SystemRandomNumberGenerator()
        return UInt16.random(in: 0...UInt16.max, using: &generator)
    }
}

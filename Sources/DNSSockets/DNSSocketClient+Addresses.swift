import DNSWire
import HTTPDNSCore

/// Addresses for one name from a plain-DNS server.
package struct DNSSocketLookup: Sendable, Hashable {
    /// IPv4 then IPv6 addresses, each in the server's order, without duplicates.
    package var addresses: [HTTPDNSIPAddress]
    /// Smallest TTL over the records used (CNAMEs included); `nil` when nothing was used.
    package var ttl: UInt32?

    package init(addresses: [HTTPDNSIPAddress], ttl: UInt32?) {
        self.addresses = addresses
        self.ttl = ttl
    }
}

extension DNSSocketClient {
    /// Resolves `host` to addresses of `family` through `server`, following CNAMEs.
    ///
    /// For `.both` the A and AAAA queries run concurrently; a family that fails is tolerated if the
    /// other one gives addresses.
    ///
    /// - Throws: `HTTPDNSError` `.nameNotFound` (NXDOMAIN), `.noAddress` (NODATA),
    ///   `.transport` (SERVFAIL, REFUSED…), and the errors of ``resolve(_:type:server:port:timeout:)``.
    package func lookupAddresses(
        _ host: String, family: HTTPDNSAddressFamily, server: HTTPDNSIPAddress, port: UInt16 = 53, timeout: Duration
    ) async throws -> DNSSocketLookup {
        switch family {
        case .ipv4:
            return try await lookup(host, type: .A, server: server, port: port, timeout: timeout)
        case .ipv6:
            return try await lookup(host, type: .AAAA, server: server, port: port, timeout: timeout)
        case .both, .auto:
            async let v4 = Result { try await lookup(host, type: .A, server: server, port: port, timeout: timeout) }
            async let v6 = Result { try await lookup(host, type: .AAAA, server: server, port: port, timeout: timeout) }
            let results = await [v4, v6]
            let found = results.compactMap { try? $0.get() }
            if found.isEmpty || found.allSatisfy({ $0.addresses.isEmpty }) {
                // Prefer the more telling error: NXDOMAIN over NODATA over transport trouble.
                let errors = results.compactMap { result -> HTTPDNSError? in
                    if case .failure(let error) = result { return error as? HTTPDNSError }
                    return nil
                }
                for code in [HTTPDNSError.Code.nameNotFound, .cancelled, .noAddress] {
                    if let error = errors.first(where: { $0.code == code }) { throw error }
                }
                if let error = errors.first { throw error }
                throw HTTPDNSError(.noAddress, "no A or AAAA records", host: host)
            }
            let ttls = found.filter { !$0.addresses.isEmpty }.compactMap(\.ttl)
            return DNSSocketLookup(addresses: found.flatMap(\.addresses), ttl: ttls.min())
        }
    }

    private func lookup(
        _ host: String, type: DNSRecordType, server: HTTPDNSIPAddress, port: UInt16, timeout: Duration
    ) async throws -> DNSSocketLookup {
        let message = try await resolve(host, type: type, server: server, port: port, timeout: timeout)
        let source = "\(server.uriText):\(port)"
        switch message.rcode {
        case .noError: break
        case .nameError: throw HTTPDNSError(.nameNotFound, "NXDOMAIN", host: host, source: source)
        default: throw HTTPDNSError(.transport, "server answered \(message.rcode)", host: host, source: source)
        }
        let answer = message.addresses(for: message.questions[0].name)
        var addresses: [HTTPDNSIPAddress] = []
        for bytes in answer.addresses {
            // Only the asked-for family: an A query answered with AAAA data is ignored.
            guard bytes.count == (type == .A ? 4 : 16), let address = HTTPDNSIPAddress(bytes: bytes),
                  !addresses.contains(address) else { continue }
            addresses.append(address)
        }
        guard !addresses.isEmpty else {
            throw HTTPDNSError(.noAddress, "no \(type) records", host: host, source: source)
        }
        return DNSSocketLookup(addresses: addresses, ttl: answer.ttl)
    }
}

extension Result where Failure == any Error {
    fileprivate init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

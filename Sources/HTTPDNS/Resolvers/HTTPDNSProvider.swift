import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPDNSTransport

/// An HTTPDNS service reached over HTTP(S): one of the pure wire formats (``DNSPodFormat``,
/// ``AlibabaFormat``, ``DoHWireFormat``, ``DoHJSONFormat``, ``IPListFormat``) plus the libcurl
/// transport.
///
/// With ``Configuration/bootstrapAddresses`` the service is reached at those addresses (tried in order,
/// the next when one fails to connect) while TLS still verifies the URL's host, so finding the
/// HTTPDNS service never needs the local resolver.
package struct HTTPDNSProvider: HTTPDNSResolver, HTTPDNSSelfTimedResolver {
    /// How the service is reached.
    package struct Configuration: Sendable {
        /// Addresses of the service; empty lets libcurl resolve the URL's host (IP URLs need none).
        package var bootstrapAddresses: [HTTPDNSIPAddress] = []
        /// Certificate authorities for HTTPS services; nil takes the engine's
        /// ``HTTPDNSConfiguration/trust`` when the engine starts. Default nil.
        package var trust: HTTPDNSTrust? = nil
        /// Connection time limit. Default 2 s (the engine's per-attempt limit usually ends it first).
        package var connectTimeout: Duration = .seconds(2)
        /// Whole-request time limit. Default 5 s.
        package var totalTimeout: Duration = .seconds(5)
        /// Accepted `content-type` values of answers (compared without parameters, case-insensitively);
        /// nil accepts any. The DoH wire format sets `application/dns-message` (RFC 8484 §6).
        package var acceptedContentTypes: [String]? = nil

        package init() {}
    }

    package let name: String
    /// The wire format.
    package let format: any HTTPDNSProviderFormat
    package let configuration: Configuration
    let transport: HTTPTransport
    let clock: any HTTPDNSClock

    /// - Parameters:
    ///   - name: the label used in answers, events and errors.
    ///   - format: the wire format.
    ///   - configuration: bootstrap addresses, trust, timeouts.
    ///   - transport: the libcurl transport; default the shared one.
    ///   - clock: time for signatures and expiry anchors.
    package init(
        name: String,
        format: any HTTPDNSProviderFormat,
        configuration: Configuration = .init(),
        transport: HTTPTransport = .shared,
        clock: any HTTPDNSClock = HTTPDNSSystemClock()
    ) {
        self.name = name
        self.format = format
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
    }

    package func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        try await resolve(host, family: family, within: nil)
    }

    func resolve(_ host: String, family: HTTPDNSAddressFamily, within seconds: Double) async throws -> HTTPDNSRecordSet {
        try await resolve(host, family: family, within: Optional(seconds))
    }

    /// Resolves `host` with one request and hands the outcome to `completion`, where the transport
    /// reports ends (`HTTPTransport.send(_:completion:)`; on the calling thread when the request
    /// cannot be sent). The transfer belongs
    /// to no task, so no caller's cancellation stops it; its time limit does.
    ///
    /// - Returns: false, without calling `completion`, when the format needs more than one request
    ///   for this family (use the async ``resolve(_:family:)`` then).
    func start(
        _ host: String, family: HTTPDNSAddressFamily, within seconds: Double,
        completion: @escaping @Sendable (Result<HTTPDNSRecordSet, HTTPDNSError>) -> Void
    ) -> Bool {
        let name = HTTPDNSHostPolicy.normalize(host)
        let requests: [HTTPDNSProviderRequest]
        do {
            requests = try format.requests(for: [name], family: family, now: Int64(clock.now()))
        } catch {
            completion(.failure(error))
            return true
        }
        guard requests.count == 1 else { return false }
        let request = requests[0]
        let transportRequest: HTTPTransportRequest
        switch self.transportRequest(request, limit: Self.limit(seconds)) {
        case .success(let made): transportRequest = made
        case .failure(let error):
            completion(.failure(error))
            return true
        }
        do {
            try transport.send(transportRequest) { [self] result in
                completion(result.mapError { HTTPDNSProvider.translate($0, source: self.name) }
                    .flatMap { records(from: $0, for: request) }
                    .flatMap { record(for: name, in: $0) })
            }
        } catch {
            completion(.failure(HTTPDNSProvider.translate(error, source: name)))
        }
        return true
    }

    private static func limit(_ seconds: Double?) -> Duration? {
        seconds.map { Duration.milliseconds(Int64(max($0, 0.001) * 1000)) }
    }

    /// The record set for `name` in a one-request answer.
    private func record(for name: String, in found: [HTTPDNSRecordSet]) -> Result<HTTPDNSRecordSet, HTTPDNSError> {
        if let set = HTTPDNSRecordSets.merge(found).first(where: { $0.host == name && !$0.isEmpty }) { return .success(set) }
        return .failure(HTTPDNSError(.noAddress, "no address in answer", host: name, source: self.name))
    }

    private func resolve(_ host: String, family: HTTPDNSAddressFamily, within seconds: Double?) async throws -> HTTPDNSRecordSet {
        let limit = Self.limit(seconds)
        let name = HTTPDNSHostPolicy.normalize(host)
        let requests = try format.requests(for: [name], family: family, now: Int64(clock.now()))
        if requests.count == 1 {
            // The common case needs no task group.
            let found = try await exchange(requests[0], limit: limit).get()
            return try record(for: name, in: found).get()
        }
        var sets: [HTTPDNSRecordSet] = []
        var firstError: HTTPDNSError?
        // `.both` may need two requests (A and AAAA); one family without records is not a failure.
        try await withThrowingTaskGroup(of: Result<[HTTPDNSRecordSet], HTTPDNSError>.self) { group in
            for request in requests {
                group.addTask { await self.exchange(request, limit: limit) }
            }
            for try await result in group {
                switch result {
                case .success(let found): sets += found
                case .failure(let error): if firstError == nil || firstError?.code == .noAddress { firstError = error }
                }
            }
        }
        let merged = HTTPDNSRecordSets.merge(sets).first { $0.host == name && !$0.isEmpty }
        if let merged { return merged }
        throw firstError ?? HTTPDNSError(.noAddress, "no address in answer", host: name, source: self.name)
    }

    /// Batches as the format allows (``HTTPDNSProviderFormat/maxHostsPerRequest`` names per request),
    /// requests in parallel.
    package func resolve(batch hosts: [String], family: HTTPDNSAddressFamily) async throws -> [HTTPDNSRecordSet] {
        let names = hosts.map(HTTPDNSHostPolicy.normalize)
        let requests = try format.batchedRequests(for: names, family: family, now: Int64(clock.now()))
        let sets = await withTaskGroup(of: [HTTPDNSRecordSet].self) { group in
            for request in requests {
                group.addTask { (try? await self.exchange(request, limit: nil).get()) ?? [] }
            }
            return await group.reduce(into: [HTTPDNSRecordSet]()) { $0 += $1 }
        }
        return HTTPDNSRecordSets.merge(sets).filter { !$0.isEmpty }
    }

    /// Sends one request and parses its answer; every failure becomes an ``HTTPDNSError``.
    func exchange(_ request: HTTPDNSProviderRequest, limit: Duration?) async -> Result<[HTTPDNSRecordSet], HTTPDNSError> {
        let transportRequest: HTTPTransportRequest
        switch self.transportRequest(request, limit: limit) {
        case .success(let made): transportRequest = made
        case .failure(let error): return .failure(error)
        }
        let response: HTTPTransportResponse
        do {
            response = try await transport.send(transportRequest)
        } catch {
            return .failure(HTTPDNSProvider.translate(error, source: name))
        }
        return records(from: response, for: request)
    }

    /// The transport request that carries `request`, with the service's pinning, trust and limits.
    private func transportRequest(_ request: HTTPDNSProviderRequest, limit: Duration?) -> Result<HTTPTransportRequest, HTTPDNSError> {
        guard let url = URL(string: request.url) else {
            return .failure(HTTPDNSError(.invalidConfiguration, "bad service URL", source: name))
        }
        var transportRequest = HTTPTransportRequest(url: url, method: request.method)
        transportRequest.headers = request.headers.sorted { $0.key < $1.key }.map { HTTPTransportHeader(name: $0.key, value: $0.value) }
        if let body = request.body { transportRequest.body = .data(Data(body)) }
        transportRequest.pinnedAddresses = configuration.bootstrapAddresses
        transportRequest.trust = configuration.trust ?? .system
        let total = limit.map { min($0, configuration.totalTimeout) } ?? configuration.totalTimeout
        transportRequest.timeouts = .init(connect: min(configuration.connectTimeout, total), total: total, idle: total)
        transportRequest.maxResponseBytes = HTTPDNSFormatLimits.maxBodyBytes
        return .success(transportRequest)
    }

    /// What the service's response says: checked content type, parsed records, HTTP freshness.
    private func records(from response: HTTPTransportResponse, for request: HTTPDNSProviderRequest) -> Result<[HTTPDNSRecordSet], HTTPDNSError> {
        if let accepted = configuration.acceptedContentTypes, (200..<300).contains(response.statusCode) {
            let value = response.header("content-type") ?? ""
            guard accepted.contains(where: { HTTPDNSProvider.mediaType(value, is: $0) }) else {
                let type = HTTPDNSProvider.mediaType(value)
                return .failure(.malformed("content type \"\(type)\" is not \(accepted.joined(separator: " or "))", source: name))
            }
        }
        do throws(HTTPDNSError) {
            var sets = try format.parse(status: response.statusCode, body: [UInt8](response.body), for: request)
            // RFC 8484 §5.1: an answer stays fresh no longer than its HTTP freshness lifetime.
            if let lifetime = HTTPDNSProvider.freshnessLifetime(response) {
                for index in sets.indices { sets[index].ttl = min(sets[index].ttl ?? lifetime, lifetime) }
            }
            return .success(sets)
        } catch {
            var error = error
            error.source = name
            return .failure(error)
        }
    }

    /// The media type of a `Content-Type` value, lower-cased, without parameters or spaces.
    static func mediaType(_ value: String) -> String {
        let bytes = value.utf8.prefix { $0 != UInt8(ascii: ";") }.filter { $0 != 0x20 && $0 != 0x09 }
        // ASCII (every real media type) is folded as bytes; anything else by Unicode rules.
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return String(decoding: bytes, as: UTF8.self).lowercased() }
        return HTTPDNSASCII.lowercased(bytes)
    }

    /// Whether the media type of a `Content-Type` value (before `;`, spaces and tabs ignored) is
    /// `expected`, ASCII letters compared without case; allocates nothing.
    static func mediaType(_ value: String, is expected: String) -> Bool {
        var expectedBytes = expected.utf8.makeIterator()
        for byte in value.utf8 {
            if byte == UInt8(ascii: ";") { break }
            if byte == 0x20 || byte == 0x09 { continue }
            guard let want = expectedBytes.next() else { return false }
            guard HTTPDNSASCII.lowercased(byte) == HTTPDNSASCII.lowercased(want) else { return false }
        }
        return expectedBytes.next() == nil
    }

    /// `Cache-Control: max-age` minus `Age` (RFC 9111 §4.2), when the response gives one.
    // On bytes: DoH services send this header with every answer.
    package static func freshnessLifetime(_ response: HTTPTransportResponse) -> Int? {
        guard let control = response.header("cache-control") else { return nil }
        var maxAge: Int?
        // Directive by directive, in place (no array of pieces).
        var rest = control.utf8[...]
        while !rest.isEmpty {
            let comma = rest.firstIndex(of: UInt8(ascii: ",")) ?? rest.endIndex
            let directive = rest[..<comma]
            rest = comma == rest.endIndex ? rest[comma...] : rest[rest.index(after: comma)...]
            guard let equals = directive.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = trimmed(directive[..<equals])
            guard HTTPDNSASCII.equalsIgnoringCase(name, "max-age".utf8) else { continue }
            if let value = decimal(trimmed(directive[directive.index(after: equals)...])) { maxAge = value }
        }
        guard let maxAge else { return nil }
        let age = response.header("age").flatMap { decimal(trimmed($0.utf8[...])) } ?? 0
        return max(0, maxAge - age)
    }

    private static func trimmed<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> Bytes.SubSequence {
        var slice = bytes[...]
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return slice
    }

    /// RFC 9111 delta-seconds: digits only, else nil; values past 2^31 count as 2^31 (§1.2.2).
    private static func decimal<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Int? {
        guard !bytes.isEmpty else { return nil }
        let ceiling = 2_147_483_648
        var value = 0
        for byte in bytes {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = min(value * 10 + Int(byte - 0x30), ceiling)
        }
        return value
    }

    static func translate(_ error: HTTPTransportError, source: String) -> HTTPDNSError {
        switch error.code {
        case .timedOut:
            HTTPDNSError(.timedOut, error.detail, source: source)
        case .cancelled:
            HTTPDNSError(.cancelled, error.detail, source: source)
        case .responseTooLarge:
            .malformed("answer larger than \(HTTPDNSFormatLimits.maxBodyBytes) bytes", source: source)
        case .badURL, .invalidRequest:
            HTTPDNSError(.invalidConfiguration, error.detail, source: source)
        default:
            HTTPDNSError(.transport, error.description, source: source)
        }
    }
}

extension HTTPDNSProvider {
    /// This provider with `trust` where it has none of its own.
    package func trusting(_ trust: HTTPDNSTrust) -> HTTPDNSProvider {
        guard configuration.trust == nil else { return self }
        var configuration = configuration
        configuration.trust = trust
        return HTTPDNSProvider(name: name, format: format, configuration: configuration, transport: transport, clock: clock)
    }
}

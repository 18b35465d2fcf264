import DNSSockets
import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSTransport

/// A server that speaks DNS, asked by the stub for every query the engine does not answer (any type
/// but A/AAAA of protected names, and those when the engine fails and the policy allows).
package protocol DNSStubUpstream: Sendable {
    /// For logs and Extended DNS Error text, for example `udp=10.0.0.1:53`.
    var name: String { get }
    /// Sends `query` (question, RD, CD, DO as the client asked; the ID is the upstream's business)
    /// and returns the matching answer.
    /// - Throws: `HTTPDNSError` (`.timedOut`, `.transport`, `.httpStatus`, `.malformedAnswer`, …).
    func exchange(_ query: DNSMessage, timeout: Duration) async throws -> DNSMessage
    /// The same exchange handing its result to `completion`, called once, on any thread, where it
    /// must be quick; for callers that go on right there instead of resuming a task (the stub's UDP
    /// and TCP threads). The default runs ``exchange(_:timeout:)`` in a task.
    /// - Returns: what cancels the exchange (`completion` is then called with a cancellation).
    func exchange(
        _ query: DNSMessage, timeout: Duration, completion: @escaping @Sendable (Result<DNSMessage, any Error>) -> Void
    ) -> DNSStubCancellation
}

/// Cancels an exchange started with ``DNSStubUpstream/exchange(_:timeout:completion:)``.
package struct DNSStubCancellation: Sendable {
    private let cancelling: @Sendable () -> Void

    package init(_ cancel: @escaping @Sendable () -> Void) {
        cancelling = cancel
    }

    package func cancel() {
        cancelling()
    }
}

extension DNSStubUpstream {
    package func exchange(
        _ query: DNSMessage, timeout: Duration, completion: @escaping @Sendable (Result<DNSMessage, any Error>) -> Void
    ) -> DNSStubCancellation {
        let task = Task {
            do {
                completion(.success(try await exchange(query, timeout: timeout)))
            } catch {
                completion(.failure(error))
            }
        }
        return DNSStubCancellation { task.cancel() }
    }

    /// ``exchange(_:timeout:)`` for an upstream whose own form is the callback one (its I/O thread
    /// calls `completion`): the task waits for the callback, and a cancelled task cancels the
    /// exchange, whether the cancellation comes before or after the exchange started.
    func awaitingCallback(_ query: DNSMessage, timeout: Duration) async throws -> DNSMessage {
        let handle = HTTPDNSLock<(cancelled: Bool, cancellation: DNSStubCancellation?)>((false, nil))
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancellation = exchange(query, timeout: timeout) { continuation.resume(with: $0) }
                let cancelled = handle.withLock { state -> Bool in
                    state.cancellation = cancellation
                    return state.cancelled
                }
                if cancelled { cancellation.cancel() }
            }
        } onCancel: {
            handle.withLock { state -> DNSStubCancellation? in
                state.cancelled = true
                return state.cancellation
            }?.cancel()
        }
    }
}

/// The wake-up pipe of an upstream's I/O thread, both ends non-blocking and close-on-exec: a byte
/// written to `write` ends the thread's poll on `read`.
/// - Throws: `HTTPDNSError` `.transport` when the pipe cannot be made.
func makeWakePipe() throws(HTTPDNSError) -> (read: Int32, write: Int32) {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw HTTPDNSError(.transport, "pipe: \(String(cString: strerror(errno)))") }
    for fd in ends {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }
    return (ends[0], ends[1])
}

/// `--upstream KIND=LOCATION`: `udp=IP:PORT` (UDP, TCP when truncated), `doh=https://…` (RFC 8484
/// wire format, POST), with `?bootstrap=IP[,IP…]` to reach the service without the local resolver,
/// `dot=IP[:PORT]#NAME` (RFC 7858, port 853 by default, the certificate verified for NAME), or
/// `doq=IP[:PORT]#NAME` (DNS over QUIC, RFC 9250, UDP port 853 by default, verified the same way).
package struct DNSStubUpstreamSpec: Sendable, Hashable, CustomStringConvertible {
    package enum Kind: String, Sendable, Hashable {
        case udp
        case doh
        case dot
        case doq
    }

    /// The port of DNS over TLS (RFC 7858 §3.1).
    package static let dotPort: UInt16 = 853
    /// The (UDP) port of DNS over QUIC (RFC 9250 §4.1.1).
    package static let doqPort: UInt16 = 853

    package var kind: Kind
    package var location: String

    /// Parses `udp=IP:PORT`, `doh=URL`, `dot=IP[:PORT]#NAME` or `doq=IP[:PORT]#NAME`.
    /// - Throws: `HTTPDNSError` `.invalidConfiguration` naming what is wrong.
    package init(parsing text: String) throws(HTTPDNSError) {
        guard let equals = text.firstIndex(of: "=") else {
            throw HTTPDNSError(.invalidConfiguration, "expected KIND=LOCATION (udp=IP:PORT, doh=https://…, dot=IP[:PORT]#NAME or doq=IP[:PORT]#NAME)")
        }
        let kindText = text[..<equals].lowercased()
        guard let kind = Kind(rawValue: kindText) else {
            throw HTTPDNSError(.invalidConfiguration, "unknown upstream kind '\(kindText)' (udp, doh, dot, doq)")
        }
        self.kind = kind
        location = String(text[text.index(after: equals)...])
        if kind == .dot || kind == .doq {
            // Checked without loading the trust, which makeUpstream does once per upstream.
            _ = try Self.encryptedLocation(location, kind: kind)
        } else {
            _ = try makeUpstream(transport: nil)
        }
    }

    package var description: String { "\(kind.rawValue)=\(location)" }

    /// The upstream; `transport` carries DoH requests (nil only to validate).
    package func makeUpstream(transport: HTTPTransport?, trust: HTTPDNSTrust = .system) throws(HTTPDNSError) -> any DNSStubUpstream {
        switch kind {
        case .udp:
            guard let (address, port) = Self.hostPort(location) else {
                throw HTTPDNSError(.invalidConfiguration, "udp upstream needs IP:PORT, got \(location)")
            }
            return DNSStubSocketUpstream(server: address, port: port)
        case .doh:
            guard var components = URLComponents(string: location), components.scheme == "https" || components.scheme == "http",
                  components.host?.isEmpty == false
            else {
                throw HTTPDNSError(.invalidConfiguration, "doh upstream needs an http(s) URL, got \(location)")
            }
            var bootstrap: [HTTPDNSIPAddress] = []
            var kept: [URLQueryItem] = []
            for item in components.queryItems ?? [] {
                guard item.name == "bootstrap" else {
                    kept.append(item)
                    continue
                }
                for text in (item.value ?? "").split(separator: ",") {
                    guard let address = HTTPDNSIPAddress(String(text)) else {
                        throw HTTPDNSError(.invalidConfiguration, "bootstrap address \(text) is not an IP address")
                    }
                    bootstrap.append(address)
                }
            }
            components.queryItems = kept.isEmpty ? nil : kept
            guard let url = components.url else { throw HTTPDNSError(.invalidConfiguration, "bad doh URL \(location)") }
            return DNSStubDoHUpstream(url: url, bootstrap: bootstrap, transport: transport ?? .shared, trust: trust)
        case .dot:
            let (server, name) = try Self.dotLocation(location)
            return try DNSStubTLSUpstream(server: server, serverName: name, trust: trust)
        case .doq:
            let (server, name) = try Self.encryptedLocation(location, kind: .doq)
            return try DNSStubQUICUpstream(server: server, serverName: name, trust: trust)
        }
    }

    /// `IP[:PORT]#NAME` (`[IPv6]:PORT#NAME` with a port): the server and the name its certificate
    /// must carry. An IP address, not a name to resolve (the stub may be the system's resolver);
    /// NAME a host name, not an address (it is sent as SNI, RFC 6066 §3).
    /// - Throws: `HTTPDNSError` `.invalidConfiguration` naming what is wrong.
    package static func dotLocation(_ text: String) throws(HTTPDNSError) -> (SocketAddress, String) {
        try encryptedLocation(text, kind: .dot)
    }

    /// ``dotLocation(_:)`` for `kind` (`.dot` or `.doq`, both on port 853 by default), its errors
    /// naming the kind.
    /// - Throws: `HTTPDNSError` `.invalidConfiguration` naming what is wrong.
    package static func encryptedLocation(_ text: String, kind: Kind) throws(HTTPDNSError) -> (SocketAddress, String) {
        let kindName = kind.rawValue
        let defaultPort = kind == .doq ? doqPort : dotPort
        guard let hash = text.lastIndex(of: "#") else {
            throw HTTPDNSError(.invalidConfiguration, "\(kindName) upstream needs IP[:PORT]#NAME (the name its certificate carries), got \(text)")
        }
        let host = String(text[..<hash])
        var name = String(text[text.index(after: hash)...]).lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard HTTPDNSHostPolicy.isValidHostName(name), HTTPDNSIPAddress(name) == nil else {
            throw HTTPDNSError(.invalidConfiguration, "\(kindName) upstream's NAME must be a host name, got '\(name)'")
        }
        if let address = HTTPDNSIPAddress(host) { return (SocketAddress(address: address, port: defaultPort), name) }
        if host.hasPrefix("["), host.hasSuffix("]"), let address = HTTPDNSIPAddress(String(host.dropFirst().dropLast())) {
            return (SocketAddress(address: address, port: defaultPort), name)
        }
        guard let (address, port) = hostPort(host), port != 0 else {
            throw HTTPDNSError(.invalidConfiguration, "\(kindName) upstream needs an IP address ([IPv6]:PORT with a port), got \(host)")
        }
        return (SocketAddress(address: address, port: port), name)
    }

    /// `IP:PORT` or `[IPv6]:PORT`.
    static func hostPort(_ text: String) -> (HTTPDNSIPAddress, UInt16)? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        var host = text[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return HTTPDNSIPAddress(String(host)).map { ($0, port) }
    }
}

/// Plain DNS to a chosen server through ``DNSSocketClient``: a random ID and source port per
/// query (RFC 5452), TCP when the UDP answer is truncated (RFC 7766 §5), blocking work on the
/// client's bounded thread pool.
struct DNSStubSocketUpstream: DNSStubUpstream {
    var server: HTTPDNSIPAddress
    var port: UInt16

    var name: String { "udp=\(server.uriText):\(port)" }

    func exchange(_ query: DNSMessage, timeout: Duration) async throws -> DNSMessage {
        var query = query
        query.id = DNSSocketClient.randomID()
        var answer = try await DNSSocketClient().exchange(query, server: server, port: port, timeout: timeout)
        answer.id = 0
        return answer
    }
}

/// DNS over HTTPS in the RFC 8484 wire format: the client's query with ID 0 (§4.1), POSTed as
/// `application/dns-message`, on the libcurl transport (HTTP/2, pinned bootstrap addresses, the
/// URL's host verified by TLS).
struct DNSStubDoHUpstream: DNSStubUpstream {
    var url: URL
    var bootstrap: [HTTPDNSIPAddress]
    var transport: HTTPTransport
    var trust: HTTPDNSTrust

    var name: String { "doh=\(url.absoluteString)" }

    func exchange(_ query: DNSMessage, timeout: Duration) async throws -> DNSMessage {
        let (request, asked) = try makeRequest(query, timeout: timeout)
        let response: HTTPTransportResponse
        do {
            response = try await transport.send(request)
        } catch {
            throw HTTPDNSError(.transport, "\(error)", source: name)
        }
        return try answer(response, asked: asked)
    }

    /// Without a task: where the transport reports the end (its loop thread, or a pool thread for
    /// several ends of one turn), the answer is decoded and `completion` called.
    func exchange(
        _ query: DNSMessage, timeout: Duration, completion: @escaping @Sendable (Result<DNSMessage, any Error>) -> Void
    ) -> DNSStubCancellation {
        let request: HTTPTransportRequest
        let asked: DNSMessage
        do {
            (request, asked) = try makeRequest(query, timeout: timeout)
        } catch {
            completion(.failure(error))
            return DNSStubCancellation {}
        }
        do {
            let task = try transport.send(request) { [self] result in
                switch result {
                case .success(let response):
                    do {
                        completion(.success(try answer(response, asked: asked)))
                    } catch {
                        completion(.failure(error))
                    }
                case .failure(let error):
                    completion(.failure(HTTPDNSError(.transport, "\(error)", source: name)))
                }
            }
            return DNSStubCancellation { task.cancel() }
        } catch {
            completion(.failure(HTTPDNSError(.transport, "\(error)", source: name)))
            return DNSStubCancellation {}
        }
    }

    /// The POST carrying `query` with ID 0, and that query (its question is checked in the answer).
    private func makeRequest(_ query: DNSMessage, timeout: Duration) throws(HTTPDNSError) -> (HTTPTransportRequest, DNSMessage) {
        var query = query
        query.id = 0
        let body: [UInt8]
        do {
            body = try query.encode()
        } catch {
            throw HTTPDNSError(.invalidConfiguration, "query cannot be encoded: \(error)", source: name)
        }
        var request = HTTPTransportRequest(url: url, method: "POST")
        request.headers = [
            HTTPTransportHeader(name: "accept", value: DoHWireFormat.contentType),
            HTTPTransportHeader(name: "content-type", value: DoHWireFormat.contentType),
        ]
        request.body = .data(Data(body))
        request.pinnedAddresses = bootstrap
        request.trust = trust
        request.timeouts = .init(connect: timeout, total: timeout, idle: timeout)
        request.maxResponseBytes = 65_535
        return (request, query)
    }

    /// The DNS answer in `response`, checked: a 2xx status, the DNS content type, a response to
    /// the question asked.
    private func answer(_ response: HTTPTransportResponse, asked query: DNSMessage) throws(HTTPDNSError) -> DNSMessage {
        guard (200..<300).contains(response.statusCode) else {
            throw HTTPDNSError(.httpStatus, "HTTP \(response.statusCode)", source: name)
        }
        let type = (response.header("content-type") ?? "").split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard type == DoHWireFormat.contentType else {
            throw HTTPDNSError.malformed("content type is not \(DoHWireFormat.contentType)", source: name)
        }
        let answer: DNSMessage
        do {
            answer = try DNSMessage(decoding: [UInt8](response.body))
        } catch {
            throw HTTPDNSError.malformed("not a DNS message: \(error)", source: name)
        }
        guard answer.isResponse, answer.questions == query.questions else {
            throw HTTPDNSError.malformed("answer does not match the question", source: name)
        }
        return answer
    }
}

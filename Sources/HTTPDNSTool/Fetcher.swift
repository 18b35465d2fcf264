import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport

/// One `httpdns fetch`: resolve the URL host through HTTPDNS, connect to those addresses with the
/// real host kept in `Host`, TLS SNI and certificate verification, follow redirects (re-resolving
/// each hop), and stream the body to stdout or an atomically written file.
///
/// ``send(_:)`` is the single place that turns one request into a response head and body; it is the
/// seam where the engine + transport pair gives way to `HTTPDNSClient` once that is available.
final class Fetcher {
    /// One hop's request.
    struct Hop {
        var url: URL
        var method: String
        var headers: [HTTPHeader]
        var body: FetchOptions.Body?
    }

    let options: FetchOptions
    let shared: SharedOptions
    let resolver: ToolResolver
    let transport: HTTPTransport
    let trust: HTTPTransportTrust
    /// The domain-block redirect endpoint, asked once per fetch at most.
    let fallback: (any HTTPDNSResolver)?
    private var fallbackUsed = false

    init(options: FetchOptions, shared: SharedOptions, resolver: ToolResolver, transport: HTTPTransport,
         trust: HTTPTransportTrust, fallback: (any HTTPDNSResolver)?) {
        self.options = options
        self.shared = shared
        self.resolver = resolver
        self.transport = transport
        self.trust = trust
        self.fallback = fallback
    }

    /// Runs the fetch and returns the exit status.
    /// - Throws: ``ToolFailure`` for resolution, connection, TLS or output failures.
    func run() async throws -> Int32 {
        let output = try options.outputPath.map { path throws(ToolFailure) in try OutputFile(path: path) } ?? OutputFile()
        do {
            try await transfer(into: output)
            try output.commit()
            return ExitStatus.success
        } catch {
            output.abort()
            if Task.isCancelled { throw ToolFailure("interrupted; nothing written") }
            throw error
        }
    }

    private func transfer(into output: OutputFile) async throws {
        var hop = Hop(url: options.url, method: options.method, headers: options.headers, body: options.body)
        var redirects = 0
        while true {
            let (head, body) = try await send(hop)
            if options.include { try output.write(Data(Fetcher.headText(head).utf8)) }
            if options.followRedirects, let next = try Fetcher.redirectTarget(head, from: hop.url) {
                guard redirects < options.maxRedirects else {
                    throw ToolFailure("more than \(options.maxRedirects) redirects (last to \(next.absoluteString))")
                }
                redirects += 1
                if options.verbose { Output.diagnostic("* following \(head.statusCode) to \(next.absoluteString)") }
                hop = Fetcher.nextHop(after: hop, status: head.statusCode, to: next)
                continue  // dropping `body` cancels the rest of the redirect's body
            }
            if options.failOnHTTPError, head.statusCode >= 400 {
                throw ToolFailure("HTTP status \(head.statusCode) from \(hop.url.absoluteString)")
            }
            if options.headOnly || hop.method == "HEAD" { return }
            let length = head.header("content-length").flatMap { Int64($0) }
            let showProgress = !options.silent && !options.verbose && (options.outputPath != nil || !Output.stdoutIsTerminal)
            let progress = ProgressBar(total: length, enabled: showProgress)
            defer { progress.finish() }
            for try await chunk in body {
                try output.write(chunk)
                progress.advance(by: chunk.count)
            }
            // A cancelled stream ends like a finished one; only the task knows the difference.
            if Task.isCancelled { throw CancellationError() }
            return
        }
    }

    /// Sends one hop: resolve, connect (retrying once at the block-redirect address when the host
    /// cannot be resolved or connected), and return the head and the body stream.
    func send(_ hop: Hop) async throws -> (HTTPTransportResponseHead, AsyncThrowingStream<Data, any Error>) {
        guard let host = hop.url.host else { throw ToolFailure("URL without a host: \(hop.url.absoluteString)") }
        var addresses: [IPAddress]
        do {
            let answer = try await resolver.resolve(host)
            addresses = answer.addresses
            if options.verbose { Fetcher.verboseAnswer(answer) }
        } catch {
            if options.verbose { Output.diagnostic("* cannot resolve \(host): \(Command.explain(error))") }
            guard let redirected = try await fallbackAddresses(for: host) else {
                throw ToolFailure("cannot resolve \(host): \(Command.explain(error))")
            }
            addresses = redirected
        }
        while true {
            let request = try makeRequest(hop, pinned: addresses)
            if options.verbose { verboseRequest(hop, addresses: addresses) }
            do {
                let (head, body) = try await transport.stream(request)
                if options.verbose { verboseConnected(hop, head: head) }
                return (head, body)
            } catch {
                if options.verbose { Output.diagnostic("* failed: \(error)") }
                if let address = error.attemptedAddress, Fetcher.isConnectFailure(error) {
                    resolver.engine.reportUnreachable(address)
                }
                if error.code == .cancelled || Task.isCancelled { throw CancellationError() }
                if Fetcher.isConnectFailure(error), let redirected = try await fallbackAddresses(for: host) {
                    addresses = redirected
                    continue
                }
                throw ToolFailure(Fetcher.describe(error, url: hop.url, addresses: addresses))
            }
        }
    }

    /// Asks the domain-block redirect endpoint for `host`, once per fetch; nil when there is none,
    /// it was used already, or it has no usable address.
    private func fallbackAddresses(for host: String) async throws -> [IPAddress]? {
        guard let fallback, !fallbackUsed else { return nil }
        fallbackUsed = true
        do {
            let records = try await fallback.resolve(host, family: .both)
            let hygiene = HTTPDNSAnswerHygiene(allowLoopback: shared.allowPrivate, allowPrivate: shared.allowPrivate)
            let kept = hygiene.filter(records.addresses(for: .both)).kept
            if options.verbose {
                Output.diagnostic("* block redirect \(fallback.name) gave \(kept.map(\.description).joined(separator: ", ")); retrying there")
            }
            return kept.isEmpty ? nil : kept
        } catch {
            if options.verbose { Output.diagnostic("* block redirect \(fallback.name) failed: \(error)") }
            return nil
        }
    }

    private func makeRequest(_ hop: Hop, pinned addresses: [IPAddress]) throws -> HTTPTransportRequest {
        var request = HTTPTransportRequest(url: hop.url, method: hop.method, headers: hop.headers)
        request.pinnedAddresses = addresses
        request.trust = trust
        let connect = options.connectTimeout ?? 10
        request.timeouts = .init(
            connect: .milliseconds(Int64(connect * 1000)),
            total: options.maxTime.map { .milliseconds(Int64($0 * 1000)) },
            idle: .seconds(60))
        switch hop.body {
        case nil:
            break
        case .data(let data):
            request.body = .data(data)
        case .file(let path):
            let source = try FileBodySource(path: path)
            request.body = .stream(length: source.length, source: source)
        }
        if hop.body != nil, !hop.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            request.headers.append(HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded"))
        }
        return request
    }

    /// Failures that mean "this address could not be reached" (a block, a dead server), as opposed
    /// to a certificate that did not verify, which is never retried elsewhere.
    static func isConnectFailure(_ error: HTTPTransportError) -> Bool {
        switch error.code {
        case .cannotConnectToHost, .cannotFindHost: true
        case .timedOut, .secureConnectionFailed, .networkConnectionLost: error.requestBytesSent == 0
        default: false
        }
    }

    /// One line for a transport failure.
    static func describe(_ error: HTTPTransportError, url: URL, addresses: [IPAddress]) -> String {
        let host = url.host ?? "?"
        let tried = addresses.map(\.description).joined(separator: ", ")
        // libcurl names the transport's synthetic pinning host (`….pin.httpdns.invalid`) in its
        // messages; keep only its final clause, which says what happened.
        var detail = error.detail
        if detail.contains(".pin.httpdns.invalid"), let range = detail.range(of: ": ", options: .backwards) {
            detail = String(detail[range.upperBound...])
        }
        switch error.code {
        case .serverCertificateUntrusted:
            let at = error.attemptedAddress.map { " at \($0)" } ?? ""
            return "certificate for \(host)\(at) did not verify: \(detail)"
        case .cannotConnectToHost, .cannotFindHost:
            return "cannot connect to \(host) port \(effectivePort(url)) (tried \(tried)): \(detail)"
        default:
            return "request to \(url.absoluteString) failed (addresses \(tried)): \(error.code): \(detail)"
        }
    }
}

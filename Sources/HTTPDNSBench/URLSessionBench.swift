import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport
import HTTPDNSNetworking
import HTTPDNSURLSession
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Row 4: requests per second through `URLSession` with ``HTTPDNSURLProtocol`` installed, 16 in
/// flight, to nginx over HTTPS on 127.0.0.1, against plain `URLSession` to the same nginx by its IP
/// SAN (`https://127.0.0.1:PORT/`), the way code without HTTPDNS would reach it.
///
/// 4b sets the protected side against `URLSession` with a URL protocol that answers from memory: the
/// most `URLSession` lets any custom protocol do on this machine (a reference, no target).
///
/// The protected side asks for `https://bench.test:PORT/`; the engine answers 127.0.0.1 from a
/// ``HTTPDNSStaticResolver`` (cache hits after the first request), and the protocol sends through libcurl
/// with the real host in SNI and certificate checks. Both sides keep connections alive.
enum URLSessionBench {
    static let inFlight = 16

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        let origin = try BenchServers.Origin()
        defer { origin.stop() }
        try BenchTrust.trustForURLSession(caPEM: origin.certificates.caCertificatePEM, directory: origin.certificates.directory)
        defer { BenchTrust.untrust() }

        let client = protectedClient(origin)
        let protected = URLSessionConfiguration.default
        protected.httpMaximumConnectionsPerHost = inFlight
        try protected.httpdnsInstall(client)
        let protectedSession = URLSession(configuration: protected)
        let plain = URLSessionConfiguration.default
        plain.httpMaximumConnectionsPerHost = inFlight
        let plainSession = URLSession(configuration: plain)
        let memory = URLSessionConfiguration.default
        memory.httpMaximumConnectionsPerHost = inFlight
        memory.protocolClasses = [MemoryProtocol.self]
        let memorySession = URLSession(configuration: memory)
        defer {
            protectedSession.invalidateAndCancel()
            plainSession.invalidateAndCancel()
            memorySession.invalidateAndCancel()
        }

        let requests = runner.options.quick ? 300 : 1500
        let expected = Data(BenchServers.Origin.body.utf8)
        func fetch(_ session: URLSession, _ url: URL) -> @Sendable () async throws -> Void {
            {
                let (data, response) = try await session.data(from: url)
                guard (response as? HTTPURLResponse)?.statusCode == 200, data == expected else {
                    throw BenchFailure("\(url): unexpected answer \(response)")
                }
            }
        }
        let results = try await runner.interleave(
            rounds: runner.rounds, deadline: runner.deadline(seconds: 90),
            [
                { try await requestsPerSecond(requests, fetch(plainSession, origin.directURL)) },
                { try await requestsPerSecond(requests, fetch(protectedSession, origin.protectedURL)) },
                { try await requestsPerSecond(requests, fetch(memorySession, MemoryProtocol.url)) },
            ])
        let ratio = BenchStats.ratios(results[1], over: results[0])
        let ceilingRatio = BenchStats.ratios(results[1], over: results[2])
        return [
            BenchRow(
                id: "4a", title: "URLSession + HTTPDNSURLProtocol, 16 in flight, HTTPS (nginx)", unit: "req/s",
                subject: BenchStats(results[1]), baselineTitle: "plain URLSession to https://127.0.0.1 (IP SAN)",
                baseline: BenchStats(results[0]), ratio: ratio, target: "≥ 2.0× (issue 35)", passed: ratio.median >= 2.0,
                note: ratio.median >= 2 ? "stretch target (≥ 2×) reached" : nil),
            BenchRow(
                id: "4b", title: "URLSession + HTTPDNSURLProtocol ÷ the most URLSession gives a URL protocol", unit: "req/s",
                subject: BenchStats(results[1]),
                baselineTitle: "URLSession + a URL protocol answering the same response from memory (no network, no TLS)",
                baseline: BenchStats(results[2]), ratio: ceilingRatio,
                note: "reference: URLSession's own cost per request; what 4a spends beyond it is the network's and the client's (row 5)"),
        ]
    }

    /// A URL protocol that answers every request at once from memory with the origin's response (the
    /// same status, fields and body), on the task's own queue as `startLoading` is called: what
    /// `URLSession` itself costs a custom protocol per request, with no network, TLS or HTTPDNS. No
    /// protocol that sends its requests can be faster; row 4b sets 4a against it.
    final class MemoryProtocol: URLProtocol {
        static let url = URL(string: "https://memory.bench.test/")!
        private static let body = Data(BenchServers.Origin.body.utf8)

        override class func canInit(with request: URLRequest) -> Bool {
            request.url?.host == url.host
        }

        override class func canonicalRequest(for request: URLRequest) -> URLRequest {
            request
        }

        override func startLoading() {
            guard let client, let url = request.url else { return }
            let fields = [
                "Server": "nginx", "Content-Type": "text/plain", "Content-Length": "\(Self.body.count)",
                "Connection": "keep-alive", "Accept-Ranges": "bytes", "ETag": "\"0-15\"",
                "Last-Modified": "Mon, 07 Dec 2026 00:00:00 GMT", "Date": "Mon, 07 Dec 2026 00:00:00 GMT",
            ]
            guard let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/2", headerFields: fields) else { return }
            client.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            client.urlProtocol(self, didLoad: Self.body)
            client.urlProtocolDidFinishLoading(self)
        }

        override func stopLoading() {}
    }

    /// A client whose engine answers `bench.test` with 127.0.0.1 and that trusts the bench CA.
    static func protectedClient(_ origin: BenchServers.Origin) -> HTTPDNSClient {
        var configuration = HTTPDNSConfiguration(
            resolvers: [HTTPDNSStaticResolver([BenchServers.Origin.host: [HTTPDNSIPAddress("127.0.0.1")!]], ttl: 86_400)])
        configuration.hygiene.allowPrivate = true
        configuration.failover.httpdnsOnly = true
        configuration.localDNS = .custom(HTTPDNSStaticResolver([:]))
        configuration.trust = .caFile(origin.certificates.caCertificatePath)
        var transportConfiguration = HTTPTransport.Configuration()
        transportConfiguration.maxConnectionsPerHost = inFlight
        return HTTPDNSClient(
            engine: HTTPDNSEngine(configuration: configuration), transport: HTTPTransport(configuration: transportConfiguration))
    }

    /// Runs `count` requests keeping ``inFlight`` of them running; returns requests per second.
    static func requestsPerSecond(_ count: Int, _ request: @escaping @Sendable () async throws -> Void) async throws -> Double {
        let elapsed = try await benchMeasureNanoseconds {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var started = 0
                while started < min(inFlight, count) {
                    group.addTask { try await request() }
                    started += 1
                }
                while try await group.next() != nil {
                    if started < count {
                        group.addTask { try await request() }
                        started += 1
                    }
                }
            }
        }
        return Double(count) / (elapsed / 1e9)
    }
}

import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import Synchronization

/// The loopback servers the rows talk to. Each is started by the row that needs it and stopped
/// before the row returns (`defer { server.stop() }`); nothing listens beyond 127.0.0.1.
enum BenchServers {
    /// The address every answer of the bench zone carries: a public-looking one, so the engine's
    /// default hygiene keeps it (rows that connect use their own loopback answers instead).
    static let zoneAddress = HTTPDNSIPAddress("93.184.216.34")!

    /// An ``HTTPDNSService`` answering every name under `*.bench.test` from its zone, behind a
    /// counting HTTP front so rows can check how many requests reached it.
    final class CountingHTTPDNS: Sendable {
        let service: HTTPDNSService
        let server: HTTPServer
        private let counter: Counter

        private final class Counter: Sendable {
            let value = Atomic<Int>(0)
        }

        /// Starts on 127.0.0.1 (port chosen by the system).
        init() throws {
            let zone = try HTTPDNSZone(entries: ["*.bench.test": .init(ipv4: [zoneAddress], ttl: 600)])
            let service = HTTPDNSService(configuration: .init(zone: zone))
            let counter = Counter()
            self.service = service
            self.counter = counter
            // The service's own responder behind a front that counts: the same code
            // `HTTPDNSService.start()` puts on the server's event loop.
            self.server = try HTTPServer(configuration: .init(), bodySink: nil) { request, _, exchange in
                counter.value.add(1, ordering: .relaxed)
                service.respond(to: request, exchange: exchange)
            }
        }

        var base: String { "http://127.0.0.1:\(server.port)" }
        var requestCount: Int { counter.value.load(ordering: .relaxed) }

        func stop() { server.stop() }
    }

    /// A private CA, a leaf for `bench.test` and 127.0.0.1 (IP SAN), and nginx serving a small
    /// answer over HTTPS (HTTP/2 offered) on 127.0.0.1.
    final class Origin: Sendable {
        static let host = "bench.test"
        static let body = "httpdns-bench origin\n"
        let certificates: TestCertificates
        let nginx: Nginx

        init() throws {
            let certificates = try TestCertificates(commonName: "httpdns-bench CA")
            do {
                let leaf = try certificates.issue(dnsNames: [Self.host], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
                var configuration = Nginx.Configuration(virtualHosts: [
                    Nginx.VirtualHost([Self.host, "127.0.0.1"], tls: leaf, locations: [.text("/", Self.body)]),
                ])
                // Keep-alive for the whole run: every request of a round rides reused connections.
                configuration.httpDirectives = ["keepalive_requests 1000000", "keepalive_timeout 120s"]
                configuration.workerProcesses = 1
                self.nginx = try Nginx(configuration)
            } catch {
                certificates.remove()
                throw error
            }
            self.certificates = certificates
        }

        var port: Int { Int(nginx.httpsPort ?? 0) }
        /// `https://bench.test:PORT/`: what protected code asks for.
        var protectedURL: URL { URL(string: "https://\(Self.host):\(port)/")! }
        /// `https://127.0.0.1:PORT/`: the same server by its IP SAN.
        var directURL: URL { URL(string: "https://127.0.0.1:\(port)/")! }

        func stop() {
            nginx.stop()
            certificates.remove()
        }
    }

    /// nginx on 127.0.0.1 storing `PUT /upload/NAME` bodies under `root` (WebDAV): an upload sink in
    /// a process of its own, so that row 6 measures the client alone.
    static func uploadSink(root: URL) throws -> Nginx {
        try Nginx(.init(virtualHosts: [
            Nginx.VirtualHost(["upload.bench.test"], locations: [.putSink("/upload/", root: root.path)]),
        ]))
    }
}

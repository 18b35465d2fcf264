import Foundation
import HTTPDNSCore
import HTTPDNSDifferential
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// Starts the servers every route shares and writes their description for the runner:
/// nginx (TLS, HTTP/2) for `app.localhost` and `other.localhost` in front of ``DifferentialOrigin``;
/// the project's HTTPDNS server telling the truth; a dnsmasq lying (every name → the hijacker); a
/// hijacker on the lie's address and nginx's port, which must never be reached.
final class DifferentialBedLauncher: Sendable {
    static let host = "app.localhost"
    static let otherHost = "other.localhost"
    static let hijackAddress = HTTPDNSIPAddress("127.0.0.41")!
    static let dnsAddress = HTTPDNSIPAddress("127.0.0.40")!

    let bed: DifferentialBed
    let bedPath: String
    let hijacker: HTTPServer
    /// `nginx/1.22.1`, as nginx writes it into its own pages.
    let nginxVersion: String
    /// Requests that reached the hijacker: must stay 0 on every route.
    let hijackCount = HTTPDNSLock(0)
    private let certificates: TestCertificates
    private let origin: DifferentialOrigin
    private let nginx: Nginx
    private let service: HTTPDNSService
    private let dnsmasq: Dnsmasq
    private let scratch: URL

    init() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-differential-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        certificates = try TestCertificates(commonName: "swift-httpdns differential CA")
        let leaf = try certificates.issue(dnsNames: [Self.host, Self.otherHost])
        origin = try DifferentialOrigin()
        let backend = "http://127.0.0.1:\(origin.port)"
        let protocolHeader = [(name: "X-Protocol", value: "$server_protocol")]
        var locations: [Nginx.Location] = [
            Nginx.Location("/proto", exact: true, .text("$server_protocol\n", status: 200), headers: protocolHeader),
            Nginx.Location("/cross", exact: true, .redirect("$scheme://\(Self.otherHost):$server_port/echo", status: 302)),
            Nginx.Location(
                "/gzip", exact: true, .proxy(backend),
                directives: ["gzip on", "gzip_types text/plain", "gzip_min_length 0", "proxy_buffering off"]),
            .proxy("/", to: backend),
        ]
        for code in [301, 302, 303, 307, 308] {
            locations.insert(Nginx.Location("/r\(code)", exact: true, .redirect("$scheme://$host:$server_port/echo", status: code)), at: 0)
        }
        var configuration = Nginx.Configuration(virtualHosts: [
            .init([Self.host, Self.otherHost], tls: leaf, address: HTTPDNSIPAddress("127.0.0.1")!, locations: locations),
            .init([Self.host, Self.otherHost], address: HTTPDNSIPAddress("127.0.0.1")!, locations: locations),
        ])
        configuration.httpDirectives = ["keepalive_requests 100000"]
        nginx = try Nginx(configuration)
        // `nginx -v` prints `nginx version: nginx/1.22.1` on stderr.
        let version = try ToolRunner(executable: URL(fileURLWithPath: configuration.executable)).run(["-v"], timeout: .seconds(10))
        nginxVersion = version.stderrText.components(separatedBy: "version: ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let httpsPort = Int(nginx.httpsPort ?? 0)

        // The hijacker answers on the lie's address and the origin's port; it has no valid
        // certificate for the names, so reaching it can only fail, and it records any attempt.
        let impostor = try certificates.issue(dnsNames: ["hijack.invalid"])
        var hijack = HTTPServer.Configuration(address: Self.hijackAddress, port: httpsPort)
        hijack.tlsCertificatePEM = impostor.certificatePEM
        hijack.tlsKeyPEM = impostor.keyPEM
        let hijacks = hijackCount
        hijacker = try HTTPServer(configuration: hijack) { _ in
            hijacks.withLock { $0 += 1 }
            return .text("hijacked\n")
        }

        let truth = HTTPDNSIPAddress("127.0.0.1")!
        var serviceConfiguration = HTTPDNSService.Configuration(zone: try HTTPDNSZone(entries: [
            Self.host: .init(ipv4: [truth], ttl: 600), Self.otherHost: .init(ipv4: [truth], ttl: 600),
        ]))
        serviceConfiguration.address = HTTPDNSIPAddress("127.0.0.1")!
        service = HTTPDNSService(configuration: serviceConfiguration)
        try service.start()

        var lies = Dnsmasq.Configuration()
        lies.listenAddress = Self.dnsAddress
        lies.lie("localhost", to: Self.hijackAddress)
        dnsmasq = try Self.withDefaultSignalMask { try Dnsmasq(lies) }

        for size in DifferentialPayload.fileSizes {
            _ = try DifferentialPayload.file(size, in: scratch.path)
        }
        bed = DifferentialBed(
            host: Self.host, otherHost: Self.otherHost, httpsPort: httpsPort, httpPort: Int(nginx.httpPort ?? 0), caPath: certificates.caCertificatePath,
            providerSpec: "dnspod=http://127.0.0.1:\(service.port ?? 0)",
            localDNSAddress: dnsmasq.address.description, localDNSPort: Int(dnsmasq.port), scratch: scratch.path)
        let bedFile = scratch.appendingPathComponent("bed.json")
        try JSONEncoder().encode(bed).write(to: bedFile)
        bedPath = bedFile.path
    }

    /// Stops everything; dnsmasq first: Foundation's child monitor blocks in `waitpid` on dnsmasq
    /// (it closes its inherited descriptors while running) and would not see nginx exit before.
    func stop() {
        dnsmasq.stop()
        hijacker.stop()
        nginx.stop()
        service.stop()
        origin.stop()
        certificates.remove()
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Runs `body` with no signal blocked on this thread (dnsmasq must see SIGTERM; see the acceptance bed).
    static func withDefaultSignalMask<T>(_ body: () throws -> T) rethrows -> T {
        var empty = sigset_t()
        var saved = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        return try body()
    }
}

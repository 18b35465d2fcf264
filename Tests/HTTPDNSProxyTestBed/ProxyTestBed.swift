import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport

/// A network whose resolver lies, for the loopback proxy's tests: nginx serves the real sites on
/// ``origin`` (HTTPS with a private CA, and plain HTTP), an "ad page" on ``hijack``, dnsmasq on
/// ``dns`` sends every `proxied.test` name to the ad page, and an HTTPDNS service (the project's own,
/// speaking DNSPod) knows the truth. Nothing listens on ``dead``.
///
/// Addresses 127.0.0.50–54 are this bed's (the differential bed uses .40 and .41).
package final class ProxyTestBed: Sendable {
    package static let origin = HTTPDNSIPAddress("127.0.0.50")!
    package static let hijack = HTTPDNSIPAddress("127.0.0.51")!
    package static let dead = HTTPDNSIPAddress("127.0.0.52")!
    package static let dns = HTTPDNSIPAddress("127.0.0.53")!
    package static let services = HTTPDNSIPAddress("127.0.0.54")!

    /// Served over HTTPS on ``origin``.
    package static let secureHost = "www.proxied.test"
    /// Served over plain HTTP on ``origin``.
    package static let plainHost = "plain.proxied.test"
    /// HTTPDNS answers ``dead`` first, then ``origin``: the proxy must fail over.
    package static let failoverHost = "failover.proxied.test"
    /// The real site's page (as nginx answers it).
    package static let realBody = "the real site\n"
    /// What the lying resolver's address serves.
    package static let hijackBody = "hijacked: an ad page\n"

    package let certificates: TestCertificates
    package let nginx: Nginx
    package let service: HTTPDNSService
    package let dnsmasq: Dnsmasq

    package init() throws {
        let certificates = try TestCertificates(commonName: "swift-httpdns proxy test CA")
        do {
            let leaf = try certificates.issue(dnsNames: [Self.secureHost, Self.failoverHost])
            // 6 MiB of random bytes at /big/file.bin: long enough for the tunnel's pipes to grow.
            let files = certificates.directory.appendingPathComponent("www")
            try FileManager.default.createDirectory(at: files.appendingPathComponent("big"), withIntermediateDirectories: true)
            var generator = SystemRandomNumberGenerator()
            let bytes = (0..<(6 << 17)).flatMap { _ in withUnsafeBytes(of: generator.next() as UInt64) { Array($0) } }
            try Data(bytes).write(to: files.appendingPathComponent("big/file.bin"))
            let page: [Nginx.Location] = [.text("/", Self.realBody), Nginx.Location("/big/", .files(root: files.path))]
            var configuration = Nginx.Configuration(virtualHosts: [
                Nginx.VirtualHost([Self.secureHost, Self.failoverHost], tls: leaf, address: Self.origin, locations: page),
                Nginx.VirtualHost([Self.plainHost], address: Self.origin, locations: page),
                Nginx.VirtualHost(["_"], address: Self.hijack, locations: [.text("/", Self.hijackBody)]),
            ])
            configuration.httpDirectives = ["keepalive_requests 100000"]
            nginx = try Nginx(configuration)
            var zone: [String: HTTPDNSZone.Entry] = [:]
            for host in [Self.secureHost, Self.plainHost] { zone[host] = HTTPDNSZone.Entry(ipv4: [Self.origin], ttl: 300) }
            zone[Self.failoverHost] = HTTPDNSZone.Entry(ipv4: [Self.dead, Self.origin], ttl: 300)
            var serviceConfiguration = HTTPDNSService.Configuration(zone: try HTTPDNSZone(entries: zone))
            serviceConfiguration.address = Self.services
            service = HTTPDNSService(configuration: serviceConfiguration)
            try service.start()
            var dnsConfiguration = Dnsmasq.Configuration()
            dnsConfiguration.listenAddress = Self.dns
            dnsConfiguration.lie("proxied.test", to: Self.hijack)
            dnsmasq = try Self.withDefaultSignalMask { try Dnsmasq(dnsConfiguration) }
        } catch {
            certificates.remove()
            throw error
        }
        self.certificates = certificates
    }

    /// The TLS port of the real site (and of the ad page's address, where nothing TLS listens).
    package var httpsPort: UInt16 { nginx.httpsPort ?? 0 }
    package var httpPort: UInt16 { nginx.httpPort ?? 0 }
    /// `https://www.proxied.test:PORT/`.
    package var secureURL: String { "https://\(Self.secureHost):\(httpsPort)/" }
    /// `http://plain.proxied.test:PORT/`.
    package var plainURL: String { "http://\(Self.plainHost):\(httpPort)/" }
    /// The 6 MiB file nginx serves at `/big/file.bin`.
    package var bigFile: URL { certificates.directory.appendingPathComponent("www/big/file.bin") }
    /// The `--provider` of the HTTPDNS service.
    package var providerSpec: String { "dnspod=http://\(Self.services):\(service.port ?? 0)" }
    /// The `--local-dns` of the lying dnsmasq.
    package var localDNSSpec: String { "udp=\(dnsmasq.address):\(dnsmasq.port)" }
    /// `httpdns proxy` arguments for this bed (engine options; the listen address is the caller's).
    package var engineArguments: [String] {
        ["--provider", providerSpec, "--local-dns", localDNSSpec, "--allow-private", "--protect", "*.proxied.test", "--timeout", "3"]
    }

    /// Stops everything, in reverse order of start (Foundation's `Process` reaps children one at a
    /// time: stopping nginx while the later dnsmasq still runs can wait on the wrong child).
    package func stop() {
        dnsmasq.stop()
        service.stop()
        nginx.stop()
        certificates.remove()
    }

    /// Runs `body` with no signal blocked on this thread (dnsmasq inherits the mask and would
    /// otherwise ignore the SIGTERM that stops it).
    package static func withDefaultSignalMask<T>(_ body: () throws -> T) rethrows -> T {
        var empty = sigset_t()
        var saved = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        return try body()
    }
}

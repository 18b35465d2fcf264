import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport

/// Stoppers for what has been started so far, run once in reverse order: from the normal exit, an
/// error, or a signal handler that arrives while the demo is still starting up.
final class DemoCleanup: Sendable {
    private let stoppers = HTTPDNSLock<[@Sendable () -> Void]?>([])

    /// Registers a stopper; when cleanup already ran, runs it at once.
    func add(_ stopper: @escaping @Sendable () -> Void) {
        let late = stoppers.withLock { list -> Bool in
            guard list != nil else { return true }
            list?.append(stopper)
            return false
        }
        if late { stopper() }
    }

    /// Runs every stopper once, newest first; later calls do nothing.
    func run() {
        let list = stoppers.withLock { list -> [@Sendable () -> Void] in
            defer { list = nil }
            return list ?? []
        }
        for stopper in list.reversed() { stopper() }
    }
}

/// Everything the demo runs, all on loopback: the real origin, a hijacker, a lying LocalDNS and an
/// HTTPDNS server with the true zone. Each part registers its stopper with the cleanup as soon as it
/// runs.
final class DemoBed: Sendable {
    static let origin = HTTPDNSIPAddress("127.0.0.2")!
    static let hijacker = HTTPDNSIPAddress("127.0.0.3")!
    static let localDNSAddress = HTTPDNSIPAddress("127.0.0.4")!
    static let httpdnsAddress = HTTPDNSIPAddress("127.0.0.5")!
    static let secureHosts = ["www.demo.test", "pay.demo.test"]
    static let plainHost = "news.demo.test"

    let certificates: TestCertificates
    let hijackerCertificates: TestCertificates
    let nginx: Nginx
    let dnsmasq: Dnsmasq
    let httpdns: HTTPDNSService

    /// Starts every component, registering each with `cleanup` as soon as it runs.
    init(cleanup: DemoCleanup, progress: (String) -> Void) throws {
        progress("making a private CA and certificates (openssl)")
        let certificates = try TestCertificates(commonName: "swift-httpdns demo CA")
        cleanup.add { certificates.remove() }
        self.certificates = certificates
        // The hijacker has a certificate too, from its own CA: what a captive portal or an ad
        // injector can present. It is not valid for the demo names, and not from the app's CA.
        let hijackerCertificates = try TestCertificates(commonName: "hijacker CA")
        cleanup.add { hijackerCertificates.remove() }
        self.hijackerCertificates = hijackerCertificates
        var leaves: [String: TestCertificates.Leaf] = [:]
        for host in DemoBed.secureHosts { leaves[host] = try certificates.issue(dnsNames: [host]) }
        let adLeaf = try hijackerCertificates.issue(dnsNames: ["ads.hijack.test"])

        progress("starting nginx: the origin on \(DemoBed.origin), the hijacker on \(DemoBed.hijacker)")
        var configuration = Nginx.Configuration(virtualHosts: DemoBed.secureHosts.map { host in
            Nginx.VirtualHost(
                [host], tls: leaves[host], address: DemoBed.origin,
                locations: [.text("/", "\(host): the real site, reached at $server_addr with SNI $ssl_server_name\n")])
        })
        configuration.virtualHosts.append(Nginx.VirtualHost(
            [DemoBed.plainHost], address: DemoBed.origin,
            locations: [.text("/", "\(DemoBed.plainHost): today's real news, from $server_addr\n")]))
        configuration.virtualHosts.append(Nginx.VirtualHost(
            ["_"], tls: adLeaf, address: DemoBed.hijacker,
            locations: [.text("/", "BUY NOW! Hijacked page for $host from $server_addr\n")]))
        configuration.virtualHosts.append(Nginx.VirtualHost(
            ["_"], address: DemoBed.hijacker,
            locations: [.text("/", "BUY NOW! Hijacked page for $host from $server_addr\n")]))
        let nginx = try Nginx(configuration)
        cleanup.add { nginx.stop() }
        self.nginx = nginx

        progress("starting dnsmasq on \(DemoBed.localDNSAddress) as a lying LocalDNS: *.demo.test -> \(DemoBed.hijacker)")
        var lies = Dnsmasq.Configuration()
        lies.listenAddress = DemoBed.localDNSAddress
        lies.lie("demo.test", to: DemoBed.hijacker)
        let dnsmasq = try Dnsmasq(lies)
        cleanup.add { dnsmasq.stop() }
        self.dnsmasq = dnsmasq

        progress("starting httpdns serve on \(DemoBed.httpdnsAddress) with the true zone: *.demo.test -> \(DemoBed.origin)")
        let zone = try HTTPDNSZone(entries: ["*.demo.test": .init(ipv4: [DemoBed.origin], ttl: 300)])
        var service = HTTPDNSService.Configuration(zone: zone)
        service.address = DemoBed.httpdnsAddress
        service.port = 0
        let httpdns = HTTPDNSService(configuration: service)
        try httpdns.start()
        cleanup.add { httpdns.stop() }
        self.httpdns = httpdns
    }

    var httpsPort: UInt16 { nginx.httpsPort ?? 0 }
    var httpPort: UInt16 { nginx.httpPort ?? 0 }
    var httpdnsURL: String { "http://\(DemoBed.httpdnsAddress):\(httpdns.port ?? 0)" }
    var urls: [URL] {
        DemoBed.secureHosts.map { URL(string: "https://\($0):\(httpsPort)/")! }
            + [URL(string: "http://\(DemoBed.plainHost):\(httpPort)/")!]
    }

}

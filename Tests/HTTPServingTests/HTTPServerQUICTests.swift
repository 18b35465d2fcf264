import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// The QUIC listener's life in the HTTP server (``HTTPServer/Listener/isQUIC``): what it needs to
/// start, its UDP port (held alone, released at stop), its `quic://` URL and its certificate reload.
/// Queries over it are asked by real clients in the tool's `ServeDoQTests`.
final class HTTPServerQUICTests: XCTestCase {
    private static let stream = HTTPServer.MessageStream(path: "/dns-query")

    private func quicListener(_ leaf: TestCertificates.Leaf?) -> HTTPServer.Listener {
        var listener = HTTPServer.Listener()
        listener.isQUIC = true
        listener.messageStream = Self.stream
        listener.tlsCertificatePEM = leaf?.certificatePEM
        listener.tlsKeyPEM = leaf?.keyPEM
        return listener
    }

    private func start(_ listeners: [HTTPServer.Listener]) throws -> HTTPServer {
        var configuration = HTTPServer.Configuration()
        configuration.listeners = listeners
        return try HTTPServer(configuration: configuration) { _ in .text("ok") }
    }

    func testAQUICListenerNeedsACertificateAndAMessageStream() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["dns.example.test"])
        XCTAssertThrowsError(try start([quicListener(nil)])) { error in
            XCTAssertTrue("\(error)".contains("DNS over QUIC needs a certificate"), "\(error)")
        }
        var noStream = quicListener(leaf)
        noStream.messageStream = nil
        XCTAssertThrowsError(try start([noStream]))
        var mismatched = quicListener(leaf)
        mismatched.tlsKeyPEM = try certificates.issue(dnsNames: ["other.example.test"]).keyPEM
        XCTAssertThrowsError(try start([mismatched])) { error in
            XCTAssertTrue("\(error)".contains("QUIC certificate"), "\(error)")
        }
    }

    func testTheUDPPortIsHeldAloneReloadsAndIsReleasedAtStop() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["dns.example.test"])
        let server = try start([HTTPServer.Listener(), quicListener(leaf)])
        let port = server.ports[1]
        XCTAssertEqual(server.url(listener: 1).absoluteString, "quic://127.0.0.1:\(port)")
        XCTAssertEqual(server.url(listener: 0).absoluteString, "http://127.0.0.1:\(server.ports[0])")
        XCTAssertFalse(Self.canBindUDP(port), "a second socket bound the QUIC listener's port")
        XCTAssertThrowsError(try server.reloadTLS(listener: 1, certificatePEM: "not PEM", keyPEM: "not PEM"))
        let renewed = try certificates.issue(dnsNames: ["dns.example.test"])
        XCTAssertNoThrow(try server.reloadTLS(listener: 1, certificatePEM: renewed.certificatePEM, keyPEM: renewed.keyPEM))
        let clock = ContinuousClock()
        let started = clock.now
        server.stop(drain: .seconds(5))
        XCTAssertLessThan(clock.now - started, .seconds(2), "a stop with no client waited")
        XCTAssertEqual(server.openConnectionCount, 0)
        XCTAssertTrue(Self.canBindUDP(port), "the port stayed taken after stop")
    }

    /// Whether a UDP socket can bind 127.0.0.1:`port` now.
    private static func canBindUDP(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

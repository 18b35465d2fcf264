import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSNetworking
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Acceptance 2: an address presenting a certificate for another name is a hard failure with a
/// clear error, also when the address came from a stale cache entry.
final class CertificateTests: XCTestCase {
    func testCertificateForAnotherNameIsRejectedThroughURLSession() async throws {
        let certificates = try Bed.certificates()
        defer { certificates.remove() }
        // A real site of someone else on the address HTTPDNS gives for bank.test.
        let nginx = try Nginx(.init(virtualHosts: [
            .init(["shop.test"], tls: try certificates.issue(dnsNames: ["shop.test"]), address: Bed.origin, locations: [.text("/", "shop\n")]),
        ]))
        defer { nginx.stop() }
        let service = try Bed.httpdnsService(["bank.test": [Bed.origin]])
        defer { service.stop() }
        let engine = try Bed.engine(providers: [Bed.dnspod(service)], localDNS: nil, trusting: certificates)
        let session = try Bed.session(Bed.client(engine))

        let url = URL(string: "https://bank.test:\(try XCTUnwrap(nginx.httpsPort))/login")!
        do {
            _ = try await session.data(from: url)
            XCTFail("a certificate for shop.test was accepted for bank.test")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .serverCertificateUntrusted)
            XCTAssertTrue(error.localizedDescription.contains("bank.test"), "the error names the host: \(error.localizedDescription)")
        }
        XCTAssertTrue(nginx.accessLog.isEmpty, "no HTTP request was sent to the wrong server")
    }

    /// The cached address was right when it was cached; after the TTL the provider is down, the
    /// engine serves the stale entry, and the address now belongs to another site. The request
    /// must fail closed at that address, not move on to the host's other address or anywhere else.
    func testStaleCacheEntryPointingAtAnotherSiteIsAHardFailure() async throws {
        let certificates = try Bed.certificates()
        defer { certificates.remove() }
        let bankLeaf = try certificates.issue(dnsNames: ["bank.test"])
        let before = try Nginx(.init(virtualHosts: [
            .init(["bank.test"], tls: bankLeaf, address: Bed.reassigned, locations: [.text("/", "bank at $server_addr\n")]),
        ]))
        let port = try XCTUnwrap(before.httpsPort)
        let service = try Bed.httpdnsService(["bank.test": [Bed.reassigned, Bed.second]], ttl: 300)
        defer { service.stop() }
        let clock = HTTPDNSManualClock()
        let monitor = StaleMonitor()
        let engine = try Bed.engine(providers: [Bed.dnspod(service)], localDNS: nil, trusting: certificates) { configuration in
            configuration.clock = clock
            configuration.monitor = monitor
        }
        let client = Bed.client(engine)
        let url = URL(string: "https://bank.test:\(port)/")!
        let (first, _) = try await client.data(for: URLRequest(url: url))
        XCTAssertEqual(String(decoding: first, as: UTF8.self), "bank at \(Bed.reassigned)\n")
        before.stop()

        // The address now serves another site; the bank really lives on its second address.
        let after = try Nginx(.init(virtualHosts: [
            .init(["_"], tls: try certificates.issue(dnsNames: ["other.test"]), address: Bed.reassigned, locations: [.text("/", "other\n")]),
            .init(["bank.test"], tls: bankLeaf, address: Bed.second, locations: [.text("/", "bank at $server_addr\n")]),
        ], httpsPort: port))
        defer { after.stop() }
        service.stop()
        clock.advance(by: 301)

        do {
            _ = try await client.data(for: URLRequest(url: url))
            XCTFail("the stale address's certificate for other.test was accepted")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .serverCertificateUntrusted)
            XCTAssertTrue(error.localizedDescription.contains("bank.test"), error.localizedDescription)
        }
        XCTAssertEqual(monitor.staleServed, ["bank.test"], "the address came from the stale entry")
        XCTAssertTrue(after.accessLog.isEmpty, "no request reached the other site nor went on to the second address")
        XCTAssertNil(engine.cachedAnswer("bank.test"), "the entry that led to the wrong certificate is dropped")
    }
}

extension Nginx.Configuration {
    init(virtualHosts: [Nginx.VirtualHost], httpsPort: UInt16?) {
        self.init(virtualHosts: virtualHosts)
        self.httpsPort = httpsPort
    }
}

/// Records the names the engine served stale.
final class StaleMonitor: HTTPDNSEventMonitor, @unchecked Sendable {
    private let lock = NSLock()
    private var names: [String] = []

    var staleServed: [String] { lock.withLock { names } }

    func cacheServedStale(host: String, family: HTTPDNSAddressFamily) {
        lock.withLock { names.append(host) }
    }
}

import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSNetworking
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Acceptance 6: 200 concurrent requests through one `URLSession` to nginx complete, each with its
/// own body.
final class ConcurrencyTests: XCTestCase {
    func testTwoHundredConcurrentRequestsThroughOneSession() async throws {
        let certificates = try Bed.certificates()
        defer { certificates.remove() }
        let nginx = try Nginx(.init(virtualHosts: [
            .init(["many.test"], tls: try certificates.issue(dnsNames: ["many.test"]), address: Bed.origin, locations: [
                .text("/", "$server_name answers $request_uri\n"),
            ]),
        ]))
        defer { nginx.stop() }
        let port = try XCTUnwrap(nginx.httpsPort)
        let service = try Bed.httpdnsService(["many.test": [Bed.origin]])
        defer { service.stop() }
        let engine = try Bed.engine(providers: [Bed.dnspod(service)], localDNS: nil, trusting: certificates)
        let session = try Bed.session(Bed.client(engine))

        let count = 200
        let bodies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for index in 0..<count {
                group.addTask {
                    let url = URL(string: "https://many.test:\(port)/item/\(index)?q=\(index * 7)")!
                    let (data, response) = try await session.data(from: url)
                    XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 200)
                    return (index, String(decoding: data, as: UTF8.self))
                }
            }
            var bodies: [Int: String] = [:]
            for try await (index, body) in group { bodies[index] = body }
            return bodies
        }
        XCTAssertEqual(bodies.count, count)
        for index in 0..<count {
            XCTAssertEqual(bodies[index], "many.test answers /item/\(index)?q=\(index * 7)\n")
        }
        let served = await nginx.accessLog(atLeast: count)
        XCTAssertEqual(served.filter { $0.status == 200 }.count, count)
        XCTAssertEqual(engine.upstreamLookupCount, 1, "one HTTPDNS lookup served all 200 requests")
    }
}

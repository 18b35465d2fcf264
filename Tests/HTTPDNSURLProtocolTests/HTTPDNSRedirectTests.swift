import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import HTTPDNSDirect
import XCTest

/// The one redirect rule the client, the URL protocol and `httpdns fetch -L` share: credentials stay
/// with their origin (scheme, host and port), as curl does.
final class HTTPDNSRedirectTests: XCTestCase {
    private func next(from: String, to location: String, status: Int = 302) -> URLRequest? {
        var request = URLRequest(url: URL(string: from)!)
        request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
        request.setValue("session=1", forHTTPHeaderField: "Cookie")
        let response = HTTPURLResponse(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: ["Location": location])!
        return HTTPDNSRedirect.nextRequest(after: request, response: response)
    }

    func testCredentialsStayOnTheSameOrigin() throws {
        let same = try XCTUnwrap(next(from: "https://api.example.test/a", to: "/b"))
        XCTAssertEqual(same.value(forHTTPHeaderField: "Authorization"), "Bearer secret")
        XCTAssertEqual(same.value(forHTTPHeaderField: "Cookie"), "session=1")
        let explicitDefaultPort = try XCTUnwrap(next(from: "https://api.example.test/a", to: "https://API.example.test:443/b"))
        XCTAssertEqual(explicitDefaultPort.value(forHTTPHeaderField: "Authorization"), "Bearer secret")
    }

    func testCredentialsAreDroppedWhenTheOriginChanges() throws {
        for location in ["https://other.example.test/b", "http://api.example.test/b", "https://api.example.test:8443/b"] {
            let hop = try XCTUnwrap(next(from: "https://api.example.test/a", to: location), location)
            XCTAssertNil(hop.value(forHTTPHeaderField: "Authorization"), location)
            XCTAssertNil(hop.value(forHTTPHeaderField: "Cookie"), location)
        }
    }
}

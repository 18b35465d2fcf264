import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSTransport
import HTTPDNSNetworking
import HTTPDNSURLSession
import HTTPServing
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// URLSession + the protocol, and the direct client, against loopback origins (HTTP and HTTPS).
final class HTTPDNSURLProtocolTests: XCTestCase {
    func testURLSessionRequestGoesToTheHTTPDNSAddressWithTheRealHost() async throws {
        let origin = try Origin(address: "127.0.0.3")
        defer { origin.stop() }
        let client = makeClient(["app.test": ["127.0.0.3"]])
        let session = try protectedSession(client)
        let url = URL(string: "http://app.test:\(origin.port)/hello")!
        let (data, response) = try await session.data(from: url)
        let http = try XCTUnwrap(response as? HTTPURLResponse)
        XCTAssertEqual(http.statusCode, 200)
        XCTAssertEqual(http.url, url, "the response belongs to the original URL, not the IP")
        XCTAssertEqual(http.value(forHTTPHeaderField: "X-Host"), "app.test:\(origin.port)")
        XCTAssertEqual(data.count, 0)
        XCTAssertEqual(origin.requests.count, 1)
    }

    func testAFinishedLoadLetsGoOfItsTaskAndSession() async throws {
        let origin = try Origin(address: "127.0.0.3")
        defer { origin.stop() }
        let client = makeClient(["app.test": ["127.0.0.3"]])
        weak var finishedTask: URLSessionTask?
        weak var finishedSession: URLSession?
        do {
            let session = try protectedSession(client)
            let (data, _) = try await session.data(for: URLRequest(url: URL(string: "http://app.test:\(origin.port)/")!))
            XCTAssertEqual(data.count, 0)
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let task = session.dataTask(with: URL(string: "http://app.test:\(origin.port)/again")!) { _, _, _ in done.resume() }
                finishedTask = task
                task.resume()
            }
            finishedSession = session
            session.finishTasksAndInvalidate()
        }
        // corelibs lets go of the protocol on its own queue after the completion.
        for _ in 0..<100 where finishedTask != nil || finishedSession != nil {
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTAssertNil(finishedTask, "a finished load kept its task (and the protocol's forwarder) alive")
        XCTAssertNil(finishedSession, "a finished load kept its invalidated session alive")
        XCTAssertEqual(origin.requests.count, 2)
    }

    func testUnprotectedHostsAndIPLiteralsAreNotTaken() throws {
        let client = makeClient(["app.test": ["127.0.0.3"]])
        let configuration = URLSessionConfiguration.ephemeral
        try HTTPDNSURLProtocol.install(client, into: configuration)
        defer { withExtendedLifetime(configuration) {} }
        XCTAssertTrue(HTTPDNSURLProtocol.canInit(with: URLRequest(url: URL(string: "https://app.test/")!)))
        XCTAssertFalse(HTTPDNSURLProtocol.canInit(with: URLRequest(url: URL(string: "https://other.example/")!)))
        XCTAssertFalse(HTTPDNSURLProtocol.canInit(with: URLRequest(url: URL(string: "http://127.0.0.1/")!)))
        XCTAssertFalse(HTTPDNSURLProtocol.canInit(with: URLRequest(url: URL(string: "http://[::1]/")!)))
        XCTAssertFalse(HTTPDNSURLProtocol.canInit(with: URLRequest(url: URL(string: "ftp://app.test/")!)))
    }

    func testInstallPrependsAndKeepsOtherProtocolClasses() throws {
        final class Other: URLProtocol {}
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [Other.self]
        try configuration.httpdnsInstall(makeClient([:]))
        try configuration.httpdnsInstall(makeClient([:]))
        let classes = configuration.protocolClasses ?? []
        XCTAssertTrue(classes.first == HTTPDNSURLProtocol.self)
        XCTAssertTrue(classes.contains { $0 == Other.self })
        XCTAssertEqual(classes.filter { $0 == HTTPDNSURLProtocol.self }.count, 1)
    }

    func testHTTPSVerifiesTheRealHostAtThePinnedAddress() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["secure.test"])
        let origin = try Origin(address: "127.0.0.4", tls: leaf)
        defer { origin.stop() }
        let client = makeClient(["secure.test": ["127.0.0.4"]], trust: .caFile(certificates.caCertificatePath))
        let session = try protectedSession(client)
        let (_, response) = try await session.data(from: URL(string: "https://secure.test:\(origin.port)/")!)
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 200)
        XCTAssertEqual(origin.requests.first?.header("host"), "secure.test:\(origin.port)")
    }

    func testCertificateForAnotherNameIsAHardFailure() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let impostor = try certificates.issue(dnsNames: ["ads.test"])
        let origin = try Origin(address: "127.0.0.5", tls: impostor)
        defer { origin.stop() }
        let client = makeClient(["bank.test": ["127.0.0.5"]], trust: .caFile(certificates.caCertificatePath))
        do {
            _ = try await client.data(for: URLRequest(url: URL(string: "https://bank.test:\(origin.port)/")!))
            XCTFail("a certificate for ads.test was accepted for bank.test")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .serverCertificateUntrusted)
            XCTAssertTrue(error.localizedDescription.contains("bank.test"), error.localizedDescription)
        }
        XCTAssertTrue(origin.requests.isEmpty, "no request reached the impostor")
    }

    func testFirstAddressRefusingSecondServing() async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        // 127.0.0.6 has nothing listening on the origin's port: the connection is refused.
        let client = makeClient(["two.test": ["127.0.0.6", "127.0.0.1"]])
        let (_, response) = try await client.data(for: URLRequest(url: URL(string: "http://two.test:\(origin.port)/")!))
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertTrue(client.engine.isCoolingDown(HTTPDNSIPAddress("127.0.0.6")!))
        let again = try await client.engine.resolve("two.test")
        XCTAssertEqual(again.addresses.first, HTTPDNSIPAddress("127.0.0.1"), "the refusing address moved to the back")
    }

    func testEveryHTTPDNSAddressDownFallsBackToLocalDNSAddresses() async throws {
        let origin = try Origin(address: "127.0.0.7")
        defer { origin.stop() }
        let client = makeClient(["down.test": ["127.0.0.8"]], local: ["down.test": ["127.0.0.7"]])
        let (_, response) = try await client.data(for: URLRequest(url: URL(string: "http://down.test:\(origin.port)/")!))
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(origin.requests.count, 1)
    }

    func testHTTPDNSOnlyNeverUsesLocalDNSAddresses() async throws {
        let origin = try Origin(address: "127.0.0.7")
        defer { origin.stop() }
        let client = makeClient(["down.test": ["127.0.0.8"]], local: ["down.test": ["127.0.0.7"]]) { engine, _ in
            engine.failover.httpdnsOnly = true
        }
        do {
            _ = try await client.data(for: URLRequest(url: URL(string: "http://down.test:\(origin.port)/")!))
            XCTFail("reached LocalDNS's address")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .cannotConnectToHost)
        }
        XCTAssertTrue(origin.requests.isEmpty)
    }

    func testBlockedDomainIsRetriedOnTheRedirectAddress() async throws {
        let origin = try Origin(address: "127.0.0.9")
        defer { origin.stop() }
        let ipList = try Origin { request in
            guard request.queryValue("host") == "blocked.test" else { return .text("{}", status: 404) }
            return HTTPServer.Response(body: Data(#"{"ips":["127.0.0.9"],"ttl":60}"#.utf8))
        }
        defer { ipList.stop() }
        let redirect = try HTTPDNSProviderSpec(parsing: "ips=http://127.0.0.1:\(ipList.port)/ips").makeResolver()
        // HTTPDNS and LocalDNS both point at a dead address: the domain is "blocked".
        let client = makeClient(["blocked.test": ["127.0.0.10"]], local: ["blocked.test": ["127.0.0.11"]]) { _, client in
            client.blockRedirect = redirect
        }
        let (_, response) = try await client.data(for: URLRequest(url: URL(string: "http://blocked.test:\(origin.port)/")!))
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(origin.requests.first?.header("host"), "blocked.test:\(origin.port)")
    }

    func testPostBodiesArriveByteExact() async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        let client = makeClient(["post.test": ["127.0.0.1"]])
        let session = try protectedSession(client)
        let payload = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

        var request = URLRequest(url: URL(string: "http://post.test:\(origin.port)/upload")!)
        request.httpMethod = "POST"
        request.httpBody = payload
        let (echo, _) = try await session.data(for: request)
        XCTAssertEqual(echo, payload)

        var streamed = URLRequest(url: URL(string: "http://post.test:\(origin.port)/upload")!)
        streamed.httpMethod = "POST"
        streamed.httpBodyStream = InputStream(data: payload)
        streamed.setValue(String(payload.count), forHTTPHeaderField: "Content-Length")
        let (streamedEcho, _) = try await session.data(for: streamed)
        XCTAssertEqual(streamedEcho, payload)
    }

    func testCookiesSetByTheServerComeBack() async throws {
        let origin = try Origin(address: "127.0.0.1") { request in
            var response = Origin.echo(request)
            if request.path == "/login" {
                response.headers.append(.init(name: "Set-Cookie", value: "session=abc123; Path=/"))
            }
            return response
        }
        defer { origin.stop() }
        let client = makeClient(["cookie.test": ["127.0.0.1"]])
        let configuration = URLSessionConfiguration.ephemeral
        try configuration.httpdnsInstall(client)
        let session = URLSession(configuration: configuration)
        _ = try await session.data(from: URL(string: "http://cookie.test:\(origin.port)/login")!)
        let (_, response) = try await session.data(from: URL(string: "http://cookie.test:\(origin.port)/profile")!)
        XCTAssertEqual((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-Cookie"), "session=abc123")
    }

    func testRedirectAfterPostBecomesGetOnTheReResolvedHost() async throws {
        let target = try Origin(address: "127.0.0.12")
        defer { target.stop() }
        let first = try Origin(address: "127.0.0.1") { request in
            let code = request.path == "/307" ? 307 : 302
            return HTTPServer.Response(
                status: code, headers: [.init(name: "Location", value: "http://moved.test:\(target.port)/landing")])
        }
        defer { first.stop() }
        let client = makeClient(["start.test": ["127.0.0.1"], "moved.test": ["127.0.0.12"]])
        let session = try protectedSession(client)

        var post = URLRequest(url: URL(string: "http://start.test:\(first.port)/302")!)
        post.httpMethod = "POST"
        post.httpBody = Data("form=1".utf8)
        let (body, response) = try await session.data(for: post)
        let http = try XCTUnwrap(response as? HTTPURLResponse)
        XCTAssertEqual(http.value(forHTTPHeaderField: "X-Method"), "GET")
        XCTAssertEqual(http.value(forHTTPHeaderField: "X-Host"), "moved.test:\(target.port)")
        XCTAssertEqual(body.count, 0, "the body is dropped")

        var keep = URLRequest(url: URL(string: "http://start.test:\(first.port)/307")!)
        keep.httpMethod = "POST"
        keep.httpBody = Data("form=2".utf8)
        let (kept, keptResponse) = try await session.data(for: keep)
        XCTAssertEqual((keptResponse as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-Method"), "POST")
        XCTAssertEqual(String(decoding: kept, as: UTF8.self), "form=2")
    }

    /// Leaving the body unread part-way (the loop ends and the stream is released) must close the
    /// connection: the origin streams without end, so the only way its connection closes before its
    /// own timeouts (10 s and more) is the client hanging up. A client that merely stopped reading
    /// would leave it open, paused at the reader's 4 MiB bound, with more produced than was read.
    func testCancellingMidDownloadStopsTheTransfer() async throws {
        let produced = HTTPDNSLock(0)
        let origin = try Origin(address: "127.0.0.1") { _ in
            HTTPServer.Response(streamLength: nil) {
                Thread.sleep(forTimeInterval: 0.01)  // paces the stream; orders nothing
                produced.withLock { $0 += 16_384 }
                return Data(repeating: 0x61, count: 16_384)
            }
        }
        defer { origin.stop() }
        let client = makeClient(["stream.test": ["127.0.0.1"]])
        var received = 0
        do {
            let (response, body) = try await client.bytes(for: URLRequest(url: URL(string: "http://stream.test:\(origin.port)/")!))
            XCTAssertEqual(response.statusCode, 200)
            for try await chunk in body {
                received += chunk.count
                if received > 100_000 { break }
            }
        }
        XCTAssertGreaterThan(received, 100_000)
        let closed = await pollUntil(within: .seconds(5)) { origin.server.openConnectionCount == 0 }
        let producedAtClose = produced.withLock { $0 }
        XCTAssertTrue(closed, "the origin never saw the connection close (\(producedAtClose) bytes produced)")
        XCTAssertLessThan(
            producedAtClose, 4 << 20,
            "the origin produced \(producedAtClose) bytes: the client kept reading after the loop ended")
    }

    func testTwoHundredConcurrentRequestsThroughOneSession() async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        let client = makeClient(["many.test": ["127.0.0.1"]])
        let session = try protectedSession(client)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    var request = URLRequest(url: URL(string: "http://many.test:\(origin.port)/\(index)")!)
                    request.httpMethod = "POST"
                    request.httpBody = Data("request-\(index)".utf8)
                    let (data, _) = try await session.data(for: request)
                    XCTAssertEqual(String(decoding: data, as: UTF8.self), "request-\(index)")
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(origin.requests.count, 200)
    }

    func testDirectURLForPlainHTTPOnly() async throws {
        let client = makeClient(["media.test": ["127.0.0.13"]])
        let (url, headers) = try await client.directURL(for: URL(string: "http://media.test:8080/v.mp4?x=1")!)
        XCTAssertEqual(url.absoluteString, "http://127.0.0.13:8080/v.mp4?x=1")
        XCTAssertEqual(headers, ["Host": "media.test:8080"])
        do {
            _ = try await client.directURL(for: URL(string: "https://media.test/v.mp4")!)
            XCTFail("HTTPS direct URL")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .unsupportedURL)
        }
    }
}


final class HTTPDNSURLProtocolStressTests: XCTestCase {
    /// Many short requests, 16 in flight: client calls must reach URLSession on the task's own queue
    /// (calling from the transport thread crashed corelibs under this load).
    func testThousandsOfShortRequestsSixteenInFlight() async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        let client = makeClient(["busy.test": ["127.0.0.1"]])
        let session = try protectedSession(client)
        let total = 2_000
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            func add() {
                let index = next
                next += 1
                group.addTask {
                    var request = URLRequest(url: URL(string: "http://busy.test:\(origin.port)/\(index)")!)
                    request.httpMethod = "POST"
                    request.httpBody = Data("\(index)".utf8)
                    let (data, _) = try await session.data(for: request)
                    XCTAssertEqual(String(decoding: data, as: UTF8.self), "\(index)")
                }
            }
            for _ in 0..<16 { add() }
            while try await group.next() != nil {
                if next < total { add() }
            }
        }
        XCTAssertEqual(origin.requests.count, total)
    }
}

final class HTTPDNSURLProtocolHeaderTests: XCTestCase {
    func testConfigurationAdditionalHeadersReachTheServer() async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["X-App": "demo", "Accept-Language": "zh-CN"]
        try configuration.httpdnsInstall(makeClient(["headers.test": ["127.0.0.1"]]))
        let session = URLSession(configuration: configuration)
        var request = URLRequest(url: URL(string: "http://headers.test:\(origin.port)/")!)
        request.setValue("en", forHTTPHeaderField: "Accept-Language")
        _ = try await session.data(for: request)
        let seen = try XCTUnwrap(origin.requests.first)
        XCTAssertEqual(seen.header("x-app"), "demo")
        XCTAssertEqual(seen.header("accept-language"), "en", "the request's own header wins")
    }
}

final class HTTPDNSClientFailureTests: XCTestCase {
    func testAFailureCarriesEveryAddressTriedAndTheUnderlyingError() async throws {
        let port = try refusedPort(on: "127.0.0.1")
        let client = makeClient(["dead.test": ["127.0.0.14", "127.0.0.15"]]) { engine, _ in engine.failover.httpdnsOnly = true }
        do {
            _ = try await client.data(for: URLRequest(url: URL(string: "http://dead.test:\(port)/")!))
            XCTFail("reached a dead host")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .cannotConnectToHost)
            let report = try XCTUnwrap(error.httpdnsConnectionReport)
            XCTAssertEqual(report.attempts.map(\.address), [HTTPDNSIPAddress("127.0.0.14"), HTTPDNSIPAddress("127.0.0.15")])
            XCTAssertTrue(report.attempts.allSatisfy { $0.failure != nil })
            XCTAssertEqual(report.answer?.source, "test-httpdns")
            XCTAssertTrue(error.httpdnsUnderlyingError is HTTPTransportError)
        }
    }

    func testAResolutionFailureCarriesTheEngineError() async throws {
        let client = makeClient([:]) { engine, _ in engine.failover.httpdnsOnly = true }
        do {
            _ = try await client.data(for: URLRequest(url: URL(string: "http://nowhere.test/")!))
            XCTFail("resolved nothing into something")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .cannotFindHost)
            let underlying = try XCTUnwrap(error.httpdnsUnderlyingError as? HTTPDNSError)
            XCTAssertEqual(underlying.code, .allAttemptsFailed)
            XCTAssertEqual(error.httpdnsConnectionReport?.attempts.count, 0)
        }
    }
}


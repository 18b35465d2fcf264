import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPDNS
import HTTPDNSCore
import HTTPDNSDirect
import HTTPDNSTestSupport
import XCTest

/// The client's failure reports (issue 22) against a loopback report endpoint: what is reported for
/// a refused, a timed-out and an untrusted address, and nothing of the request; batching, the
/// queue bound, `Retry-After`; and the second HTTPDNS question before LocalDNS.
final class FailureReportClientTests: XCTestCase {
    /// Addresses where nothing listens (refused) and the stalled listener: this suite's own.
    static let dead = "127.0.0.141"
    static let stalled = "127.0.0.142"

    private var endpoint: ReportEndpoint!

    override func setUpWithError() throws {
        endpoint = try ReportEndpoint()
    }

    override func tearDown() {
        endpoint?.stop()
    }

    private func reports(
        interval: Duration = .milliseconds(200), credential: HTTPDNSFailureReports.Credential = .token("test-token"),
        configure: (inout HTTPDNSFailureReports) -> Void = { _ in }
    ) -> HTTPDNSFailureReports {
        var settings = HTTPDNSFailureReports(endpoint: endpoint.url(), credential: credential)
        settings.interval = interval
        configure(&settings)
        return settings
    }

    /// Waits (polling, at most 10 s) until the endpoint holds `count` report items.
    private func waitForReports(_ count: Int, within seconds: Double = 10) async -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(seconds)
        while endpoint.reports.count < count, Date() < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return endpoint.reports
    }

    private func sample(_ index: Int) -> (host: String, address: HTTPDNSIPAddress, port: Int) {
        ("h\(index).test", HTTPDNSIPAddress("192.0.2.\(index % 250 + 1)")!, 1000 + index)
    }

    // MARK: - What is reported

    func testARefusedAddressIsReportedWithoutAnythingOfTheRequest() async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        let client = makeClient(["r.test": [Self.dead, "127.0.0.1"]]) { _, client in
            client.failureReports = self.reports(interval: .milliseconds(500))
        }
        var request = URLRequest(url: URL(string: "http://r.test:\(origin.port)/private/path?token=abc123")!)
        request.httpMethod = "POST"
        request.setValue("s3cret-header", forHTTPHeaderField: "X-Secret")
        request.setValue("session=c00kie", forHTTPHeaderField: "Cookie")
        request.httpBody = Data("BODYSECRET".utf8)
        let started = Date()
        let response = try await client.send(request)
        XCTAssertEqual(response.response.statusCode, 200)
        XCTAssertEqual(response.connection.attempts.map(\.address?.description), [Self.dead, "127.0.0.1"])
        XCTAssertTrue(endpoint.received.isEmpty, "the report waits for others: it never holds up the request")

        let items = await waitForReports(1)
        XCTAssertEqual(items.count, 1)
        let item = try XCTUnwrap(items.first)
        XCTAssertEqual(item["host"] as? String, "r.test")
        XCTAssertEqual(item["address"] as? String, Self.dead)
        XCTAssertEqual(item["port"] as? Int, origin.port)
        XCTAssertEqual(item["error"] as? String, "connect-refused")
        let time = try XCTUnwrap(item["time"] as? Int)
        XCTAssertEqual(Double(time), started.timeIntervalSince1970, accuracy: 5)

        let received = try XCTUnwrap(endpoint.received.first)
        XCTAssertEqual(received.request.method, "POST")
        XCTAssertEqual(received.request.path, "/report")
        XCTAssertEqual(received.header("Authorization"), "Bearer test-token")
        XCTAssertEqual(received.header("Content-Type"), "application/json")
        XCTAssertNil(received.header("X-Secret"))
        XCTAssertNil(received.header("Cookie"))
        let text = String(decoding: received.request.body, as: UTF8.self)
        for secret in ["private", "path", "token", "abc123", "s3cret", "c00kie", "BODYSECRET"] {
            XCTAssertFalse(text.contains(secret), "the report carries '\(secret)': \(text)")
        }
        XCTAssertNil(received.request.rawQuery)
        let deadline = Date().addingTimeInterval(10)
        while client.failureReporter?.acceptedCount != 1, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        XCTAssertEqual(client.failureReporter?.acceptedCount, 1)
        XCTAssertEqual(endpoint.received.count, 1, "the report request itself is never reported")
    }

    func testATimedOutAddressIsReportedAsAConnectTimeout() async throws {
        let listener = try StalledListener(address: Self.stalled)
        let client = makeClient(["slow.test": [Self.stalled]]) { _, client in
            client.connectTimeout = .seconds(1)
            client.failureReports = self.reports()
        }
        do {
            _ = try await client.data(for: URLRequest(url: URL(string: "http://slow.test:\(listener.port)/a/b?c=d")!))
            XCTFail("nothing accepts there")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .timedOut)
        }
        let collected = await waitForReports(1)
        let item = try XCTUnwrap(collected.first)
        XCTAssertEqual(item["host"] as? String, "slow.test")
        XCTAssertEqual(item["address"] as? String, Self.stalled)
        XCTAssertEqual(item["port"] as? Int, listener.port)
        XCTAssertEqual(item["error"] as? String, "connect-timeout")
        withExtendedLifetime(listener) {}
    }

    /// Racing on (the default): the stalled address is raced past after 250 ms and the request is
    /// answered by the next one; the raced-past attempt goes on connecting and, when its connect
    /// timeout ends, is reported as a connect timeout (a carrier's blackholed origin, issue 22),
    /// and cooled down, after the response.
    func testAnAddressRacedPastThatThenTimesOutIsReportedAfterTheResponse() async throws {
        let listener = try StalledListener(address: Self.stalled)
        let origin = try Origin(address: "127.0.0.1", port: listener.port)
        defer { origin.stop() }
        let monitor = FailureMonitor()
        let client = makeClient(["race.test": [Self.stalled, "127.0.0.1"]]) { _, client in
            client.connectTimeout = .seconds(1)
            client.monitor = monitor
            client.failureReports = self.reports()
        }
        let response = try await client.send(URLRequest(url: URL(string: "http://race.test:\(listener.port)/")!))
        XCTAssertEqual(response.response.statusCode, 200)
        XCTAssertEqual(response.connection.attempts.map(\.address?.description), [Self.stalled, "127.0.0.1"])
        XCTAssertTrue(response.connection.attempts[0].failure?.hasPrefix("raced past") == true, "\(response.connection.attempts)")
        XCTAssertEqual(client.racedPast.count, 1, "the raced-past attempt is still connecting")
        XCTAssertFalse(client.engine.isCoolingDown(HTTPDNSIPAddress(Self.stalled)!), "slow is not failed yet")

        await client.racedPast.settle(within: .seconds(5))
        XCTAssertEqual(client.racedPast.count, 0)
        let collected = await waitForReports(1)
        let item = try XCTUnwrap(collected.first)
        XCTAssertEqual(item["host"] as? String, "race.test")
        XCTAssertEqual(item["address"] as? String, Self.stalled)
        XCTAssertEqual(item["port"] as? Int, listener.port)
        XCTAssertEqual(item["error"] as? String, "connect-timeout")
        XCTAssertEqual(monitor.addresses, [Self.stalled], "told once, when it failed")
        XCTAssertTrue(client.engine.isCoolingDown(HTTPDNSIPAddress(Self.stalled)!))
        XCTAssertEqual(origin.requests.count, 1)
        withExtendedLifetime(listener) {}
    }

    /// Releasing the client cancels its raced-past attempts: nothing more is sent or reported.
    func testReleasingTheClientCancelsItsRacedPastAttempts() async throws {
        let listener = try StalledListener(address: Self.stalled)
        let origin = try Origin(address: "127.0.0.1", port: listener.port)
        defer { origin.stop() }
        var client: HTTPDNSClient? = makeClient(["race.test": [Self.stalled, "127.0.0.1"]]) { _, client in
            client.connectTimeout = .seconds(1)
            client.failureReports = self.reports()
        }
        let response = try await client!.send(URLRequest(url: URL(string: "http://race.test:\(listener.port)/")!))
        XCTAssertEqual(response.response.statusCode, 200)
        let racedPast = try XCTUnwrap(client?.racedPast)
        XCTAssertEqual(racedPast.count, 1)
        client = nil
        // The client's last reference may go on another thread a moment later (the attempt that
        // answered lets go when it completes): cancelled well before the 1 s connect timeout, so
        // by the release, not by timing out.
        let cancelled = await pollUntil(within: .milliseconds(500)) { racedPast.count == 0 }
        XCTAssertTrue(cancelled, "\(racedPast.count) raced-past attempt(s) still connecting after the client was released")
        try await Task.sleep(for: .milliseconds(1500))
        XCTAssertTrue(endpoint.received.isEmpty, "\(endpoint.reports)")
        withExtendedLifetime(listener) {}
    }

    /// A certificate from a CA the engine does not trust: reported as `tls-verification`, signed
    /// for an account; the signature checked against `openssl dgst` over the bytes received.
    func testAnUntrustedCertificateIsReportedAsTLSVerificationUnderAnAccountSignature() async throws {
        let trusted = try TestCertificates(commonName: "reports trusted CA")
        let other = try TestCertificates(commonName: "reports other CA")
        defer { trusted.remove(); other.remove() }
        let origin = try Origin(address: "127.0.0.1", tls: try other.issue(dnsNames: ["tls.test"]))
        defer { origin.stop() }
        let client = makeClient(["tls.test": ["127.0.0.1"]], trust: .caFile(trusted.caCertificatePath)) { _, client in
            client.failureReports = self.reports(credential: .account(id: "acct-7", secret: "the secret"))
        }
        do {
            _ = try await client.data(for: URLRequest(url: URL(string: "https://tls.test:\(origin.port)/secret")!))
            XCTFail("the certificate must not verify")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .serverCertificateUntrusted)
        }
        let collected = await waitForReports(1)
        let item = try XCTUnwrap(collected.first)
        XCTAssertEqual(item["address"] as? String, "127.0.0.1")
        XCTAssertEqual(item["port"] as? Int, origin.port)
        XCTAssertEqual(item["error"] as? String, "tls-verification")

        let received = try XCTUnwrap(endpoint.received.first)
        let header = try XCTUnwrap(received.header("Authorization"))
        let fields = header.dropFirst("HTTPDNS-HMAC-SHA256 ".count).split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1).map(String.init)
        }
        XCTAssertTrue(header.hasPrefix("HTTPDNS-HMAC-SHA256 "), header)
        XCTAssertEqual(fields.map { $0[0] }, ["account", "expires", "signature"])
        XCTAssertEqual(fields[0][1], "acct-7")
        let expires = try XCTUnwrap(Int(fields[1][1]))
        XCTAssertEqual(Double(expires), Date().timeIntervalSince1970 + 600, accuracy: 30)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("creports-signed-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: path) }
        try (Data("acct-7\n\(expires)\n".utf8) + received.request.body).write(to: path)
        let result = try ToolRunner(executable: URL(fileURLWithPath: "/usr/bin/openssl")).run(["dgst", "-sha256", "-hmac", "the secret", path.path])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(fields[2][1], result.stdoutText.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// The endpoint's own certificate is verified with the engine's trust: an endpoint the engine
    /// does not trust gets no report, and the reports stay queued.
    func testTheEndpointsCertificateIsVerified() async throws {
        let other = try TestCertificates(commonName: "reports endpoint's untrusted CA")
        defer { other.remove() }
        let secure = try ReportEndpoint(tls: try other.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!]))
        defer { secure.stop() }
        var settings = HTTPDNSFailureReports(endpoint: secure.url(scheme: "https"), credential: .token("t"))
        settings.interval = .milliseconds(100)
        let client = makeClient([:]) { _, client in client.failureReports = settings }
        let reporter = try XCTUnwrap(client.failureReporter)
        reporter.record(host: "x.test", address: HTTPDNSIPAddress("192.0.2.1")!, port: 443, error: .connectRefused)
        let deadline = Date().addingTimeInterval(10)
        while reporter.requestCount < 2, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        XCTAssertGreaterThanOrEqual(reporter.requestCount, 2, "tried, and tried again later")
        XCTAssertTrue(secure.received.isEmpty, "no request got past the TLS handshake")
        XCTAssertEqual(reporter.acceptedCount, 0)
        XCTAssertEqual(reporter.droppedCount, 0, "the report waits for a later try (queued or in flight again)")
    }

    // MARK: - The sender

    func testBatchesOfAtMostFiftyAtMostOneRequestPerInterval() async throws {
        let client = makeClient([:]) { _, client in client.failureReports = self.reports(interval: .milliseconds(300)) }
        let reporter = try XCTUnwrap(client.failureReporter)
        let firstRecorded = endpoint.elapsed
        for index in 0..<120 {
            let sample = sample(index)
            reporter.record(host: sample.host, address: sample.address, port: sample.port, error: .connectTimeout)
        }
        let items = await waitForReports(120)
        XCTAssertEqual(items.count, 120)
        XCTAssertEqual(items.map { $0["host"] as? String }, (0..<120).map { "h\($0).test" }, "oldest first, none twice")
        let requests = endpoint.received
        XCTAssertEqual(requests.map(\.reports.count), [50, 50, 20])
        // The endpoint sees arrivals, each late by its own loopback and scheduling delay (a loaded
        // machine delayed the first request's by over 0.1 s once, 0.155 s between arrivals). What
        // no delay can hide: the k-th request is sent k intervals after the first report at the
        // earliest (its gathering wait is the interval here), and no two go out together.
        for (index, request) in requests.enumerated() {
            XCTAssertGreaterThanOrEqual(request.at - firstRecorded, 0.3 * Double(index + 1), "request \(index + 1) sent before its interval")
        }
        for (earlier, later) in zip(requests, requests.dropFirst()) {
            XCTAssertGreaterThanOrEqual(later.at - earlier.at, 0.1, "requests \(later.at - earlier.at) s apart")
        }
        XCTAssertEqual(reporter.requestCount, 3)
        // The endpoint has the last batch; its answer may still be on the way back.
        let deadline = Date().addingTimeInterval(10)
        while reporter.acceptedCount < 120, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        XCTAssertEqual(reporter.acceptedCount, 120)
    }

    func testAFullQueueDropsTheOldestCountsItAndTellsTheMonitor() async throws {
        let monitor = DropMonitor()
        let client = makeClient([:]) { _, client in
            client.monitor = monitor
            client.failureReports = self.reports(interval: .milliseconds(300)) { $0.queueCapacity = 5 }
        }
        let reporter = try XCTUnwrap(client.failureReporter)
        for index in 0..<8 {
            let sample = sample(index)
            reporter.record(host: sample.host, address: sample.address, port: sample.port, error: .reset)
        }
        XCTAssertEqual(reporter.droppedCount, 3)
        XCTAssertEqual(monitor.drops, [1, 1, 1])
        XCTAssertEqual(monitor.total, 3)
        let items = await waitForReports(5)
        XCTAssertEqual(items.map { $0["host"] as? String }, (3..<8).map { "h\($0).test" }, "the three oldest went")
    }

    func testSheddingWithRetryAfterIsHonouredAndNothingIsLost() async throws {
        endpoint.script([.init(status: 429, headers: [.init(name: "Retry-After", value: "1")])])
        let client = makeClient([:]) { _, client in client.failureReports = self.reports(interval: .milliseconds(100)) }
        let reporter = try XCTUnwrap(client.failureReporter)
        for index in 0..<3 {
            let sample = sample(index)
            reporter.record(host: sample.host, address: sample.address, port: sample.port, error: .unreachable)
        }
        let items = await waitForReports(6)
        let requests = endpoint.received
        XCTAssertEqual(requests.count, 2)
        XCTAssertEqual(items.map { $0["host"] as? String }, ["h0.test", "h1.test", "h2.test", "h0.test", "h1.test", "h2.test"])
        if requests.count == 2 {
            XCTAssertGreaterThanOrEqual(requests[1].at - requests[0].at, 0.95, "Retry-After: 1 waited out")
        }
        let deadline = Date().addingTimeInterval(10)
        while reporter.acceptedCount < 3, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        XCTAssertEqual(reporter.acceptedCount, 3)
        XCTAssertEqual(reporter.droppedCount, 0)
    }

    func testABatchRefusedForGoodIsDroppedAndCounted() async throws {
        endpoint.script([.init(status: 401)])
        let client = makeClient([:]) { _, client in client.failureReports = self.reports(interval: .milliseconds(100)) }
        let reporter = try XCTUnwrap(client.failureReporter)
        reporter.record(host: "a.test", address: HTTPDNSIPAddress("192.0.2.1")!, port: 443, error: .tlsHandshake)
        let deadline = Date().addingTimeInterval(10)
        while reporter.droppedCount == 0, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        XCTAssertEqual(reporter.droppedCount, 1)
        try await Task.sleep(for: .milliseconds(400))
        XCTAssertEqual(endpoint.received.count, 1, "not sent again")
    }

    func testReleasingTheClientStopsTheSender() async throws {
        weak var weakReporter: FailureReporter?
        do {
            let client = makeClient([:]) { _, client in client.failureReports = self.reports(interval: .seconds(60)) }
            weakReporter = client.failureReporter
            client.failureReporter?.record(host: "a.test", address: HTTPDNSIPAddress("192.0.2.1")!, port: 443, error: .reset)
        }
        let deadline = Date().addingTimeInterval(5)
        while weakReporter != nil, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        XCTAssertNil(weakReporter, "the sender task holds nothing that keeps the reporter alive")
        try await Task.sleep(for: .milliseconds(1_300))
        XCTAssertTrue(endpoint.received.isEmpty, "a released client sends nothing more")
    }

    // MARK: - Asking again before giving up

    func testEveryCachedAddressFailedAskAgainBypassingTheCacheBeforeLocalDNS() async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        let provider = SwitchingResolver([Self.dead])
        let local = SwitchingResolver(["127.0.0.1"], name: "local")
        let client = reaskClient(provider: provider, local: local)
        _ = try await client.engine.resolve("re.test")
        provider.set(["127.0.0.1"])

        let response = try await client.send(URLRequest(url: URL(string: "http://re.test:\(origin.port)/")!))
        XCTAssertEqual(response.response.statusCode, 200)
        XCTAssertEqual(response.connection.attempts.map(\.address?.description), [Self.dead, "127.0.0.1"])
        XCTAssertEqual(response.connection.answer?.addresses.map(\.description), ["127.0.0.1"], "the second answer")
        XCTAssertEqual(provider.calls, 2, "asked again once")
        XCTAssertEqual(local.calls, 0, "HTTPDNS's new answer came before LocalDNS")
        let cached = try await client.engine.resolve("re.test")
        XCTAssertEqual(cached.addresses.map(\.description), ["127.0.0.1"], "and it is cached")
        let collected = await waitForReports(1)
        let item = try XCTUnwrap(collected.first)
        XCTAssertEqual(item["address"] as? String, Self.dead)
    }

    func testTheSecondQuestionIsAskedOncePerRequestThenLocalDNS() async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        let provider = SwitchingResolver([Self.dead])
        let local = SwitchingResolver(["127.0.0.1"], name: "local")
        let client = reaskClient(provider: provider, local: local)
        _ = try await client.engine.resolve("again.test")

        let response = try await client.send(URLRequest(url: URL(string: "http://again.test:\(origin.port)/")!))
        XCTAssertEqual(response.response.statusCode, 200)
        XCTAssertEqual(provider.calls, 2, "the cached lookup, then one question that brought nothing new")
        XCTAssertEqual(local.calls, 1, "then LocalDNS")
        XCTAssertEqual(response.connection.attempts.map(\.address?.description), [Self.dead, "127.0.0.1"])
    }

    func testAnAnswerFreshFromHTTPDNSIsNotAskedForAgain() async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        let provider = SwitchingResolver([Self.dead])
        let local = SwitchingResolver(["127.0.0.1"], name: "local")
        let client = reaskClient(provider: provider, local: local)
        let response = try await client.send(URLRequest(url: URL(string: "http://fresh.test:\(origin.port)/")!))
        XCTAssertEqual(response.response.statusCode, 200)
        XCTAssertEqual(provider.calls, 1, "the answer was just asked for: no second question")
        XCTAssertEqual(local.calls, 1)
    }

    private func reaskClient(provider: SwitchingResolver, local: SwitchingResolver) -> HTTPDNSClient {
        var configuration = HTTPDNSConfiguration(resolvers: [provider])
        configuration.hygiene = .init(allowPrivate: true)
        configuration.localDNS = .custom(local)
        configuration.protectedHosts = HTTPDNSHostPolicy(["*.test"])
        var clientConfiguration = HTTPDNSClient.Configuration()
        clientConfiguration.connectTimeout = .seconds(2)
        clientConfiguration.failureReports = reports()
        return HTTPDNSClient(engine: HTTPDNSEngine(configuration: configuration), configuration: clientConfiguration)
    }
}

/// A resolver whose one answer (for every name) the test changes; counts its calls.
final class SwitchingResolver: HTTPDNSResolver {
    let name: String
    private let state: HTTPDNSLock<(addresses: [String], calls: Int)>

    init(_ addresses: [String], name: String = "switching") {
        self.name = name
        state = HTTPDNSLock((addresses, 0))
    }

    var calls: Int { state.withLock { $0.calls } }

    func set(_ addresses: [String]) {
        state.withLock { $0.addresses = addresses }
    }

    func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        let texts = state.withLock { state -> [String] in
            state.calls += 1
            return state.addresses
        }
        return HTTPDNSRecordSet(host: host, ipv4: texts.compactMap(HTTPDNSIPAddress.init), ipv6: [], ttl: 600)
    }
}

/// Records what the client's monitor hears of dropped reports.
final class DropMonitor: HTTPDNSConnectionMonitor {
    private let state = HTTPDNSLock<(drops: [Int], total: Int)>(([], 0))

    var drops: [Int] { state.withLock { $0.drops } }
    var total: Int { state.withLock { $0.total } }

    func failureReportsDropped(count: Int, total: Int) {
        state.withLock { $0.drops.append(count); $0.total = total }
    }
}

/// Records the addresses the client's monitor hears failed.
final class FailureMonitor: HTTPDNSConnectionMonitor {
    private let state = HTTPDNSLock<[String]>([])

    var addresses: [String] { state.withLock { $0 } }

    func connectionFailed(address: HTTPDNSIPAddress, error: any Error) {
        state.withLock { $0.append(address.description) }
    }
}

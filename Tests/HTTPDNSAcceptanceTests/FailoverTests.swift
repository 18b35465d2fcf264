import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSNetworking
import HTTPServing
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Acceptance 5: address failover, LocalDNS fallback, the domain-block redirect, and cancelling a
/// download mid-way, against nginx.
final class FailoverTests: XCTestCase {
    private var certificates: TestCertificates!
    private var nginx: Nginx!
    private var port: UInt16 = 0
    private var httpPort: UInt16 = 0

    override func setUpWithError() throws {
        certificates = try Bed.certificates()
        let names = ["two.test", "fallback.test", "blocked.test", "big.test"]
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-files-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        // 64 MiB, sparse: nginx sends it at 1 MiB/s, so a cancelled download is cut short visibly.
        let bigPath = files.appendingPathComponent("big.bin")
        XCTAssertTrue(FileManager.default.createFile(atPath: bigPath.path, contents: nil))
        let big = try FileHandle(forWritingTo: bigPath)
        try big.truncate(atOffset: 64 << 20)
        try big.close()
        var hosts = try names.map { name in
            Nginx.VirtualHost([name], tls: try certificates.issue(dnsNames: [name]), address: Bed.origin, locations: [
                .text("/", "served \(name) at $server_addr\n"),
            ])
        }
        let slowFiles = Nginx.Location("/", .files(root: files.path), directives: ["limit_rate 1m"])
        hosts[3].locations = [slowFiles]
        hosts.append(Nginx.VirtualHost(["big.test"], address: Bed.origin, locations: [slowFiles]))
        nginx = try Nginx(.init(virtualHosts: hosts))
        port = try XCTUnwrap(nginx.httpsPort)
        httpPort = try XCTUnwrap(nginx.httpPort)
        addTeardownBlock { try? FileManager.default.removeItem(at: files) }
    }

    override func tearDown() {
        nginx?.stop()
        certificates?.remove()
    }

    func testFirstAddressRefusingAndSecondServingSucceeds() async throws {
        let service = try Bed.httpdnsService(["two.test": [Bed.dead, Bed.origin]])
        defer { service.stop() }
        let engine = try Bed.engine(providers: [Bed.dnspod(service)], localDNS: nil, trusting: certificates)
        let session = try Bed.session(Bed.client(engine))
        let (data, _) = try await session.data(from: URL(string: "https://two.test:\(port)/")!)
        XCTAssertEqual(String(decoding: data, as: UTF8.self), "served two.test at \(Bed.origin)\n")
        XCTAssertTrue(engine.isCoolingDown(Bed.dead), "the refusing address is remembered")
        let again = try await engine.resolve("two.test")
        XCTAssertEqual(again.addresses, [Bed.origin, Bed.dead], "and moved behind the one that works")
    }

    func testEveryProviderDownFallsBackToLocalDNS() async throws {
        let deadPort = try refusedPort()
        let dnsmasq = try Bed.lyingDNS([:], truths: ["fallback.test": Bed.origin])
        defer { dnsmasq.stop() }
        let engine = try Bed.engine(
            providers: ["dnspod=http://\(Bed.services):\(deadPort)", "doh=http://\(Bed.services):\(deadPort)/dns-query"],
            localDNS: dnsmasq, trusting: certificates)
        let client = Bed.client(engine)
        let recorder = RecordingDelegate()
        client.start(URLRequest(url: URL(string: "https://fallback.test:\(port)/")!), followRedirects: true, delegate: recorder)
        guard case .success = await recorder.completed() else { return XCTFail("failed: \(String(describing: recorder.completion))") }
        XCTAssertEqual(String(decoding: recorder.body, as: UTF8.self), "served fallback.test at \(Bed.origin)\n")
        XCTAssertEqual(recorder.report?.answer?.origin, .localDNS)
        XCTAssertEqual(recorder.report?.connectedAddress, Bed.origin)
    }

    func testBlockedDomainIsReachedThroughTheRedirectEndpoint() async throws {
        let service = try Bed.httpdnsService(["blocked.test": [Bed.dead]])
        defer { service.stop() }
        let dnsmasq = try Bed.lyingDNS(["blocked.test": Bed.dead2])
        defer { dnsmasq.stop() }
        // The app's own IP-list endpoint, a second HTTPDNS service, knows where the site moved.
        let ipList = try Bed.httpdnsService(["blocked.test": [Bed.origin]])
        defer { ipList.stop() }
        let redirect = try HTTPDNSProviderSpec(parsing: "ips=http://\(Bed.services):\(ipList.port ?? 0)/ips").makeResolver()
        let engine = try Bed.engine(providers: [Bed.dnspod(service)], localDNS: dnsmasq, trusting: certificates)
        let client = Bed.client(engine) { $0.blockRedirect = redirect }

        let recorder = RecordingDelegate()
        client.start(URLRequest(url: URL(string: "https://blocked.test:\(port)/")!), followRedirects: true, delegate: recorder)
        guard case .success = await recorder.completed() else { return XCTFail("failed: \(String(describing: recorder.completion))") }
        XCTAssertEqual(String(decoding: recorder.body, as: UTF8.self), "served blocked.test at \(Bed.origin)\n")
        let report = try XCTUnwrap(recorder.report)
        XCTAssertTrue(report.viaBlockRedirect)
        XCTAssertEqual(report.attempts.map(\.address), [Bed.dead, Bed.dead2, Bed.origin], "HTTPDNS, then LocalDNS, then the redirect")
        XCTAssertTrue(report.certificateVerified)

        // Without the redirect endpoint the same request fails as a connection failure.
        let plain = Bed.client(try Bed.engine(providers: [Bed.dnspod(service)], localDNS: dnsmasq, trusting: certificates))
        do {
            _ = try await plain.data(for: URLRequest(url: URL(string: "https://blocked.test:\(port)/")!))
            XCTFail("reached a blocked domain without the redirect")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .cannotConnectToHost)
        }
    }

    /// Over HTTP/1.1 the cancelled transfer's connection is closed: nginx sees the client go away
    /// and logs the request as incomplete, far short of the file.
    func testCancellingMidDownloadStopsTheTransfer() async throws {
        let (recorder, _) = try await cancelledDownload(URL(string: "http://big.test:\(httpPort)/big.bin")!)
        // nginx logs the request when it ends.
        let logged = await Bed.eventually { self.nginx.accessLog.contains { $0.uri == "/big.bin" } }
        XCTAssertTrue(logged, "nginx never saw the transfer end: \(nginx.errorLog)")
        let entry = try XCTUnwrap(nginx.accessLog.first { $0.uri == "/big.bin" })
        XCTAssertFalse(entry.completed)
        XCTAssertLessThan(entry.bodyBytesSent, 16 << 20)
        XCTAssertEqual(entry.httpProtocol, "HTTP/1.1")
        XCTAssertLessThan(recorder.received, 16 << 20)
    }

    /// Over HTTPS with HTTP/2 the client side stops at once, and so does the server: libcurl 7.88
    /// sends no stream reset when a transfer is removed, so the transport forbids reusing the
    /// connection of a cancelled transfer, which closes it.
    func testCancellingAnHTTP2DownloadStopsDelivery() async throws {
        let (recorder, response) = try await cancelledDownload(URL(string: "https://big.test:\(port)/big.bin")!)
        XCTAssertEqual(response.value(forHTTPHeaderField: "Content-Length"), String(64 << 20))
        XCTAssertLessThan(recorder.received, 16 << 20)
        let logged = await Bed.eventually { self.nginx.accessLog.contains { $0.uri == "/big.bin" && $0.httpProtocol == "HTTP/2.0" } }
        XCTAssertTrue(logged, "nginx never saw the HTTP/2 transfer end: \(nginx.errorLog)")
        let entry = try XCTUnwrap(nginx.accessLog.first { $0.uri == "/big.bin" && $0.httpProtocol == "HTTP/2.0" })
        XCTAssertFalse(entry.completed)
        XCTAssertLessThan(entry.bodyBytesSent, 16 << 20)
    }

    /// `data(for:)` runs its exchange in the caller's task and its race waits for the end of the
    /// body: cancelling that task mid-body ends the call at once with `cancelled` (the race and the
    /// transfer both see it; the caller gets one end) and stops the server's sending.
    func testCancellingDataForMidBodyEndsItAtOnce() async throws {
        let service = try Bed.httpdnsService(["big.test": [Bed.origin]])
        defer { service.stop() }
        let client = Bed.client(try Bed.engine(providers: [Bed.dnspod(service)], localDNS: nil, trusting: certificates))
        let url = URL(string: "https://big.test:\(port)/big.bin")!
        let download = Task { try await client.data(for: URLRequest(url: url)) }
        // The head comes at once and the body at 1 MiB/s: half a second in, part of it has come.
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertFalse(nginx.accessLog.contains { $0.uri == "/big.bin" }, "the download ended before the cancellation")
        let cancelled = ContinuousClock.now
        download.cancel()
        do {
            _ = try await download.value
            XCTFail("the 64 MiB download finished")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .cancelled)
        }
        XCTAssertLessThan(cancelled.duration(to: .now), .seconds(2), "the call outlived its cancellation")
        let logged = await Bed.eventually { self.nginx.accessLog.contains { $0.uri == "/big.bin" } }
        XCTAssertTrue(logged, "nginx never saw the transfer end: \(nginx.errorLog)")
        let entry = try XCTUnwrap(nginx.accessLog.first { $0.uri == "/big.bin" })
        XCTAssertFalse(entry.completed)
        XCTAssertLessThan(entry.bodyBytesSent, 16 << 20)
    }

    /// Starts a download of the 64 MiB file, cancels it after 256 KiB, and checks that the task
    /// completes with `cancelled` and no byte is delivered after that.
    private func cancelledDownload(_ url: URL) async throws -> (RecordingDelegate, HTTPURLResponse) {
        let service = try Bed.httpdnsService(["big.test": [Bed.origin]])
        defer { service.stop() }
        let client = Bed.client(try Bed.engine(providers: [Bed.dnspod(service)], localDNS: nil, trusting: certificates))
        let recorder = RecordingDelegate(keep: 0)
        let task = client.start(URLRequest(url: url), followRedirects: true, delegate: recorder)
        await recorder.received(atLeast: 256 << 10)
        let response = try XCTUnwrap(recorder.response)
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertNil(recorder.completion, "still downloading")
        task.cancel()
        guard case .failure(let error) = await recorder.completed() else {
            XCTFail("the download finished")
            return (recorder, response)
        }
        XCTAssertEqual(error.code, .cancelled)
        let receivedAtEnd = recorder.received
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(recorder.received, receivedAtEnd, "no data after cancellation")
        return (recorder, response)
    }

    /// A loopback port with nothing listening (bound once, then closed).
    private func refusedPort() throws -> Int {
        let probe = try HTTPServer(configuration: .init(address: Bed.services, port: 0)) { _ in .text("") }
        let port = probe.port
        probe.stop()
        return port
    }
}

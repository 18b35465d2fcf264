#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

final class HTTPDNSAccessLogTests: XCTestCase {
    private func line(name: String? = "www.example.test", time: Int64 = 1_764_568_160_123_456) -> HTTPDNSAccessLogLine {
        HTTPDNSAccessLogLine(
            timeMicroseconds: time, client: HTTPDNSIPAddress("2001:db8::7"), httpProtocol: .h2, endpoint: .dohPost, name: name,
            type: "AAAA", status: 200, rcode: .noError, answers: 2, cache: .hit, latencyMicroseconds: 412)
    }

    private func object(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    func testALineIsOneJSONObjectWithEveryMemberInOrder() throws {
        let text = line().text
        XCTAssertEqual(text, #"""
            {"time":"2025-12-01T05:49:20.123456Z","client":"2001:db8::7","protocol":"h2","endpoint":"doh-post","name":"www.example.test","type":"AAAA","status":200,"rcode":"NOERROR","answers":2,"cache":"hit","latency_us":412,"view":null}

            """#)
        let empty = HTTPDNSAccessLogLine(timeMicroseconds: 0, client: nil, httpProtocol: .h1, endpoint: .other, name: nil, type: nil,
                                         status: 404, latencyMicroseconds: 0)
        let parsed = try object(empty.text)
        XCTAssertEqual(parsed["time"] as? String, "1970-01-01T00:00:00.000000Z")
        XCTAssertTrue(parsed["client"] is NSNull)
        XCTAssertTrue(parsed["rcode"] is NSNull)
        XCTAssertEqual(parsed["status"] as? Int, 404)
    }

    func testHostileNamesAreEscapedToASCIIAndReadBackExactly() throws {
        let hostile = "\u{1b}[31mevil\"\\\n\r\t\u{0}\u{7f}/\u{2028}ä😀</script>"
        let text = line(name: hostile).text
        let bytes = Array(text.utf8)
        XCTAssertEqual(bytes.last, 0x0a)
        XCTAssertEqual(bytes.filter { $0 == 0x0a }.count, 1, "one line")
        XCTAssertTrue(bytes.dropLast().allSatisfy { (0x20..<0x7f).contains($0) }, text)
        XCTAssertTrue(text.contains(#"\u001b[31mevil\"\\\u000a\u000d\u0009\u0000\u007f/\u2028\u00e4\ud83d\ude00</script>"#), text)
        XCTAssertEqual(try object(text)["name"] as? String, hostile)
        // Long junk is cut, still valid JSON.
        let long = String(repeating: "é", count: 10_000)
        let cut = try XCTUnwrap(try object(line(name: long).text)["name"] as? String)
        XCTAssertEqual(cut.count, HTTPDNSAccessLogLine.maxNameScalars)
    }

    func testTimesAreRFC3339UTCAgreeingWithFoundation() throws {
        XCTAssertEqual(try object(line(time: 951_868_799_999_999).text)["time"] as? String, "2000-02-29T23:59:59.999999Z")
        XCTAssertEqual(try object(line(time: -1).text)["time"] as? String, "1969-12-31T23:59:59.999999Z")
        XCTAssertEqual(try object(line(time: .max).text)["time"] as? String, "9999-12-31T23:59:59.999999Z")
        XCTAssertEqual(try object(line(time: .min).text)["time"] as? String, "0000-01-01T00:00:00.000000Z")
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = TestRandom()
        for _ in 0..<2_000 {
            let micros = Int64.random(in: -2_000_000_000_000_000...8_000_000_000_000_000, using: &generator)
            let seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
            let expected = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))  // …:ssZ
            let time = try XCTUnwrap(try object(line(time: micros).text)["time"] as? String)
            XCTAssertEqual(String(time.prefix(19)) + "Z", expected, "\(micros) with \(generator)")
            XCTAssertEqual(Int64(time.dropFirst(20).dropLast()), micros - seconds * 1_000_000, "\(micros) with \(generator)")
        }
    }

    func testLinesReachTheFileWholeAndInOrder() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("access-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try HTTPDNSAccessLog(path: path)
        for index in 0..<3_000 { log.log(line(name: "n\(index).test")) }
        XCTAssertTrue(log.close())
        XCTAssertEqual(log.written, 3_000)
        XCTAssertEqual(log.dropped, 0)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 3_000)
        for (index, text) in lines.enumerated() {
            XCTAssertEqual(try object(String(text))["name"] as? String, "n\(index).test")
        }
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o077, mode & 0o040, "group read at most, nothing for others")
        // After close, lines are dropped, not written.
        log.log(line())
        XCTAssertEqual(log.dropped, 1)
    }

    func testALaggingWriterDropsAndCountsInsteadOfBuffering() throws {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        defer { Glibc.close(ends[0]) }
        let metrics = HTTPDNSServerMetrics()
        // Nobody reads the pipe yet: once its 64 KiB fill, the writer blocks and the 8 KiB buffer fills.
        let log = HTTPDNSAccessLog(
            fileDescriptor: ends[1], ownsDescriptor: true, configuration: .init(maxBufferedBytes: 8_192), metrics: metrics)
        for _ in 0..<20_000 { log.log(line()) }
        XCTAssertGreaterThan(log.dropped, 0)
        // Drain the pipe, then close: everything accepted arrives.
        let readEnd = ends[0]
        let readLines = HTTPDNSLock(0)
        let readDone = DispatchSemaphore(value: 0)
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var total: [UInt8] = []
            while true {
                let count = read(readEnd, &buffer, buffer.count)
                if count <= 0 { break }
                total += buffer[..<count]
            }
            readLines.withLock { $0 = total.filter { $0 == 0x0a }.count }
            readDone.signal()
        }
        reader.start()
        XCTAssertTrue(log.close(timeout: .seconds(30)))
        XCTAssertEqual(readDone.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(log.written + log.dropped, 20_000)
        XCTAssertEqual(UInt64(readLines.withLock { $0 }), log.written)
        let parsed = try PrometheusText(metrics.render())
        XCTAssertEqual(parsed.value("httpdns_access_log_dropped_total"), Double(log.dropped))
    }

    func testAFailingWriteDropsItsBatchAndCountsIt() throws {
        let metrics = HTTPDNSServerMetrics()
        let log = try HTTPDNSAccessLog(path: "/dev/full", metrics: metrics)
        for _ in 0..<50 { log.log(line()) }
        XCTAssertTrue(log.close())
        XCTAssertEqual(log.written, 0)
        XCTAssertEqual(log.dropped, 50)
        XCTAssertEqual(try PrometheusText(metrics.render()).value("httpdns_access_log_dropped_total"), 50)
    }

    func testAnUnopenablePathIsAClearError() {
        XCTAssertThrowsError(try HTTPDNSAccessLog(path: "/nonexistent-dir/access.log")) { error in
            let error = error as? HTTPDNSServiceError
            XCTAssertEqual(error?.code, .invalidConfiguration)
            XCTAssertEqual(error?.detail, "cannot open access log /nonexistent-dir/access.log: No such file or directory")
        }
    }

    func testReopenContinuesInANewFileAfterRotation() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("access-\(UUID().uuidString).log").path
        defer {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: path + ".1")
        }
        let log = try HTTPDNSAccessLog(path: path)
        for index in 0..<100 { log.log(line(name: "before\(index).test")) }
        // Wait (bounded) until the writer has written them, as logrotate would find the file.
        for _ in 0..<1_000 where log.written < 100 { usleep(5_000) }
        XCTAssertEqual(log.written, 100)
        XCTAssertEqual(rename(path, path + ".1"), 0)
        try log.reopen()
        for index in 0..<50 { log.log(line(name: "after\(index).test")) }
        XCTAssertTrue(log.close())
        let old = try String(contentsOfFile: path + ".1", encoding: .utf8).split(separator: "\n")
        let new = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(old.count, 100)
        XCTAssertEqual(new.count, 50)
        XCTAssertTrue(new.allSatisfy { $0.contains("\"name\":\"after") })
        // A log given as a descriptor has nothing to reopen.
        let stdoutLog = HTTPDNSAccessLog(fileDescriptor: -1)
        XCTAssertNoThrow(try stdoutLog.reopen(), "nothing to reopen for a descriptor")
        stdoutLog.close()
    }
}

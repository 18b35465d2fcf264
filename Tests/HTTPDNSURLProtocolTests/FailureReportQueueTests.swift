import Foundation
import HTTPDNSCore
import HTTPDNSDirect
import HTTPDNSTestSupport
import HTTPDNSTransport
import XCTest

/// The failure reports' queue and schedule as a value, with explicit times, and their wire form
/// (issue 22's fixed contract).
final class FailureReportQueueTests: XCTestCase {
    private func report(_ index: Int) -> FailureReport {
        FailureReport(
            host: "h\(index).test", address: HTTPDNSIPAddress("192.0.2.\(index % 250 + 1)")!, port: 443, error: .connectRefused,
            time: 1_796_300_000 + Int64(index))
    }

    private func batch(_ step: FailureReportQueue.Step) -> [FailureReport]? {
        if case .send(let batch) = step { return batch }
        return nil
    }

    func testTheFirstReportWaitsTheGatheringTimeThenTheIntervalSpacesRequests() {
        var queue = FailureReportQueue(capacity: 1_000, maxBatch: 50, interval: 60)
        XCTAssertEqual(queue.next(now: 0), .idle)
        XCTAssertEqual(queue.append(report(1), now: 10), 0)
        XCTAssertEqual(queue.next(now: 10), .wait(1), "a second for the request's other addresses")
        XCTAssertEqual(queue.append(report(2), now: 10.5), 0)
        XCTAssertEqual(batch(queue.next(now: 11)), [report(1), report(2)])
        XCTAssertEqual(queue.finished([report(1), report(2)], .accepted, now: 11.1), 0)
        XCTAssertEqual(queue.append(report(3), now: 20), 0)
        XCTAssertEqual(queue.next(now: 20), .wait(51), "no second request within the interval")
        XCTAssertEqual(batch(queue.next(now: 71)), [report(3)])
        XCTAssertEqual(queue.requests, 2)
        XCTAssertEqual(queue.accepted, 2)
    }

    func testBatchesHoldAtMostMaxBatchOneRequestPerInterval() {
        var queue = FailureReportQueue(capacity: 1_000, maxBatch: 50, interval: 60)
        for index in 0..<120 { _ = queue.append(report(index), now: 0) }
        let first = batch(queue.next(now: 1))
        XCTAssertEqual(first, (0..<50).map(report), "the oldest first")
        XCTAssertEqual(queue.next(now: 1), .wait(60))
        XCTAssertEqual(queue.next(now: 31), .wait(30), "the rest already waited: the interval alone counts")
        XCTAssertEqual(batch(queue.next(now: 61)), (50..<100).map(report))
        XCTAssertEqual(batch(queue.next(now: 121)), (100..<120).map(report))
        XCTAssertEqual(queue.next(now: 500), .idle)
    }

    func testAFullQueueDropsTheOldestAndCountsIt() {
        var queue = FailureReportQueue(capacity: 10, maxBatch: 50, interval: 60)
        var dropped = 0
        for index in 0..<15 { dropped += queue.append(report(index), now: 0) }
        XCTAssertEqual(dropped, 5)
        XCTAssertEqual(queue.dropped, 5)
        XCTAssertEqual(queue.count, 10)
        XCTAssertEqual(batch(queue.next(now: 1)), (5..<15).map(report), "the five oldest went")
    }

    func testAFailedSendIsRetriedLaterWithinTheBound() {
        var queue = FailureReportQueue(capacity: 10, maxBatch: 4, interval: 60)
        for index in 0..<6 { _ = queue.append(report(index), now: 0) }
        let sent = try! XCTUnwrap(batch(queue.next(now: 1)))
        XCTAssertEqual(sent, (0..<4).map(report))
        // Meanwhile the queue fills up; the batch comes back in front of the newer reports.
        for index in 6..<14 { _ = queue.append(report(index), now: 2) }
        XCTAssertEqual(queue.count, 10)
        XCTAssertEqual(queue.finished(sent, .retry(after: nil), now: 3), 4, "back over the bound: the four oldest go")
        XCTAssertEqual(queue.count, 10)
        XCTAssertEqual(queue.dropped, 4)
        XCTAssertEqual(queue.next(now: 30), .wait(31), "retried at the next interval")
        XCTAssertEqual(batch(queue.next(now: 61)), (4..<8).map(report))
    }

    func testRetryAfterPostponesTheNextRequest() {
        var queue = FailureReportQueue(capacity: 100, maxBatch: 50, interval: 60)
        _ = queue.append(report(1), now: 0)
        let sent = try! XCTUnwrap(batch(queue.next(now: 1)))
        XCTAssertEqual(queue.finished(sent, .retry(after: 300), now: 2), 0)
        XCTAssertEqual(queue.next(now: 61), .wait(241), "Retry-After beats the interval")
        XCTAssertEqual(batch(queue.next(now: 302)), [report(1)])
        // A shorter Retry-After never makes requests closer than the interval.
        XCTAssertEqual(queue.finished([report(1)], .retry(after: 5), now: 303), 0)
        XCTAssertEqual(queue.next(now: 303), .wait(59))
    }

    func testARejectedBatchIsDroppedAndCounted() {
        var queue = FailureReportQueue(capacity: 100, maxBatch: 50, interval: 60)
        _ = queue.append(report(1), now: 0)
        _ = queue.append(report(2), now: 0)
        let sent = try! XCTUnwrap(batch(queue.next(now: 1)))
        XCTAssertEqual(queue.finished(sent, .rejected, now: 2), 2)
        XCTAssertEqual(queue.dropped, 2)
        XCTAssertEqual(queue.next(now: 100), .idle)
    }

    func testSkippingTheGatheringWaitStillKeepsTheInterval() {
        var queue = FailureReportQueue(capacity: 100, maxBatch: 50, interval: 60)
        _ = queue.append(report(1), now: 0)
        XCTAssertEqual(batch(queue.next(now: 0, skippingGather: true)), [report(1)])
        XCTAssertEqual(queue.inFlight, 1)
        _ = queue.append(report(2), now: 1)
        XCTAssertEqual(queue.next(now: 1, skippingGather: true), .wait(59))
        _ = queue.finished([report(1)], .accepted, now: 1)
        XCTAssertEqual(queue.inFlight, 0)
    }

    // MARK: - Wire

    func testTheBodyIsTheContractsJSONAndNothingElse() throws {
        let reports = [
            FailureReport(host: "www.example.test", address: HTTPDNSIPAddress("192.0.2.1")!, port: 443, error: .connectTimeout, time: 1_796_300_000),
            FailureReport(host: "v6.example.test", address: HTTPDNSIPAddress("2001:db8::1")!, port: 8443, error: .tlsVerification, time: 1_796_300_001),
        ]
        let body = FailureReport.body(reports)
        XCTAssertEqual(
            String(decoding: body, as: UTF8.self),
            #"{"reports":[{"host":"www.example.test","address":"192.0.2.1","port":443,"error":"connect-timeout","time":1796300000},"#
                + #"{"host":"v6.example.test","address":"2001:db8::1","port":8443,"error":"tls-verification","time":1796300001}]}"#)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        XCTAssertEqual(Set(object.keys), ["reports"])
        for item in try XCTUnwrap(object["reports"] as? [[String: Any]]) {
            XCTAssertEqual(Set(item.keys), ["host", "address", "port", "error", "time"])
        }
    }

    func testErrorClassesAreTheContractsWords() {
        XCTAssertEqual(
            HTTPDNSReportWire.ErrorClass.allCases.map(\.rawValue),
            ["connect-refused", "connect-timeout", "tls-verification", "tls-handshake", "unreachable", "reset"])
    }

    func testTransportFailuresMapToErrorClasses() {
        func classify(_ code: HTTPTransportError.Code, _ detail: String = "", sent: Int64 = 0) -> HTTPDNSReportWire.ErrorClass? {
            HTTPDNSReportWire.ErrorClass(HTTPTransportError(code, detail, requestBytesSent: sent))
        }
        XCTAssertEqual(classify(.cannotConnectToHost, "Failed to connect to x port 443 after 0 ms: Couldn't connect to server"), .connectRefused)
        XCTAssertEqual(classify(.cannotConnectToHost, "Connection refused"), .connectRefused)
        XCTAssertEqual(classify(.cannotConnectToHost, "Failed to connect to x port 443 after 3 ms: No route to host"), .unreachable)
        XCTAssertEqual(classify(.cannotConnectToHost, "Network is unreachable"), .unreachable)
        XCTAssertEqual(classify(.cannotConnectToHost, "Connection reset by peer"), .reset)
        XCTAssertEqual(classify(.timedOut, "Connection timed out after 2001 milliseconds"), .connectTimeout)
        XCTAssertNil(classify(.timedOut, "Operation timed out", sent: 120), "a timeout after the request left says nothing of the address")
        XCTAssertEqual(classify(.serverCertificateUntrusted), .tlsVerification)
        XCTAssertEqual(classify(.secureConnectionFailed), .tlsHandshake)
        XCTAssertEqual(classify(.networkConnectionLost), .reset)
        XCTAssertNil(classify(.networkConnectionLost, sent: 10))
        XCTAssertNil(classify(.cancelled))
        XCTAssertNil(classify(.cannotFindHost))
        XCTAssertNil(classify(.proxyConnectionFailed), "the proxy failed, not the address")
    }

    func testBearerToken() {
        XCTAssertEqual(FailureReport.authorization(.token("t0k3n"), body: Array("{}".utf8), now: 1_796_300_000.7), "Bearer t0k3n")
    }

    /// The account signature against `openssl dgst -sha256 -hmac`, over the exact bytes the
    /// contract names: `"<id>\n<expires>\n"` and the body.
    func testAccountSignatureMatchesOpenSSL() throws {
        let body = FailureReport.body([report(7)])
        let header = FailureReport.authorization(.account(id: "1234", secret: "s3cr3t-ключ"), body: body, now: 1_796_300_000.7)
        XCTAssertTrue(header.hasPrefix("HTTPDNS-HMAC-SHA256 account=1234, expires=1796300600, signature="), header)
        let signature = String(header.split(separator: "=").last!)
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(signature.allSatisfy { "0123456789abcdef".contains($0) }, signature)

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("creports-hmac-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: path) }
        try (Data("1234\n1796300600\n".utf8) + Data(body)).write(to: path)
        let openssl = try ToolRunner(executable: URL(fileURLWithPath: "/usr/bin/openssl"))
        let result = try openssl.run(["dgst", "-sha256", "-hmac", "s3cr3t-ключ", path.path])
        XCTAssertEqual(result.status, 0, result.stderrText)
        let expected = try XCTUnwrap(result.stdoutText.split(separator: " ").last).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(signature, expected)
    }

    func testRetryAfterSecondsAndDates() {
        XCTAssertEqual(FailureReport.retryAfter("120", now: 0), 120)
        XCTAssertEqual(FailureReport.retryAfter(" 7 ", now: 0), 7)
        let now = 1_796_300_000.0
        let date = Date(timeIntervalSince1970: now + 90)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        XCTAssertEqual(FailureReport.retryAfter(formatter.string(from: date), now: now), 90)
        XCTAssertNil(FailureReport.retryAfter("soon", now: 0))
        XCTAssertNil(FailureReport.retryAfter(nil, now: 0))
        XCTAssertNil(FailureReport.retryAfter("-5", now: 0))
    }
}

import DNSSockets
import Foundation
import HTTPDNSCore
import XCTest

/// Only `localhost` and /etc/hosts names reach the real getaddrinfo here (and only for IPv4, the
/// family /etc/hosts has), so no query leaves the machine; every other path uses an injected lookup.
final class SystemResolverTests: XCTestCase {
    func testLocalhost() async throws {
        let addresses = try await DNSSystemResolver().resolve("localhost", family: .ipv4)
        XCTAssertEqual(addresses, [HTTPDNSIPAddress("127.0.0.1")!])
    }

    func testNameFromEtcHosts() async throws {
        let hosts = try String(contentsOfFile: "/etc/hosts", encoding: .utf8)
        var entry: (name: String, address: HTTPDNSIPAddress)?
        for line in hosts.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, !fields[0].hasPrefix("#"), let address = HTTPDNSIPAddress(String(fields[0])),
                  address.family == .v4, let name = fields.dropFirst().first(where: { $0 != "localhost" && !$0.contains("#") })
            else { continue }
            entry = (String(name), address)
            break
        }
        let (name, address) = try XCTUnwrap(entry, "/etc/hosts has no IPv4 name besides localhost to test with")
        let addresses = try await DNSSystemResolver().resolve(name, family: .ipv4)
        XCTAssertEqual(addresses.first, address)
    }

    func testInvalidNamesNeverReachTheLookup() async {
        let calls = HTTPDNSLock(0)
        let resolver = DNSSystemResolver { _, _ in
            calls.withLock { $0 += 1 }
            return []
        }
        for name in ["", "a..b", "-bad.test", "sp ace.test", "a/b", String(repeating: "a", count: 64) + ".test", "x\u{0}y"] {
            do {
                _ = try await resolver.resolve(name)
                XCTFail("accepted \(name)")
            } catch let error as HTTPDNSError {
                XCTAssertEqual(error.code, .invalidHost, name)
            } catch {
                XCTFail("unexpected \(error)")
            }
        }
        XCTAssertEqual(calls.withLock { $0 }, 0)
    }

    func testLiteralsAreReturnedWithoutLookup() async throws {
        let resolver = DNSSystemResolver { _, _ in throw HTTPDNSError(.transport, "must not be called") }
        let v4 = try await resolver.resolve("192.0.2.7", family: .both)
        XCTAssertEqual(v4, [HTTPDNSIPAddress("192.0.2.7")!])
        let v6 = try await resolver.resolve("[2001:db8::1]", family: .ipv6)
        XCTAssertEqual(v6, [HTTPDNSIPAddress("2001:db8::1")!])
        await assertCode(.noAddress) { _ = try await resolver.resolve("192.0.2.7", family: .ipv6) }
    }

    func testResultsAreFilteredAndDeduplicatedInOrder() async throws {
        let resolver = DNSSystemResolver { host, family in
            XCTAssertEqual(host, "api.example.test")
            XCTAssertEqual(family, .ipv4)
            return ["192.0.2.2", "192.0.2.1", "192.0.2.2", "2001:db8::1", "192.0.2.1"].map { HTTPDNSIPAddress($0)! }
        }
        let addresses = try await resolver.resolve("api.example.test", family: .ipv4)
        XCTAssertEqual(addresses, [HTTPDNSIPAddress("192.0.2.2")!, HTTPDNSIPAddress("192.0.2.1")!])
    }

    func testErrorsFromTheLookupKeepTheirCode() async {
        for code in [HTTPDNSError.Code.nameNotFound, .noAddress, .transport] {
            let resolver = DNSSystemResolver { _, _ in throw HTTPDNSError(code, "fake") }
            await assertCode(code) { _ = try await resolver.resolve("api.example.test") }
        }
        struct Other: Error {}
        await assertCode(.transport) { _ = try await DNSSystemResolver { _, _ in throw Other() }.resolve("api.example.test") }
        await assertCode(.noAddress) { _ = try await DNSSystemResolver { _, _ in [] }.resolve("api.example.test") }
    }

    func testBlockedLookupTimesOutWhileItKeepsRunning() async {
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        let resolver = DNSSystemResolver(timeout: .milliseconds(200)) { _, _ in
            _ = release.wait(timeout: .now() + 30)
            return [HTTPDNSIPAddress("192.0.2.1")!]
        }
        await assertCode(.timedOut) { _ = try await resolver.resolve("slow.example.test") }
    }

    func testBlockedLookupHonoursCancellation() async throws {
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        defer { release.signal() }
        let resolver = DNSSystemResolver(timeout: .seconds(60)) { _, _ in
            started.signal()
            _ = release.wait(timeout: .now() + 30)
            return [HTTPDNSIPAddress("192.0.2.1")!]
        }
        let task = Task { try await resolver.resolve("slow.example.test") }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                started.wait()
                continuation.resume()
            }
        }
        task.cancel()
        await assertCode(.cancelled) { _ = try await task.value }
    }

    /// Lookups blocked on every thread of the lookup pool must not starve the cooperative pool
    /// (2 threads on this machine): another task runs to completion while all of them are blocked.
    ///
    /// The lookups wait for a release that comes only after that task; their 30 s cap only ends a
    /// failing run, which then fails: if lookups ran on the cooperative pool, no more than its width
    /// could start, and the other task could only run after some had returned.
    func testBlockedLookupsDoNotBlockOtherTasks() async throws {
        let count = DNSSystemResolver.threadLimit
        let release = DispatchSemaphore(value: 0)
        let allStarted = DispatchSemaphore(value: 0)
        let progress = HTTPDNSLock((started: 0, returned: 0))
        let resolver = DNSSystemResolver(timeout: .seconds(60)) { _, _ in
            if progress.withLock({ $0.started += 1; return $0.started }) == count { allStarted.signal() }
            _ = release.wait(timeout: .now() + 30)
            progress.withLock { $0.returned += 1 }
            return [HTTPDNSIPAddress("192.0.2.1")!]
        }
        let tasks = (0..<count).map { _ in Task { try await resolver.resolve("slow.example.test") } }
        // Waited for on a Dispatch thread, so that a starved cooperative pool cannot hide it.
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                _ = allStarted.wait(timeout: .now() + 30)
                continuation.resume()
            }
        }
        let value = await Task { 42 }.value
        let (started, returned) = progress.withLock { ($0.started, $0.returned) }
        XCTAssertEqual(value, 42)
        XCTAssertEqual(started, count, "only \(started) of \(count) lookups were running")
        XCTAssertEqual(returned, 0, "the other task ran only after \(returned) lookups had returned")
        for _ in tasks { release.signal() }
        for task in tasks {
            let addresses = try await task.value
            XCTAssertEqual(addresses, [HTTPDNSIPAddress("192.0.2.1")!])
        }
    }

    private func assertCode(_ code: HTTPDNSError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("expected \(code)", file: file, line: line)
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
    }
}

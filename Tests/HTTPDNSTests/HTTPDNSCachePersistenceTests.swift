#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
@testable import HTTPDNS
import HTTPDNSCore
import XCTest

/// The cache file as untrusted input (issue 12): what is loaded, what is refused, how it is written.
final class HTTPDNSCachePersistenceTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = temporaryPath("cache-dir")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A saved cache is loaded at the next start and every entry is refreshed at once, without any
    /// lookup by the caller: the cached answers become the provider's, no longer marked `fromDisk`.
    func testLoadedEntriesAreRefreshedAtOnceWithoutALookup() async throws {
        let path = directory + "/cache.json"
        let clock = HTTPDNSManualClock()
        try await saveTwoEntries(path, clock: clock)

        clock.advance(by: 100)
        let provider = FakeResolver("p", .answer(["198.51.100.2"], ttl: 600))
        let second = engine([provider], clock: clock) { $0.cache.persistencePath = path }
        try await waitUntil {
            second.cachedAnswer("p1.example", family: .both)?.fromDisk == false && second.cachedAnswer("p2.example")?.fromDisk == false
        }
        XCTAssertEqual(provider.calls, 2, "one refresh per loaded entry")
        for answer in [second.cachedAnswer("p1.example", family: .both), second.cachedAnswer("p2.example")] {
            XCTAssertEqual(answer?.addresses.map(\.description), ["198.51.100.2"])
            XCTAssertEqual(answer?.ttl, 600)
        }
        let refreshed = try await second.resolve("p1.example", family: .both)
        XCTAssertFalse(refreshed.fromDisk)
        XCTAssertEqual(provider.calls, 2, "a refreshed entry is a plain cache hit")
    }

    /// When the refresh after the load fails, the file's answers stay usable, still marked `fromDisk`.
    func testFailedRefreshKeepsTheLoadedAnswers() async throws {
        let path = directory + "/cache.json"
        let clock = HTTPDNSManualClock()
        try await saveTwoEntries(path, clock: clock)

        clock.advance(by: 100)
        let provider = FakeResolver("p", .fail(.transport))
        let monitor = RecordingMonitor()
        let second = engine([provider], clock: clock, monitor: monitor) {
            $0.cache.persistencePath = path
            $0.failover.httpdnsOnly = true
        }
        try await waitUntil { monitor.events.filter { $0.hasPrefix("failed p") }.count >= 2 }
        XCTAssertEqual(provider.calls, 2, "each loaded entry asked once")
        let fromDisk = try await second.resolve("p1.example", family: .both)
        XCTAssertEqual(fromDisk.addresses.map(\.description), ["198.51.100.1", "2001:db8::5"])
        XCTAssertEqual(fromDisk.ttl, 500)
        XCTAssertTrue(fromDisk.fromCache)
        XCTAssertTrue(fromDisk.fromDisk)
        XCTAssertEqual(second.cachedAnswer("p2.example")?.addresses.map(\.description), ["198.51.100.1"])
        XCTAssertEqual(second.cachedAnswer("p2.example")?.fromDisk, true)
    }

    /// Loaded names are refreshed in batch requests where the provider has a batch form (DNSPod
    /// `dn=a,b,c`), replacing the file's answers.
    func testLoadedEntriesAreRefreshedInBatches() async throws {
        let path = directory + "/cache.json"
        let hosts = ["b1.example", "b2.example", "b3.example"]
        let clock = HTTPDNSManualClock()
        let first = engine([FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))], clock: clock) {
            $0.cache.persistencePath = path
        }
        for host in hosts { _ = try await first.resolve(host, family: .ipv4) }
        try first.saveCache()

        let server = try ProviderServer { request in
            let names = (request.queryValue("dn") ?? "").split(separator: ",")
            return .text(names.map { "\($0).:93.184.216.9,300" }.joined(separator: "\n"))
        }
        defer { server.stop() }
        var configuration = HTTPDNSConfiguration(
            resolvers: [try HTTPDNSProviderSpec(parsing: "dnspod=\(server.base)").makeResolver(timeout: .seconds(3))])
        configuration.clock = clock
        configuration.family = .ipv4
        configuration.failover.httpdnsOnly = true
        configuration.cache.persistencePath = path
        configuration.monitor = RecordingMonitor()
        let second = HTTPDNSEngine(configuration: configuration)
        try await waitUntil { hosts.allSatisfy { second.cachedAnswer($0)?.fromDisk == false } }
        XCTAssertEqual(server.requestCount, 1, "three names, one DNSPod batch request")
        let asked = (server.requests.first?.queryValue("dn") ?? "").split(separator: ",").map(String.init)
        XCTAssertEqual(Set(asked), Set(hosts))
        for host in hosts {
            XCTAssertEqual(second.cachedAnswer(host)?.addresses.map(\.description), ["93.184.216.9"])
        }
    }

    /// A file of many names without a batch form is refreshed a few lookups at a time
    /// (``HTTPDNSEngine/diskRefreshConcurrency``), never as one burst of requests.
    func testLoadedEntriesAreRefreshedAFewAtATime() async throws {
        let path = directory + "/cache.json"
        let hosts = (1...12).map { "many\($0).example" }
        let clock = HTTPDNSManualClock()
        let first = engine([FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))], clock: clock) { $0.cache.persistencePath = path }
        for host in hosts { _ = try await first.resolve(host) }
        try first.saveCache()

        let provider = FakeResolver("p", .answer(["198.51.100.2"], ttl: 600), delay: 0.05)
        let second = engine([provider], clock: clock) { $0.cache.persistencePath = path }
        try await waitUntil { hosts.allSatisfy { second.cachedAnswer($0)?.fromDisk == false } }
        XCTAssertEqual(provider.calls, hosts.count, "one refresh per loaded entry")
        XCTAssertLessThanOrEqual(provider.mostInFlight, HTTPDNSEngine.diskRefreshConcurrency)
        XCTAssertGreaterThan(provider.mostInFlight, 1, "the refreshes overlap")
    }

    /// The file is `0600` in a directory the engine creates `0700`; no temporary file stays behind.
    func testFileIsPrivate() async throws {
        let path = directory + "/made/by/engine/cache.json"
        let subject = engine([FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))]) { $0.cache.persistencePath = path }
        _ = try await subject.resolve("a.example")
        try subject.saveCache()
        XCTAssertEqual(try mode(path), 0o600)
        XCTAssertEqual(try mode(directory + "/made/by/engine"), 0o700)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/made/by/engine"), ["cache.json"])
    }

    /// Every byte of a saved file flipped in turn (three ways): each flip is rejected whole, never a
    /// partial load; with and without an HMAC key.
    func testEveryByteFlipIsRejectedWhole() throws {
        for key in [nil, Array("app secret".utf8)] {
            let bytes = try HTTPDNSCacheFile.encode(sampleEntries(), key: key)
            let loaded = try HTTPDNSCacheFile.decode(bytes, key: key, hygiene: .init(), settings: .init(), now: now)
            XCTAssertEqual(loaded.count, 3, "the intact file loads")
            var rejected = 0
            for index in bytes.indices {
                for mask: UInt8 in [0x01, 0x20, 0xff] {
                    var flipped = bytes
                    flipped[index] ^= mask
                    XCTAssertThrowsError(
                        try HTTPDNSCacheFile.decode(flipped, key: key, hygiene: .init(), settings: .init(), now: now),
                        "byte \(index) ^ \(mask) was accepted")
                    rejected += 1
                }
            }
            XCTAssertEqual(rejected, bytes.count * 3)
        }
        // Through the file system too: one flip per byte, each file refused with a warning.
        let path = directory + "/flip.json"
        let bytes = try HTTPDNSCacheFile.encode(sampleEntries(), key: nil)
        let monitor = RecordingMonitor()
        let persistence = HTTPDNSCachePersistence(path: path, interval: 0, key: nil, monitor: monitor)
        for index in bytes.indices {
            var flipped = bytes
            flipped[index] ^= 0x01
            try write(flipped, to: path)
            XCTAssertTrue(persistence.load(hygiene: .init(), settings: .init(), now: now).isEmpty, "byte \(index)")
        }
        XCTAssertEqual(monitor.events.filter { $0.hasPrefix("warning") }.count, bytes.count)
    }

    /// With an app key the file is signed: another key, no key, or an unsigned file loads nothing.
    func testHMACKeyMakesTamperingDetectable() throws {
        let path = directory + "/signed.json"
        let key = Array("key one".utf8)
        try write(try HTTPDNSCacheFile.encode(sampleEntries(), key: key), to: path)
        XCTAssertEqual(loaded(path, key: key).count, 3)
        XCTAssertTrue(loaded(path, key: Array("key two".utf8)).isEmpty, "another key")
        XCTAssertTrue(loaded(path, key: nil).isEmpty, "a signed file cannot be checked without the key")
        try write(try HTTPDNSCacheFile.encode(sampleEntries(), key: nil), to: path)
        XCTAssertTrue(loaded(path, key: key).isEmpty, "an unsigned file when a key is configured")
        // An attacker who recomputes the SHA-256 of an edited body still cannot pass the HMAC.
        var edited = try HTTPDNSCacheFile.encode(sampleEntries(), key: key)
        let body = Array(edited[(edited.firstIndex(of: 0x0a)! + 1)...])
        edited = Array(HTTPDNSCacheFile.header(for: body, key: nil).utf8) + body
        try write(edited, to: path)
        XCTAssertTrue(loaded(path, key: key).isEmpty)
    }

    /// Issue 12's planted file, with a correct checksum: bogons, a TTL of 2^63-1, a store time in
    /// the future and a host that is an IP literal change no answer and crash nothing.
    func testPlantedBogonsAndHugeTTLsChangeNoAnswer() async throws {
        let path = directory + "/planted.json"
        func item(_ host: String, _ addresses: [String], ttl: String = "600", storedAt: String = "1767225600") -> String {
            let list = addresses.map { "\"\($0)\"" }.joined(separator: ",")
            return #"{"addresses":[\#(list)],"family":"ipv4","host":"\#(host)","origin":"httpdns","source":"p","storedAt":\#(storedAt),"ttl":\#(ttl)}"#
        }
        let entries = [
            item("bank.example.com", ["127.0.0.1"]), item("intranet", ["10.0.0.5", "0.0.0.0"]),
            item("huge.example", ["198.51.100.9"], ttl: "9223372036854775807"),
            item("negative.example", ["198.51.100.9"], ttl: "-1"),
            item("future.example", ["198.51.100.9"], storedAt: "1e300"), item("192.0.2.1", ["198.51.100.9"]),
            item("UPPER.example", ["198.51.100.9"]), item("kept.example", ["198.51.100.9", "192.168.1.1"]),
        ]
        let body = Array(#"{"entries":[\#(entries.joined(separator: ","))]}"#.utf8)
        try write(Array(HTTPDNSCacheFile.header(for: body, key: nil).utf8) + body, to: path)

        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([provider]) { $0.cache.persistencePath = path }
        subject.waitForCacheFile()
        for host in ["bank.example.com", "intranet", "huge.example", "negative.example", "future.example", "upper.example"] {
            XCTAssertNil(subject.cachedAnswer(host), host)
            let answer = try await subject.resolve(host)
            XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.1"], host)
            XCTAssertFalse(answer.fromCache, host)
        }
        // What a network answer could have been is kept, after the hygiene filter (the engine then
        // refreshes it at once: its answer is the file's or the provider's, never the bogon).
        let kept = try XCTUnwrap(loaded(path).first { $0.key.host == "kept.example" })
        XCTAssertEqual(kept.entry.addresses.map(\.description), ["198.51.100.9"])
        XCTAssertTrue(kept.entry.fromDisk)
        let served = try XCTUnwrap(subject.cachedAnswer("kept.example"))
        XCTAssertFalse(served.addresses.contains { $0.description == "192.168.1.1" })
    }

    /// A file owned by another user, writable by group or others, a symlink, a directory or an
    /// oversized (sparse) file is refused on the open descriptor, with a warning.
    func testFilesNotPrivatelyOursAreRefused() throws {
        let good = try HTTPDNSCacheFile.encode(sampleEntries(), key: nil)
        let path = directory + "/cache.json"
        try write(good, to: path)
        XCTAssertEqual(loaded(path).count, 3, "the file itself is good")

        XCTAssertEqual(geteuid(), 0, "chown to another user needs root (CI runs as root)")
        XCTAssertEqual(chown(path, 65534, 65534), 0)
        assertRefused(path, mentioning: "another user")
        XCTAssertEqual(chown(path, geteuid(), getegid()), 0)

        for mode: mode_t in [0o620, 0o602, 0o666] {
            XCTAssertEqual(chmod(path, mode), 0)
            assertRefused(path, mentioning: "writable")
        }
        XCTAssertEqual(chmod(path, 0o600), 0)

        let link = directory + "/link.json"
        XCTAssertEqual(symlink(path, link), 0)
        assertRefused(link, mentioning: "symbolic link")

        let big = directory + "/big.json"
        XCTAssertTrue(FileManager.default.createFile(atPath: big, contents: nil, attributes: [.posixPermissions: 0o600]))
        XCTAssertEqual(truncate(big, off_t(HTTPDNSCachePersistence.maximumFileSize + 1)), 0)
        assertRefused(big, mentioning: "over the limit")
        let bigLink = directory + "/big-link.json"
        XCTAssertEqual(symlink(big, bigLink), 0)
        assertRefused(bigLink, mentioning: "symbolic link")

        assertRefused(directory, mentioning: "not a regular file")
    }

    /// In a shared sticky directory (like /tmp) another user's planted file at the cache's path
    /// is refused, however good its content.
    func testPlantedFileInASharedStickyDirectoryIsRefused() async throws {
        XCTAssertEqual(geteuid(), 0, "planting as another user needs root (CI runs as root)")
        let shared = directory + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        XCTAssertEqual(chmod(shared, 0o1777), 0)
        let path = shared + "/cache.json"
        try write(try HTTPDNSCacheFile.encode(sampleEntries(), key: nil), to: path)
        XCTAssertEqual(chown(path, 65534, 65534), 0)
        XCTAssertEqual(chmod(path, 0o644), 0)
        let monitor = RecordingMonitor()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([provider], monitor: monitor) { $0.cache.persistencePath = path }
        subject.waitForCacheFile()
        XCTAssertTrue(monitor.events.contains { $0.contains("another user") }, "\(monitor.events)")
        let answer = try await subject.resolve("one.example")
        XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.1"])
        XCTAssertFalse(answer.fromCache)
    }

    /// Temporary files of killed saves are removed at load: a dead process's, and an old one of a
    /// live process; a fresh one of a live process (a save under way) is left alone.
    func testStaleTemporaryFilesAreRemoved() throws {
        let path = directory + "/cache.json"
        var deadPID: Int32 = 4_000_000
        while kill(deadPID, 0) == 0 || errno != ESRCH { deadPID -= 1 }
        let dead = directory + "/.cache.json.tmp-\(deadPID)-1"
        let old = directory + "/.cache.json.tmp-\(getpid())-2"
        let fresh = directory + "/.cache.json.tmp-\(getpid())-3"
        let other = directory + "/.other.json.tmp-\(deadPID)-4"
        for file in [dead, old, fresh, other] { try write([1, 2, 3], to: file) }
        var times = [timeval(tv_sec: 1_000_000, tv_usec: 0), timeval(tv_sec: 1_000_000, tv_usec: 0)]
        XCTAssertEqual(utimes(old, &times), 0)
        let subject = engine([FakeResolver("p", .fail(.transport))]) { $0.cache.persistencePath = path }
        subject.waitForCacheFile()
        let left = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        XCTAssertEqual(left, [".cache.json.tmp-\(getpid())-3", ".other.json.tmp-\(deadPID)-4"])
    }

    /// The load runs on the persistence queue, not on the thread that creates the engine.
    func testLoadRunsOffTheCallersThread() throws {
        let path = directory + "/corrupt.json"
        try write(Array("not a cache file".utf8), to: path)
        let monitor = ThreadRecordingMonitor()
        var configuration = HTTPDNSConfiguration(resolvers: [])
        configuration.monitor = monitor
        configuration.cache.persistencePath = path
        let subject = HTTPDNSEngine(configuration: configuration)
        subject.waitForCacheFile()
        let threads = monitor.warningThreads
        XCTAssertEqual(threads.count, 1)
        XCTAssertFalse(threads.contains(pthread_self()), "the warning came from the caller's thread")
    }

    /// Changes are written on their own, without an explicit save.
    func testChangesAreWrittenWithoutAnExplicitSave() async throws {
        let path = directory + "/scheduled.json"
        let first = engine([FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))]) {
            $0.cache.persistencePath = path
            $0.cache.persistenceInterval = .milliseconds(50)
        }
        _ = try await first.resolve("auto.example")
        try await waitUntil { FileManager.default.fileExists(atPath: path) }
        let second = engine([FakeResolver("p", .fail(.transport))]) { $0.cache.persistencePath = path }
        second.waitForCacheFile()
        XCTAssertNotNil(second.cachedAnswer("auto.example"))
    }

    /// Files of version 1 (no checksum) and foreign files load nothing, with a warning.
    func testOldAndForeignFilesAreIgnoredWithAWarning() async throws {
        for content in ["{not json", #"{"format":"swift-httpdns-cache","version":1,"entries":[]}"#,
                        "swift-httpdns-cache 99 sha256 00\n{}", String(repeating: "\u{0}", count: 100), ""] {
            let path = directory + "/old.json"
            try write(Array(content.utf8), to: path)
            let monitor = RecordingMonitor()
            let subject = engine([FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))], monitor: monitor) {
                $0.cache.persistencePath = path
            }
            subject.waitForCacheFile()
            XCTAssertTrue(monitor.events.contains { $0.hasPrefix("warning") }, "no warning for \(content)")
            let answer = try await subject.resolve("x.example")
            XCTAssertFalse(answer.fromCache)
        }
    }

    // MARK: - Helpers

    private let now: Double = 1_767_225_600

    private func sampleEntries() throws -> [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)] {
        func entry(_ addresses: [String]) throws -> HTTPDNSCacheEntry {
            HTTPDNSCacheEntry(
                addresses: try addresses.map { try XCTUnwrap(HTTPDNSIPAddress($0)) }, source: "p", origin: .httpdns,
                storedAt: now - 10, ttl: 600)
        }
        return [
            (HTTPDNSCacheKey(host: "one.example", family: .ipv4), try entry(["198.51.100.1", "198.51.100.2"])),
            (HTTPDNSCacheKey(host: "two.example", family: .ipv6), try entry(["2001:db8::5"])),
            (HTTPDNSCacheKey(host: "three.example", family: .both), try entry(["198.51.100.3", "2001:db8::6"])),
        ]
    }

    /// Saves `p1.example` (both families) and `p2.example` (the default family) as answered at the
    /// clock's time, TTL 600.
    private func saveTwoEntries(_ path: String, clock: HTTPDNSManualClock) async throws {
        let first = engine([FakeResolver("p", .answer(["198.51.100.1", "2001:db8::5"], ttl: 600))], clock: clock) {
            $0.cache.persistencePath = path
        }
        _ = try await first.resolve("p1.example", family: .both)
        _ = try await first.resolve("p2.example")
        try first.saveCache()
    }

    private func loaded(_ path: String, key: [UInt8]? = nil) -> [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)] {
        HTTPDNSCachePersistence(path: path, interval: 0, key: key, monitor: RecordingMonitor())
            .load(hygiene: .init(), settings: .init(), now: now)
    }

    private func assertRefused(_ path: String, mentioning reason: String, line: UInt = #line) {
        let monitor = RecordingMonitor()
        let entries = HTTPDNSCachePersistence(path: path, interval: 0, key: nil, monitor: monitor)
            .load(hygiene: .init(), settings: .init(), now: now)
        XCTAssertTrue(entries.isEmpty, line: line)
        XCTAssertTrue(monitor.events.contains { $0.hasPrefix("warning") && $0.contains(reason) }, "\(monitor.events)", line: line)
    }

    private func write(_ bytes: [UInt8], to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
    }

    private func mode(_ path: String) throws -> Int {
        try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }
}

/// Records the threads warnings are reported on.
private final class ThreadRecordingMonitor: HTTPDNSEventMonitor {
    private let threads = HTTPDNSLock<[pthread_t]>([])

    var warningThreads: [pthread_t] { threads.withLock { $0 } }

    func warning(_ message: String) { threads.withLock { $0.append(pthread_self()) } }
}

/// Issue 12, finding 4 in the per-thread hit memo: whatever expiry an entry holds, a memoised hit
/// never traps.
final class HTTPDNSHitMemoHostileTests: XCTestCase {
    func testAnyExpiryAnswersWithoutTrapping() throws {
        for (index, ttl) in [Int.max, Int(Int32.max), 600].enumerated() {
            for storedAt in [1e300, .infinity, .nan, 1_767_225_600] {
                let key = HTTPDNSHitMemo.Key(engine: UInt64.max - UInt64(index), host: "memo\(index).example", family: .ipv4)
                let entry = HTTPDNSCacheEntry(
                    addresses: [try XCTUnwrap(HTTPDNSIPAddress("192.0.2.1"))], source: "p", origin: .httpdns, storedAt: storedAt,
                    ttl: ttl)
                // The second sighting copies the entry into the memo.
                HTTPDNSHitMemo.remember(key, answering: key.host, entry, refreshAt: .infinity, generation: 7)
                HTTPDNSHitMemo.remember(key, answering: key.host, entry, refreshAt: .infinity, generation: 7)
                XCTAssertTrue(HTTPDNSHitMemo.contains(key))
                let answer = try XCTUnwrap(HTTPDNSHitMemo.answer(key, now: 1_767_225_600, generation: 7))
                XCTAssertTrue((1...HTTPDNSFormatLimits.maxTTL).contains(answer.ttl), "\(ttl) at \(storedAt): \(answer.ttl)")
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import DNSSockets
import Foundation
import HTTPDNSCore
import XCTest

/// The system resolver's threads are bounded: a burst of lookups queues instead of starting a thread
/// each. Only `localhost` reaches getaddrinfo (from /etc/hosts), so no query leaves the machine.
final class SystemResolverThreadTests: XCTestCase {
    /// Threads beyond the pool that may appear during the burst: this test's sampler, the cooperative
    /// pool growing to its width (the CPU count), and libdispatch's timer and worker threads.
    private let margin = 8 + ProcessInfo.processInfo.activeProcessorCount

    func testTenThousandLookupsStayWithinThePoolBound() async throws {
        let bound = DNSSystemResolver.threadLimit
        let baseline = try XCTUnwrap(Self.threadCount())
        let sampler = ThreadSampler()
        sampler.start()
        // A long timeout: the test is about threads, and 10,000 lookups on a busy 2-CPU machine
        // (or under ThreadSanitizer) can take longer than the default 5 s.
        let resolver = DNSSystemResolver(timeout: .seconds(300))
        let failures = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<10_000 {
                group.addTask {
                    do {
                        let addresses = try await resolver.resolve("localhost", family: .ipv4)
                        return addresses == [HTTPDNSIPAddress("127.0.0.1")!] ? nil : "\(addresses)"
                    } catch {
                        return "\(error)"
                    }
                }
            }
            var failures: [String] = []
            for await failure in group {
                if let failure { failures.append(failure) }
            }
            return failures
        }
        let (peak, samples) = sampler.stop()
        XCTAssertEqual(failures.count, 0, "first failures: \(failures.prefix(3))")
        XCTAssertGreaterThan(samples, 0, "the sampler never read the thread count")
        XCTAssertLessThanOrEqual(
            peak, baseline + bound + margin,
            "peak \(peak) threads over \(samples) samples, baseline \(baseline), pool bound \(bound), margin \(margin)")
    }

    /// `Threads:` from /proc/self/status, read with plain system calls so that sampling is cheap.
    static func threadCount() -> Int? {
        let fd = open("/proc/self/status", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") }) else { return nil }
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces))
    }
}

/// Reads the thread count over and over on a thread of its own until stopped, keeping the peak.
private final class ThreadSampler: Sendable {
    private struct State {
        var running = true
        var peak = 0
        var samples = 0
    }

    private let state = HTTPDNSLock(State())
    private let done = DispatchSemaphore(value: 0)

    func start() {
        let thread = Thread { [self] in
            while let count = SystemResolverThreadTests.threadCount() {
                let running = state.withLock { state in
                    state.peak = max(state.peak, count)
                    state.samples += 1
                    return state.running
                }
                if !running { break }
            }
            done.signal()
        }
        thread.name = "thread sampler"
        thread.start()
    }

    /// Stops sampling and returns the peak and how many samples it came from.
    func stop() -> (peak: Int, samples: Int) {
        state.withLock { $0.running = false }
        done.wait()
        return state.withLock { ($0.peak, $0.samples) }
    }
}

import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTransport
import HTTPDNSNetworking
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Row 6: peak memory growth while a 64 MiB `httpBodyStream` is uploaded through
/// ``HTTPDNSClient/data(for:)`` to a loopback server that only counts the body bytes.
///
/// How it is measured: the body comes from a 64 MiB file through `InputStream(fileAtPath:)` (file
/// pages are page cache, not this process's RSS). Just before the upload the peak RSS is reset to the
/// current RSS (`echo 5 > /proc/self/clear_refs`), the current `VmRSS` is the baseline, and after
/// the upload `VmHWM` (the peak since the reset) minus the baseline is the growth. A sampler thread
/// also reads `VmRSS` every millisecond during the upload, as a cross-check and as the fallback
/// where `clear_refs` is unavailable; the larger of the two is reported.
enum UploadBench {
    static let size = 64 << 20

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        let server = try BenchServers.uploadSink()
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-bench-upload-\(UUID().uuidString)")
        try writeFile(file)
        defer { try? FileManager.default.removeItem(at: file) }

        let host = "upload.bench.test"
        var configuration = HTTPDNSConfiguration(resolvers: [HTTPDNSStaticResolver([host: [HTTPDNSIPAddress("127.0.0.1")!]])])
        configuration.hygiene.allowPrivate = true
        configuration.failover.httpdnsOnly = true
        configuration.localDNS = .custom(HTTPDNSStaticResolver([:]))
        let client = HTTPDNSClient(engine: HTTPDNSEngine(configuration: configuration), transport: HTTPTransport())
        let url = URL(string: "http://\(host):\(server.port)/upload")!

        var growth: [Double] = []
        let rounds = runner.options.quick ? 1 : 3
        let deadline = runner.deadline(seconds: 60)
        for round in 0..<(rounds + 1) {
            if round > 1, ContinuousClock.now > deadline { break }
            var request = URLRequest(url: url)
            request.httpMethod = "PUT"
            request.httpBodyStream = InputStream(url: file)
            request.setValue(String(size), forHTTPHeaderField: "Content-Length")
            BenchSystem.trimHeap()
            let reset = BenchSystem.resetPeakResident()
            let baseline = BenchSystem.residentBytes()
            let sampler = PeakSampler()
            let (data, response) = try await client.data(for: request)
            let sampled = sampler.stop()
            let peak = max(reset ? (BenchSystem.statusBytes("VmHWM") ?? 0) : 0, sampled)
            let received = Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            guard response.statusCode == 200, received == size else {
                throw BenchFailure("upload: HTTP \(response.statusCode), server received \(received) of \(size) bytes")
            }
            // Round 0 warms up the connection and libcurl's buffers; it is not recorded.
            if round > 0 { growth.append(Double(max(0, peak - baseline)) / 1_048_576) }
        }
        let stats = BenchStats(growth)
        return [
            BenchRow(
                id: "6a", title: "peak RSS growth, 64 MiB httpBodyStream upload via HTTPDNSClient", unit: "MiB",
                subject: stats, target: "≤ 16 MiB", passed: stats.max <= 16,
                note: "judged on the max round; peak = VmHWM after clear_refs reset (and a 1 ms VmRSS sampler), minus VmRSS before")
        ]
    }

    /// Writes `size` bytes to `url` in 1 MiB pieces (never holding the whole body).
    static func writeFile(_ url: URL) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil),
              let handle = FileHandle(forWritingAtPath: url.path)
        else { throw BenchFailure("cannot create \(url.path)") }
        defer { try? handle.close() }
        let piece = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        for _ in 0..<(size >> 20) { try handle.write(contentsOf: piece) }
    }

    /// Reads `VmRSS` every millisecond on its own thread until stopped (at most 5 minutes).
    final class PeakSampler: Sendable {
        private let peak = Atomic<Int>(0)
        private let running = Atomic<Bool>(true)
        private let done = DispatchSemaphore(value: 0)

        init() {
            let thread = Thread { [self] in
                let giveUp = DispatchTime.now().uptimeNanoseconds + 300_000_000_000
                while self.running.load(ordering: .acquiring), DispatchTime.now().uptimeNanoseconds < giveUp {
                    let rss = BenchSystem.residentBytes()
                    if rss > self.peak.load(ordering: .relaxed) { self.peak.store(rss, ordering: .relaxed) }
                    usleep(1000)
                }
                self.done.signal()
            }
            thread.start()
        }

        /// Stops the thread and returns the largest RSS seen.
        func stop() -> Int {
            running.store(false, ordering: .releasing)
            done.wait()
            return peak.load(ordering: .relaxed)
        }
    }
}

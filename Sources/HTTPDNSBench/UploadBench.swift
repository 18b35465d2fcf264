import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSTransport
import HTTPDNSNetworking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Row 6: peak memory growth of this process while a 64 MiB `httpBodyStream` is uploaded through
/// ``HTTPDNSClient/data(for:)`` to nginx, which stores it (WebDAV `PUT`); the stored size is checked.
///
/// The sink runs in a process of its own so that only the client is measured: the project's
/// `HTTPServer` (h2o 2.2) reads a whole request body before its sink sees it, in the process it
/// runs in, so with it in this process the row measured the server's buffering as much as the client.
///
/// How it is measured: the body comes from a 64 MiB file through `InputStream(url:)` (file pages are
/// page cache, not this process's RSS), with ``ProcessMemory/PeakGrowth``: just before the upload
/// the peak RSS is reset to the current RSS (`echo 5 > /proc/self/clear_refs`) and `VmRSS` read as
/// the baseline; after it, `VmHWM` (the peak since the reset) minus the baseline is the growth. A
/// sampler thread also reads `VmRSS` every millisecond, as a cross-check and as the fallback where
/// `clear_refs` is unavailable; the larger of the two counts.
enum UploadBench {
    static let size = 64 << 20

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-bench-upload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let file = scratch.appendingPathComponent("body.bin")
        try writeFile(file)
        let stored = scratch.appendingPathComponent("stored")
        let server = try BenchServers.uploadSink(root: stored)
        defer { server.stop() }
        let storedFile = stored.appendingPathComponent("upload/body.bin")

        let host = "upload.bench.test"
        var configuration = HTTPDNSConfiguration(resolvers: [HTTPDNSStaticResolver([host: [HTTPDNSIPAddress("127.0.0.1")!]])])
        configuration.hygiene.allowPrivate = true
        configuration.failover.httpdnsOnly = true
        configuration.localDNS = .custom(HTTPDNSStaticResolver([:]))
        let client = HTTPDNSClient(engine: HTTPDNSEngine(configuration: configuration), transport: HTTPTransport())
        let url = URL(string: "http://\(host):\(server.httpPort ?? 0)/upload/body.bin")!

        var growth: [Double] = []
        let rounds = runner.options.quick ? 1 : 3
        let deadline = runner.deadline(seconds: 60)
        for round in 0..<(rounds + 1) {
            if round > 1, ContinuousClock.now > deadline { break }
            try? FileManager.default.removeItem(at: storedFile)
            var request = URLRequest(url: url)
            request.httpMethod = "PUT"
            request.httpBodyStream = InputStream(url: file)
            request.setValue(String(size), forHTTPHeaderField: "Content-Length")
            let peak = ProcessMemory.PeakGrowth()
            let (_, response) = try await client.data(for: request)
            let grown = peak.stop()
            let received = (try? FileManager.default.attributesOfItem(atPath: storedFile.path)[.size] as? Int) ?? -1
            guard response.statusCode == 201 || response.statusCode == 204, received == size else {
                throw BenchFailure("upload: HTTP \(response.statusCode), nginx stored \(received) of \(size) bytes")
            }
            // Round 0 warms up the connection and libcurl's buffers; it is not recorded.
            if round > 0 { growth.append(Double(grown) / 1_048_576) }
        }
        let stats = BenchStats(growth)
        return [
            BenchRow(
                id: "6a", title: "peak RSS growth, 64 MiB httpBodyStream upload via HTTPDNSClient", unit: "MiB",
                subject: stats, target: "≤ 16 MiB", passed: stats.max <= 16,
                note: "judged on the max round; to nginx in its own process (WebDAV PUT); peak = VmHWM after clear_refs reset (and a 1 ms VmRSS sampler), minus VmRSS before")
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
}

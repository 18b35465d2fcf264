import Foundation
import HTTPDNSNetworking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Row 5: requests per second through ``HTTPDNSClient/data(for:)``, 16 in flight, to nginx over
/// HTTPS on 127.0.0.1, against the curl command line doing the same work:
/// `curl --parallel --parallel-max 16 -K FILE` with N `url`/`output = /dev/null` pairs, `--resolve`
/// pinning the name to 127.0.0.1 and `--cacert` trusting the bench CA. curl's figure includes its
/// process start (a few ms against rounds of about a second).
///
/// 5b is the floor (issue 35): the same requests made by a C program with our code removed
/// (scripts/bench/client-floor.c: the libcurl calls our transport makes, on one thread, nothing
/// handed to anyone), kept running between rounds, in the same interleaved rounds.
enum DirectClientBench {
    static let curl = "/usr/bin/curl"

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        guard FileManager.default.isExecutableFile(atPath: curl) else {
            throw BenchFailure("\(curl) not found: install the Debian package curl")
        }
        let origin = try BenchServers.Origin()
        defer { origin.stop() }
        let client = URLSessionBench.protectedClient(origin)
        let requests = runner.options.quick ? 300 : 1500
        let url = origin.protectedURL
        let config = origin.certificates.directory.appendingPathComponent("curl-urls.conf")
        let lines = ["silent", "show-error", "fail"]
            + Array(repeating: "url = \"\(url.absoluteString)\"\noutput = \"/dev/null\"", count: requests)
        try lines.joined(separator: "\n").write(to: config, atomically: true, encoding: .utf8)
        let arguments = [
            "--parallel", "--parallel-max", String(URLSessionBench.inFlight), "-K", config.path,
            "--cacert", origin.certificates.caCertificatePath,
            "--resolve", "\(BenchServers.Origin.host):\(origin.port):127.0.0.1", "--max-time", "60",
        ]
        let expected = Data(BenchServers.Origin.body.utf8)
        let floor = try FloorClient(
            url: url, caFile: origin.certificates.caCertificatePath, port: origin.port, expectedBytes: expected.count,
            directory: origin.certificates.directory)
        defer { floor.stop() }
        let results = try await runner.interleave(
            rounds: runner.rounds, deadline: runner.deadline(seconds: 90),
            [
                { try runCurl(arguments, requests: requests) },
                {
                    try await URLSessionBench.requestsPerSecond(requests) {
                        let (data, response) = try await client.data(for: URLRequest(url: url))
                        guard response.statusCode == 200, data == expected else {
                            throw BenchFailure("\(url): unexpected answer \(response.statusCode)")
                        }
                    }
                },
                { try floor.requestsPerSecond(requests) },
            ])
        let ratio = BenchStats.ratios(results[1], over: results[0])
        let toFloor = BenchStats.ratios(results[1], over: results[2])
        return [
            BenchRow(
                id: "5a", title: "HTTPDNSClient.data(for:), 16 in flight, HTTPS (nginx)", unit: "req/s",
                subject: BenchStats(results[1]), baselineTitle: "curl --parallel --parallel-max 16",
                baseline: BenchStats(results[0]), ratio: ratio, target: "≥ 1.0× (issue 35)", passed: ratio.median >= 1.0),
            BenchRow(
                id: "5b", title: "HTTPDNSClient.data(for:) ÷ the floor", unit: "req/s", subject: BenchStats(results[1]),
                baselineTitle: "the same libcurl calls from C, one thread, our code removed", baseline: BenchStats(results[2]),
                ratio: toFloor, target: "≥ 0.91× (within 1.1× of the floor)", passed: toFloor.median >= 1 / 1.1,
                note: String(
                    format: "the floor reaches %.2f× curl --parallel in the same rounds",
                    BenchStats.ratios(results[2], over: results[0]).median)),
        ]
    }

    /// scripts/bench/client-floor.c, built and started once; each round asks it for `count` requests.
    final class FloorClient: @unchecked Sendable {
        private let process = Process()
        private let input = Pipe()
        private let output = Pipe()

        init(url: URL, caFile: String, port: Int, expectedBytes: Int, directory: URL) throws {
            let executable = try ProxyDaemon.buildFloor("client-floor", directory: directory, libraries: ["-lcurl"])
            process.executableURL = executable
            process.arguments = [url.absoluteString, caFile, String(port), String(URLSessionBench.inFlight), String(expectedBytes)]
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// Runs `count` requests in the floor; requests per second over its own clock.
        func requestsPerSecond(_ count: Int) throws -> Double {
            input.fileHandleForWriting.write(Data("\(count)\n".utf8))
            let line = ProxyDaemon.firstLine(output)
            guard line.hasPrefix("ns "), let nanoseconds = Double(line.dropFirst(3)), nanoseconds > 0 else {
                throw BenchFailure("the client floor failed: \(line)")
            }
            return Double(count) / (nanoseconds / 1e9)
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    /// Runs curl once over the whole URL list; returns requests per second (process wall time).
    static func runCurl(_ arguments: [String], requests: Int) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: curl)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let start = DispatchTime.now().uptimeNanoseconds
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
        guard process.terminationStatus == 0 else {
            throw BenchFailure("curl exited with \(process.terminationStatus): \(String(decoding: message.prefix(500), as: UTF8.self))")
        }
        return Double(requests) / (elapsed / 1e9)
    }
}

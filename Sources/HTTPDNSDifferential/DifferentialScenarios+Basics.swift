import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension DifferentialScenarios {
    /// GET, HEAD, POST, gzip, HTTP/2, 200 concurrent tasks, a delegate counting chunks.
    static let basics: [DifferentialScenario] = [
        DifferentialScenario("get") { context in
            var result = DifferentialResult()
            let (data, response, error) = await context.session().dataTaskResult(URLRequest(url: context.url("/echo?q=1")))
            result.record("get", data: data, response: response, error: error)
            let (bytes, bytesResponse) = try await context.session().data(from: context.url("/bytes?n=300000"))
            result.record("get-async", data: bytes, response: bytesResponse, error: nil)
            return result
        },
        DifferentialScenario("head") { context in
            var result = DifferentialResult()
            var request = URLRequest(url: context.url("/bytes?n=1000"))
            request.httpMethod = "HEAD"
            let (data, response, error) = await context.session().dataTaskResult(request)
            result.record("head", data: data, response: response, error: error)
            return result
        },
        DifferentialScenario("post-httpBody") { context in
            var result = DifferentialResult()
            var request = URLRequest(url: context.url("/echo"))
            request.httpMethod = "POST"
            request.httpBody = DifferentialPayload.bytes(100_000)
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            let (data, response) = try await context.session().data(for: request)
            result.record("post", data: data, response: response, error: nil)
            return result
        },
        DifferentialScenario("gzip") { context in
            var result = DifferentialResult()
            let (data, response) = try await context.session().data(from: context.url("/gzip"))
            result.record("gzip", data: data, response: response, error: nil)
            return result
        },
        DifferentialScenario("http2") { context in
            var result = DifferentialResult()
            let (data, response) = try await context.session().data(from: context.url("/proto"))
            result.record("proto", data: data, response: response, error: nil)
            return result
        },
        // A cold round on a new session (the first connection is still being set up while the
        // other 199 tasks queue for it), then a warm round on the same session.
        DifferentialScenario("concurrent-200") { context in
            let session = context.session()
            var result = DifferentialResult()
            for round in ["cold", "warm"] {
                let outcomes = await concurrentRound(session, count: 200, url: { context.url("/echo?i=\($0)") })
                result.facts.merge(ConcurrentOutcomes(outcomes).facts(prefix: round)) { $1 }
            }
            return result
        },
        DifferentialScenario("delegate-chunks") { context in
            var result = DifferentialResult()
            let delegate = RecordingDelegate()
            context.session(delegate: delegate).dataTask(with: context.url("/drip?n=16&ms=20")).resume()
            await delegate.finish(&result, label: "drip")
            return result
        },
        DifferentialScenario("cancel-mid-download") { context in
            var result = DifferentialResult()
            var options = RecordingDelegate.Options()
            options.cancelAfterBytes = 64 << 10
            let delegate = RecordingDelegate(options)
            context.session(delegate: delegate).dataTask(with: context.url("/endless?chunk=16384")).resume()
            await delegate.finish(&result, label: "endless")
            return result
        },
    ]
}

extension DifferentialScenarios {
    /// `count` data tasks resumed at once on `session`; each outcome in task order.
    static func concurrentRound(_ session: URLSession, count: Int, url: @escaping @Sendable (Int) -> URL) async -> [ConcurrentOutcomes.Outcome] {
        await withTaskGroup(of: (Int, ConcurrentOutcomes.Outcome).self) { group in
            for index in 0..<count {
                group.addTask {
                    let (data, response, error) = await session.dataTaskResult(URLRequest(url: url(index)))
                    return (index, ConcurrentOutcomes.Outcome(data: data, response: response, error: error))
                }
            }
            var all = [ConcurrentOutcomes.Outcome](repeating: .init(data: nil, response: nil, error: nil), count: count)
            for await (index, outcome) in group { all[index] = outcome }
            return all
        }
    }
}

/// Deterministic payloads: every route sends the same bytes.
public enum DifferentialPayload {
    /// The sizes of the files scenarios upload (prepared once by the bed with ``file(_:in:)``).
    public static let fileSizes = [300_000, 64 << 20]

    public static func bytes(_ count: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 31) ^ ($0 >> 8)) })
    }

    /// A file of `count` deterministic bytes in `directory`, written once (atomically renamed into
    /// place, so concurrent runners never read a partial file).
    public static func file(_ count: Int, in directory: String) throws -> URL {
        let url = URL(fileURLWithPath: directory).appendingPathComponent("payload-\(count).bin")
        guard !FileManager.default.fileExists(atPath: url.path) else { return url }
        let partial = URL(fileURLWithPath: directory).appendingPathComponent("payload-\(count).\(getpid()).partial")
        guard FileManager.default.createFile(atPath: partial.path, contents: nil) else {
            throw DifferentialFailure("cannot create \(partial.path)")
        }
        let handle = try FileHandle(forWritingTo: partial)
        let piece = bytes(1 << 20)
        var left = count
        while left > 0 {
            try handle.write(contentsOf: piece.prefix(left))
            left -= min(left, piece.count)
        }
        try handle.close()
        if rename(partial.path, url.path) != 0 { throw DifferentialFailure("cannot rename \(partial.path)") }
        return url
    }
}

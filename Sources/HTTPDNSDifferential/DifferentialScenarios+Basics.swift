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
        DifferentialScenario("concurrent-200") { context in
            let session = context.session()
            let statuses = await withTaskGroup(of: (Int, String).self) { group in
                for index in 0..<200 {
                    group.addTask {
                        let (data, response, error) = await session.dataTaskResult(URLRequest(url: context.url("/echo?i=\(index)")))
                        let status = (response as? HTTPURLResponse)?.statusCode ?? (error as? URLError)?.code.rawValue ?? 0
                        return (index, "\(status) \(data.map(DifferentialHash.sha256) ?? "-")")
                    }
                }
                var all = [String](repeating: "", count: 200)
                for await (index, line) in group { all[index] = line }
                return all
            }
            var result = DifferentialResult()
            result.facts["answers"] = DifferentialHash.sha256(Data(statuses.joined(separator: "\n").utf8))
            result.facts["ok"] = String(statuses.filter { $0.hasPrefix("200 ") }.count)
            // The distinct outcomes other than 200 (URLError codes), so a difference can be told apart.
            let others = Set(statuses.filter { !$0.hasPrefix("200 ") }.map { String($0.prefix { $0 != " " }) })
            result.facts["failures"] = others.sorted().joined(separator: ",")
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

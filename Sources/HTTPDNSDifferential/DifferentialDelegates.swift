import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session delegate that records what `URLSession` told it about one task, and can cancel the
/// task after some bytes, refuse redirects, answer a challenge and give new body streams.
final class RecordingDelegate: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, @unchecked Sendable {
    struct Options {
        var followRedirects = true
        var cancelAfterBytes: Int? = nil
        var credential: URLCredential? = nil
        var newBodyStream: Data? = nil
        /// Record `didSendBodyData`: only where the server reads the whole body before answering
        /// (nginx answers a redirect first, so whether the body went out then is a race).
        var recordsUploadProgress = false
    }

    private let lock = NSLock()
    private let options: Options
    private var counts: [String: Int] = [:]
    private var body = Data()
    private var bytes = 0
    private var responses: [String] = []
    private var downloaded: Data?
    private var completion: (response: URLResponse?, error: (any Error)?)?
    private var waiter: CheckedContinuation<Void, Never>?

    init(_ options: Options = Options()) {
        self.options = options
    }

    private func count(_ key: String) { counts[key, default: 0] += 1 }

    /// Waits for `didCompleteWithError`, then records the task as an exchange.
    func finish(_ result: inout DifferentialResult, label: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = lock.withLock { () -> Bool in
                if completion != nil { return true }
                waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
        lock.withLock {
            result.record(label, data: downloaded ?? body, response: completion?.response, error: completion?.error)
            for (key, value) in counts { result.facts["\(label).\(key)"] = String(value) }
            if !responses.isEmpty { result.facts["\(label).responses"] = responses.joined(separator: ", ") }
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        lock.withLock { count("redirectsAsked") }
        completionHandler(options.followRedirects ? request : nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        lock.withLock { count("challenges") }
        if let credential = options.credential {
            completionHandler(.useCredential, credential)
        } else {
            completionHandler(.performDefaultHandling, nil)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
        lock.withLock { count("newBodyStreams") }
        completionHandler(options.newBodyStream.map { InputStream(data: $0) })
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                    totalBytesExpectedToSend: Int64) {
        // How often is the HTTP stack's business; that it is told, and the totals, are compared.
        guard options.recordsUploadProgress else { return }
        lock.withLock {
            counts["sentBodyData"] = 1
            counts["totalBytesSent"] = max(counts["totalBytesSent", default: 0], Int(totalBytesSent))
            counts["totalBytesExpectedToSend"] = Int(totalBytesExpectedToSend)
        }
    }

    /// A response as `didReceive(response:)` saw it: its status, and `without header fields` when
    /// it has none — as a proxy's `HTTP/1.1 200 Connection established` reaches a data delegate
    /// (every answer from an origin carries at least `Date`), so a test can tell that one apart.
    static func describe(_ response: URLResponse) -> String {
        guard let http = response as? HTTPURLResponse else { return "not HTTP" }
        return http.allHeaderFields.isEmpty ? "\(http.statusCode) without header fields" : String(http.statusCode)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        lock.withLock { responses.append(Self.describe(response)) }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let cancel = lock.withLock { () -> Bool in
            // Chunk sizes differ between HTTP stacks; only "more than one chunk" is compared (and
            // not when cancelling after some bytes: how many chunks made them is the stack's).
            if options.cancelAfterBytes == nil { counts["chunksMoreThanOne"] = counts["chunks", default: 0] >= 1 ? 1 : 0 }
            count("chunks")
            bytes += data.count
            if options.cancelAfterBytes == nil { body.append(data) }
            return options.cancelAfterBytes.map { bytes >= $0 } ?? false
        }
        if cancel { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let data = (try? Data(contentsOf: location)) ?? Data("<no file>".utf8)
        try? FileManager.default.removeItem(at: location)
        lock.withLock {
            count("finishedDownloading")
            downloaded = data
        }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
                    totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {
        lock.withLock { counts["wroteData"] = 1 }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let waiter = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            completion = (task.response, error)
            // Delegate-call counts that vary with chunking are dropped from the comparison.
            counts["chunks"] = nil
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume()
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HTTPDNSCore
import HTTPDNSNetworking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One `httpdns fetch`: a thin shell over ``HTTPDNSClient``, which resolves the URL host through the
/// engine, connects to those addresses with the real host kept in `Host`, TLS SNI and certificate
/// verification, fails over between addresses and asks the domain-block redirect endpoint.
///
/// What stays here is curl's part: building the request from the options, following redirects
/// one hop at a time (so that `-i -L` prints every hop's head, as curl does), `-f`, `--max-time`
/// over the whole fetch, and the output written atomically.
final class Fetcher: Sendable {
    let options: FetchOptions
    let client: HTTPDNSClient
    /// Knows the resolution failures and answers behind a failed request's error line.
    let monitor: FetcherMonitor
    /// How `-v` names the CAs the certificate was verified with.
    let trustText: String

    init(options: FetchOptions, client: HTTPDNSClient, monitor: FetcherMonitor, trustText: String) {
        self.options = options
        self.client = client
        self.monitor = monitor
        self.trustText = trustText
    }

    /// Runs the fetch and returns the exit status. Cancelling the calling task (SIGINT, SIGTERM)
    /// cancels the transfer; the `-o` file is then left as it was.
    /// - Throws: ``ToolFailure`` for resolution, connection, TLS, HTTP (`-f`) or output failures.
    func run() async throws -> Int32 {
        let output = HTTPDNSLock(try options.outputPath.map { path throws(ToolFailure) in try OutputFile(path: path) } ?? OutputFile())
        let timedOut = HTTPDNSLock(false)
        let work = Task { try await self.transfer(into: output) }
        // curl's --max-time bounds the whole operation: every address tried and every redirect hop.
        let timer = options.maxTime.map { seconds in
            Task {
                try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
                timedOut.withLock { $0 = true }
                work.cancel()
            }
        }
        defer { timer?.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await work.value
            } onCancel: {
                work.cancel()
            }
            try output.withLock { (file: inout OutputFile) throws(ToolFailure) in try file.commit() }
            return ExitStatus.success
        } catch {
            output.withLock { $0.abort() }
            if timedOut.withLock({ $0 }) {
                throw ToolFailure("--max-time \(Fetcher.secondsText(options.maxTime ?? 0)) s reached; nothing written")
            }
            if Task.isCancelled { throw ToolFailure("interrupted; nothing written") }
            if error is CancellationError { throw ToolFailure("transfer cancelled; nothing written") }
            throw error
        }
    }

    /// Sends the request and, with `-L`, each redirect's; every hop is resolved again by the client.
    private func transfer(into output: HTTPDNSLock<OutputFile>) async throws {
        var request = try makeRequest()
        var redirects = 0
        while true {
            let hop = FetcherHop(request: request, options: options, output: output, trustText: trustText)
            let outcome: FetcherHop.Outcome
            do {
                outcome = try await hop.run(on: client)
            } catch let error as URLError {
                if error.code == .cancelled { throw CancellationError() }
                throw ToolFailure(describe(error, url: request.url ?? options.url))
            }
            try Task.checkCancellation()
            switch outcome {
            case .finished:
                return
            case .redirect(let next, let status):
                let target = next.url?.absoluteString ?? "?"
                guard redirects < options.maxRedirects else {
                    throw ToolFailure("more than \(options.maxRedirects) redirects (last to \(target))")
                }
                redirects += 1
                if options.verbose { Output.diagnostic("* following \(status) to \(target)") }
                request = try prepareRedirect(next, after: request)
            }
        }
    }

    /// The first request, as the options describe it.
    /// - Throws: ``ToolFailure`` when the `--data-binary` file cannot be opened.
    func makeRequest() throws(ToolFailure) -> URLRequest {
        var request = URLRequest(url: options.url)
        request.httpMethod = options.method
        for header in options.headers {
            request.addValue(header.value, forHTTPHeaderField: header.name)
        }
        switch options.body {
        case nil:
            break
        case .data(let data):
            request.httpBody = data
        case .file(let path):
            try Fetcher.attachFile(path, to: &request)
        }
        if options.body != nil, request.value(forHTTPHeaderField: "Content-Type") == nil {
            request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    /// The next hop's request as ``HTTPDNSRedirect`` made it (credentials already dropped when the
    /// origin changes), with a fresh file stream when the body goes along (307/308: the previous
    /// stream was consumed).
    func prepareRedirect(_ next: URLRequest, after previous: URLRequest) throws(ToolFailure) -> URLRequest {
        var next = next
        if next.httpBodyStream != nil, case .file(let path) = options.body {
            try Fetcher.attachFile(path, to: &next)
        }
        return next
    }

    /// `--data-binary @FILE`: a stream the client reads as libcurl asks (never the whole file in
    /// memory), with the file's size as `Content-Length` so that no chunked encoding is needed.
    static func attachFile(_ path: String, to request: inout URLRequest) throws(ToolFailure) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw ToolFailure("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw ToolFailure("\(path) is not a regular file") }
        guard let stream = InputStream(fileAtPath: path) else { throw ToolFailure("cannot open \(path)") }
        request.httpBodyStream = stream
        request.setValue(String(info.st_size), forHTTPHeaderField: "Content-Length")
    }

    static func effectivePort(_ url: URL) -> Int { HTTPDNSRedirect.effectivePort(url) }

    static func secondsText(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}

import Foundation
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
@_spi(HTTPDNSPackage) import HTTPDNSCore
#endif

extension HTTPDNSClient {
    /// The transport's head as the `HTTPURLResponse` of the ORIGINAL URL (never the IP).
    ///
    /// Repeated fields are joined with ", " as Foundation does; `Set-Cookie` lines are kept apart for
    /// cookie parsing by ``storeCookies(from:url:in:)``.
    static func makeResponse(_ head: HTTPTransportResponseHead, url: URL) -> HTTPURLResponse {
        var fields: [String: String] = Dictionary(minimumCapacity: head.headers.count)
        if head.headers.count <= 16 {
            // The usual handful: the first spelling of a repeated name is found by comparing with
            // the names kept so far, without a lower-cased copy of each (bench row 5).
            var names: [String] = []
            names.reserveCapacity(head.headers.count)
            for header in head.headers {
                if let key = names.first(where: { HTTPDNSASCII.equalsIgnoringCase($0, header.name) }) {
                    fields[key]! += ", " + header.value
                } else {
                    names.append(header.name)
                    fields[header.name] = header.value
                }
            }
        } else {
            var canonical: [String: String] = [:]  // lower-cased name → first spelling seen
            for header in head.headers {
                let folded = HTTPDNSASCII.lowercased(header.name.utf8)
                let key = canonical[folded, default: header.name]
                canonical[folded] = key
                if let existing = fields[key] {
                    fields[key] = existing + ", " + header.value
                } else {
                    fields[key] = header.value
                }
            }
        }
        let version = head.httpVersion == "2" ? "HTTP/2" : "HTTP/\(head.httpVersion)"
        return HTTPURLResponse(url: url, statusCode: head.statusCode, httpVersion: version, headerFields: fields)
            ?? HTTPURLResponse(url: url, statusCode: head.statusCode, httpVersion: version, headerFields: [:])!
    }

    /// Stores each `Set-Cookie` of `head` under the original URL.
    static func storeCookies(from head: HTTPTransportResponseHead, url: URL, in storage: HTTPCookieStorage) {
        let lines = head.headers.filter { HTTPDNSASCII.equalsIgnoringCase($0.name, "set-cookie") }.map(\.value)
        guard !lines.isEmpty else { return }
        var cookies: [HTTPCookie] = []
        for line in lines {
            cookies += HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": line], for: url)
        }
        storage.setCookies(cookies, for: url, mainDocumentURL: url)
    }

    /// Adds the `Cookie` header `storage` holds for the request's URL.
    static func addCookies(to request: inout URLRequest, from storage: HTTPCookieStorage) {
        guard request.httpShouldHandleCookies, let url = request.url, let cookies = storage.cookies(for: url), !cookies.isEmpty else { return }
        for (name, value) in HTTPCookie.requestHeaderFields(with: cookies) {
            request.setValue(value, forHTTPHeaderField: name)
        }
    }
}

/// Turns delegate events into the `(response, body stream)` of ``HTTPDNSClient/bytes(for:)``.
///
/// The body waits for the reader in ``buffer``, which the request's transfers also get
/// (``RequestOptions/receiveBuffer``): a reader that falls behind pauses the transfer instead of
/// making the process hold the rest of the body.
final class StreamingCollector: HTTPDNSClientDelegate {
    private struct State {
        var head: CheckedContinuation<HTTPURLResponse, any Error>?
        var earlyResult: Result<HTTPURLResponse, any Error>?
        var responded = false
    }

    private let state = HTTPDNSLock(State())
    /// Where the body waits for the reader (4 MiB at most, ``HTTPTransportReceiveBuffer/defaultLimit``).
    let buffer = HTTPTransportReceiveBuffer()

    func response(task: HTTPDNSClientTask) async throws -> (HTTPURLResponse, AsyncThrowingStream<Data, any Error>) {
        let response = try await withCheckedThrowingContinuation { continuation in
            let early = state.withLock { state -> Result<HTTPURLResponse, any Error>? in
                if let result = state.earlyResult { return result }
                state.head = continuation
                return nil
            }
            if let early { continuation.resume(with: early) }
        }
        return (response, buffer.makeStream { task.cancel() })
    }

    private func deliverHead(_ result: Result<HTTPURLResponse, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<HTTPURLResponse, any Error>? in
            guard !state.responded else { return nil }
            state.responded = true
            if let head = state.head {
                state.head = nil
                return head
            }
            state.earlyResult = result
            return nil
        }
        continuation?.resume(with: result)
    }

    func didReceive(response: HTTPURLResponse, connection: HTTPDNSConnectionReport) {
        deliverHead(.success(response))
    }

    func didReceive(data: Data) {
        buffer.append(data)
    }

    func didComplete(error: (any Error)?) {
        if let error {
            deliverHead(.failure(error))
            buffer.finish(throwing: error)
        } else {
            buffer.finish()
        }
    }
}

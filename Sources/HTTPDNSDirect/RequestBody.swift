import Foundation
import HTTPDNSCore
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request's body as the transport sends it: `httpBody` in memory, a file, or `httpBodyStream`
/// read incrementally as libcurl asks (a 64 MiB upload is never held in memory).
///
/// A stream can be read once. When a 307/308 redirect (or a retry after bytes went out) needs the
/// body again, ``NewBodyStream`` is asked for a fresh one, as `URLSession` asks its delegate
/// (`urlSession(_:task:needNewBodyStream:)`); without one the request fails with
/// `URLError(.requestBodyStreamExhausted)`, never by reading the spent stream.
package struct RequestBody: Sendable {
    /// Asks for a fresh copy of a streamed body; nil when there is none.
    package typealias NewBodyStream = @Sendable () async -> InputStream?

    private enum Storage: Sendable {
        case none
        case data(Data)
        case file(URL, length: Int64)
        case stream(InputStreamSource, length: Int64?)
    }

    private let storage: Storage
    private let newStream: NewBodyStream?

    package init(_ request: URLRequest, newStream: NewBodyStream? = nil) {
        let length = request.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
        if let data = request.httpBody {
            storage = .data(data)
        } else if let stream = request.httpBodyStream {
            storage = .stream(InputStreamSource(stream), length: length)
        } else {
            storage = .none
        }
        self.newStream = newStream
    }

    /// A body kept outside the request (corelibs keeps an upload task's body on the task).
    ///
    /// - Throws: `URLError(.fileDoesNotExist)` for a file that cannot be read.
    package init(file url: URL, newStream: NewBodyStream? = nil) throws {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber,
              FileManager.default.isReadableFile(atPath: url.path)
        else {
            throw URLError(.fileDoesNotExist, userInfo: [NSLocalizedDescriptionKey: "The upload file \(url.path) cannot be read."])
        }
        storage = .file(url, length: size.int64Value)
        self.newStream = newStream
    }

    package init(data: Data) {
        storage = .data(data)
        newStream = nil
    }

    package init(stream: InputStream, length: Int64?, newStream: NewBodyStream?) {
        storage = .stream(InputStreamSource(stream), length: length)
        self.newStream = newStream
    }

    package static let empty = RequestBody(storage: .none, newStream: nil)

    private init(storage: Storage, newStream: NewBodyStream?) {
        self.storage = storage
        self.newStream = newStream
    }

    /// The body's length when known.
    package var length: Int64? {
        switch storage {
        case .none: 0
        case .data(let data): Int64(data.count)
        case .file(_, let length): length
        case .stream(_, let length): length
        }
    }

    /// What the transport sends for one attempt; with `progress`, every byte handed to libcurl is
    /// counted there first (`URLSession`'s `didSendBodyData`). An upload file that cannot be opened
    /// fails the attempt with `URLError(.fileDoesNotExist)` at its first read.
    func transportBody(progress: (@Sendable (Int) -> Void)? = nil) -> HTTPTransportBody? {
        switch storage {
        case .none: return nil
        case .data(let data):
            guard let progress else { return .data(data) }
            return .stream(length: Int64(data.count), source: CountingSource(DataBodySource(data), progress: progress))
        case .file(let url, let length):
            let source: any HTTPTransportBodySource = InputStream(url: url).map(InputStreamSource.init) ?? UnreadableSource(
                URLError(.fileDoesNotExist, userInfo: [NSLocalizedDescriptionKey: "The upload file \(url.path) cannot be opened."]))
            guard let progress else { return .stream(length: length, source: source) }
            return .stream(length: length, source: CountingSource(source, progress: progress))
        case .stream(let source, let length):
            guard let progress else { return .stream(length: length, source: source) }
            return .stream(length: length, source: CountingSource(source, progress: progress))
        }
    }

    /// Whether the body can be sent again after `error`: always from memory or a file; from a
    /// stream only if not a byte of it was read (the connection failed before the upload started).
    func isReplayable(after error: HTTPTransportError) -> Bool {
        switch storage {
        case .none, .data, .file: true
        case .stream(let source, _): !source.wasRead && error.requestBytesSent == 0
        }
    }

    /// The body for the request a redirect leads to: none when the redirect drops it (301/302/303
    /// turn into GET), the same bytes when they can be sent again, a fresh stream from
    /// ``NewBodyStream`` otherwise.
    ///
    /// - Throws: `URLError(.requestBodyStreamExhausted)` when a spent stream has no replacement.
    package func following(to next: URLRequest) async throws -> RequestBody {
        let method = next.httpMethod?.uppercased() ?? "GET"
        if next.httpBody == nil, next.httpBodyStream == nil, method == "GET" || method == "HEAD" {
            return .empty
        }
        guard case .stream(let source, let length) = storage, source.wasRead else { return self }
        guard let newStream, let stream = await newStream() else {
            throw URLError(.requestBodyStreamExhausted, userInfo: [
                NSLocalizedDescriptionKey: "The request body stream was already sent and no new stream was provided.",
                NSURLErrorFailingURLErrorKey: next.url as Any,
            ])
        }
        return RequestBody(storage: .stream(InputStreamSource(stream), length: length), newStream: newStream)
    }
}

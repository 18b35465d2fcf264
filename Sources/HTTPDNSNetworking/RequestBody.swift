import Foundation
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
import HTTPDNSCore
#endif

/// A request's body as the transport sends it: `httpBody` in memory, or `httpBodyStream` read
/// incrementally as libcurl asks (a 64 MiB upload is never held in memory).
struct RequestBody: Sendable {
    private enum Storage: Sendable {
        case none
        case data(Data)
        case stream(InputStreamSource, length: Int64?)
    }

    private let storage: Storage

    init(_ request: URLRequest) throws {
        if let data = request.httpBody {
            storage = .data(data)
        } else if let stream = request.httpBodyStream {
            let length = request.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
            storage = .stream(InputStreamSource(stream), length: length)
        } else {
            storage = .none
        }
    }

    func transportBody() -> HTTPTransportBody? {
        switch storage {
        case .none: nil
        case .data(let data): .data(data)
        case .stream(let source, let length): .stream(length: length, source: source)
        }
    }

    /// Whether the body can be sent again after `error`: always from memory; from a stream only if
    /// not a byte of it was read (the connection failed before the upload started).
    func isReplayable(after error: HTTPTransportError) -> Bool {
        switch storage {
        case .none, .data: true
        case .stream(let source, _): !source.wasRead && error.requestBytesSent == 0
        }
    }
}

/// Feeds an `InputStream` to libcurl's read callback on the transport thread.
///
/// `InputStream` is not thread-safe; every access happens under the lock, one read at a time.
final class InputStreamSource: HTTPTransportBodySource, @unchecked Sendable {
    private let lock = HTTPDNSLock(false)  // true once a byte was read
    private let stream: InputStream

    init(_ stream: InputStream) {
        self.stream = stream
    }

    var wasRead: Bool { lock.withLock { $0 } }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try lock.withLock { read in
            if !read {
                read = true
                if stream.streamStatus == .notOpen { stream.open() }
            }
            guard let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), buffer.count > 0 else { return 0 }
            let count = stream.read(base, maxLength: buffer.count)
            if count < 0 {
                throw stream.streamError ?? URLError(.cannotOpenFile)
            }
            if count == 0 { stream.close() }
            return count
        }
    }
}

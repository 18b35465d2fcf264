import Foundation
import HTTPDNSCore
import HTTPDNSTransport

// The body sources ``RequestBody`` hands to the transport.

/// Feeds an `InputStream` to libcurl's read callback on the transport thread.
///
/// `InputStream` is not thread-safe; every access happens under the lock, one read at a time. A
/// stream that ended or failed is never touched again (corelibs traps on `streamError` of a
/// stream in some states, issue 8 item 3).
final class InputStreamSource: HTTPTransportBodySource, @unchecked Sendable {
    private struct State {
        var read = false  // true once a byte was asked for
        var finished = false
    }

    private let lock = HTTPDNSLock(State())
    private let stream: InputStream

    init(_ stream: InputStream) {
        self.stream = stream
    }

    var wasRead: Bool { lock.withLock { $0.read } }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try lock.withLock { state in
            guard !state.finished else { return 0 }
            if !state.read {
                state.read = true
                if stream.streamStatus == .notOpen { stream.open() }
            }
            guard let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), buffer.count > 0 else { return 0 }
            switch stream.streamStatus {
            case .atEnd, .closed:
                state.finished = true
                return 0
            case .error:
                state.finished = true
                throw URLError(.requestBodyStreamExhausted, userInfo: [NSLocalizedDescriptionKey: "The request body stream failed."])
            default:
                break
            }
            let count = stream.read(base, maxLength: buffer.count)
            if count < 0 {
                state.finished = true
                stream.close()
                throw URLError(.requestBodyStreamExhausted, userInfo: [NSLocalizedDescriptionKey: "The request body stream failed."])
            }
            if count == 0 {
                state.finished = true
                stream.close()
            }
            return count
        }
    }
}

/// Bytes in memory, read by libcurl piece by piece (so that progress can be counted).
final class DataBodySource: HTTPTransportBodySource, @unchecked Sendable {
    private let data: Data
    private let offset = HTTPDNSLock(0)

    init(_ data: Data) {
        self.data = data
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        offset.withLock { offset in
            let count = min(buffer.count, data.count - offset)
            guard count > 0 else { return 0 }
            data.withUnsafeBytes { bytes in
                buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
            }
            offset += count
            return count
        }
    }

    func rewind() -> Bool {
        offset.withLock { $0 = 0 }
        return true
    }
}

/// Reports how many bytes each read handed to libcurl.
struct CountingSource: HTTPTransportBodySource {
    let base: any HTTPTransportBodySource
    let progress: @Sendable (Int) -> Void

    init(_ base: any HTTPTransportBodySource, progress: @escaping @Sendable (Int) -> Void) {
        self.base = base
        self.progress = progress
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = try base.read(into: buffer)
        if count > 0 { progress(count) }
        return count
    }

    func rewind() -> Bool { base.rewind() }
}

/// A body that cannot be read: fails the transfer at its first read.
struct UnreadableSource: HTTPTransportBodySource {
    let error: URLError

    init(_ error: URLError) {
        self.error = error
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        throw error
    }
}

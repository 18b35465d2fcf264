#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPDNSCore
import HTTPDNSTransport

/// A request body read from a file while libcurl sends it (`--data-binary @FILE`): a 4 GiB upload
/// costs one 16 KiB buffer, never the file's size in memory.
///
/// libcurl calls ``read(into:)`` on its loop thread; a local file read returns quickly. The length is
/// taken when the file is opened so that `Content-Length` is sent; a file that shrinks while being
/// sent makes the transfer fail (libcurl notices the short body) rather than hang.
final class FileBodySource: HTTPTransportBodySource {
    /// The open descriptor; -1 once closed.
    private let descriptor: HTTPDNSLock<Int32>
    /// The file's size when it was opened.
    let length: Int64
    let path: String

    /// Opens `path` for reading.
    /// - Throws: ``ToolFailure`` when it cannot be opened or is not a regular file.
    init(path: String) throws(ToolFailure) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ToolFailure("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw ToolFailure("\(path) is not a regular file")
        }
        self.descriptor = HTTPDNSLock(fd)
        self.length = Int64(info.st_size)
        self.path = path
    }

    deinit {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try descriptor.withLock { fd in
            guard fd >= 0, let base = buffer.baseAddress else { return 0 }
            while true {
                let count = posixRead(fd, base, buffer.count)
                if count >= 0 { return count }
                if errno == EINTR { continue }
                throw ToolFailure("cannot read \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    func rewind() -> Bool {
        descriptor.withLock { fd in fd >= 0 && lseek(fd, 0, SEEK_SET) == 0 }
    }
}

/// `read(2)`, named apart from ``FileBodySource/read(into:)``.
private func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Darwin.read(fd, buffer, count)
    #endif
}

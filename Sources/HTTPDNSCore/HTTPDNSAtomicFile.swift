#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Replaces a file whole or not at all: the bytes go to a new file beside it (same directory, so
/// that `rename(2)` stays on one file system), are flushed to disk, and the new file is renamed
/// over the old name; the directory is flushed too, so the rename survives a crash. A reader sees
/// the old file or the new one, never a half-written one.
///
/// The temporary file is `.NAME.tmp-PID-RANDOM` (hidden, recognisable by its owner, and stale
/// ones tell by their PID whether their writer is gone). Blocking I/O: callers keep it off the
/// cooperative pool.
package enum HTTPDNSAtomicFile {
    /// `.cache.json.tmp-` for `/dir/cache.json`.
    package static func temporaryPrefix(for path: String) -> String {
        "." + (path.split(separator: "/").last.map(String.init) ?? path) + ".tmp-"
    }

    /// Makes `path` hold `bytes`, with permissions `mode`, replacing what was there.
    ///
    /// - Throws: ``HTTPDNSError`` `.transport` naming the step and the errno; the old file, if any,
    ///   is untouched and the temporary file removed.
    package static func replace(_ path: String, with bytes: [UInt8], mode: mode_t = 0o600) throws(HTTPDNSError) {
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let temporary = (directory.isEmpty ? "" : directory + "/") + temporaryPrefix(for: path)
            + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw HTTPDNSError(.transport, "cannot create \(temporary) (errno \(errno))") }
        var written = 0
        var failure: Int32 = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            written += result
        }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw HTTPDNSError(.transport, "cannot write \(path) (errno \(failure))")
        }
        // The rename's directory entry, flushed (best effort: some file systems refuse it).
        let directoryFD = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }
}

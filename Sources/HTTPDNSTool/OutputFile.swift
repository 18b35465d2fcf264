#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Where `fetch` writes the response: stdout, or a file written atomically (`-o FILE`).
///
/// The file is written to a temporary file in the same directory (so that `rename(2)` stays on one
/// file system), flushed with `fsync`, and renamed over the destination only when the whole body
/// arrived: a failed or interrupted transfer leaves the destination as it was, never half-written.
/// A destination that exists and is not a regular file (`-o /dev/null`, a FIFO) is written to
/// directly, as curl does: renaming over it would replace the device with a file. A symbolic link
/// is followed, so the file it names is replaced, not the link.
final class OutputFile {
    private let destination: String?
    private var temporaryPath: String?
    private var fd: Int32 = -1

    /// Bytes written so far (the body and, with `-i`, the heads).
    private(set) var bytesWritten: Int64 = 0

    /// Output to stdout.
    init() {
        destination = nil
    }

    /// Output to `path`; creates the temporary file now, so that a directory that is not writable
    /// fails before any network traffic.
    /// - Throws: ``ToolFailure``.
    init(path: String) throws(ToolFailure) {
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG {
            guard (info.st_mode & S_IFMT) != S_IFDIR else { throw ToolFailure("cannot write \(path): it is a directory") }
            let opened = open(path, O_WRONLY)
            guard opened >= 0 else { throw ToolFailure("cannot open \(path): \(String(cString: strerror(errno)))") }
            destination = path
            fd = opened
            return
        }
        // Follow a symbolic link: the file it names is what gets replaced.
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        destination = resolved
        let url = URL(fileURLWithPath: resolved)
        let directory = url.deletingLastPathComponent().path
        var template = Array("\(directory)/.\(url.lastPathComponent).httpdns-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard created >= 0 else {
            throw ToolFailure("cannot create a file next to \(path): \(String(cString: strerror(errno)))")
        }
        fd = created
        temporaryPath = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // mkstemp makes the file 0600; give it the mode a new file would get (0666 minus the umask).
        let mask = umask(0)
        umask(mask)
        fchmod(fd, 0o666 & ~mask)
    }

    deinit {
        abort()
    }

    /// Appends bytes.
    /// - Throws: ``ToolFailure`` when the disk is full or stdout is closed.
    func write(_ data: Data) throws(ToolFailure) {
        guard !data.isEmpty else { return }
        if destination == nil {
            try Output.stdout(data)
        } else {
            guard fd >= 0 else { throw ToolFailure("output file already closed") }
            try Output.write(fd: fd, data, name: temporaryPath ?? "output file")
        }
        bytesWritten += Int64(data.count)
    }

    /// Makes the output final: for a file, flush and rename over the destination.
    /// - Throws: ``ToolFailure``; the temporary file is then removed.
    func commit() throws(ToolFailure) {
        guard let destination, fd >= 0 else { return }
        guard let temporaryPath else {
            // Written directly (a device or FIFO): nothing to rename.
            close(fd)
            fd = -1
            return
        }
        let synced = fsync(fd) == 0
        let closed = close(fd) == 0
        fd = -1
        guard synced, closed, rename(temporaryPath, destination) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporaryPath)
            self.temporaryPath = nil
            throw ToolFailure("cannot write \(destination): \(reason)")
        }
        self.temporaryPath = nil
    }

    /// Drops a file that was not committed. Safe to call more than once.
    func abort() {
        if fd >= 0 {
            close(fd)
            fd = -1
        }
        if let temporaryPath {
            unlink(temporaryPath)
            self.temporaryPath = nil
        }
    }
}

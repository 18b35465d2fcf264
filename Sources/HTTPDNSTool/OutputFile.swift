#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HTTPDNSCore

/// Where `fetch` writes the response: stdout, or a file written atomically (`-o FILE`).
///
/// The file is written to a temporary file in the same directory (so that `rename(2)` stays on one
/// file system), flushed with `fsync`, and renamed over the destination only when the whole body
/// arrived: a failed or interrupted transfer leaves the destination as it was, never half-written.
/// A destination that exists and is not a regular file (`-o /dev/null`, a FIFO) is written to
/// directly, as curl does: renaming over it would replace the device with a file. A symbolic link
/// is followed, so the file it names is replaced, not the link.
final class OutputFile: Sendable {
    /// What changes as the output is written; behind a lock so that the file can be handed between
    /// the transfer's threads.
    private struct State: Sendable {
        var temporaryPath: String?
        var fd: Int32 = -1
        var bytesWritten: Int64 = 0
    }

    private let destination: String?
    private let state: HTTPDNSLock<State>

    /// Bytes written so far (the body and, with `-i`, the heads).
    var bytesWritten: Int64 { state.withLock { $0.bytesWritten } }

    /// Output to stdout.
    init() {
        destination = nil
        state = HTTPDNSLock(State())
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
            state = HTTPDNSLock(State(fd: opened))
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
        let temporaryPath = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        state = HTTPDNSLock(State(temporaryPath: temporaryPath, fd: created))
        // mkstemp makes the file 0600; give it the mode a new file would get (0666 minus the umask).
        let mask = umask(0)
        umask(mask)
        fchmod(created, 0o666 & ~mask)
    }

    deinit {
        abort()
    }

    /// Appends bytes.
    /// - Throws: ``ToolFailure`` when the disk is full or stdout is closed.
    func write(_ data: Data) throws(ToolFailure) {
        guard !data.isEmpty else { return }
        let toFile = destination != nil
        try state.withLock { (state: inout State) throws(ToolFailure) in
            if toFile {
                guard state.fd >= 0 else { throw ToolFailure("output file already closed") }
                try Output.write(fd: state.fd, data, name: state.temporaryPath ?? "output file")
            } else {
                try Output.stdout(data)
            }
            state.bytesWritten += Int64(data.count)
        }
    }

    /// Makes the output final: for a file, flush and rename over the destination.
    /// - Throws: ``ToolFailure``; the temporary file is then removed.
    func commit() throws(ToolFailure) {
        guard let destination else { return }
        try state.withLock { (state: inout State) throws(ToolFailure) in
            guard state.fd >= 0 else { return }
            guard let temporaryPath = state.temporaryPath else {
                // Written directly (a device or FIFO): nothing to rename.
                close(state.fd)
                state.fd = -1
                return
            }
            let synced = fsync(state.fd) == 0
            let closed = close(state.fd) == 0
            state.fd = -1
            state.temporaryPath = nil
            guard synced, closed, rename(temporaryPath, destination) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporaryPath)
                throw ToolFailure("cannot write \(destination): \(reason)")
            }
        }
    }

    /// Drops a file that was not committed. Safe to call more than once.
    func abort() {
        state.withLock { state in
            if state.fd >= 0 {
                close(state.fd)
                state.fd = -1
            }
            if let temporaryPath = state.temporaryPath {
                unlink(temporaryPath)
                state.temporaryPath = nil
            }
        }
    }
}

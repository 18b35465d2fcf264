#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import HTTPDNSCore

/// Saves the cache to a file and loads it back, treating the file as untrusted input.
///
/// The bytes are ``HTTPDNSCacheFile`` (format version, digest or HMAC, entries checked like network
/// answers). Around them, the file system is hostile too:
/// - the file is opened with `O_NOFOLLOW` (a symlink is refused) and checked on the open descriptor:
///   a regular file, owned by the current user, not writable by group or others, at most
///   ``maximumFileSize`` bytes; in a shared sticky directory another user's planted file is refused;
/// - it is written `0600` beside its final name with `O_EXCL`, flushed, then renamed over it, so a
///   crash never leaves half a file; a missing directory is created `0700`; temporary files of saves
///   that were killed (their process gone, or older than ten minutes) are removed at load;
/// - all file I/O runs on a private serial queue, never on the caller's thread or the cooperative
///   pool: the engine starts without waiting for the load, and writes coalesce (many changes in a
///   burst cause few writes).
///
/// A missing file is normal; anything else that is refused is reported once as a warning event,
/// never a crash.
package final class HTTPDNSCachePersistence: Sendable {
    /// Files larger than this are not read (a cache of 100,000 names is far smaller).
    package static let maximumFileSize = 64 << 20
    /// A temporary file this old is a leftover even when its process id is in use again.
    static let staleTemporaryAge: Double = 600

    package let path: String
    private let key: [UInt8]?
    private let monitor: any HTTPDNSEventMonitor
    private let queue = DispatchQueue(label: "swift-httpdns.cache-persistence")
    private let savePending = HTTPDNSLock(false)
    private let interval: Double

    package init(path: String, interval: Double, key: [UInt8]?, monitor: any HTTPDNSEventMonitor) {
        self.path = path
        self.interval = max(interval, 0)
        self.key = key
        self.monitor = monitor
    }

    /// Reads the file on the private queue and hands its usable entries to `engine` (entries the
    /// engine learnt meanwhile win over the file's), which refreshes them in the background at once.
    func loadInBackground(into engine: HTTPDNSEngine) {
        queue.async { [weak engine] in
            guard let engine else { return }
            self.removeStaleTemporaryFiles()
            let configuration = engine.configuration
            let now = configuration.clock.now()
            let entries = self.load(hygiene: configuration.hygiene, settings: configuration.cache.policy, now: now)
            guard !entries.isEmpty else { return }
            let inserted = engine.change { state -> [HTTPDNSCacheKey] in
                // Saved most recently used first; inserted in reverse so the order survives.
                var inserted: [HTTPDNSCacheKey] = []
                for item in entries.reversed() where state.cache.peek(item.key) == nil {
                    state.cache.insert(item.key, item.entry)
                    inserted.append(item.key)
                }
                return inserted.reversed()
            }
            // The file's answers are served now and asked upstream again at once.
            engine.refreshLoadedInBackground(inserted)
        }
    }

    /// Blocks until the load and any save already queued are done (for tests and orderly shutdown).
    func waitForPendingWork() {
        queue.sync {}
    }

    /// The file's usable entries, or none (with a warning unless the file does not exist).
    func load(
        hygiene: HTTPDNSAnswerHygiene, settings: HTTPDNSCachePolicy.Settings, now: Double
    ) -> [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)] {
        let bytes: [UInt8]
        switch readFile() {
        case .missing: return []
        case .refused(let reason):
            monitor.warning("cache file \(path) \(reason); ignored")
            return []
        case .read(let read): bytes = read
        }
        do {
            return try HTTPDNSCacheFile.decode(bytes, key: key, hygiene: hygiene, settings: settings, now: now)
        } catch {
            monitor.warning("cache file \(path) rejected: \(error.reason); ignored")
            return []
        }
    }

    package enum ReadOutcome {
        case missing
        case refused(String)
        case read([UInt8])
    }

    /// The file's bytes, after the checks on the open descriptor.
    package func readFile() -> ReadOutcome {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let error = errno
            if error == ENOENT { return .missing }
            return .refused(error == ELOOP ? "is a symbolic link" : "cannot be opened (errno \(error))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .refused("cannot be examined") }
        guard info.st_mode & S_IFMT == S_IFREG else { return .refused("is not a regular file") }
        guard info.st_uid == geteuid() else { return .refused("is owned by another user (uid \(info.st_uid))") }
        guard info.st_mode & 0o022 == 0 else { return .refused("is writable by group or others") }
        guard info.st_size <= Self.maximumFileSize else { return .refused("is \(info.st_size) bytes, over the limit") }
        // Read to the limit, not to st_size: the file may grow after fstat.
        var bytes = [UInt8](repeating: 0, count: min(Int(info.st_size), Self.maximumFileSize) + 1)
        var count = 0
        while true {
            if count == bytes.count {
                guard count <= Self.maximumFileSize else { return .refused("grew over the limit") }
                bytes.append(contentsOf: repeatElement(0, count: min(count, Self.maximumFileSize + 1 - count)))
            }
            let result = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if result < 0 {
                if errno == EINTR { continue }
                return .refused("cannot be read")
            }
            if result == 0 { break }
            count += result
        }
        return .read(Array(bytes[..<count]))
    }

    /// Writes `entries` now, on the private queue (after a pending load), atomically.
    func save(entries: @escaping @Sendable () -> [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)]) throws {
        try queue.sync { try writeFile(entries()) }
    }

    /// Saves soon on the private queue; repeated calls before the write coalesce into one.
    func scheduleSave(_ engine: HTTPDNSEngine) {
        let alreadyPending = savePending.withLock { pending in
            defer { pending = true }
            return pending
        }
        guard !alreadyPending else { return }
        // Writes rewrite the whole file: at most one per interval, however busy the cache is.
        queue.asyncAfter(deadline: .now() + interval) { [weak engine] in
            self.savePending.withLock { $0 = false }
            guard let engine else { return }
            do {
                try self.writeFile(engine.state.withLock { $0.cache.entries })
            } catch {
                self.monitor.warning("cache file \(self.path) could not be written: \(error)")
            }
        }
    }

    /// Writes the file (`0600`, ``HTTPDNSAtomicFile``). Runs on the queue.
    private func writeFile(_ entries: [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)]) throws {
        let bytes = try HTTPDNSCacheFile.encode(entries, key: key)
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        if !FileManager.default.fileExists(atPath: directory) {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        try HTTPDNSAtomicFile.replace(path, with: bytes)
    }

    /// `.cache.json.tmp-` for `/dir/cache.json`: hidden, and recognisable as ours.
    private var temporaryPrefix: String { HTTPDNSAtomicFile.temporaryPrefix(for: path) }

    /// Removes this file's temporary files left by saves that were killed: ours (same owner), and
    /// either their process is gone or they are older than ``staleTemporaryAge``.
    package func removeStaleTemporaryFiles() {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let prefix = temporaryPrefix
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        let now = Date().timeIntervalSince1970
        for name in names where name.hasPrefix(prefix) {
            let candidate = directory + "/" + name
            var info = stat()
            guard lstat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() else { continue }
            let pid = name.dropFirst(prefix.count).split(separator: "-").first.flatMap { Int32($0) }
            let processGone = pid.map { kill($0, 0) != 0 && errno == ESRCH } ?? true
            #if canImport(Darwin)
            let age = now - Double(info.st_mtimespec.tv_sec)
            #else
            let age = now - Double(info.st_mtim.tv_sec)
            #endif
            if processGone || age > Self.staleTemporaryAge {
                unlink(candidate)
            }
        }
    }
}

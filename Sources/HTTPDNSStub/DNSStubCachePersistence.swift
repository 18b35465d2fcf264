import DNSStubCore
import Dispatch
import Foundation
import HTTPDNS
import HTTPDNSCore

/// Keeps the stub's wire cache in a file (``DNSStubCacheFile``) so that a restart answers at once.
///
/// The file system rules are the engine's (`HTTPDNSCachePersistence`, whose checked read and
/// leftover clean-up this uses): no symlink, a regular file of ours not writable by others, at most
/// 64 MiB, written `0600` through ``HTTPDNSAtomicFile``. A file refused for any reason loads nothing
/// and is reported once through `monitor`; the stub starts all the same.
///
/// Which thread does what: ``load()`` runs on the caller's thread before the sockets answer (the
/// command calls it from a thread of its own); saves run on a private serial queue, checked every
/// ``interval`` seconds and written only when the cache changed since the last save, so a busy
/// cache costs one write per interval at most and never a serving thread's or a task's time.
package final class DNSStubCachePersistence: Sendable {
    let file: HTTPDNSCachePersistence
    let resolver: DNSStubResolver
    let key: [UInt8]?
    let monitor: any HTTPDNSEventMonitor
    let interval: Double
    private let queue = DispatchQueue(label: "swift-httpdns.stub-cache-persistence")
    private let savedChanges = HTTPDNSLock(0)
    /// A failed save was reported; the next is reported only after a save succeeded.
    private let saveFailureReported = HTTPDNSLock(false)
    /// nil before ``start()``, true once stopped.
    private let running = HTTPDNSLock<Bool?>(nil)

    /// - Parameters:
    ///   - path: the file, for example `DIR/stub.cache`.
    ///   - interval: longest a change waits before it is written, seconds. Default 2.
    ///   - key: HMAC key (the engine's `persistenceKey`); nil signs with SHA-256 only.
    package init(
        path: String, resolver: DNSStubResolver, interval: Double = 2, key: [UInt8]? = nil,
        monitor: any HTTPDNSEventMonitor
    ) {
        file = HTTPDNSCachePersistence(path: path, interval: interval, key: key, monitor: monitor)
        self.resolver = resolver
        self.key = key
        self.monitor = monitor
        self.interval = max(interval, 0.1)
    }

    /// Reads the file into the resolver's cache (blocking); returns how many entries were loaded.
    @discardableResult
    package func load() -> Int {
        file.removeStaleTemporaryFiles()
        let bytes: [UInt8]
        switch file.readFile() {
        case .missing: return 0
        case .refused(let reason):
            monitor.warning("stub cache file \(file.path) \(reason); ignored")
            return 0
        case .read(let read): bytes = read
        }
        let wallClock = Date().timeIntervalSince1970
        let now = resolver.now
        do {
            return try resolver.cache.withLock { cache throws(DNSStubCacheFile.Rejection) in
                try DNSStubCacheFile.load(bytes, key: key, into: &cache, now: now, wallClock: wallClock)
            }
        } catch {
            monitor.warning("stub cache file \(file.path) rejected: \(error.reason); ignored")
            return 0
        }
    }

    /// Starts the periodic save on the private queue. Idempotent.
    package func start() {
        let first = running.withLock { running in
            defer { if running == nil { running = true } }
            return running == nil
        }
        if first { scheduleTick() }
    }

    private func scheduleTick() {
        queue.asyncAfter(deadline: .now() + interval) { [weak self] in
            guard let self, self.running.withLock({ $0 == true }) else { return }
            self.saveIfChanged()
            self.scheduleTick()
        }
    }

    /// Stops the periodic save and writes the cache once more if it changed (blocking: call it
    /// from a thread of your own).
    package func stop() {
        running.withLock { $0 = false }
        queue.sync { saveIfChanged() }
    }

    /// Writes the file when the cache changed since the last write. Runs on the queue.
    private func saveIfChanged() {
        let changes = resolver.cacheChanges.withLock { $0 }
        guard changes != savedChanges.withLock({ $0 }) else { return }
        // A copy under the lock (copy on write: O(1)), encoded outside it. A store while the encoding
        // runs copies the cache's storage once, under the lock: a cost of one save, at most every
        // interval, against a lock held for the whole encoding.
        let (snapshot, now) = resolver.cache.withLock { ($0, resolver.now) }
        let bytes = DNSStubCacheFile.encode(snapshot, now: now, wallClock: Date().timeIntervalSince1970, key: key)
        do {
            let directory = URL(fileURLWithPath: file.path).deletingLastPathComponent().path
            if !FileManager.default.fileExists(atPath: directory) {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            try HTTPDNSAtomicFile.replace(file.path, with: bytes)
            savedChanges.withLock { $0 = changes }
            saveFailureReported.withLock { $0 = false }
        } catch {
            // Retried at every tick; said once, not every 2 s, while the directory stays unwritable.
            guard !saveFailureReported.withLock({ reported in defer { reported = true }; return reported }) else { return }
            monitor.warning("stub cache file \(file.path) could not be written: \(error)")
        }
    }
}

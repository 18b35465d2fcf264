import Dispatch
import Foundation
import HTTPDNSCore

/// Saves the cache to a file and loads it back.
///
/// The file is JSON with a format name and version; it is replaced atomically (written aside, then
/// renamed), so a crash never leaves half a file. A missing file is normal; a corrupt, foreign or
/// newer-version file is ignored with a warning event, never a crash. Writes happen on a private
/// queue (file I/O blocks, so never on the cooperative pool) and coalesce: many changes in a burst
/// cause few writes.
final class HTTPDNSCachePersistence: Sendable {
    static let formatName = "swift-httpdns-cache"
    static let formatVersion = 1
    /// Files larger than this are not read (a cache of 100,000 names is far smaller).
    static let maximumFileSize = 64 << 20

    struct File: Codable {
        var format: String
        var version: Int
        var entries: [Item]
    }

    struct Item: Codable {
        var key: HTTPDNSCacheKey
        var entry: HTTPDNSCacheEntry
    }

    let path: String
    private let monitor: any HTTPDNSEventMonitor
    private let queue = DispatchQueue(label: "swift-httpdns.cache-persistence")
    private let savePending = HTTPDNSLock(false)

    private let interval: Double

    init(path: String, interval: Double, monitor: any HTTPDNSEventMonitor) {
        self.path = path
        self.interval = max(interval, 0)
        self.monitor = monitor
    }

    /// Loads entries that are still within their stale age into `cache`.
    func load(into cache: inout HTTPDNSCachePolicy, now: Double) {
        let url = URL(fileURLWithPath: path)
        let data: Data
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            if let size = attributes[.size] as? Int, size > Self.maximumFileSize {
                monitor.warning("cache file \(path) is \(size) bytes, over the limit; ignored")
                return
            }
            data = try Data(contentsOf: url)
        } catch {
            if FileManager.default.fileExists(atPath: path) {
                monitor.warning("cache file \(path) could not be read; ignored")
            }
            return
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch {
            monitor.warning("cache file \(path) is not a valid cache file; ignored")
            return
        }
        guard file.format == Self.formatName, file.version == Self.formatVersion else {
            monitor.warning("cache file \(path) has format \(file.format) version \(file.version); ignored")
            return
        }
        let maximumStale = Double(cache.settings.maximumStaleAge)
        // Entries are saved most recently used first; insert in reverse so the order survives.
        for item in file.entries.reversed() {
            let entry = item.entry
            guard entry.ttl > 0, entry.storedAt <= now + 60, now - entry.expiresAt <= maximumStale,
                HTTPDNSHostPolicy.isValidHostName(item.key.host), !entry.addresses.isEmpty
            else { continue }
            cache.insert(item.key, entry)
        }
    }

    /// Writes `entries` now, atomically.
    func save(entries: [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)]) throws {
        let file = File(
            format: Self.formatName, version: Self.formatVersion,
            entries: entries.map { Item(key: $0.key, entry: $0.entry) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(file)
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
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
                try engine.saveCache()
            } catch {
                self.monitor.warning("cache file \(self.path) could not be written: \(error)")
            }
        }
    }
}

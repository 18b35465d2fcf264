import DNSStubCore
import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSStub

extension Command {
    /// `httpdns stub`'s options for starting as a service: persistence, static entries, systemd.
    static let stubBootSpecs: [OptionSpec] = [
        OptionSpec("cache-dir", value: "dir", help: """
            Keep both caches in DIR (created 0700), so that a restart answers the names it knew at once, \
            stale where expired, before any upstream answers: the engine's in DIR/engine.cache, the wire \
            cache in DIR/stub.cache (checksummed, 0600; a damaged file is ignored whole, with a warning). \
            Saved at most every 2 s after a change and at stop. systemd: StateDirectory=.
            """),
        OptionSpec("cache-key-file", value: "file", help: """
            Sign both cache files with HMAC-SHA256 under this file's bytes (at least 16, a trailing newline \
            dropped): a file not signed with the key is refused. Default: a SHA-256 checksum, which catches \
            damage but not a deliberate edit.
            """),
        OptionSpec("hosts", value: "file", help: """
            Static entries in /etc/hosts format (repeatable): A and AAAA of the names (NODATA for a family \
            the file does not give), PTR of the addresses, TTL 60, answered before anything else. Read again \
            on SIGHUP (a file that cannot be read or parsed keeps the entries in use, with a warning).
            """),
    ]

    /// The tables of the `--hosts` files, merged in order.
    static func stubHosts(_ paths: [String], command: String) throws -> DNSStubHosts {
        var hosts = DNSStubHosts()
        for path in paths {
            guard let data = readSmallFile(path, limit: 16 << 20) else {
                throw UsageError("cannot read --hosts '\(path)' (or it is over 16 MiB)", command: command)
            }
            do {
                hosts.merge(try DNSStubHosts(parsing: String(decoding: data, as: UTF8.self), source: path))
            } catch {
                throw UsageError("bad --hosts: \(error.detail)", command: command)
            }
        }
        return hosts
    }

    /// The bytes of `--cache-key-file`, if given.
    static func stubCacheKey(_ path: String?, command: String) throws -> [UInt8]? {
        guard let path else { return nil }
        guard var key = readSmallFile(path, limit: 4096).map(Array.init) else {
            throw UsageError("cannot read --cache-key-file '\(path)' (or it is over 4096 bytes)", command: command)
        }
        if key.last == UInt8(ascii: "\n") { key.removeLast() }
        guard key.count >= 16 else { throw UsageError("--cache-key-file '\(path)' holds \(key.count) bytes; at least 16 needed", command: command) }
        return key
    }

    /// The bytes of `path`, nil when it cannot be read or holds more than `limit` bytes (read to
    /// the limit only: a FIFO or /dev/zero is not read forever).
    static func readSmallFile(_ path: String, limit: Int) -> Data? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: limit + 1) ?? Data(), data.count <= limit else { return nil }
        return data
    }

    /// Runs `body` on a thread of its own (file I/O, waits) and returns when it is done, so the
    /// cooperative pool never blocks.
    static func onOwnThread(_ name: String, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                body()
                continuation.resume()
            }
            thread.name = name
            thread.start()
        }
    }
}

/// `httpdns stub`'s warnings (a refused cache file, a failed save) on stderr, once each.
final class StubMonitor: HTTPDNSEventMonitor {
    func warning(_ message: String) {
        Output.diagnostic("httpdns stub: warning: \(message)")
    }
}

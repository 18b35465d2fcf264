import DNSWire
import HTTPDNSCore

/// The stub's persisted wire cache: the bytes of ``DNSStubCache``'s entries, so that a restart
/// answers the names it knew at once, stale where expired (RFC 8767), before any upstream answers.
///
///     swift-httpdns-stub-cache 1 sha256 <64 lower-case hex digits>\n<body>
///
/// The integrity rules are the engine's cache file's (`HTTPDNSCacheFile`): the header names the
/// format and version and carries SHA-256 of the body, or HMAC-SHA256 under the cache key
/// (`hmac-sha256`); one flipped byte, a truncation, another version or another key refuses the
/// file whole. The body is binary, read through a bounds-checked reader:
///
///     u32 count, then count times:
///       u8  flags: 1 DO, 2 CD, 4 the entry covers every type of the name (an NXDOMAIN), 8 AD
///       u64 stored-at, wall-clock seconds since 1970 (IEEE 754 bits), so TTLs keep counting down
///           while the stub is not running
///       u16 length, then a DNS message (RFC 1035 §4.1): its one question is the entry's name, type
///           (A for an NXDOMAIN, which covers every type) and class, its RCODE and sections the
///           answer, TTLs as received
///
/// Nothing may follow the last entry. Entries that decode are still checked like an upstream's
/// answer: the TTL is computed again from the records under today's limits
/// (``DNSStubCache/cacheTTL(of:question:)``), and entries stored in the future or past the stale
/// window are dropped one by one.
package enum DNSStubCacheFile {
    static let magic = "swift-httpdns-stub-cache"
    static let version = 1
    /// Most entries read; more is not a file of ours (the cache's default holds 10,000).
    static let maximumEntries = 1_000_000

    /// Why a file was refused whole; `reason` is short and free of file contents.
    package struct Rejection: Error, CustomStringConvertible, Equatable {
        package var reason: String
        package var description: String { reason }
    }

    /// The file's bytes for the entries of `cache`, least recently used first (so loading them in
    /// order keeps the LRU order), signed with `key` when given. Entries are taken most recently
    /// used first up to `maximumBodySize` bytes, so the file stays under the reader's 64 MiB limit
    /// however large the answers cached.
    ///
    /// - Parameters:
    ///   - now: the cache's clock now (the clock its `now` arguments use).
    ///   - wallClock: seconds since 1970 now.
    package static func encode(
        _ cache: DNSStubCache, now: Double, wallClock: Double, key: [UInt8]?, maximumBodySize: Int = 60 << 20
    ) -> [UInt8] {
        var records: [[UInt8]] = []
        var size = 4
        for cacheKey in cache.keys {
            guard let entry = cache.peek(cacheKey) else { continue }
            var message = DNSMessage(
                flags: 0x8000,
                questions: [DNSQuestion(
                    name: cacheKey.name, type: cacheKey.type ?? .A, recordClass: cacheKey.recordClass)],
                answers: entry.response.answers, authorities: entry.response.authorities,
                additionals: entry.response.additionals)
            message.rcode = entry.response.rcode
            guard let wire = try? message.encode(), wire.count <= Int(UInt16.max) else { continue }
            guard size + 11 + wire.count <= maximumBodySize else { break }
            var flags: UInt8 = 0
            if cacheKey.dnssecOK { flags |= 1 }
            if cacheKey.checkingDisabled { flags |= 2 }
            if cacheKey.type == nil { flags |= 4 }
            if entry.response.authenticData { flags |= 8 }
            var record = [flags]
            let storedAt = wallClock - (now - entry.storedAt)
            append(storedAt.bitPattern, bytes: 8, to: &record)
            append(UInt64(wire.count), bytes: 2, to: &record)
            record.append(contentsOf: wire)
            size += record.count
            records.append(record)
        }
        var body: [UInt8] = []
        body.reserveCapacity(size)
        append(UInt64(records.count), bytes: 4, to: &body)
        for record in records.reversed() { body.append(contentsOf: record) }
        return Array(header(for: body, key: key).utf8) + body
    }

    /// Loads the entries of a file's `bytes` into `cache` (entries already there win) and returns
    /// how many were loaded.
    ///
    /// - Parameters:
    ///   - now: the cache's clock now; `wallClock`: seconds since 1970 now.
    /// - Throws: ``Rejection`` when the header, digest or body is not exactly right; nothing is
    ///   loaded then.
    package static func load(
        _ bytes: [UInt8], key: [UInt8]?, into cache: inout DNSStubCache, now: Double, wallClock: Double
    ) throws(Rejection) -> Int {
        let entries = try decode(bytes, key: key)
        var loaded = 0
        for item in entries {
            guard item.storedAt.isFinite, item.storedAt >= 0, item.storedAt <= wallClock + 60,
                  let ttl = cache.cacheTTL(of: item.response, question: item.question)
            else { continue }
            let storedAt = now - (wallClock - item.storedAt)
            let entry = DNSStubCache.Entry(response: item.response, storedAt: storedAt, ttl: ttl)
            guard now - entry.expiresAt <= cache.maximumStaleAge, cache.peek(item.key) == nil else { continue }
            cache.insert(item.key, entry)
            loaded += 1
        }
        return loaded
    }

    /// One entry as read, before the cache's checks.
    struct Item {
        var key: DNSStubCache.Key
        var question: DNSQuestion
        var storedAt: Double
        var response: DNSStubResponse
    }

    /// The entries of `bytes`, least recently used first.
    /// - Throws: ``Rejection`` for anything but a whole, signed, well-formed file.
    static func decode(_ bytes: [UInt8], key: [UInt8]?) throws(Rejection) -> [Item] {
        guard let newline = bytes.prefix(161).firstIndex(of: UInt8(ascii: "\n")) else {
            throw Rejection(reason: "no header")
        }
        let body = Array(bytes[(newline + 1)...])
        guard bytes[...newline].elementsEqual(header(for: body, key: key).utf8) else {
            if !bytes.starts(with: Array("\(magic) \(version) ".utf8)) {
                throw Rejection(reason: "not a version \(version) stub cache file")
            }
            throw Rejection(reason: key == nil ? "checksum mismatch" : "checksum or key mismatch")
        }
        var reader = DNSStubCacheFileReader(body)
        let count = try reader.integer(bytes: 4)
        guard count <= UInt64(maximumEntries) else { throw Rejection(reason: "too many entries") }
        var items: [Item] = []
        for index in 0..<Int(count) {
            let flags = UInt8(try reader.integer(bytes: 1))
            guard flags & 0xF0 == 0 else { throw Rejection(reason: "entry \(index): unknown flags") }
            let storedAt = Double(bitPattern: try reader.integer(bytes: 8))
            let wire = try reader.bytes(Int(try reader.integer(bytes: 2)))
            guard let message = try? DNSMessage(decoding: wire), message.questions.count == 1,
                  message.isResponse, message.edns == nil
            else { throw Rejection(reason: "entry \(index): not a DNS answer") }
            let question = message.questions[0]
            var response = DNSStubResponse(
                rcode: message.rcode, answers: message.answers, authorities: message.authorities,
                additionals: message.additionals)
            response.authenticData = flags & 8 != 0
            let cacheKey = DNSStubCache.Key(
                name: question.name, type: flags & 4 != 0 ? nil : question.type, recordClass: question.recordClass,
                dnssecOK: flags & 1 != 0, checkingDisabled: flags & 2 != 0)
            items.append(Item(key: cacheKey, question: question, storedAt: storedAt, response: response))
        }
        guard reader.isAtEnd else { throw Rejection(reason: "bytes after the last entry") }
        return items
    }

    /// `swift-httpdns-stub-cache 1 sha256 <hex>\n` for `body`.
    static func header(for body: [UInt8], key: [UInt8]?) -> String {
        if let key {
            return "\(magic) \(version) hmac-sha256 \(HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.hmacSHA256(key: key, message: body)))\n"
        }
        return "\(magic) \(version) sha256 \(HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.sha256(body)))\n"
    }

    private static func append(_ value: UInt64, bytes: Int, to body: inout [UInt8]) {
        for shift in stride(from: (bytes - 1) * 8, through: 0, by: -8) {
            body.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}

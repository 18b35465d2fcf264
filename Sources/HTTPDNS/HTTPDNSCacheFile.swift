import Foundation
import HTTPDNSCore

/// The persisted cache's bytes: a one-line header that names the format, its version and a digest of
/// the body, then the entries as JSON.
///
///     swift-httpdns-cache 2 sha256 <64 lower-case hex digits>\n{"entries":[…]}
///
/// The file is untrusted input (another user, a broken disk or an attacker may have written it):
/// - corruption is rejected whole: the header must be exactly this shape and the digest (SHA-256 of
///   the body, or HMAC-SHA256 under the app's key, `hmac-sha256`) must match, so one flipped byte
///   anywhere loads nothing rather than a damaged entry;
/// - with a key, a file without the matching HMAC is refused, so tampering is detectable; without a
///   key, a file signed with one is refused too (it cannot be checked);
/// - entries that pass go through the same rules as a network answer: a valid normalised host name,
///   the answer-hygiene filter of the engine's configuration (no bogons), at most
///   ``HTTPDNSFormatLimits/maxAddressesPerName`` addresses per family, a TTL within 0...2^31-1
///   (RFC 2181 §8) held to the cache's floor and ceiling, a store time that is finite and not in
///   the future, and no retry or stale state (those are re-learnt).
package enum HTTPDNSCacheFile {
    static let magic = "swift-httpdns-cache"
    static let version = 2

    /// Why a file was refused whole; `reason` is short and free of file contents.
    package struct Rejection: Error, CustomStringConvertible {
        package var reason: String
        package var description: String { reason }
    }

    /// One entry as written: plain fields, checked one by one on load.
    struct Entry: Codable {
        var host: String
        var family: HTTPDNSAddressFamily
        var addresses: [HTTPDNSIPAddress]
        var source: String
        var origin: HTTPDNSAnswer.Origin
        var storedAt: Double
        var ttl: Int
    }

    struct Body: Codable {
        var entries: [Entry]
    }

    /// The file's bytes for `entries` (most recently used first), signed with `key` when given.
    package static func encode(
        _ entries: [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)], key: [UInt8]?
    ) throws -> [UInt8] {
        let body = Body(entries: entries.map {
            Entry(
                host: $0.key.host, family: $0.key.family, addresses: $0.entry.addresses, source: $0.entry.source,
                origin: $0.entry.origin, storedAt: $0.entry.storedAt, ttl: $0.entry.ttl)
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = Array(try encoder.encode(body))
        return Array(header(for: json, key: key).utf8) + json
    }

    /// The entries of a file's `bytes` that are fit to serve at `now`, most recently used first,
    /// each marked ``HTTPDNSCacheEntry/fromDisk``.
    /// - Throws: ``Rejection`` when the header, digest or JSON is not exactly right.
    package static func decode(
        _ bytes: [UInt8], key: [UInt8]?, hygiene: HTTPDNSAnswerHygiene, settings: HTTPDNSCacheSettings, now: Double
    ) throws(Rejection) -> [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)] {
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")), newline <= 160 else {
            throw Rejection(reason: "no header")
        }
        let json = Array(bytes[(newline + 1)...])
        let expected = header(for: json, key: key)
        // Byte for byte: a digest in upper case, an extra space or another version is a different file.
        guard bytes[...newline].elementsEqual(expected.utf8) else {
            let prefix = Array("\(magic) \(version) ".utf8)
            if !bytes.starts(with: prefix) { throw Rejection(reason: "not a version \(version) cache file") }
            throw Rejection(reason: key == nil ? "checksum mismatch" : "checksum or key mismatch")
        }
        let body: Body
        do {
            body = try JSONDecoder().decode(Body.self, from: Data(json))
        } catch {
            throw Rejection(reason: "entries are not valid JSON")
        }
        let policy = HTTPDNSCachePolicy(settings: settings)
        var seen = Set<HTTPDNSCacheKey>()
        var out: [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)] = []
        for item in body.entries where out.count < max(settings.capacity, 1) {
            guard let entry = checked(item, policy: policy, hygiene: hygiene, now: now) else { continue }
            let cacheKey = HTTPDNSCacheKey(host: item.host, family: item.family)
            guard seen.insert(cacheKey).inserted else { continue }
            out.append((cacheKey, entry))
        }
        return out
    }

    /// `item` as a cache entry, or nil when a network answer like it would not have been cached.
    static func checked(
        _ item: Entry, policy: HTTPDNSCachePolicy, hygiene: HTTPDNSAnswerHygiene, now: Double
    ) -> HTTPDNSCacheEntry? {
        guard HTTPDNSHostPolicy.normalize(item.host) == item.host, HTTPDNSHostPolicy.isValidHostName(item.host),
              !HTTPDNSIPAddress.isLiteral(item.host), item.source.utf8.count <= 256,
              item.storedAt.isFinite, item.storedAt >= 0, item.storedAt <= now + 60,
              // Keys hold the family `.auto` stood for; the engine never stores `.auto` itself.
              item.family != .auto
        else { return nil }
        let limit = HTTPDNSFormatLimits.maxAddressesPerName
        let records = HTTPDNSRecordSet(
            host: item.host,
            ipv4: Array(item.addresses.lazy.filter { $0.family == .v4 }.prefix(limit)),
            ipv6: Array(item.addresses.lazy.filter { $0.family == .v6 }.prefix(limit)))
        let kept = hygiene.filter(records, family: item.family).kept
        guard !kept.isEmpty else { return nil }
        // A TTL past 2^31-1 is malformed in every format (RFC 2181 §8), so no save of ours holds
        // one: such an entry is planted and dropped. Others are held to today's floor and ceiling.
        guard (0...HTTPDNSFormatLimits.maxTTL).contains(item.ttl) else { return nil }
        let ttl = policy.effectiveTTL(item.ttl)
        var entry = HTTPDNSCacheEntry(
            addresses: kept, source: item.source, origin: item.origin, storedAt: item.storedAt, ttl: ttl)
        guard now - entry.expiresAt <= Double(policy.settings.maximumStaleAge) else { return nil }
        entry.fromDisk = true
        return entry
    }

    /// `swift-httpdns-cache 2 sha256 <hex>\n` for `body`.
    package static func header(for body: [UInt8], key: [UInt8]?) -> String {
        if let key {
            return "\(magic) \(version) hmac-sha256 \(HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.hmacSHA256(key: key, message: body)))\n"
        }
        return "\(magic) \(version) sha256 \(HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.sha256(body)))\n"
    }
}

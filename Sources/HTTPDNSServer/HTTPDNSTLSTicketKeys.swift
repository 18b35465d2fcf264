import Foundation

/// TLS session ticket keys that several `httpdns serve` instances share, so that a client resumes
/// its TLS session on whichever instance a balancer sends it to (RFC 5077 tickets for TLS 1.2, RFC
/// 8446 §4.6.1 tickets for TLS 1.3). Without them each process has OpenSSL's own random key, and a
/// ticket resumes only where it was issued.
///
/// A key is 80 bytes in nginx's `ssl_session_ticket_key` layout: 16 bytes of key name (sent in the
/// clear inside every ticket, to find the key), 32 of HMAC-SHA256 key, 32 of AES-256-CBC key.
/// **The first key encrypts new tickets; every key decrypts**, and a ticket of a later key is
/// replaced by one of the first. To rotate across a fleet without losing resumption: add the new key
/// second everywhere (every instance can read its tickets), then move it first everywhere, then drop
/// the old key once the tickets it made have expired.
public struct HTTPDNSTLSTicketKeys: Sendable, Hashable, CustomStringConvertible {
    /// Bytes of one key: 80.
    public static let keyBytes = 80
    /// Most keys: 16.
    public static let maxKeys = 16
    /// Largest key file read: 64 KiB.
    public static let maxFileBytes = 64 << 10

    /// The keys, the one that encrypts first.
    public let keys: [[UInt8]]

    /// How many keys, never their bytes (a configuration printed into a log must not leak them).
    public var description: String { "HTTPDNSTLSTicketKeys(\(keys.count) key\(keys.count == 1 ? "" : "s"))" }

    /// Keys as given.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` for no key, more than ``maxKeys``,
    ///   a key that is not ``keyBytes`` long, or two keys with the same name.
    public init(keys: [[UInt8]]) throws(HTTPDNSServiceError) {
        guard !keys.isEmpty else { throw HTTPDNSServiceError(.invalidConfiguration, "no TLS ticket key") }
        guard keys.count <= Self.maxKeys else {
            throw HTTPDNSServiceError(.invalidConfiguration, "more than \(Self.maxKeys) TLS ticket keys")
        }
        var names = Set<[UInt8]>()
        for (index, key) in keys.enumerated() {
            guard key.count == Self.keyBytes else {
                throw HTTPDNSServiceError(.invalidConfiguration, "TLS ticket key \(index + 1) is \(key.count) bytes, not \(Self.keyBytes)")
            }
            guard names.insert(Array(key[0..<16])).inserted else {
                throw HTTPDNSServiceError(.invalidConfiguration, "TLS ticket key \(index + 1) has the name of an earlier key")
            }
        }
        self.keys = keys
    }

    /// Parses a key file's bytes (see ``init(contentsOfFile:)``); `source` names it in errors.
    package static func parse(_ bytes: [UInt8], source: String) throws(HTTPDNSServiceError) -> HTTPDNSTLSTicketKeys {
        guard bytes.count <= maxFileBytes else {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(source): larger than \(maxFileBytes) bytes")
        }
        var keys: [[UInt8]] = []
        for (index, rawLine) in String(decoding: bytes, as: UTF8.self).split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            guard let key = Data(base64Encoded: line), key.count == keyBytes else {
                throw HTTPDNSServiceError(.invalidConfiguration, "\(source):\(index + 1): not a base64 TLS ticket key of \(keyBytes) bytes")
            }
            keys.append([UInt8](key))
        }
        do throws(HTTPDNSServiceError) {
            return try HTTPDNSTLSTicketKeys(keys: keys)
        } catch {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(source): \(error.detail)")
        }
    }

    /// Reads a key file: one key a line in base64 (`openssl rand 80 | base64 -w0`, HAProxy's
    /// `tls-ticket-keys` form), the encrypting key first; blank lines and `#` comments allowed.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` as `path:line: reason` for a line
    ///   that is not one base64 key of ``keyBytes``, or naming the file when it cannot be read, is
    ///   larger than ``maxFileBytes`` or breaks a rule of ``init(keys:)``.
    public init(contentsOfFile path: String) throws(HTTPDNSServiceError) {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = attributes?[.size] as? Int, size > Self.maxFileBytes {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): larger than \(Self.maxFileBytes) bytes")
        }
        guard let data = FileManager.default.contents(atPath: path), data.count <= Self.maxFileBytes else {
            throw HTTPDNSServiceError(.invalidConfiguration, "\(path): cannot read the TLS ticket keys")
        }
        self = try Self.parse([UInt8](data), source: path)
    }
}

/// A domain name as a list of labels (RFC 1035 §3.1), always absolute.
///
/// Labels are raw bytes, so names that are not host names (underscores, spaces, any byte) survive a
/// round trip. Equality and hashing ignore ASCII case, as DNS does (RFC 4343); the original case is
/// kept for printing and encoding. Every initializer enforces labels ≤ 63 octets and a wire length
/// ≤ 255 octets, so a `DNSName` value is always encodable.
package struct DNSName: Sendable, Hashable, CustomStringConvertible {
    /// Longest label in octets (RFC 1035 §2.3.4).
    package static let maxLabelLength = 63
    /// Longest name in wire octets, length bytes and root included (RFC 1035 §2.3.4).
    package static let maxWireLength = 255

    /// The root name `.`.
    package static let root = DNSName(uncheckedLabels: [])

    /// The labels from the leftmost to the rightmost, without the empty root label.
    package let labels: [[UInt8]]

    /// Builds a name from labels.
    ///
    /// - Throws: ``DNSWireError`` `.invalidName` for an empty label, `.labelTooLong`, `.nameTooLong`.
    package init(labels: [[UInt8]]) throws {
        for label in labels {
            if label.isEmpty { throw DNSWireError(.invalidName, offset: 0, section: .text, field: "empty label") }
            if label.count > Self.maxLabelLength {
                throw DNSWireError(.labelTooLong, offset: 0, section: .text)
            }
        }
        let wire = labels.reduce(1) { $0 + 1 + $1.count }
        if wire > Self.maxWireLength { throw DNSWireError(.nameTooLong, offset: 0, section: .text) }
        self.labels = labels
    }

    /// For callers that already checked the limits (the decoder).
    init(uncheckedLabels labels: [[UInt8]]) {
        self.labels = labels
    }

    /// Length of the uncompressed wire form: one length byte per label, the label, the root byte.
    package var wireLength: Int { labels.reduce(1) { $0 + 1 + $1.count } }

    /// True for the root name.
    package var isRoot: Bool { labels.isEmpty }

    /// The labels folded to ASCII lower case; the key for comparison and compression.
    package var lowercasedLabels: [[UInt8]] { labels.map(Self.lowercased) }

    /// The name without its leftmost label; the root's parent is the root.
    package var parent: DNSName {
        labels.isEmpty ? self : DNSName(uncheckedLabels: Array(labels.dropFirst()))
    }

    /// True when `self` equals `other` or lies below it (`www.example.com` is a subdomain of `com`).
    package func isSubdomain(of other: DNSName) -> Bool {
        guard labels.count >= other.labels.count else { return false }
        return zip(labels.suffix(other.labels.count), other.labels).allSatisfy { Self.equalFolded($0, $1) }
    }

    package static func == (lhs: DNSName, rhs: DNSName) -> Bool {
        lhs.labels.count == rhs.labels.count && zip(lhs.labels, rhs.labels).allSatisfy { equalFolded($0, $1) }
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(labels.count)
        for label in labels {
            hasher.combine(label.count)
            for byte in label { hasher.combine(Self.lowercased(byte)) }
        }
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }

    static func lowercased(_ label: [UInt8]) -> [UInt8] {
        label.map { lowercased($0) }
    }

    static func equalFolded(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { lowercased($0) == lowercased($1) }
    }
}

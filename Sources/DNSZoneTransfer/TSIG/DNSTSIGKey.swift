import DNSWire

/// A TSIG shared secret (RFC 8945 §4.1): the key's name, its algorithm and the secret bytes.
///
/// Only HMAC-SHA256 is supported; RFC 8945 §6 makes it mandatory to implement, and every current
/// primary (Knot, BIND, PowerDNS) offers it. The secret never appears in ``description``.
package struct DNSTSIGKey: Sendable, Hashable, CustomStringConvertible {
    /// The MAC algorithm.
    package enum Algorithm: Sendable, Hashable {
        /// HMAC-SHA256 (RFC 8945 §6), 32-byte MACs.
        case hmacSHA256

        /// The algorithm's name on the wire: `hmac-sha256.`.
        package var name: DNSName {
            // A fixed valid name; the initializer cannot throw for it.
            (try? DNSName("hmac-sha256")) ?? .root
        }

        /// Length of a full MAC in bytes.
        package var macLength: Int { 32 }

        /// Algorithm names operators write (RFC 8945 §6 and RFC 4635's HMAC-SHA family).
        static let knownNames: Set<String> = [
            "hmac-md5", "hmac-md5.sig-alg.reg.int", "hmac-sha1", "hmac-sha224", "hmac-sha256",
            "hmac-sha256-128", "hmac-sha384", "hmac-sha384-192", "hmac-sha512", "hmac-sha512-256",
            "gss-tsig",
        ]

        /// Parses an algorithm name, case-insensitive, trailing dot allowed.
        ///
        /// - Throws: `.unsupportedAlgorithm` for a known algorithm other than HMAC-SHA256,
        ///   `.invalidKey` for an unknown word.
        package init(name text: String) throws(DNSTSIGError) {
            var lower = text.lowercased()
            if lower.hasSuffix(".") { lower.removeLast() }
            if lower == "hmac-sha256" {
                self = .hmacSHA256
                return
            }
            if Self.knownNames.contains(lower) {
                throw DNSTSIGError(.unsupportedAlgorithm, "\(lower); only hmac-sha256 is supported")
            }
            throw DNSTSIGError(.invalidKey, "unknown algorithm \(text)")
        }
    }

    /// The key's name, owner of the TSIG record; both sides must use the same one.
    package let name: DNSName
    package let algorithm: Algorithm
    /// The shared secret, decoded from base64.
    package let secret: [UInt8]

    /// A key from its parts.
    ///
    /// - Throws: `.invalidKey` for an empty secret.
    package init(name: DNSName, algorithm: Algorithm = .hmacSHA256, secret: [UInt8]) throws(DNSTSIGError) {
        guard !secret.isEmpty else { throw DNSTSIGError(.invalidKey, "empty secret for \(name)") }
        self.name = name
        self.algorithm = algorithm
        self.secret = secret
    }

    /// `name (hmac-sha256)`, without the secret.
    package var description: String { "\(name) (\(algorithm.name))" }
}

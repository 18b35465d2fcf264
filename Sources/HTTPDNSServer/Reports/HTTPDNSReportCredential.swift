@_spi(HTTPDNSPackage) import HTTPDNSCore

/// The `Authorization` of a `POST /report`, as sent.
///
/// - `Bearer <token>`: a report token the operator configured (RFC 6750 §2.1, token68 characters);
/// - `HTTPDNS-HMAC-SHA256 account=<id>, expires=<unix seconds>, signature=<64 lowercase hex>`, where
///   the signature is HMAC-SHA256 under the account's secret (its UTF-8 bytes) of
///   `"<id>\n<expires>\n"` followed by the body bytes (``message(account:expires:body:)``).
///
/// Scheme names compare case-insensitively (RFC 9110 §11.1); everything else is read exactly: each
/// parameter once, in any order, nothing else, so that no two readers disagree about one header.
package enum HTTPDNSReportCredential: Sendable, Hashable {
    case bearer(String)
    case signed(account: String, expires: Int64, signature: [UInt8])

    /// The HMAC scheme's name.
    package static let hmacScheme = HTTPDNSReportWire.hmacScheme
    /// Longest header read; anything longer is not a credential of either kind.
    package static let maxHeaderBytes = 1_024
    /// Longest account id (the Alibaba and DNSPod ids are a few digits).
    package static let maxAccountBytes = 64

    /// Reads the header's value; nil when it is absent or not one of the two forms (401).
    package init?(header value: String?) {
        guard let value, value.utf8.count <= Self.maxHeaderBytes else { return nil }
        let bytes = Array(value.utf8)
        guard let space = bytes.firstIndex(of: 0x20) else { return nil }
        let scheme = String(decoding: bytes[..<space], as: UTF8.self)
        var rest = bytes[space...]
        while rest.first == 0x20 { rest = rest.dropFirst() }
        if HTTPDNSASCII.equalsIgnoringCase(scheme, "Bearer") {
            guard !rest.isEmpty, rest.allSatisfy(Self.isToken68) else { return nil }
            self = .bearer(String(decoding: rest, as: UTF8.self))
        } else if HTTPDNSASCII.equalsIgnoringCase(scheme, Self.hmacScheme) {
            guard let signed = Self.signedParameters(rest) else { return nil }
            self = signed
        } else {
            return nil
        }
    }

    /// Who reports under this credential, as the report state counts it (a token, or an account):
    /// a hash, so that no token is kept beside the state. Never 0 (0 is "unknown").
    package var owner: UInt64 {
        var hasher = Hasher()
        switch self {
        case .bearer(let token): hasher.combine("bearer \(token)")
        case .signed(let account, _, _): hasher.combine("account \(account)")
        }
        return UInt64(bitPattern: Int64(hasher.finalize())) | 1
    }

    /// The bytes signed (``HTTPDNSReportWire/message(account:expires:body:)``).
    package static func message(account: String, expires: Int64, body: [UInt8]) -> [UInt8] {
        HTTPDNSReportWire.message(account: account, expires: expires, body: body)
    }

    /// The signature as lowercase hex, as a client computes it.
    package static func signature(account: String, expires: Int64, body: [UInt8], secret: String) -> String {
        HTTPDNSReportWire.signature(account: account, expires: expires, body: body, secret: secret)
    }

    /// The header value a client sends for a signed body.
    package static func signedHeader(account: String, expires: Int64, body: [UInt8], secret: String) -> String {
        HTTPDNSReportWire.signedHeader(account: account, expires: expires, body: body, secret: secret)
    }

    /// `account=…, expires=…, signature=…` in any order, each once; optional spaces around commas.
    private static func signedParameters(_ text: ArraySlice<UInt8>) -> HTTPDNSReportCredential? {
        var account: String?
        var expires: Int64?
        var signature: [UInt8]?
        for part in text.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            var item = part[...]
            while item.first == 0x20 { item = item.dropFirst() }
            while item.last == 0x20 { item = item.dropLast() }
            guard let equals = item.firstIndex(of: UInt8(ascii: "=")) else { return nil }
            let name = String(decoding: item[..<equals], as: UTF8.self)
            let value = item[(equals + 1)...]
            switch name {
            case "account":
                guard account == nil, (1...maxAccountBytes).contains(value.count), value.allSatisfy(isAccountByte) else { return nil }
                account = String(decoding: value, as: UTF8.self)
            case "expires":
                guard expires == nil, (1...18).contains(value.count), value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
                expires = Int64(String(decoding: value, as: UTF8.self))
            case "signature":
                guard signature == nil, value.count == 64, value.allSatisfy(isLowerHex),
                      let decoded = try? HTTPDNSCrypto.hexDecode(Array(value))
                else { return nil }
                signature = decoded
            default:
                return nil
            }
        }
        guard let account, let expires, let signature else { return nil }
        return .signed(account: account, expires: expires, signature: signature)
    }

    /// RFC 7235 token68: `A-Z a-z 0-9 - . _ ~ + /` and trailing `=`.
    static func isToken68(_ byte: UInt8) -> Bool {
        isAccountByte(byte) || byte == UInt8(ascii: "~") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
            || byte == UInt8(ascii: "=")
    }

    static func isAccountByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7a) || byte == 0x2d || byte == 0x5f || byte == 0x2e
    }

    static func isLowerHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
    }
}

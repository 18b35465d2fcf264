import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore

extension HTTPDNSService {
    /// The admin token an `Authorization` value carries: `Bearer TOKEN`, or `Basic` with
    /// base64(`user:TOKEN`) for any user (schemes case-insensitive); nil for anything else.
    static func adminToken(_ value: String?) -> String? {
        guard let value, value.utf8.count <= 1_024 else { return nil }
        if let token = credentials(value, scheme: "bearer ") { return token }
        guard let encoded = credentials(value, scheme: "basic "),
            let decoded = Data(base64Encoded: encoded), let pair = String(data: decoded, encoding: .utf8),
            let colon = pair.firstIndex(of: ":")
        else { return nil }
        let password = pair[pair.index(after: colon)...]
        return password.isEmpty ? nil : String(password)
    }

    /// What follows `scheme` (lowercase, with its space) in `value`, spaces skipped; nil when
    /// `value` has another scheme or nothing after it.
    private static func credentials(_ value: String, scheme: String) -> String? {
        let bytes = Array(value.utf8)
        let scheme = Array(scheme.utf8)
        guard bytes.count > scheme.count, zip(bytes, scheme).allSatisfy({ HTTPDNSASCII.lowercased($0) == $1 }) else { return nil }
        let token = bytes[scheme.count...].drop { $0 == UInt8(ascii: " ") }
        return token.isEmpty ? nil : String(decoding: token, as: UTF8.self)
    }

    /// Compares digests of the two tokens in constant time, so that the time taken says nothing
    /// about how much of a guess was right (nor its length).
    static func tokensMatch(_ given: String, _ expected: String) -> Bool {
        let lhs = HTTPDNSCrypto.sha256(Array(given.utf8))
        let rhs = HTTPDNSCrypto.sha256(Array(expected.utf8))
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
        return difference == 0 && lhs.count == rhs.count
    }
}

/// The failure-report wire contract, one definition for both ends: the client that sends reports
/// (`HTTPDNSFailureReports`) and the service that reads them (`POST /report`).
///
/// A body is `{"reports":[{"host":"www.example.test","address":"192.0.2.1","port":443,
/// "error":"connect-timeout","time":1796300000}]}`; a request carries `Authorization: Bearer TOKEN`
/// or an account's signature, `HTTPDNS-HMAC-SHA256 account=ID, expires=UNIX, signature=HEX`, the
/// lowercase hex HMAC-SHA256 under the account secret's UTF-8 bytes of ``message(account:expires:body:)``.
package enum HTTPDNSReportWire {
    /// Why an app could not use an address: the `error` member.
    package enum ErrorClass: String, Sendable, Hashable, CaseIterable {
        case connectRefused = "connect-refused"
        case connectTimeout = "connect-timeout"
        case tlsVerification = "tls-verification"
        case tlsHandshake = "tls-handshake"
        case unreachable
        case reset
    }

    /// The scheme of a signed `Authorization` value.
    package static let hmacScheme = "HTTPDNS-HMAC-SHA256"

    /// The bytes signed: `"<account>\n<expires>\n"` then the body.
    package static func message(account: String, expires: Int64, body: [UInt8]) -> [UInt8] {
        Array("\(account)\n\(expires)\n".utf8) + body
    }

    /// The signature as lowercase hex.
    package static func signature(account: String, expires: Int64, body: [UInt8], secret: String) -> String {
        HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.hmacSHA256(key: Array(secret.utf8), message: message(account: account, expires: expires, body: body)))
    }

    /// The `Authorization` value for a body signed by an account.
    package static func signedHeader(account: String, expires: Int64, body: [UInt8], secret: String) -> String {
        "\(hmacScheme) account=\(account), expires=\(expires), signature=\(signature(account: account, expires: expires, body: body, secret: secret))"
    }
}

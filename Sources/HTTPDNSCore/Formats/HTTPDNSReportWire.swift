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

    /// One failed address: where a connection went and how it failed, nothing of the request.
    package struct Item: Sendable, Hashable {
        /// The name the app resolved, normalised (lower case, no trailing dot).
        package var host: String
        /// The address that failed (an IPv4-mapped IPv6 address is read as the IPv4 address).
        package var address: HTTPDNSIPAddress
        /// The port the app connected to, 1-65535.
        package var port: Int
        package var error: ErrorClass
        /// When it failed, in the app's clock (Unix seconds). Kept for the record only: the server
        /// counts reports in its own time, since a phone's clock is anyone's guess.
        package var time: Int64

        package init(host: String, address: HTTPDNSIPAddress, port: Int, error: ErrorClass, time: Int64) {
            self.host = host
            self.address = address
            self.port = port
            self.error = error
            self.time = time
        }
    }

    /// A request body: `{"reports":[{"host":…,"address":…,"port":…,"error":…,"time":…},…]}`.
    package static func body(_ items: [Item]) -> [UInt8] {
        var text = #"{"reports":["#
        for (index, item) in items.enumerated() {
            if index > 0 { text += "," }
            text += #"{"host":\#(HTTPDNSJSONText.quote(item.host)),"address":\#(HTTPDNSJSONText.quote(item.address.description)),"#
            text += #""port":\#(item.port),"error":"\#(item.error.rawValue)","time":\#(item.time)}"#
        }
        text += "]}"
        return Array(text.utf8)
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

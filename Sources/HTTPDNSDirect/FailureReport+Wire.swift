import Foundation
import HTTPDNSCore

extension FailureReport {
    /// Seconds an account signature stays valid after it is made.
    package static let signatureLifetime: Int64 = 600

    /// The request body (``HTTPDNSReportWire/body(_:)``).
    package static func body(_ reports: [FailureReport]) -> [UInt8] {
        HTTPDNSReportWire.body(reports)
    }

    /// The `Authorization` value for `body` sent at `now` (Unix seconds).
    ///
    /// An account signs `"ID\nEXPIRES\n" + body` with HMAC-SHA256 under its secret's UTF-8 bytes;
    /// `EXPIRES` is ``signatureLifetime`` after `now`, so a captured request cannot be replayed later.
    package static func authorization(_ credential: HTTPDNSFailureReports.Credential, body: [UInt8], now: Double) -> String {
        switch credential {
        case .token(let token):
            return "Bearer \(token)"
        case .account(let id, let secret):
            let expires = Int64(now.rounded(.down)) + signatureLifetime
            return HTTPDNSReportWire.signedHeader(account: id, expires: expires, body: body, secret: secret)
        }
    }

    /// The wait a `Retry-After` value asks for (RFC 9110 §10.2.3: delay-seconds or an HTTP-date),
    /// in seconds from `now` (Unix seconds); nil when absent or unreadable.
    package static func retryAfter(_ value: String?, now: Double) -> Double? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return Double(value.prefix(9))
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: value) else { return nil }
        return max(0, date.timeIntervalSince1970 - now)
    }
}

/// Why a Redis exchange failed: a stable code and a short detail (never a password).
///
/// The report sharer never throws these at callers: it counts them
/// (`httpdns_redis_errors_total{code}`) and carries on alone until Redis answers again.
package struct HTTPDNSRedisError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case connect
            case auth
            case select
            case io
            case reply
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection could not be opened within the connect timeout.
        package static let connect = Code(.connect)
        /// `AUTH` was refused (wrong password or user).
        package static let auth = Code(.auth)
        /// `SELECT` was refused (no such database).
        package static let select = Code(.select)
        /// The connection broke or a command timed out.
        package static let io = Code(.io)
        /// Redis answered a command with an error, or with a reply of the wrong shape.
        package static let reply = Code(.reply)

        package static let allCases: [Code] = [.connect, .auth, .select, .io, .reply]
        package var description: String { base.rawValue }
    }

    package var code: Code
    /// Context for people: the first word of Redis's error, or what broke (never a password).
    package var detail: String

    package init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    package var description: String { "redis \(code): \(detail)" }
}

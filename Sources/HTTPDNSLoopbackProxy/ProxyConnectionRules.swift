/// What every connection's state machine checks and times, fixed when the proxy starts: the
/// credential, the target policy and the deadlines (monotonic nanoseconds).
struct ProxyConnectionRules: Sendable {
    /// The expected `Proxy-Authorization: Basic` token (base64 of `user:password`), nil when none is required.
    var token: [UInt8]?
    var policy: ProxyTargetPolicy
    /// From the client's connect to a complete request head.
    var headTimeout: UInt64
    /// A relay with no byte moving either way.
    var idleTimeout: UInt64
    /// One connect attempt.
    var connectTimeout: UInt64
    /// While the proxy drains: how long a connection must have moved no byte (and hold none) to
    /// count as idle and close. A request on its way arrives well within it and is relayed; the
    /// same second `httpdns serve`'s drain waits for (`HTTPServer.Limits.drainQuietPeriod`).
    var drainQuietTime: UInt64 = 1_000_000_000

    /// How long a refused client's input is read and dropped after the answer, so that closing does
    /// not reset the connection before the client has read the answer.
    static let drainTime: UInt64 = 1_000_000_000

    /// Whether `head` carries the credential (see ``ProxySettings/matches(_:token:)``).
    func authorizes(_ head: ProxyRequestHead) -> Bool {
        guard let expected = token else { return true }
        guard var value = head.value(of: "proxy-authorization") else { return false }
        return value.withUTF8 { ProxySettings.matches(UnsafeRawBufferPointer($0), token: expected) }
    }
}

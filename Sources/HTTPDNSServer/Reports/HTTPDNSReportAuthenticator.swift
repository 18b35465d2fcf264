import HTTPDNSCore

/// Decides whether a report batch may be recorded: a pure function of the configured tokens and
/// secrets, the `Authorization` header, the body and the time.
///
/// Secrets are the ones the server already holds for its accounts (Alibaba signing secrets, DNSPod
/// account keys); an id known to both may sign with either. Every comparison runs without an early
/// exit: a token is compared as its SHA-256 (so a guess of the wrong length takes as long as any
/// other), and every candidate secret of an account is tried before the answer is known.
package struct HTTPDNSReportAuthenticator: Sendable {
    /// What to do with the request.
    package enum Verdict: Sendable, Hashable {
        /// Record it; `principal` names who sent it (`token` or `account:<id>`) for the status page.
        case accepted(principal: String)
        /// 401: no credential, or one that cannot be read.
        case unauthorized(String)
        /// 403: a token or signature that does not match, an unknown account, an expired or
        /// too-distant expiry.
        case forbidden(String)
    }

    /// Longest time ahead an `expires` may lie: an hour, so a captured request cannot be replayed
    /// for long.
    package static let maxValiditySeconds: Int64 = 3_600

    private let tokenDigests: [[UInt8]]
    private let secrets: [String: [[UInt8]]]

    /// - Parameters:
    ///   - tokens: bearer tokens accepted (empty ones are ignored).
    ///   - secrets: account id → the secrets it may sign with (empty ones are ignored).
    package init(tokens: [String], secrets: [String: [String]]) {
        tokenDigests = tokens.filter { !$0.isEmpty }.map { HTTPDNSCrypto.sha256(Array($0.utf8)) }
        var keys: [String: [[UInt8]]] = [:]
        for (account, list) in secrets {
            let usable = list.filter { !$0.isEmpty }.map { Array($0.utf8) }
            if !usable.isEmpty { keys[account] = usable }
        }
        self.secrets = keys
    }

    /// The accounts and secrets of a service configuration: Alibaba's signing secrets and DNSPod's
    /// account keys.
    package init(tokens: [String], alibaba: HTTPDNSService.Alibaba, dnspod: HTTPDNSService.DNSPod) {
        var secrets: [String: [String]] = [:]
        for (account, secret) in alibaba.secrets { secrets[account, default: []].append(secret) }
        for (account, key) in dnspod.accountKeys { secrets[account, default: []].append(key) }
        self.init(tokens: tokens, secrets: secrets)
    }

    /// Whether any credential at all could be accepted.
    package var acceptsAnything: Bool { !tokenDigests.isEmpty || !secrets.isEmpty }

    /// The verdict for a request carrying `authorization` (nil: no header) and `body` at `now`
    /// (seconds since 1970).
    package func verify(authorization: String?, body: [UInt8], now: Double) -> Verdict {
        guard authorization != nil else { return .unauthorized("missing credential") }
        guard let credential = HTTPDNSReportCredential(header: authorization) else { return .unauthorized("unreadable credential") }
        switch credential {
        case .bearer(let token):
            let digest = HTTPDNSCrypto.sha256(Array(token.utf8))
            var matched = false
            for known in tokenDigests where Self.constantTimeEqual(digest, known) { matched = true }
            return matched ? .accepted(principal: "token") : .forbidden("wrong token")
        case .signed(let account, let expires, let signature):
            guard Double(expires) >= now.rounded(.down) else { return .forbidden("expired") }
            guard Double(expires) <= now + Double(Self.maxValiditySeconds) else { return .forbidden("expiry too far ahead") }
            guard let keys = secrets[account] else { return .forbidden("unknown account") }
            let message = HTTPDNSReportCredential.message(account: account, expires: expires, body: body)
            var matched = false
            for key in keys where Self.constantTimeEqual(HTTPDNSCrypto.hmacSHA256(key: key, message: message), signature) {
                matched = true
            }
            return matched ? .accepted(principal: "account:\(account)") : .forbidden("wrong signature")
        }
    }

    /// Compares without an early exit, so response time does not reveal how much of a guess was right.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(lhs, rhs) { difference |= a ^ b }
        return difference == 0
    }
}

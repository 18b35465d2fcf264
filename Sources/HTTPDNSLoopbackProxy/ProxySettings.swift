import Foundation
import HTTPDNS
@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPDNSDirect
import Synchronization

/// What the loops need from the proxy, fixed at start and shared by every loop: a class of
/// constants (no struct copied on each use), plus the one count the loops share.
final class ProxySettings: Sendable {
    let configuration: HTTPDNSProxy.Configuration
    let policy: ProxyTargetPolicy
    let connector: ProxyConnector
    let monitor: any HTTPDNSProxyMonitor
    /// The credential, target policy and deadlines every connection's state machine applies.
    let rules: ProxyConnectionRules
    /// Client connections open now, over all loops (bounded by `configuration.maxConnections`).
    let admitted = Atomic<Int>(0)

    init(configuration: HTTPDNSProxy.Configuration, policy: ProxyTargetPolicy, connector: ProxyConnector) {
        self.configuration = configuration
        self.policy = policy
        self.connector = connector
        self.monitor = configuration.monitor ?? ProxyNoMonitor()
        rules = ProxyConnectionRules(
            token: configuration.credential.map { Array(Data("\($0.user):\($0.password)".utf8).base64EncodedString().utf8) },
            policy: policy, headTimeout: Self.nanoseconds(configuration.headTimeout),
            idleTimeout: Self.nanoseconds(configuration.idleTimeout), connectTimeout: Self.nanoseconds(configuration.connectTimeout))
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// Takes a connection slot; false when all `maxConnections` are in use.
    func admit() -> Bool {
        let (_, admitted) = admitted.add(1, ordering: .relaxed)
        if admitted <= configuration.maxConnections { return true }
        self.admitted.subtract(1, ordering: .relaxed)
        return false
    }

    /// Gives a slot back.
    func release() {
        admitted.subtract(1, ordering: .relaxed)
    }

    /// Whether a `Proxy-Authorization` value (it comes trimmed) carries the credential: RFC 7617
    /// Basic, the scheme in any case, the token the canonical base64 of `user:password` as every
    /// client sends it. The comparison takes the same time wherever the first difference is.
    static func matches(_ value: UnsafeRawBufferPointer, token expected: [UInt8]) -> Bool {
        var index = 0
        while index < value.count, value[index] != 0x20 { index += 1 }
        guard index == 5, HTTPDNSASCII.equalsIgnoringCase(value[0..<5], "basic".utf8) else { return false }
        while index < value.count, value[index] == 0x20 || value[index] == 0x09 { index += 1 }
        let given = value[index...]
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for offset in expected.indices {
            difference |= expected[offset] ^ (offset < given.count ? given[given.startIndex + offset] : 0)
        }
        return difference == 0
    }
}

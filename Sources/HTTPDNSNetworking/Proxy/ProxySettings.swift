import Foundation
import HTTPDNS
import HTTPDNSCore
import Synchronization

/// What the loops need from the proxy, fixed at start and shared by every loop: a class of
/// constants (no struct copied on each use), plus the one count the loops share.
final class ProxySettings: Sendable {
    let configuration: HTTPDNSProxy.Configuration
    let policy: ProxyTargetPolicy
    let connector: ProxyConnector
    let monitor: any HTTPDNSEventMonitor
    /// The expected `Proxy-Authorization` credential bytes (`user:password`), nil when none is required.
    let credential: [UInt8]?
    let headTimeout: UInt64
    let idleTimeout: UInt64
    let connectTimeout: UInt64
    /// Client connections open now, over all loops (bounded by `configuration.maxConnections`).
    let admitted = Atomic<Int>(0)

    init(configuration: HTTPDNSProxy.Configuration, policy: ProxyTargetPolicy, connector: ProxyConnector) {
        self.configuration = configuration
        self.policy = policy
        self.connector = connector
        self.monitor = connector.monitor
        self.credential = configuration.credential.map { Array("\($0.user):\($0.password)".utf8) }
        headTimeout = Self.nanoseconds(configuration.headTimeout)
        idleTimeout = Self.nanoseconds(configuration.idleTimeout)
        connectTimeout = Self.nanoseconds(configuration.connectTimeout)
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

    /// Whether `head` carries the credential (RFC 7617 Basic; the scheme is case-insensitive). The
    /// comparison takes the same time wherever the first difference is.
    func authorizes(_ head: ProxyRequestHead) -> Bool {
        guard let expected = credential else { return true }
        guard let value = head.value(of: "proxy-authorization") else { return false }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = Data(base64Encoded: String(parts[1]).trimmingBlanks)
        else { return false }
        let given = [UInt8](decoded)
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for index in expected.indices {
            difference |= expected[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }
}

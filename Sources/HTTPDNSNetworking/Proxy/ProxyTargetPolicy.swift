import Foundation
import HTTPDNSCore

/// Which addresses the proxy may connect to: never itself, loopback and private space only when
/// allowed (one switch, as for answers). A program on this machine must not be able to use the proxy to reach services that
/// listen on loopback or the intranet only.
struct ProxyTargetPolicy: Sendable {
    var allowPrivate: Bool
    /// The proxy's own endpoints.
    var listeners: [(address: HTTPDNSIPAddress, port: UInt16)]

    /// Whether a tunnel to `address`:`port` is allowed.
    func allows(_ address: HTTPDNSIPAddress, port: UInt16) -> Bool {
        let plain = address.ipv4Mapped ?? address
        for listener in listeners where listener.port == port {
            // A wildcard listener is reachable on every local address.
            if listener.address == plain || listener.address.isUnspecified || (plain.isLoopback && listener.address.isLoopback) {
                return false
            }
        }
        if plain.isUnspecified { return false }
        if plain.isLoopback || plain.isPrivateOrReserved { return allowPrivate }
        return true
    }
}

/// What the loop needs from the proxy, fixed at start.
struct ProxySettings: Sendable {
    var configuration: HTTPDNSProxy.Configuration
    var policy: ProxyTargetPolicy
    var connector: ProxyConnector
    /// The expected `Proxy-Authorization` credential bytes (`user:password`), nil when none is required.
    var credential: [UInt8]?

    init(configuration: HTTPDNSProxy.Configuration, policy: ProxyTargetPolicy, connector: ProxyConnector) {
        self.configuration = configuration
        self.policy = policy
        self.connector = connector
        self.credential = configuration.credential.map { Array("\($0.user):\($0.password)".utf8) }
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

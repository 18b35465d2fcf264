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

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPDNSCore

/// Which address families the host can reach the Internet with, as `getaddrinfo`'s
/// `AI_ADDRCONFIG` decides but without DNS and without sending anything.
///
/// `connect()` on a UDP socket only asks the kernel for a route and a source address: no packet
/// leaves. A family counts when the route to a global address exists and the source address the
/// kernel picks is neither loopback, link-local nor unspecified (an interface with only a
/// link-local address reaches nothing beyond its link). The targets are documentation addresses
/// (RFC 5737, RFC 3849): global in scope, so they follow the default route, and never a real host.
enum HTTPDNSRouteProbe {
    /// The families with a route, as the engine's ``HTTPDNSAddressFamily/auto`` needs them.
    struct Families: Sendable, Hashable {
        var ipv4: Bool
        var ipv6: Bool
    }

    /// Asks the kernel now; a handful of system calls, none of them blocking.
    static func families() -> Families {
        Families(
            ipv4: hasRoute(to: HTTPDNSIPAddress(bytes: [198, 51, 100, 1])!),
            ipv6: hasRoute(to: HTTPDNSIPAddress(bytes: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1])!))
    }

    /// Whether a UDP socket can be connected to `address` from a usable source address.
    static func hasRoute(to address: HTTPDNSIPAddress) -> Bool {
        let isV6 = address.family == .v6
        #if canImport(Darwin)
        let fd = socket(isV6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0)
        #else
        let fd = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #endif
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var storage = sockaddr_storage()
        let length: socklen_t
        let bytes = address.bytes
        if isV6 {
            var target = sockaddr_in6()
            target.sin6_family = sa_family_t(AF_INET6)
            target.sin6_port = UInt16(53).bigEndian
            withUnsafeMutableBytes(of: &target.sin6_addr) { raw in raw.copyBytes(from: bytes) }
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: target) { raw.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var target = sockaddr_in()
            target.sin_family = sa_family_t(AF_INET)
            target.sin_port = UInt16(53).bigEndian
            withUnsafeMutableBytes(of: &target.sin_addr) { raw in raw.copyBytes(from: bytes) }
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: target) { raw.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        let connected = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        guard connected == 0 else { return false }
        var source = sockaddr_storage()
        var sourceLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &source) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &sourceLength) }
        }
        guard named == 0, let local = sourceAddress(source) else { return false }
        return usable(local)
    }

    /// Whether a source address reaches beyond the host and its link.
    static func usable(_ address: HTTPDNSIPAddress) -> Bool {
        guard !address.isUnspecified, !address.isLoopback else { return false }
        let bytes = address.bytes
        if address.family == .v6 { return !(bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80) }
        return !(bytes[0] == 169 && bytes[1] == 254)
    }

    private static func sourceAddress(_ storage: sockaddr_storage) -> HTTPDNSIPAddress? {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: &storage) { raw in
                let address = raw.load(as: sockaddr_in.self).sin_addr
                return withUnsafeBytes(of: address) { HTTPDNSIPAddress(bytes: Array($0)) }
            }
        case AF_INET6:
            return withUnsafeBytes(of: &storage) { raw in
                let address = raw.load(as: sockaddr_in6.self).sin6_addr
                return withUnsafeBytes(of: address) { HTTPDNSIPAddress(bytes: Array($0)) }
            }
        default:
            return nil
        }
    }
}

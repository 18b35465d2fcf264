#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import DNSSockets
import HTTPDNSCore

extension DNSStubServer {
    /// The address the TCP socket is bound to: ``Configuration/address``, or the address of the
    /// socket systemd passed.
    package var localAddress: HTTPDNSIPAddress {
        tcp.localAddress?.address ?? configuration.address
    }
}

extension DNSStubSocket {
    /// The socket systemd passed as `fd`, else a new one bound to `address` (``bind(_:datagram:)``).
    static func adopt(_ fd: Int32?, orBind address: SocketAddress, datagram: Bool) throws(DNSStubError) -> DNSStubSocket {
        if let fd { return DNSStubSocket(fd: fd) }
        return try bind(address, datagram: datagram)
    }
}

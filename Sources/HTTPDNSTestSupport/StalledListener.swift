import Foundation
import HTTPDNSCore

/// A loopback port whose listener never accepts and whose accept queue is full: the kernel drops
/// every further SYN, so a connect to it neither succeeds nor is refused until the client's connect
/// timeout — a timed-out address without leaving loopback (Linux drops a SYN to a listener whose
/// accept queue is full, `tcp_conn_request`'s `sk_acceptq_is_full`).
package final class StalledListener {
    /// The address listened on.
    package let address: HTTPDNSIPAddress
    /// The bound port.
    package let port: Int
    private let listener: Int32
    private var fillers: [Int32] = []

    /// Listens on `address` (IPv4 loopback), port 0, with a backlog of 0, and fills the queue.
    package init(address: String) throws {
        guard let ip = HTTPDNSIPAddress(address), ip.family == .v4 else { throw ToolRunner.Failure("an IPv4 address, not \(address)") }
        self.address = ip
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var bound = StalledListener.sockaddr(ip, port: 0)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafePointer(to: &bound) { pointer in
            pointer.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { bind(listener, $0, size) == 0 && listen(listener, 0) == 0 }
        }
        guard ok else {
            let text = String(cString: strerror(errno))
            close(listener)
            throw ToolRunner.Failure("cannot listen on \(address): \(text)")
        }
        var name = sockaddr_in()
        var length = size
        _ = withUnsafeMutablePointer(to: &name) { pointer in
            pointer.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: name.sin_port))
        self.port = port
        // Backlog 0 holds one finished handshake; a second connect makes sure the queue is full.
        for _ in 0..<2 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var target = StalledListener.sockaddr(ip, port: UInt16(port))
            _ = withUnsafePointer(to: &target) { pointer in
                pointer.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { connect(filler, $0, size) }
            }
            fillers.append(filler)
        }
        usleep(100_000)
    }

    deinit {
        for filler in fillers { close(filler) }
        close(listener)
    }

    private static func sockaddr(_ address: HTTPDNSIPAddress, port: UInt16) -> sockaddr_in {
        var value = sockaddr_in()
        value.sin_family = sa_family_t(AF_INET)
        value.sin_port = port.bigEndian
        let bytes = address.bytes
        value.sin_addr.s_addr = (UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24)
        return value
    }
}

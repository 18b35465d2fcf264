#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CSockets
import DNSSockets

/// The answers the UDP thread made itself, sent together with `sendmmsg` once no query is left
/// waiting in the socket (or 64 are ready): under load, one wake-up of a client that waits for many
/// answers, and one system call, instead of one each. A lone query is answered as soon as it is
/// read, since the next receive finds nothing and sends it.
struct DNSStubUDPBatch {
    /// Most answers held before they are sent.
    static let capacity = 64

    private var arena: [UInt8] = []
    private var entries: [(offset: Int, length: Int, peer: SocketAddress)] = []

    init() {
        arena.reserveCapacity(Self.capacity * 512)
        entries.reserveCapacity(Self.capacity)
    }

    var isEmpty: Bool { entries.isEmpty }
    var isFull: Bool { entries.count >= Self.capacity }

    mutating func append(_ bytes: [UInt8], to peer: SocketAddress) {
        entries.append((arena.count, bytes.count, peer))
        arena += bytes
    }

    /// Sends every answer held on `fd` (a full socket buffer drops some, as the network may).
    mutating func flush(on fd: Int32) {
        guard !entries.isEmpty else { return }
        arena.withUnsafeBytes { base in
            var datagrams = entries.map { entry in
                var datagram = httpdns_datagram()
                datagram.bytes = UnsafeRawPointer(base.baseAddress! + entry.offset)
                datagram.length = entry.length
                entry.peer.withSockAddr { address, length in
                    withUnsafeMutableBytes(of: &datagram.peer) { _ = memcpy($0.baseAddress!, address, Int(length)) }
                    datagram.peer_length = length
                }
                return datagram
            }
            _ = httpdns_send_datagrams(fd, &datagrams, UInt32(datagrams.count))
        }
        entries.removeAll(keepingCapacity: true)
        arena.removeAll(keepingCapacity: true)
    }
}

import DNSWire

/// The transport a query arrived on; it sets how large the answer may be.
package enum DNSStubTransport: Sendable, Hashable {
    /// A datagram: 512 bytes without EDNS (RFC 1035 §4.2.1), else the client's payload size, capped.
    case udp
    /// A TCP message: up to 65,535 bytes (RFC 1035 §4.2.2, RFC 7766 §8).
    case tcp
}

/// One query the stub resolves, read from a datagram or a TCP message by
/// ``read(_:transport:)``: what the answer must echo and what it may contain.
package struct DNSStubRequest: Sendable, Hashable {
    /// Largest UDP answer ever sent, whatever a client advertises (RFC 6891 §6.2.5 allows 4,096; more
    /// only fragments).
    package static let maxUDPPayloadSize = 4096
    /// Smallest UDP limit: a client's advertised size below 512 counts as 512 (RFC 6891 §6.2.5).
    package static let minUDPPayloadSize = 512

    /// The client's EDNS(0), as the stub needs it (RFC 6891).
    package struct EDNS: Sendable, Hashable {
        /// The UDP payload size the client advertised, as sent.
        package var udpPayloadSize: UInt16
        /// DO: the client wants DNSSEC records (RFC 3225); echoed in the answer's OPT.
        package var dnssecOK: Bool
        /// The client's Client Subnet option (RFC 7871), checked; nil when absent.
        package var clientSubnet: DNSStubClientSubnet?

        package init(udpPayloadSize: UInt16 = 1232, dnssecOK: Bool = false, clientSubnet: DNSStubClientSubnet? = nil) {
            self.udpPayloadSize = udpPayloadSize
            self.dnssecOK = dnssecOK
            self.clientSubnet = clientSubnet
        }
    }

    package var id: UInt16
    /// The question exactly as asked, name case included: the answer echoes it byte for byte
    /// (RFC 1035 §7.3; clients using 0x20 case randomisation check it).
    package var question: DNSQuestion
    /// RD, copied into the answer (RFC 1035 §4.1.1).
    package var recursionDesired: Bool
    /// CD, copied into the answer and passed upstream (RFC 4035 §3.2.2).
    package var checkingDisabled: Bool
    /// The client's AD bit: it understands AD even without DO (RFC 6840 §5.7).
    package var authenticData: Bool
    /// The client's EDNS; nil when it sent no OPT record (then the answer carries none either).
    package var edns: EDNS?
    package var transport: DNSStubTransport

    package init(
        id: UInt16, question: DNSQuestion, recursionDesired: Bool = true, checkingDisabled: Bool = false,
        authenticData: Bool = false, edns: EDNS? = nil, transport: DNSStubTransport = .udp
    ) {
        self.id = id
        self.question = question
        self.recursionDesired = recursionDesired
        self.checkingDisabled = checkingDisabled
        self.authenticData = authenticData
        self.edns = edns
        self.transport = transport
    }

    /// The DO bit; false without EDNS.
    package var dnssecOK: Bool { edns?.dnssecOK ?? false }

    /// The largest answer this client may get, in bytes.
    ///
    /// - Parameter maxUDPPayloadSize: the stub's own cap for UDP, default 1232 (DNS Flag Day 2020),
    ///   itself kept within 512…4096.
    /// - Returns: over TCP 65,535; over UDP 512 without EDNS (RFC 1035 §4.2.1), else the client's
    ///   payload size raised to 512 (RFC 6891 §6.2.5) and capped at `maxUDPPayloadSize`.
    package func responseSizeLimit(maxUDPPayloadSize: Int = 1232) -> Int {
        Self.responseSizeLimit(transport: transport, edns: edns, maxUDPPayloadSize: maxUDPPayloadSize)
    }

    static func responseSizeLimit(transport: DNSStubTransport, edns: EDNS?, maxUDPPayloadSize: Int) -> Int {
        switch transport {
        case .tcp:
            return Int(UInt16.max)
        case .udp:
            guard let edns else { return minUDPPayloadSize }
            let cap = clampedUDPPayloadSize(maxUDPPayloadSize)
            return min(max(minUDPPayloadSize, Int(edns.udpPayloadSize)), cap)
        }
    }

    /// `size` kept within 512…4096: the payload size the stub advertises and caps answers at.
    package static func clampedUDPPayloadSize(_ size: Int) -> Int {
        min(max(minUDPPayloadSize, size), maxUDPPayloadSize)
    }
}

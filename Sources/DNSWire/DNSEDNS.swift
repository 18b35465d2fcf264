/// The contents of an EDNS(0) OPT pseudo-record (RFC 6891 §6.1.2-6.1.3).
///
/// The OPT record reuses CLASS as the requester's UDP payload size and TTL as extended RCODE,
/// version and flags; this value holds those fields so that callers need not unpack them.
package struct DNSEDNS: Sendable, Hashable {
    /// Largest UDP payload the sender can reassemble. Default 1232, the DNS Flag Day 2020 value that
    /// avoids IP fragmentation on common paths.
    package var udpPayloadSize: UInt16
    /// Upper 8 bits of the 12-bit extended RCODE.
    package var extendedRCode: UInt8
    /// EDNS version; only 0 exists.
    package var version: UInt8
    /// The DO bit: the sender wants DNSSEC records (RFC 3225).
    package var dnssecOK: Bool
    /// The other 15 flag bits, kept so that a decoded record re-encodes unchanged. Senders set 0.
    package var reservedFlags: UInt16
    /// The options as raw `code, length, data` triples (RFC 6891 §6.1.2).
    package var options: [UInt8]

    package init(
        udpPayloadSize: UInt16 = 1232, extendedRCode: UInt8 = 0, version: UInt8 = 0, dnssecOK: Bool = false,
        reservedFlags: UInt16 = 0, options: [UInt8] = []
    ) {
        self.udpPayloadSize = udpPayloadSize
        self.extendedRCode = extendedRCode
        self.version = version
        self.dnssecOK = dnssecOK
        self.reservedFlags = reservedFlags & 0x7FFF
        self.options = options
    }

    /// Rebuilds the value from the OPT record's CLASS and TTL fields.
    package init(recordClass: UInt16, ttl: UInt32, options: [UInt8]) {
        self.init(
            udpPayloadSize: recordClass,
            extendedRCode: UInt8(truncatingIfNeeded: ttl >> 24),
            version: UInt8(truncatingIfNeeded: ttl >> 16),
            dnssecOK: ttl & 0x8000 != 0,
            reservedFlags: UInt16(truncatingIfNeeded: ttl) & 0x7FFF,
            options: options
        )
    }

    /// The OPT record's CLASS field.
    package var recordClass: UInt16 { udpPayloadSize }

    /// The OPT record's TTL field.
    package var ttl: UInt32 {
        UInt32(extendedRCode) << 24 | UInt32(version) << 16 | (dnssecOK ? 0x8000 : 0) | UInt32(reservedFlags & 0x7FFF)
    }
}

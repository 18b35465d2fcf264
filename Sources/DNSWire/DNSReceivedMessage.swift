/// A message as it arrived: its wire bytes next to the decoded value.
///
/// TSIG (RFC 8945 §4.3) signs the bytes as sent, compression and all, which re-encoding a decoded
/// ``DNSMessage`` need not reproduce; this value keeps both, and where the last additional record
/// (the only place a TSIG record may be) starts.
package struct DNSReceivedMessage: Sendable, Hashable {
    /// The message exactly as received (one TCP frame or datagram).
    package let bytes: [UInt8]
    package let message: DNSMessage
    /// Offset in ``bytes`` of the last record of the additional section, `nil` when it is empty.
    package let lastAdditionalOffset: Int?

    /// Decodes `bytes` (see ``DNSMessage/init(decoding:)``).
    ///
    /// - Throws: ``DNSWireError`` for a malformed message.
    package init(decoding bytes: [UInt8]) throws {
        let decoded = try DNSMessage.decode(bytes)
        self.bytes = bytes
        self.message = decoded.message
        self.lastAdditionalOffset = decoded.lastAdditionalOffset
    }

    /// The TSIG record, when the last additional record is one.
    ///
    /// - Throws: ``DNSWireError`` `.invalidRecord` when a TSIG record is present elsewhere than last,
    ///   or when the last one is malformed (RFC 8945 §5.1: such a message is FORMERR).
    package func tsigRecord() throws -> DNSTSIGRecord? {
        let additionals = message.additionals
        if additionals.dropLast().contains(where: { $0.type == .TSIG })
            || message.answers.contains(where: { $0.type == .TSIG })
            || message.authorities.contains(where: { $0.type == .TSIG }) {
            throw DNSWireError(.invalidRecord, offset: 0, section: .additional, field: "tsig not last")
        }
        guard let last = additionals.last, last.type == .TSIG else { return nil }
        return try DNSTSIGRecord(last)
    }

    /// The message as it was before the TSIG record was added: the bytes up to the last additional
    /// record, ARCOUNT one less and the ID set to `originalID` (RFC 8945 §4.3.2).
    ///
    /// Call only when ``tsigRecord()`` returned a record; otherwise this is ``bytes``.
    package func bytesWithoutLastAdditional(originalID: UInt16) -> [UInt8] {
        guard let offset = lastAdditionalOffset, bytes.count >= 12 else { return bytes }
        var prefix = Array(bytes[..<offset])
        let count = UInt16(message.additionals.count - 1)
        prefix[0] = UInt8(originalID >> 8)
        prefix[1] = UInt8(truncatingIfNeeded: originalID)
        prefix[10] = UInt8(count >> 8)
        prefix[11] = UInt8(truncatingIfNeeded: count)
        return prefix
    }
}

extension DNSMessage {
    /// `bytes`, an encoded message, with `record` appended to its additional section.
    ///
    /// For the record that must come last and be written as is (TSIG): only ARCOUNT changes in the
    /// bytes before it.
    ///
    /// - Throws: ``DNSWireError`` `.messageTooLong` when ARCOUNT or the message would overflow.
    package static func appending(wireRecord record: [UInt8], to bytes: [UInt8]) throws -> [UInt8] {
        guard bytes.count >= 12 else { throw DNSWireError(.truncated, offset: bytes.count, section: .header) }
        let count = UInt16(bytes[10]) << 8 | UInt16(bytes[11])
        guard count < UInt16.max, bytes.count + record.count <= Int(UInt16.max) else {
            throw DNSWireError(.messageTooLong, offset: bytes.count, section: .additional)
        }
        var out = bytes
        out[10] = UInt8((count + 1) >> 8)
        out[11] = UInt8(truncatingIfNeeded: count + 1)
        out.append(contentsOf: record)
        return out
    }
}
